with source as (
    select * from {{ source('tapelens', 'tapes') }}
),

final as (
    select
        volume,
        barcode,
        media_type,
        library,
        pool,
        capacity_bytes,
        state,
        state_raw,
        media_from,
        updated_at,
        updated_run_id
    from source
)

select * from final
