{{ config(materialized='table', post_hook='analyze {{ this }}') }}

-- Per dataset: what reading all of it costs beyond streaming its own bytes, in drive time.
-- wasted_drive_h = the read-through bytes (bytes between wanted files that a drive streams
-- past) at the media type's native rate, plus an average locate for every file reached by a
-- locate (posdiff >= 100), over all the dataset's volumes. recall_penalty keeps the ratio
-- sum(size + read-through bytes) / sum(size): a small dataset can have a large ratio and
-- waste little, so the dashboards rank by wasted_drive_h. Volumes of a media type missing from
-- the catalog are timed at the catalog's mean rate and locate.
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
        dataset_tape_gaps.dataset,
        dataset_tape_gaps.dataset_type,
        dataset_tape_gaps.experiment,
        dataset_tape_gaps.volume,
        dataset_tape_gaps.files,
        dataset_tape_gaps.size_bytes,
        dataset_tape_gaps.read_through_bytes,
        dataset_tape_gaps.n_locates,
        dataset_tape_gaps.read_through_bytes
        / (coalesce(media_types.native_rate_mb_s, catalog_mean.native_rate_mb_s) * 1e6)
            as read_through_s,
        dataset_tape_gaps.n_locates
        * coalesce(media_types.locate_avg_s, catalog_mean.locate_avg_s) as locate_s
    from dataset_tape_gaps
    cross join catalog_mean
    left join media_types
        on dataset_tape_gaps.media_type = media_types.media_type
),

type_counts as (
    select
        dataset,
        dataset_type,
        row_number() over (
            partition by dataset order by sum(files) desc, dataset_type
        ) as type_rank
    from timed
    group by dataset, dataset_type
),

final as (
    select
        timed.dataset,
        min(type_counts.dataset_type) as dataset_type,
        min(timed.experiment) as experiment,
        sum(timed.files)::bigint as files,
        sum(timed.size_bytes)::bigint as size_bytes,
        count(distinct timed.volume) as tapes,
        sum(timed.read_through_bytes)::bigint as read_through_bytes,
        sum(timed.n_locates)::bigint as n_locates,
        (
            sum(timed.size_bytes + timed.read_through_bytes)::numeric
            / nullif(sum(timed.size_bytes), 0)
        )::double precision as recall_penalty,
        (coalesce(sum(timed.read_through_s), 0) / 3600.0)::double precision
            as read_through_drive_h,
        (coalesce(sum(timed.locate_s), 0) / 3600.0)::double precision as locate_drive_h,
        (
            (coalesce(sum(timed.read_through_s), 0) + coalesce(sum(timed.locate_s), 0))
            / 3600.0
        )::double precision as wasted_drive_h
    from timed
    inner join type_counts
        on timed.dataset = type_counts.dataset
        and type_counts.type_rank = 1
    group by timed.dataset
)

select * from final
