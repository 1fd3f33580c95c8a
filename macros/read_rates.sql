{#- The read rate aggregates the dashboards read (agg_read_rates_daily, agg_read_rates_by_gap):
    the successful reads of `reads` (fct_transfer_rates) that `where` keeps, per UTC day of
    their start, media type, dataset type ('unknown' for a read the catalog does not name) and
    one bucket column (`bucket`, computed by `bucket_sql`), with their count, bytes and seconds
    reading. The rate stays as its two sums, so that any grouping of the rows gives the rate
    of the reads it covers, sum(bytes) / sum(duration_s); bytes and duration_s each sum what
    the reads give. -#}
{% macro reads_per_day_and(reads, bucket, bucket_sql, where='true') -%}
with bucketed as (
    select
        {{ utc_day('started_at') }} as read_day,
        media_type,
        coalesce(dataset_type, 'unknown') as dataset_type,
        {{ bucket_sql }} as {{ bucket }},
        size_bytes,
        duration_s
    from {{ reads }}
    where {{ where }}
),

final as (
    select
        read_day,
        media_type,
        dataset_type,
        {{ bucket }},
        count(*) as reads,
        sum(size_bytes)::bigint as bytes,
        {{ as_double('sum(duration_s)') }} as duration_s
    from bucketed
    group by read_day, media_type, dataset_type, {{ bucket }}
)

select * from final
{%- endmacro %}
