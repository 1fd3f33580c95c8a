{#- The published gap conventions (docs/domain.md, "Positional gap"):
    - a member of a small-file aggregate (offset or aggregate id set, or sharing the position of
      the previous file) is left out of the gap statistics, every member of the aggregate;
    - the first file of a dataset on a tape has no gap;
    - posdiff 1..99 is a counted gap; posdiff >= 100 is a locate, reported apart. -#}
{% macro locate_min_posdiff() %}100{% endmacro %}

{% macro gap_class(posdiff, offset_bytes, aggregate_id) -%}
    case
        when {{ offset_bytes }} is not null or {{ aggregate_id }} is not null
            then 'aggregate_member'
        when {{ posdiff }} is null then 'first'
        when {{ posdiff }} = 0 then 'aggregate_member'
        when {{ posdiff }} < {{ locate_min_posdiff() }} then 'counted'
        else 'locate'
    end
{%- endmacro %}

{#- Statistics over posdiff are taken in numeric with 20 decimals: Postgres then computes the
    variance exactly and its square root to 20 decimals, so the double result is correctly
    rounded (plain numeric keeps only ~16 digits through sqrt). -#}
{% macro precise(expr) -%}
    ({{ expr }})::numeric(40, 20)
{%- endmacro %}

{#- Mean and sample standard deviation of posdiffs of the counted gaps pooled from per-volume sums
    (n, sum, sum of squares are exact integers): var = (n * ss - s^2) / (n * (n - 1)). -#}
{% macro pooled_mean(n, s) -%}
    ({{ precise(s) }} / nullif({{ n }}, 0))::double precision
{%- endmacro %}

{% macro pooled_variance(n, s, ss) -%}
    greatest(({{ n }} * {{ ss }} - {{ s }} * {{ s }})::numeric(60, 20), 0)
    / ({{ n }} * ({{ n }} - 1))
{%- endmacro %}

{% macro pooled_sigma(n, s, ss) -%}
    case
        when {{ n }} > 1 then sqrt({{ pooled_variance(n, s, ss) }})::double precision
    end
{%- endmacro %}

{#- The standard error of the mean, sigma / sqrt(n), as sqrt(variance / n). -#}
{% macro pooled_sem(n, s, ss) -%}
    case
        when {{ n }} > 1 then sqrt({{ pooled_variance(n, s, ss) }} / {{ n }})::double precision
    end
{%- endmacro %}
