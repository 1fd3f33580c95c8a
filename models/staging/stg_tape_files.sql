with source as (
    select * from {{ source('tapelens', 'tape_files') }}
),

final as (
    select
        source,
        copy_id,
        -- stored only where it is not the path (a null file id means the path is the identity)
        coalesce(file_id, path) as file_id,
        path,
        dataset,
        dataset_type,
        experiment,
        size_bytes,
        volume,
        position,
        offset_bytes,
        aggregate_id,
        copy_no,
        written_at,
        checksum,
        size_bound_bytes,
        other_volumes,
        ingest_run_id,
        last_seen_at,
        removed_at,
        removed_run_id
    from source
)

select * from final
