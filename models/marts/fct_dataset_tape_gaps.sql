{{
    config(
        materialized='incremental',
        incremental_strategy='append',
        on_schema_change='fail',
        partition_by=(['volume_bucket'] if target.type == 'spark' else none),
        pre_hook=[
            "{{ touched_volumes_hook(0) }}",
            "{{ touched_volumes_hook(1) }}",
            "{{ touched_volumes_hook(2) }}",
        ],
        post_hook=["{{ analyze_this() }}", "{{ drop_touched() }}"],
        indexes=[{'columns': ['volume']}, {'columns': ['dataset']}],
    )
}}

-- Per dataset and volume: the gap statistics of the published analysis. mean and sigma are
-- over files with a counted gap only (posdiff 1..99); sigma is the sample standard deviation
-- (n - 1 in the denominator; null for n < 2). rate_factor is the size-weighted expected rate
-- factor sum(size) / sum(size + counted-gap bytes skipped before each file): 1 when the
-- dataset streams, 1/g for equal files at gap g. sum_posdiff and sum_posdiff_sq (exact) let
-- other marts pool the statistics of several volumes without reading the copies again.
with file_gaps as (
    select * from {{ ref('fct_file_gaps') }}
    where {{ where_touched() }}
),

type_counts as (
    select
        dataset,
        volume,
        dataset_type,
        row_number() over (
            partition by dataset, volume order by count(*) desc, dataset_type
        ) as type_rank
    from file_gaps
    group by dataset, volume, dataset_type
),

per_dataset_tape as (
    select
        dataset,
        volume,
        min(experiment) as experiment,
        min(media_type) as media_type,
        count(*) as files,
        sum(size_bytes)::bigint as size_bytes,
        count(*) filter (where gap_class = 'counted') as n_counted_gaps,
        avg({{ precise("posdiff") }}) filter (where gap_class = 'counted') as mean_posdiff,
        stddev_samp({{ precise("posdiff") }}) filter (where gap_class = 'counted') as sigma_posdiff,
        coalesce(sum(posdiff) filter (where gap_class = 'counted'), 0) as sum_posdiff,
        coalesce(sum(posdiff * posdiff) filter (where gap_class = 'counted'), 0)
            as sum_posdiff_sq,
        count(*) filter (where gap_class = 'locate') as n_locates,
        count(*) filter (where gap_class = 'aggregate_member') as n_aggregate_members,
        count(*) filter (where gap_class = 'first') as n_first,
        sum(counted_gap_bytes)::bigint as counted_gap_bytes,
        min(position) as first_position,
        max(position) as last_position,
        min(written_at) as first_written_at,
        max(written_at) as last_written_at
    from file_gaps
    group by dataset, volume
),

final as (
    select
        per_dataset_tape.dataset,
        per_dataset_tape.volume,
        type_counts.dataset_type,
        per_dataset_tape.experiment,
        per_dataset_tape.media_type,
        per_dataset_tape.files,
        per_dataset_tape.size_bytes,
        per_dataset_tape.n_counted_gaps,
        {{ as_double('per_dataset_tape.mean_posdiff') }} as mean_posdiff,
        {{ as_double('per_dataset_tape.sigma_posdiff') }} as sigma_posdiff,
        cast(per_dataset_tape.sum_posdiff as {{ type_exact() }}) as sum_posdiff,
        cast(per_dataset_tape.sum_posdiff_sq as {{ type_exact() }}) as sum_posdiff_sq,
        per_dataset_tape.n_locates,
        per_dataset_tape.n_aggregate_members,
        per_dataset_tape.n_first,
        per_dataset_tape.counted_gap_bytes,
        {{ exact_ratio(
            'per_dataset_tape.size_bytes',
            'per_dataset_tape.size_bytes + per_dataset_tape.counted_gap_bytes'
        ) }} as rate_factor,
        per_dataset_tape.first_position,
        per_dataset_tape.last_position,
        per_dataset_tape.first_written_at,
        per_dataset_tape.last_written_at,
        {{ new_watermark() }} as watermark_run_id
    from per_dataset_tape
    inner join type_counts
        on per_dataset_tape.dataset = type_counts.dataset
        and per_dataset_tape.volume = type_counts.volume
        and type_counts.type_rank = 1
)

-- On Spark also volume_bucket, the table's partition column (macros/dialect.sql).
select *{{ volume_bucket_column() }} from final
