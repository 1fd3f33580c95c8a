with source as (
    select * from {{ source('tapelens', 'mounts') }}
),

final as (
    select
        source,
        volume,
        drive,
        requested_at,
        mounted_at,
        dismounted_at,
        purpose,
        status,
        ingest_run_id
    from source
)

select * from final
