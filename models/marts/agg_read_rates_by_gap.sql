-- Successful reads with a counted gap at read time (read_posdiff 1..99 from the previous read
-- of the same mount or session, read_gap_class 'counted') per read_posdiff, UTC day of their
-- start, media type and dataset type: what the Recall operations dashboard's read rate against
-- the gap draws, and the columns its filters select on. As in agg_read_rates_daily the rate
-- is kept as its two sums, bytes and seconds reading, so that any grouping gives the rate of
-- the reads it covers. A Spark build copies these rows to the dashboards' database
-- (tapelens/spark/publish.py); the reads stay on Spark.
--
-- Rebuilt whole by each build from fct_transfer_rates, itself rebuilt whole: one pass over
-- the reads.
with counted as (
    select
        {{ utc_day('started_at') }} as read_day,
        media_type,
        coalesce(dataset_type, 'unknown') as dataset_type,
        read_posdiff,
        size_bytes,
        duration_s
    from {{ ref('fct_transfer_rates') }}
    where read_gap_class = 'counted'
),

final as (
    select
        read_day,
        media_type,
        dataset_type,
        read_posdiff,
        count(*) as reads,
        sum(size_bytes)::bigint as bytes,
        {{ as_double('sum(duration_s)') }} as duration_s
    from counted
    group by read_day, media_type, dataset_type, read_posdiff
)

select * from final
