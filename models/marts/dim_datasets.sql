{{ config(post_hook='{{ analyze_this() }}') }}

-- One row per dataset with a live copy: size, placement and duplicates. files and size_bytes
-- count each file once (its first copy); copies and copy_bytes count every live copy.
-- tapes_needed is what the data would fill at capacity: ceil(size_bytes / capacity), with the
-- capacity of the media that holds most of the dataset's live bytes. extra_mounts counts the
-- volumes holding a newest copy of the dataset but none of its first copies: cartridges a
-- recall of the newest copies (what tape clients do) mounts on top of those a recall of the
-- first copies mounts. Built from the per dataset x volume marts, not from the copies.
with dataset_tape_gaps as (
    select * from {{ ref('fct_dataset_tape_gaps') }}
),

dataset_volumes as (
    select * from {{ ref('int_dataset_volumes__ranked') }}
),

duplicates as (
    select * from {{ ref('int_copies__duplicated') }}
),

tapes as (
    select * from {{ ref('stg_tapes') }}
),

media_types as (
    select * from {{ ref('stg_media_types') }}
),

capacities as (
    select
        dataset_volumes.dataset,
        coalesce(tapes.capacity_bytes, media_types.capacity_bytes) as capacity_bytes,
        row_number() over (
            partition by dataset_volumes.dataset
            order by
                sum(dataset_volumes.copy_bytes) desc,
                coalesce(tapes.capacity_bytes, media_types.capacity_bytes) desc
        ) as capacity_rank
    from dataset_volumes
    left join tapes
        on dataset_volumes.volume = tapes.volume
    left join media_types
        on tapes.media_type = media_types.media_type
    where coalesce(tapes.capacity_bytes, media_types.capacity_bytes) is not null
    group by
        dataset_volumes.dataset, coalesce(tapes.capacity_bytes, media_types.capacity_bytes)
),

type_counts as (
    select
        dataset,
        dataset_type,
        row_number() over (
            partition by dataset order by sum(files) desc, dataset_type
        ) as type_rank
    from dataset_tape_gaps
    group by dataset, dataset_type
),

per_dataset as (
    select
        dataset,
        min(experiment) as experiment,
        sum(files)::bigint as copies,
        sum(size_bytes)::bigint as copy_bytes,
        count(*) as tapes_used,
        sum(n_counted_gaps)::bigint as n_counted_gaps,
        sum(sum_posdiff) as sum_posdiff,
        sum(sum_posdiff_sq) as sum_posdiff_sq,
        sum(n_locates)::bigint as n_locates,
        min(first_written_at) as first_written_at,
        max(last_written_at) as last_written_at
    from dataset_tape_gaps
    group by dataset
),

per_dataset_volumes as (
    select
        dataset,
        sum(first_copies)::bigint as files,
        sum(first_bytes)::bigint as size_bytes,
        sum(small_first_copies)::bigint as small_files,
        count(*) filter (where is_main) as main_tapes
    from dataset_volumes
    group by dataset
),

duplicated as (
    select
        dataset,
        count(*) filter (where is_first_copy) as duplicated_files
    from duplicates
    group by dataset
),

extra_mounts as (
    select
        duplicates.dataset,
        count(distinct duplicates.volume) as extra_mounts
    from duplicates
    inner join dataset_volumes
        on duplicates.dataset = dataset_volumes.dataset
        and duplicates.volume = dataset_volumes.volume
    where duplicates.is_newest_copy
        and not dataset_volumes.holds_first_copy
    group by duplicates.dataset
),

final as (
    select
        per_dataset.dataset,
        type_counts.dataset_type,
        per_dataset.experiment,
        per_dataset_volumes.files,
        per_dataset.copies,
        per_dataset_volumes.size_bytes,
        per_dataset.copy_bytes,
        per_dataset.copies - per_dataset_volumes.files as duplicate_copies,
        coalesce(duplicated.duplicated_files, 0) as duplicated_files,
        per_dataset.tapes_used,
        per_dataset_volumes.main_tapes,
        capacities.capacity_bytes,
        {{ ceil_div('per_dataset_volumes.size_bytes', 'capacities.capacity_bytes') }} as tapes_needed,
        per_dataset.n_counted_gaps,
        {{ pooled_mean('per_dataset.n_counted_gaps', 'per_dataset.sum_posdiff') }} as mean_gap,
        {{ pooled_sigma(
            'per_dataset.n_counted_gaps', 'per_dataset.sum_posdiff', 'per_dataset.sum_posdiff_sq'
        ) }} as sigma_gap,
        per_dataset.n_locates,
        per_dataset_volumes.small_files,
        {{ as_double('per_dataset_volumes.small_files') }}
        / nullif(per_dataset_volumes.files, 0) as small_file_share,
        coalesce(extra_mounts.extra_mounts, 0) as extra_mounts,
        per_dataset.first_written_at,
        per_dataset.last_written_at
    from per_dataset
    inner join per_dataset_volumes
        on per_dataset.dataset = per_dataset_volumes.dataset
    inner join type_counts
        on per_dataset.dataset = type_counts.dataset
        and type_counts.type_rank = 1
    left join capacities
        on per_dataset.dataset = capacities.dataset
        and capacities.capacity_rank = 1
    left join duplicated
        on per_dataset.dataset = duplicated.dataset
    left join extra_mounts
        on per_dataset.dataset = extra_mounts.dataset
)

select * from final
