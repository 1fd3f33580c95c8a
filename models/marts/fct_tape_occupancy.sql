-- One row per volume of the inventory or holding a live copy: how full it is with live data,
-- how much of that is duplicate copies (copies after a file's first), its small-file share, and
-- the gaps of the datasets on it. occupancy = live_bytes / capacity_bytes, the capacity from
-- the inventory, else the media type's nominal capacity. Repacked and destroyed tapes hold no
-- live copies. The state groups are tapelens/tape_states.py's, through the tape_states macro.
-- is_live_tape: the tape is still in the library's live data (not repacked, destroyed or
-- exported). removed_bytes: copies the catalog no longer lists that are still written on the
-- tape (until it is repacked). reclaimable_bytes: on full and readonly tapes (written no more),
-- the bytes of removed copies and of duplicate copies (a file's copies after its first): dead
-- space a repack gives back.
with tapes as (
    select * from {{ ref('stg_tapes') }}
),

media_types as (
    select * from {{ ref('stg_media_types') }}
),

dataset_tape_gaps as (
    select * from {{ ref('fct_dataset_tape_gaps') }}
),

dataset_volumes as (
    select * from {{ ref('int_dataset_volumes__ranked') }}
),

datasets as (
    select * from {{ ref('dim_datasets') }}
),

removed as (
    select
        volume,
        count(*) as removed_copies,
        sum(size_bytes)::bigint as removed_bytes
    from {{ ref('stg_tape_files') }}
    where removed_at is not null
    group by volume
),

volumes as (
    select volume from tapes
    union
    select volume from dataset_tape_gaps
),

per_volume as (
    select
        volume,
        min(media_type) as media_type,
        sum(files)::bigint as files,
        sum(size_bytes)::bigint as live_bytes,
        count(*) as n_datasets,
        sum(n_counted_gaps)::bigint as n_counted_gaps,
        sum(sum_posdiff) as sum_posdiff,
        min(first_written_at) as first_written_at,
        max(last_written_at) as last_written_at
    from dataset_tape_gaps
    group by volume
),

per_volume_copies as (
    select
        dataset_volumes.volume,
        sum(dataset_volumes.copies - dataset_volumes.first_copies)::bigint as duplicate_copies,
        sum(dataset_volumes.copy_bytes - dataset_volumes.first_bytes)::bigint
            as duplicate_bytes,
        -- Stray copies: those of datasets the volume holds no first copy of (retries that
        -- landed away from their dataset's tapes).
        coalesce(sum(dataset_volumes.copies) filter (
            where dataset_volumes.first_copies = 0
        ), 0)::bigint as stray_copies,
        sum(dataset_volumes.small_copies)::bigint as small_files,
        -- in numeric, so that the sum, and the result, do not depend on the order rows come in
        avg({{ precise("datasets.mean_gap") }}) as datasets_mean_gap
    from dataset_volumes
    inner join datasets
        on dataset_volumes.dataset = datasets.dataset
    group by dataset_volumes.volume
),

final as (
    select
        volumes.volume,
        coalesce(tapes.media_type, per_volume.media_type, 'unknown') as media_type,
        coalesce(tapes.state, 'unknown') as state,
        tapes.pool,
        tapes.library,
        coalesce(tapes.capacity_bytes, media_types.capacity_bytes) as capacity_bytes,
        coalesce(per_volume.files, 0) as files,
        coalesce(per_volume.live_bytes, 0) as live_bytes,
        coalesce(per_volume_copies.duplicate_bytes, 0) as duplicate_bytes,
        coalesce(per_volume_copies.duplicate_copies, 0) as duplicate_copies,
        coalesce(per_volume_copies.stray_copies, 0) as stray_copies,
        {{ as_double('coalesce(per_volume.live_bytes, 0)') }}
        / nullif(coalesce(tapes.capacity_bytes, media_types.capacity_bytes), 0) as occupancy,
        coalesce(per_volume.n_datasets, 0) as n_datasets,
        coalesce(per_volume_copies.small_files, 0) as small_files,
        {{ as_double('per_volume_copies.small_files') }} / nullif(per_volume.files, 0)
            as small_file_share,
        coalesce(per_volume.n_counted_gaps, 0) as n_counted_gaps,
        {{ pooled_mean('per_volume.n_counted_gaps', 'per_volume.sum_posdiff') }} as mean_gap,
        {{ as_double('per_volume_copies.datasets_mean_gap') }} as datasets_mean_gap,
        per_volume.first_written_at,
        per_volume.last_written_at,
        coalesce(tapes.state, 'unknown') not in {{ tape_states('out_of_library') }}
            as is_live_tape,
        case
            when coalesce(tapes.state, 'unknown') in {{ tape_states('copies_gone') }} then 0
            else coalesce(removed.removed_copies, 0)
        end::bigint as removed_copies,
        case
            when coalesce(tapes.state, 'unknown') in {{ tape_states('copies_gone') }} then 0
            else coalesce(removed.removed_bytes, 0)
        end::bigint as removed_bytes,
        case
            when tapes.state in {{ tape_states('written_no_more') }}
                then coalesce(removed.removed_bytes, 0)
                + coalesce(per_volume_copies.duplicate_bytes, 0)
            else 0
        end::bigint as reclaimable_bytes
    from volumes
    left join tapes
        on volumes.volume = tapes.volume
    left join media_types
        on tapes.media_type = media_types.media_type
    left join per_volume
        on volumes.volume = per_volume.volume
    left join per_volume_copies
        on volumes.volume = per_volume_copies.volume
    left join removed
        on volumes.volume = removed.volume
)

select * from final
