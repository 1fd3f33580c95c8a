-- Successful reads per UTC day of their start, media type, dataset type and file size class:
-- what the Recall operations dashboard's read rate per day and read rate by file size draw,
-- and the columns its filters select on. The rate is kept as its two sums, bytes and seconds
-- reading, so that any grouping of these rows gives sum(bytes) / sum(duration_s), the rate of
-- the reads it covers (a mean of per-row rates would weigh a day of one read like a day of
-- thousands). bytes and duration_s each sum what the reads give, as fct_transfer_rates's
-- read_rate_mb_s did over its rows (macros/read_rates.sql). A Spark build copies these rows to
-- the dashboards' database (tapelens/spark/publish.py); the reads stay on Spark.
--
-- Rebuilt whole by each build from fct_transfer_rates, itself rebuilt whole: one pass over
-- the reads.

-- The classes the chart has always shown, sorted by their label (GB of 10^9 bytes); a read
-- whose size neither the log nor the catalog gives has none.
{% set size_class -%}
    case
        when size_bytes is null then 'unknown'
        when size_bytes < 100000000 then '1: < 0.1 GB'
        when size_bytes < 1000000000 then '2: 0.1-1 GB'
        when size_bytes < 4000000000 then '3: 1-4 GB'
        when size_bytes < 10000000000 then '4: 4-10 GB'
        else '5: >= 10 GB'
    end
{%- endset %}

{{ reads_per_day_and(ref('fct_transfer_rates'), 'size_class', size_class) }}
