with source as (
    select * from {{ source('tapelens', 'transfers') }}
),

final as (
    select
        -- transfers have no id: a digest of the columns of their unique index
        md5(concat_ws(
            chr(31), source, direction, coalesce(file_id, ''), coalesce(path, ''),
            {{ epoch_micros_text('started_at') }}
        )) as transfer_key,
        source,
        direction,
        volume,
        drive,
        host,
        file_id,
        path,
        position,
        size_bytes,
        started_at,
        duration_s,
        queued_s,
        locate_s,
        status,
        error,
        requester,
        ingest_run_id
    from source
)

select * from final
