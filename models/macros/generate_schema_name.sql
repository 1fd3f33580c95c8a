{#- Schemas by folder, with exact names (tapelens_marts, not <target>_tapelens_marts): dashboards,
    reports and the planner read fixed schema names. The folders are the model paths themselves
    (see dbt_project.yml), so the folder is the first part of the file's path. -#}
{% macro generate_schema_name(custom_schema_name, node) -%}
    {%- set by_folder = {
        'staging': 'tapelens_staging',
        'intermediate': 'tapelens_intermediate',
        'marts': 'tapelens_marts',
    } -%}
    {%- if custom_schema_name is not none -%}
        {{ custom_schema_name | trim }}
    {%- else -%}
        {{ by_folder.get(node.original_file_path.split('/')[0], target.schema) }}
    {%- endif -%}
{%- endmacro %}
