{#- SQL literals from dbt vars, quoted so that a value can never end the string early. -#}
{% macro sql_text(value) -%}
    '{{ (value | string).replace("'", "''") }}'
{%- endmacro %}

{#- Midnight UTC of a date given as text ('2020-10-01'). -#}
{% macro utc_midnight(value) -%}
    {{ utc_midnight_of(sql_text(value)) }}
{%- endmacro %}

{#- A numeric var, refused at compile time unless it is a number (it goes into SQL as is). -#}
{% macro number_var(name) -%}
    {%- set value = var(name) -%}
    {%- if value is number and value is not boolean -%}
        {{ value }}
    {%- else -%}
        {{ exceptions.raise_compiler_error("var " ~ name ~ " must be a number, got " ~ value) }}
    {%- endif -%}
{%- endmacro %}
