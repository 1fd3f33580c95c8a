{{
    config(
        materialized='incremental',
        incremental_strategy='append',
        on_schema_change='append_new_columns',
        pre_hook=[
            "{{ touched_files_hook(0) }}",
            "{{ touched_files_hook(1) }}",
            "{{ touched_files_hook(2) }}",
            "{{ touched_files_hook(3) }}",
        ],
        post_hook=[
            "{{ analyze_this() }}",
            "{{ drop_touched() }}",
            "{{ drop_touched(files=true) }}",
        ],
        indexes=[{'columns': ['source', 'file_id']}],
    )
}}

-- The live copies of files (source, file_id) that have more than one live copy: the
-- duplicates left by lost-acknowledgement retries (docs/domain.md). copy_rank 1 is the file's first
-- copy (oldest written_at, then copy_no, then copy_id); the highest rank is the newest copy,
-- the one tape clients recall. Every other file has one live copy, its first. Incremental:
-- a build recomputes the files with a copy on a volume changed since the last one.
with copies as (
    select * from {{ ref('int_copies__located') }}
    where is_live and {{ where_touched_files() }}
),

duplicated as (
    select
        source,
        file_id
    from copies
    group by source, file_id
    having count(*) > 1
),

ranked as (
    select
        copies.*,
        row_number() over (
            partition by copies.source, copies.file_id
            order by copies.written_at, copies.copy_no, copies.copy_id
        ) as copy_rank,
        count(*) over (partition by copies.source, copies.file_id) as file_copies
    from copies
    inner join duplicated
        on copies.source = duplicated.source
        and copies.file_id = duplicated.file_id
),

final as (
    select
        source,
        copy_id,
        written_at,
        file_id,
        path,
        dataset,
        dataset_type,
        size_bytes,
        volume,
        position,
        media_type,
        copy_rank,
        file_copies,
        copy_rank = 1 as is_first_copy,
        copy_rank = file_copies as is_newest_copy,
        {{ new_watermark() }} as watermark_run_id
    from ranked
)

select * from final
