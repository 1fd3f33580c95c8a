-- Successful reads with a counted gap at read time (read_posdiff 1..99 from the previous read
-- of the same mount or session, read_gap_class 'counted') per read_posdiff, UTC day of their
-- start, media type and dataset type: what the Recall operations dashboard's read rate against
-- the gap draws, and the columns its filters select on. As in agg_read_rates_daily the rate
-- is kept as its two sums, bytes and seconds reading, so that any grouping gives the rate of
-- the reads it covers (macros/read_rates.sql). A Spark build copies these rows to the
-- dashboards' database (tapelens/spark/publish.py); the reads stay on Spark.
--
-- Rebuilt whole by each build from fct_transfer_rates, itself rebuilt whole: one pass over
-- the reads.
{{ reads_per_day_and(
    ref('fct_transfer_rates'), 'read_posdiff', 'read_posdiff', "read_gap_class = 'counted'"
) }}
