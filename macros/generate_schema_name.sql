{#- Schemas by folder, with exact names (tapelens_marts, not <target>_tapelens_marts): dashboards,
    reports and the planner read fixed schema names. Each folder of models/ sets its schema in
    dbt_project.yml (+schema); a model without one lands in the profile's schema. -#}
{% macro generate_schema_name(custom_schema_name, node) -%}
    {%- if custom_schema_name is none -%}
        {{ target.schema }}
    {%- else -%}
        {{ custom_schema_name | trim }}
    {%- endif -%}
{%- endmacro %}
