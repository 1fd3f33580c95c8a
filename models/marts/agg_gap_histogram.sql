-- The gap histogram the Placement health dashboard draws: copies with a counted gap (posdiff
-- 1..99) per posdiff, UTC day of writing, dataset type, experiment and media type, the columns
-- its chart groups by and the dashboard's filters select on. A count per bucket sums to any
-- coarser grouping exactly, so the chart gets from these rows the figures it got from the
-- copies of fct_file_gaps, and a Spark build copies them to the dashboards' database
-- (tapelens/spark/publish.py) where it leaves the copies on Spark.
--
-- Rebuilt whole by each build, like agg_gap_by_type_period: one pass over the counted gaps of
-- fct_file_gaps. Its buckets mix volumes, so it has no per-volume rows that an incremental
-- build could delete and compute again.
with counted as (
    select
        {{ utc_day('written_at') }} as write_day,
        dataset_type,
        experiment,
        media_type,
        posdiff
    from {{ ref('fct_file_gaps') }}
    where gap_class = 'counted'
),

final as (
    select
        write_day,
        dataset_type,
        experiment,
        media_type,
        posdiff,
        count(*) as copies
    from counted
    group by write_day, dataset_type, experiment, media_type, posdiff
)

select * from final
