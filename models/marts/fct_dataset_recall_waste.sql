{{ config(post_hook='analyze {{ this }}') }}

-- Per dataset: what reading all of it costs beyond streaming its own bytes, in drive time:
-- fct_dataset_tape_waste summed over the dataset's volumes (counted-gap bytes at the media
-- type's native rate, an average locate for every file reached by a locate). recall_penalty
-- keeps the ratio sum(size + counted-gap bytes) / sum(size): a small dataset can have a large
-- ratio and waste little, so the dashboards rank by wasted_drive_h.
with timed as (
    select * from {{ ref('fct_dataset_tape_waste') }}
),

-- The dataset's type and experiment as dim_datasets gives them (its most common type).
datasets as (
    select * from {{ ref('dim_datasets') }}
),

final as (
    select
        timed.dataset,
        min(datasets.dataset_type) as dataset_type,
        min(datasets.experiment) as experiment,
        sum(timed.files)::bigint as files,
        sum(timed.size_bytes)::bigint as size_bytes,
        count(distinct timed.volume) as tapes,
        sum(timed.counted_gap_bytes)::bigint as counted_gap_bytes,
        sum(timed.n_locates)::bigint as n_locates,
        (
            sum(timed.size_bytes + timed.counted_gap_bytes)::numeric
            / nullif(sum(timed.size_bytes), 0)
        )::double precision as recall_penalty,
        (coalesce(sum(timed.counted_gap_s), 0) / 3600.0)::double precision
            as counted_gap_drive_h,
        (coalesce(sum(timed.locate_s), 0) / 3600.0)::double precision as locate_drive_h,
        (sum(timed.wasted_drive_s) / 3600.0)::double precision as wasted_drive_h
    from timed
    inner join datasets
        on timed.dataset = datasets.dataset
    group by timed.dataset
)

select * from final
