{{
    config(
        materialized='incremental',
        incremental_strategy='append',
        on_schema_change='fail',
        pre_hook=[
            "{{ touched_volumes_hook(0) }}",
            "{{ touched_volumes_hook(1) }}",
            "{{ touched_volumes_hook(2) }}",
        ],
        post_hook="analyze {{ this }}",
        indexes=[{'columns': ['volume', 'position'], 'unique': True}],
    )
}}

-- Every tape object (a file alone, or an aggregate of small files) of every volume the catalog
-- lists, with its byte address: the bytes of the objects before it on the tape. Copies the
-- catalog no longer lists still count: their bytes stay on the tape until it is repacked, and a
-- read passes over them. The recall planner looks up the objects a request needs here, by volume
-- and position, instead of summing whole tapes when it plans. Sums are taken in double precision
-- (exact below 2^53 bytes, 9 PB) and stored as whole bytes.
with copies as (
    select
        volume,
        position,
        size_bytes
    from {{ ref('stg_tape_files') }}
    where {{ where_touched() }}
),

objects as (
    select
        volume,
        position,
        sum(size_bytes::double precision) as object_bytes
    from copies
    group by volume, position
),

final as (
    select
        volume,
        position,
        object_bytes::bigint as object_bytes,
        coalesce(sum(object_bytes) over (
            partition by volume order by position
            rows between unbounded preceding and 1 preceding
        ), 0)::bigint as start_bytes,
        {{ new_watermark() }} as watermark_run_id
    from objects
)

select * from final
