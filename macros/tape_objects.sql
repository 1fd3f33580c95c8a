{#- A tape object's byte address: the one definition, for the mart plan_tape_objects and for the
    planner's catalog read of volumes the marts do not cover yet (analysis/recall/store.py
    renders this file itself, so the macro may use nothing of dbt's).

    `copies` is a relation or subquery with volume, position and size_bytes, listing every copy
    of each volume, removed ones included: their bytes stay on the tape until it is repacked,
    and a read passes over them. The copies at one position are one object (a file alone, or
    the members of a small-file aggregate), whose bytes are the sum of its copies' sizes. An
    object's start_bytes is the bytes of the objects before it on the tape, in position order.
    Sums are taken in double precision (exact below 2^53 bytes, 9 PB). With `average`, each row
    also carries the volume's average object size (avg_object_bytes). -#}
{% macro tape_objects(copies, average=false) -%}
{#- Spark SQL (a dbt build on the spark target) has neither the collation "C" (its strings
    compare as bytes already) nor the type name double precision. -#}
{%- set spark = target is defined and target.type == 'spark' -%}
{%- set by_volume = 'volume' if spark else 'volume collate "C"' -%}
{%- set double = 'double' if spark else 'double precision' -%}
select
    volume,
    position,
    object_bytes,
    coalesce(sum(object_bytes) over (
        partition by {{ by_volume }} order by position
        rows between unbounded preceding and 1 preceding
    ), 0) as start_bytes
    {%- if average %},
    avg(object_bytes) over (partition by {{ by_volume }}) as avg_object_bytes
    {%- endif %}
from (
    select volume, position, sum(size_bytes::{{ double }}) as object_bytes
    from {{ copies }}
    group by volume, position
) as objects
{%- endmacro %}
