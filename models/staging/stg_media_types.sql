with source as (
    select * from {{ source('tapelens', 'media_types') }}
),

final as (
    select
        media_type,
        family,
        generation,
        barcode_suffix,
        native_rate_mb_s,
        capacity_bytes,
        robot_s,
        load_s,
        locate_avg_s,
        rewind_avg_s,
        unload_s,
        readable_by,
        writable_by
    from source
)

select * from final
