{{
    config(
        post_hook="{{ analyze_this() }}",
        indexes=[{'columns': ['volume'], 'unique': True}],
    )
}}

-- One row per volume of plan_tape_objects: how many tape objects it holds, their bytes and their
-- average size (the throughput model's unit for the cost of passing over objects), with the
-- newest watermark_run_id of its objects. The table's newest watermark tells the recall planner
-- which catalog loads plan_tape_objects has seen: the volumes of later loads it addresses from the
-- catalog itself. A table, not incremental: one pass over the narrow objects table costs less
-- than finding the changed volumes in the catalog again.
with objects as (
    select * from {{ ref('plan_tape_objects') }}
),

final as (
    select
        volume,
        count(*) as objects,
        sum(object_bytes)::bigint as object_bytes,
        {{ as_double('avg(object_bytes)') }} as avg_object_bytes,
        max(watermark_run_id) as watermark_run_id
    from objects
    group by volume
)

select * from final
