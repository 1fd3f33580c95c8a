{{ config(materialized='table', post_hook='{{ analyze_this() }}') }}

-- Each volume holding live copies of a dataset, with how many of them are first copies (a
-- file's oldest live copy) and how many are small (below var('small_file_bytes')), ranked by
-- first copies. The main tapes are the fewest volumes, taken in that order (ties by volume
-- name), whose first copies reach var('main_tapes_share') (default 0.5: "most") of the
-- dataset's files: the tapes a recall of the dataset's original copies mounts for the bulk
-- of it. Built from the live copies and the duplicates (intermediate models only: the marts
-- are built from this one, never the other way round).
with located as (
    select * from {{ ref('int_copies__located') }}
),

duplicates as (
    select * from {{ ref('int_copies__duplicated') }}
),

-- one pass over the live copies gives every count per dataset and volume
dataset_tape_gaps as (
    select
        dataset,
        volume,
        count(*) as files,
        sum(size_bytes)::bigint as size_bytes,
        count(*) filter (where size_bytes < {{ number_var('small_file_bytes') }}) as small_copies
    from located
    where is_live
    group by dataset, volume
),

later_copies as (
    select
        dataset,
        volume,
        count(*) as later_copies,
        sum(size_bytes) as later_bytes,
        count(*) filter (where size_bytes < {{ number_var('small_file_bytes') }}) as later_small
    from duplicates
    where not is_first_copy
    group by dataset, volume
),

per_volume as (
    select
        dataset_tape_gaps.dataset,
        dataset_tape_gaps.volume,
        dataset_tape_gaps.files as copies,
        dataset_tape_gaps.size_bytes as copy_bytes,
        dataset_tape_gaps.files - coalesce(later_copies.later_copies, 0) as first_copies,
        dataset_tape_gaps.size_bytes - coalesce(later_copies.later_bytes, 0) as first_bytes,
        dataset_tape_gaps.small_copies,
        dataset_tape_gaps.small_copies - coalesce(later_copies.later_small, 0)
            as small_first_copies
    from dataset_tape_gaps
    left join later_copies
        on dataset_tape_gaps.dataset = later_copies.dataset
        and dataset_tape_gaps.volume = later_copies.volume
),

ranked as (
    select
        per_volume.*,
        sum(first_copies) over (partition by dataset) as dataset_files,
        row_number() over (
            partition by dataset order by first_copies desc, volume
        ) as volume_rank,
        sum(first_copies) over (
            partition by dataset
            order by first_copies desc, volume
            rows between unbounded preceding and 1 preceding
        ) as first_copies_before
    from per_volume
),

final as (
    select
        dataset,
        volume,
        copies,
        copy_bytes,
        first_copies,
        first_bytes::bigint as first_bytes,
        small_copies,
        small_first_copies,
        dataset_files::bigint as dataset_files,
        volume_rank,
        first_copies > 0 as holds_first_copy,
        -- a volume is main while the volumes ranked before it hold less than the share
        first_copies > 0
        and coalesce(first_copies_before, 0)
        < {{ number_var('main_tapes_share') }} * dataset_files as is_main
    from ranked
)

select * from final
