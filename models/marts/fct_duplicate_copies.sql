-- One row per file (source, file_id) with more than one live copy: the duplicates left by
-- lost-acknowledgement retries. The newest copy is the one tape clients recall; it sits off
-- the main tapes when its volume is not one of the dataset's main tapes (see
-- int_dataset_volumes__ranked), and costs an extra mount when its volume holds none of the
-- dataset's first copies (a recall of the first copies would not mount it).
with copies as (
    select * from {{ ref('int_copies__duplicated') }}
),

dataset_volumes as (
    select * from {{ ref('int_dataset_volumes__ranked') }}
),

per_file as (
    select
        source,
        file_id,
        count(*) as copies,
        {{ sorted_distinct_array('volume') }} as volumes,
        count(distinct volume) as n_volumes,
        min(written_at) as first_written_at,
        max(written_at) as last_written_at
    from copies
    group by source, file_id
),

first_copies as (
    select * from copies where is_first_copy
),

newest_copies as (
    select * from copies where is_newest_copy
),

final as (
    select
        per_file.source,
        per_file.file_id,
        first_copies.path,
        first_copies.dataset,
        first_copies.dataset_type,
        first_copies.size_bytes,
        per_file.copies,
        per_file.copies - 1 as extra_copies,
        ((per_file.copies - 1) * first_copies.size_bytes)::bigint as extra_bytes,
        per_file.volumes,
        per_file.n_volumes,
        per_file.first_written_at,
        per_file.last_written_at,
        first_copies.volume as first_volume,
        first_copies.position as first_position,
        newest_copies.volume as newest_volume,
        newest_copies.position as newest_position,
        not coalesce(newest_volume.is_main, false) as newest_off_main,
        case when coalesce(newest_volume.holds_first_copy, false) then 0 else 1 end
            as extra_mounts
    from per_file
    inner join first_copies
        on per_file.source = first_copies.source
        and per_file.file_id = first_copies.file_id
    inner join newest_copies
        on per_file.source = newest_copies.source
        and per_file.file_id = newest_copies.file_id
    left join dataset_volumes as newest_volume
        on newest_copies.dataset = newest_volume.dataset
        and newest_copies.volume = newest_volume.volume
)

select * from final
