with source as (
    select * from {{ source('tapelens', 'drives') }}
),

final as (
    select
        drive,
        drive_type,
        library,
        state
    from source
)

select * from final
