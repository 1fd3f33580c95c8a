{{ config(materialized='view') }}

-- Per dataset and volume (fct_dataset_tape_gaps' rows and columns): the drive time reading the
-- dataset's files on that volume spends beyond streaming their own bytes. counted_gap_s is the
-- counted-gap bytes between wanted files at the media type's native rate; locate_s an average
-- locate for each file reached by a locate (posdiff >= 100); wasted_drive_s their sum. Media
-- types missing from the catalog are timed at the catalog's mean rate and locate. A view:
-- reports and fct_dataset_recall_waste sum it over whichever rows they keep.
with dataset_tape_gaps as (
    select * from {{ ref('fct_dataset_tape_gaps') }}
),

media_types as (
    select * from {{ ref('stg_media_types') }}
),

catalog_mean as (
    select
        avg(native_rate_mb_s) as native_rate_mb_s,
        avg(locate_avg_s) as locate_avg_s
    from media_types
),

timed as (
    select
        dataset_tape_gaps.*,
        dataset_tape_gaps.counted_gap_bytes
        / (coalesce(media_types.native_rate_mb_s, catalog_mean.native_rate_mb_s) * 1e6)
            as counted_gap_s,
        dataset_tape_gaps.n_locates
        * coalesce(media_types.locate_avg_s, catalog_mean.locate_avg_s) as locate_s
    from dataset_tape_gaps
    cross join catalog_mean
    left join media_types
        on dataset_tape_gaps.media_type = media_types.media_type
)

select
    *,
    (coalesce(counted_gap_s, 0) + coalesce(locate_s, 0))::double precision as wasted_drive_s
from timed
