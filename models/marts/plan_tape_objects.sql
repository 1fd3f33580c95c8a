{{
    config(
        materialized='incremental',
        incremental_strategy='append',
        on_schema_change='fail',
        partition_by=(['volume_bucket'] if target.type == 'spark' else none),
        pre_hook=[
            "{{ touched_volumes_hook(0) }}",
            "{{ touched_volumes_hook(1) }}",
            "{{ touched_volumes_hook(2) }}",
        ],
        post_hook=["{{ analyze_this() }}", "{{ drop_touched() }}"],
        indexes=[{'columns': ['volume', 'position'], 'unique': True}],
    )
}}

-- Every tape object (a file alone, or an aggregate of small files) of every volume the catalog
-- lists, with its byte address (macros/tape_objects.sql, which the planner's catalog read uses
-- too). The recall planner looks up the objects a request needs here, by volume and position,
-- instead of summing whole tapes when it plans. Stored as whole bytes.
with copies as (
    select
        volume,
        position,
        size_bytes
    from {{ ref('stg_tape_files') }}
    where {{ where_touched() }}
),

final as (
    select
        volume,
        position,
        object_bytes::bigint as object_bytes,
        start_bytes::bigint as start_bytes,
        {{ new_watermark() }} as watermark_run_id
    from ({{ tape_objects('copies') }}) as objects
)

-- On Spark also volume_bucket, the table's partition column (macros/dialect.sql).
select *{{ volume_bucket_column() }} from final
