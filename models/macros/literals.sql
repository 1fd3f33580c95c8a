{#- SQL literals from dbt vars, quoted so that a value can never end the string early. -#}
{% macro sql_text(value) -%}
    '{{ (value | string).replace("'", "''") }}'
{%- endmacro %}

{#- Midnight UTC of a date given as text ('2020-10-01'). -#}
{% macro utc_midnight(value) -%}
    ({{ sql_text(value) }}::date::timestamp at time zone 'UTC')
{%- endmacro %}
