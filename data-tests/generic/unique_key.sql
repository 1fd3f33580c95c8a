{#- A composite key is unique and not null: returns each key value that has a null part or
    belongs to more than one row (one query instead of a unique and a not_null per column). -#}
{% test unique_key(model, columns) %}
select {{ columns | join(', ') }}, count(*) as n_rows
from {{ model }}
group by {{ columns | join(', ') }}
having count(*) > 1
    {%- for column in columns %}
    or {{ column }} is null
    {%- endfor %}
{% endtest %}
