-- Written files' collocation hints as the hint records give them (tapelens.write_hints), one
-- row per record: a file recorded twice with different hints has two, both contradictory.
with source as (
    select * from {{ source('tapelens', 'write_hints') }}
),

final as (
    select
        source,
        file_key,
        path,
        written_at,
        size_bytes,
        experiment,
        activity,
        level_0,
        level_1,
        level_2,
        level_3,
        level_4,
        length_0,
        length_1,
        length_2,
        length_3,
        length_4,
        size_0,
        size_1,
        size_2,
        size_3,
        size_4,
        schema_version,
        status,
        reason,
        levels_digest,
        ingest_run_id
    from source
)

select * from final
