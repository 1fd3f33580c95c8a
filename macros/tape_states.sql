{#- Generated from tapelens/tape_states.py (python -m tapelens.tape_states > macros/tape_states.sql);
    a test keeps them equal. The states of a group, as an SQL list for `in (...)`. -#}
{% macro tape_states(group) -%}
    {%- if group == 'not_recallable' -%}
        ('disabled', 'repacked', 'broken', 'exported', 'unavailable', 'destroyed')
    {%- elif group == 'copies_gone' -%}
        ('repacked', 'destroyed')
    {%- elif group == 'out_of_library' -%}
        ('repacked', 'destroyed', 'exported')
    {%- elif group == 'written_no_more' -%}
        ('full', 'readonly')
    {%- else -%}
        {{ exceptions.raise_compiler_error("tape_states: no group " ~ group) }}
    {%- endif -%}
{%- endmacro %}
