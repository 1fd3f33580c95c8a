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
    {{ return(adapter.dispatch('precise', 'tapelens')(expr)) }}
{%- endmacro %}
{% macro default__precise(expr) -%}
    ({{ expr }})::numeric(40, 20)
{%- endmacro %}
{#- Spark's decimals stop at 38 digits; 18 decimals keep a mean of posdiffs exact to 1e-18. -#}
{% macro spark__precise(expr) -%}
    cast({{ expr }} as decimal(38, 18))
{%- endmacro %}

{#- Mean and sample standard deviation of posdiffs of the counted gaps pooled from per-volume sums
    (n, sum, sum of squares are exact integers): var = (n * ss - s^2) / (n * (n - 1)). -#}
{% macro pooled_mean(n, s) -%}
    {{ return(adapter.dispatch('pooled_mean', 'tapelens')(n, s)) }}
{%- endmacro %}
{% macro default__pooled_mean(n, s) -%}
    ({{ precise(s) }} / nullif({{ n }}, 0))::double precision
{%- endmacro %}
{#- In Spark a double division of the exact sums (integers, exact in a double below 2^53). -#}
{% macro spark__pooled_mean(n, s) -%}
    (cast({{ s }} as double) / nullif({{ n }}, 0))
{%- endmacro %}

{% macro pooled_variance(n, s, ss) -%}
    {{ return(adapter.dispatch('pooled_variance', 'tapelens')(n, s, ss)) }}
{%- endmacro %}
{% macro default__pooled_variance(n, s, ss) -%}
    greatest(({{ n }} * {{ ss }} - {{ s }} * {{ s }})::numeric(60, 20), 0)
    / ({{ n }} * ({{ n }} - 1))
{%- endmacro %}
{#- In Spark n * ss - s^2 is taken in 38-digit decimals (exact), then divided as a double. -#}
{% macro spark__pooled_variance(n, s, ss) -%}
    cast(greatest(
        cast({{ n }} as decimal(38, 0)) * cast({{ ss }} as decimal(38, 0))
        - cast({{ s }} as decimal(38, 0)) * cast({{ s }} as decimal(38, 0)),
        0
    ) as double)
    / (cast({{ n }} as double) * ({{ n }} - 1))
{%- endmacro %}

{% macro pooled_sigma(n, s, ss) -%}
    case
        when {{ n }} > 1 then {{ as_double('sqrt(' ~ pooled_variance(n, s, ss) ~ ')') }}
    end
{%- endmacro %}

{#- The standard error of the mean, sigma / sqrt(n), as sqrt(variance / n). -#}
{% macro pooled_sem(n, s, ss) -%}
    case
        when {{ n }} > 1 then {{ as_double('sqrt(' ~ pooled_variance(n, s, ss) ~ ' / ' ~ n ~ ')') }}
    end
{%- endmacro %}
