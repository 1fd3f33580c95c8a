{#- The SQL dialect of the engine the marts are built on. The models are one project for
    PostgreSQL (the default__ implementations, which render what the models said before) and
    Spark SQL through dbt-spark (spark__): each idiom PostgreSQL and Spark spell differently is
    a macro here, dispatched on the adapter (dbt's adapter.dispatch), so no model has a second
    copy. Spark's session time zone is UTC (profiles.yml, tapelens/spark/session.py): its
    timestamps print and truncate in UTC as the PostgreSQL side says "at time zone 'UTC'". -#}

{#- Types. -#}
{% macro type_double() -%}
    {{ return(adapter.dispatch('type_double', 'tapelens')()) }}
{%- endmacro %}
{% macro default__type_double() %}double precision{% endmacro %}
{% macro spark__type_double() %}double{% endmacro %}

{#- An exact integer of any size: PostgreSQL's numeric; Spark's widest decimal. -#}
{% macro type_exact() -%}
    {{ return(adapter.dispatch('type_exact', 'tapelens')()) }}
{%- endmacro %}
{% macro default__type_exact() %}numeric{% endmacro %}
{% macro spark__type_exact() %}decimal(38, 0){% endmacro %}

{% macro type_text() -%}
    {{ return(adapter.dispatch('type_text', 'tapelens')()) }}
{%- endmacro %}
{% macro default__type_text() %}text{% endmacro %}
{% macro spark__type_text() %}string{% endmacro %}

{#- An instant: PostgreSQL's timestamptz; Spark's timestamp is one (shown in the session zone). -#}
{% macro type_instant() -%}
    {{ return(adapter.dispatch('type_instant', 'tapelens')()) }}
{%- endmacro %}
{% macro default__type_instant() %}timestamptz{% endmacro %}
{% macro spark__type_instant() %}timestamp{% endmacro %}

{#- expr as a double. -#}
{% macro as_double(expr) -%}
    ({{ expr }})::{{ tapelens.type_double() }}
{%- endmacro %}

{#- a / b as a double, a taken exactly (numeric in PostgreSQL; in Spark a double division of
    integers, exact below 2^53), null when b is 0. -#}
{% macro exact_ratio(a, b) -%}
    {{ return(adapter.dispatch('exact_ratio', 'tapelens')(a, b)) }}
{%- endmacro %}
{% macro default__exact_ratio(a, b) -%}
    (({{ a }})::numeric / nullif({{ b }}, 0))::double precision
{%- endmacro %}
{% macro spark__exact_ratio(a, b) -%}
    (cast({{ a }} as double) / nullif({{ b }}, 0))
{%- endmacro %}

{#- ceil(a / b) of non-negative integers, as a bigint; null when b is 0 or null. -#}
{% macro ceil_div(a, b) -%}
    {{ return(adapter.dispatch('ceil_div', 'tapelens')(a, b)) }}
{%- endmacro %}
{% macro default__ceil_div(a, b) -%}
    ceil(({{ a }})::numeric / nullif({{ b }}, 0))::bigint
{%- endmacro %}
{#- In integers: Spark's decimal division keeps a few decimals only, and its ceiling could then
    miss a quotient just above a whole number. -#}
{% macro spark__ceil_div(a, b) -%}
    case when {{ b }} <> 0 then (({{ a }}) + ({{ b }}) - 1) div ({{ b }}) end
{%- endmacro %}

{#- Times. -#}

{#- A timestamp's microseconds since 1970 as text (a transfer's key). -#}
{% macro epoch_micros_text(ts) -%}
    {{ return(adapter.dispatch('epoch_micros_text', 'tapelens')(ts)) }}
{%- endmacro %}
{% macro default__epoch_micros_text(ts) -%}
    (extract(epoch from {{ ts }}) * 1000000)::bigint::text
{%- endmacro %}
{% macro spark__epoch_micros_text(ts) -%}
    cast(unix_micros({{ ts }}) as string)
{%- endmacro %}

{#- Seconds from `earlier` to `later` (fractional). -#}
{% macro seconds_between(earlier, later) -%}
    {{ return(adapter.dispatch('seconds_between', 'tapelens')(earlier, later)) }}
{%- endmacro %}
{% macro default__seconds_between(earlier, later) -%}
    extract(epoch from {{ later }} - {{ earlier }})
{%- endmacro %}
{% macro spark__seconds_between(earlier, later) -%}
    ((unix_micros({{ later }}) - unix_micros({{ earlier }})) / 1e6)
{%- endmacro %}

{#- True when `later` comes more than `seconds` (a number) after `earlier`. -#}
{% macro more_than_seconds_after(later, earlier, seconds) -%}
    {{ return(adapter.dispatch('more_than_seconds_after', 'tapelens')(later, earlier, seconds)) }}
{%- endmacro %}
{% macro default__more_than_seconds_after(later, earlier, seconds) -%}
    {{ later }} - {{ earlier }} > {{ seconds }} * interval '1 second'
{%- endmacro %}
{#- In bigint: 21600 * 1000000 overflows Spark's int. -#}
{% macro spark__more_than_seconds_after(later, earlier, seconds) -%}
    unix_micros({{ later }}) - unix_micros({{ earlier }}) > cast({{ seconds }} as bigint) * 1000000
{%- endmacro %}

{#- The UTC day an instant falls in, as an instant (midnight UTC). -#}
{% macro utc_day(ts) -%}
    {{ return(adapter.dispatch('utc_day', 'tapelens')(ts)) }}
{%- endmacro %}
{% macro default__utc_day(ts) -%}
    time_bucket(interval '1 day', {{ ts }})
{%- endmacro %}
{% macro spark__utc_day(ts) -%}
    date_trunc('DAY', {{ ts }})
{%- endmacro %}

{#- The first day of an instant's UTC month, as a date. -#}
{% macro utc_month_start(ts) -%}
    {{ return(adapter.dispatch('utc_month_start', 'tapelens')(ts)) }}
{%- endmacro %}
{% macro default__utc_month_start(ts) -%}
    date_trunc('month', {{ ts }} at time zone 'UTC')::date
{%- endmacro %}
{% macro spark__utc_month_start(ts) -%}
    trunc(to_date({{ ts }}), 'MM')
{%- endmacro %}

{#- An instant's UTC month as text, '2021-03'. -#}
{% macro utc_month_text(ts) -%}
    {{ return(adapter.dispatch('utc_month_text', 'tapelens')(ts)) }}
{%- endmacro %}
{% macro default__utc_month_text(ts) -%}
    to_char({{ ts }} at time zone 'UTC', 'YYYY-MM')
{%- endmacro %}
{% macro spark__utc_month_text(ts) -%}
    date_format({{ ts }}, 'yyyy-MM')
{%- endmacro %}

{#- An instant in UTC with microseconds, '2021-03-04T05:06:07.000008Z'. -#}
{% macro utc_iso_text(ts) -%}
    {{ return(adapter.dispatch('utc_iso_text', 'tapelens')(ts)) }}
{%- endmacro %}
{% macro default__utc_iso_text(ts) -%}
    to_char({{ ts }} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
{%- endmacro %}
{% macro spark__utc_iso_text(ts) -%}
    date_format({{ ts }}, "yyyy-MM-dd'T'HH:mm:ss.SSSSSS'Z'")
{%- endmacro %}

{#- Midnight UTC of a date given as SQL text ('2020-10-01'), as an instant. -#}
{% macro utc_midnight_of(date_sql) -%}
    {{ return(adapter.dispatch('utc_midnight_of', 'tapelens')(date_sql)) }}
{%- endmacro %}
{% macro default__utc_midnight_of(date_sql) -%}
    ({{ date_sql }}::date::timestamp at time zone 'UTC')
{%- endmacro %}
{% macro spark__utc_midnight_of(date_sql) -%}
    cast(cast({{ date_sql }} as date) as timestamp)
{%- endmacro %}

{#- Rows and sets. -#}

{#- The integers from..to as one column `name`, a row each. -#}
{% macro integer_rows(name, from, to) -%}
    {{ return(adapter.dispatch('integer_rows', 'tapelens')(name, from, to)) }}
{%- endmacro %}
{% macro default__integer_rows(name, from, to) -%}
    select generate_series({{ from }}, {{ to }}) as {{ name }}
{%- endmacro %}
{% macro spark__integer_rows(name, from, to) -%}
    select explode(sequence({{ from }}, {{ to }})) as {{ name }}
{%- endmacro %}

{#- The distinct values of a column, sorted, as an array (an aggregate). -#}
{% macro sorted_distinct_array(column) -%}
    {{ return(adapter.dispatch('sorted_distinct_array', 'tapelens')(column)) }}
{%- endmacro %}
{% macro default__sorted_distinct_array(column) -%}
    array_agg(distinct {{ column }} order by {{ column }})
{%- endmacro %}
{% macro spark__sorted_distinct_array(column) -%}
    array_sort(collect_set({{ column }}))
{%- endmacro %}

{#- The first row of each `partition` (a column list) of `relation` in `order` (an order by
    list spelling out where nulls go): PostgreSQL's distinct on, a row number in Spark (whose
    rows then carry the column first_row_rank, 1). -#}
{% macro first_row_per(relation, partition, order) -%}
    {{ return(adapter.dispatch('first_row_per', 'tapelens')(relation, partition, order)) }}
{%- endmacro %}
{% macro default__first_row_per(relation, partition, order) -%}
    select distinct on ({{ partition }}) *
    from {{ relation }}
    order by {{ partition }}, {{ order }}
{%- endmacro %}
{% macro spark__first_row_per(relation, partition, order) -%}
    select *
    from (
        select
            {{ relation }}.*,
            row_number() over (partition by {{ partition }} order by {{ order }}) as first_row_rank
        from {{ relation }}
    ) as numbered_rows
    where first_row_rank = 1
{%- endmacro %}

{#- Statements. -#}

{#- Refresh the planner statistics of the model's table (a post-hook). Spark plans without
    them unless its cost-based optimiser is on, so nothing is run there. -#}
{% macro analyze_this() -%}
    {{ return(adapter.dispatch('analyze_this', 'tapelens')()) }}
{%- endmacro %}
{% macro default__analyze_this() -%}
    analyze {{ this }}
{%- endmacro %}
{% macro spark__analyze_this() -%}
{%- endmacro %}

{#- Partitions by volume. On Spark the marts with a row per copy or tape object
    (fct_file_gaps, plan_tape_objects, fct_dataset_tape_gaps) are Delta tables partitioned by
    volume_bucket, the same hash of the volume as the canonical tables
    (tapelens.spark.tables.bucket_sql: pmod(xxhash64(volume), 16)), so that a build writes them
    one task per bucket, an incremental build's MERGE rewrites only the buckets of the volumes
    it recomputes, and a reader of one volume prunes to its bucket. volume_bucket_column() adds
    the column to a model's last select on Spark and nothing on PostgreSQL, whose marts stay as
    they are; the model's config names it in partition_by for Spark only. -#}
{% macro volume_bucket_column(volume='volume') -%}
    {{ return(adapter.dispatch('volume_bucket_column', 'tapelens')(volume)) }}
{%- endmacro %}
{% macro default__volume_bucket_column(volume) -%}
{%- endmacro %}
{% macro spark__volume_bucket_column(volume) -%}
    , cast(pmod(xxhash64({{ volume }}), 16) as int) as volume_bucket
{%- endmacro %}

{#- A CTE the query reads more than once, inlined where it is read rather than computed once
    into a work table: PostgreSQL (12 and later) materializes such a CTE, and a materialized CTE
    has no statistics, so the planner guesses its joins' sizes. int_transfers__located reads
    the catalog's copies and the reads three and four times; materialized, a site of
    10,000,000 copies and 240,000 reads was guessed at billions of rows, and the marts that
    read it (fct_drive_usage, fct_transfer_rates) joined it row by row to the transfers for
    minutes. Spark inlines CTEs itself and has no such keyword. -#}
{% macro not_materialized() -%}
    {{ return(adapter.dispatch('not_materialized', 'tapelens')()) }}
{%- endmacro %}
{% macro default__not_materialized() %}not materialized{% endmacro %}
{% macro spark__not_materialized() %}{% endmacro %}
