{#- Incremental builds by volume. Every row of a volume-keyed incremental mart carries
    watermark_run_id: the newest ingest run whose changes to the canonical tables
    (tape_files.ingest_run_id / removed_run_id, tapes.updated_run_id) the build which wrote it
    had seen. An incremental build recomputes exactly the volumes changed since the newest
    watermark in its table:

    1. a pre-hook lists them, with the new watermark, in a temporary table, in one statement
       (one snapshot), so that the delete and the insert work on the same volumes even while
       an ingest commits;
    2. a pre-hook deletes their rows, so volumes whose copies were all removed or whose tape
       was repacked disappear as they would in a full refresh; when most volumes changed it
       empties the table instead and every volume is recomputed (cheaper than deleting nearly
       every row, and no table left at twice its size in dead rows);
    3. the model recomputes their rows (append), reading the copies of those volumes only
       (a join to a small analysed table lets the planner use the tape_files volume index).

    The ingest stamps every copy it inserts or lists again (ingest_run_id), every copy it marks
    removed (removed_run_id) and every tape it adds or updates (updated_run_id) with its run id.
    Loads commit one at a time, so run ids grow in commit order: unlike a clock, a watermark of
    run ids cannot skip a load that committed after a build had read a later one, nor two loads
    within the same second. -#}

{% macro touched_volumes_table() -%}
    {{ return(adapter.dispatch('touched_volumes_table', 'tapelens')()) }}
{%- endmacro %}
{% macro default__touched_volumes_table() -%}
    tapelens_touched__{{ this.identifier }}
{%- endmacro %}
{#- Spark has no transaction-scoped temporary tables, and a temporary view would be computed
    again at each read (after the delete, against a newer watermark): a Delta table beside the
    model's, dropped by its post-hook (drop_touched). -#}
{% macro spark__touched_volumes_table() -%}
    {{ this.schema }}.tapelens_touched__{{ this.identifier }}
{%- endmacro %}

{#- The newest change the canonical tables show now (the watermark of a full build). -#}
{% macro source_watermark() -%}
    (select coalesce(greatest(
        (select max(greatest(ingest_run_id, removed_run_id)) from {{ ref('stg_tape_files') }}),
        (select max(updated_run_id) from {{ ref('stg_tapes') }})
    ), 0))
{%- endmacro %}

{#- Every volume with the new watermark, changed marking those changed since the table's own
    watermark (step 0 of the hooks, on either engine). -#}
{% macro touched_volumes_select() -%}
    {#- a table built before it had watermark_run_id is recomputed whole -#}
    {%- set columns = adapter.get_columns_in_relation(this) | map(attribute='name') -%}
    {%- set has_watermark = 'watermark_run_id' in (columns | list) -%}
with since as (
    select
        {%- if has_watermark %}
        coalesce(max(watermark_run_id), -1) as watermark_run_id
    from {{ this }}
        {%- else %}
        -1::bigint as watermark_run_id
        {%- endif %}
),
changes as (
    select volume, max(greatest(ingest_run_id, removed_run_id)) as changed_run_id
    from {{ ref('stg_tape_files') }}
    group by volume
    union all
    select volume, coalesce(updated_run_id, 0) as changed_run_id
    from {{ ref('stg_tapes') }}
),
newest as (
    select max(changed_run_id) as watermark_run_id from changes
)
select
    changes.volume,
    newest.watermark_run_id,
    bool_or(changes.changed_run_id > since.watermark_run_id) as changed
from changes
cross join since
cross join newest
group by changes.volume, newest.watermark_run_id
{%- endmacro %}

{#- Pre-hook `step` (0: list every volume, marking the changed ones; 1: delete the changed
    volumes' rows, or empty the table when most changed; 2: analyse what is left to recompute);
    empty, so skipped, when not incremental. -#}
{% macro touched_volumes_hook(step) -%}
    {{ return(adapter.dispatch('touched_volumes_hook', 'tapelens')(step)) }}
{%- endmacro %}

{% macro default__touched_volumes_hook(step) -%}
    {%- if is_incremental() -%}
        {%- set touched = touched_volumes_table() -%}
        {%- if step == 0 -%}
            create temporary table {{ touched }} on commit drop as
            {{ touched_volumes_select() }}
        {%- elif step == 2 -%}
            analyze {{ touched }}
        {%- else -%}
            {#- When most volumes changed (a newer dump touching every tape), deleting their rows
                one by one costs more than the rebuild and leaves the table twice its size in
                dead rows: the table is emptied and every volume recomputed. Otherwise (and on
                small sites, under 100 volumes, where either is quick) only the changed
                volumes' rows go, and only they stay listed for the model. -#}
            do $touched$
            begin
                if (
                    select count(*) filter (where changed) * 2 >= count(*) and count(*) >= 100
                    from {{ touched }}
                ) then
                    truncate {{ this }};
                else
                    delete from {{ this }}
                    where volume in (select volume from {{ touched }} where changed);
                    delete from {{ touched }} where not changed;
                end if;
            end
            $touched$
        {%- endif -%}
    {%- endif -%}
{%- endmacro %}

{#- Spark (Delta tables): 0 lists the volumes in a Delta table; 1 deletes the changed volumes'
    rows by a MERGE (Delta's DELETE takes no subquery); 2 leaves only the changed volumes
    listed, for the model. -#}
{% macro spark__touched_volumes_hook(step) -%}
    {%- if is_incremental() -%}
        {%- set touched = touched_volumes_table() -%}
        {%- if step == 0 -%}
            create or replace table {{ touched }} using delta as
            {{ touched_volumes_select() }}
        {%- elif step == 1 -%}
            merge into {{ this }} as built
            using (select volume from {{ touched }} where changed) as touched
            on built.volume = touched.volume
            when matched then delete
        {%- else -%}
            delete from {{ touched }} where not changed
        {%- endif -%}
    {%- endif -%}
{%- endmacro %}

{#- In the model: keep the rows of the touched volumes (incremental runs only). -#}
{% macro where_touched(column='volume') -%}
    {%- if is_incremental() -%}
        {{ column }} in (select volume from {{ touched_volumes_table() }})
    {%- else -%}
        true
    {%- endif -%}
{%- endmacro %}

{% macro new_watermark() -%}
    {%- if is_incremental() -%}
        (select max(watermark_run_id) from {{ touched_volumes_table() }})
    {%- else -%}
        {{ source_watermark() }}
    {%- endif -%}
{%- endmacro %}

{#- The same for a table keyed by file (source, file_id): the files to recompute are those with
    a copy (live or not) on a touched volume, listed once in a second temporary table. -#}
{% macro touched_files_table() -%}
    {{ return(adapter.dispatch('touched_files_table', 'tapelens')()) }}
{%- endmacro %}
{% macro default__touched_files_table() -%}
    tapelens_touched_files__{{ this.identifier }}
{%- endmacro %}
{% macro spark__touched_files_table() -%}
    {{ this.schema }}.tapelens_touched_files__{{ this.identifier }}
{%- endmacro %}

{% macro touched_files_hook(step) -%}
    {{ return(adapter.dispatch('touched_files_hook', 'tapelens')(step)) }}
{%- endmacro %}

{% macro default__touched_files_hook(step) -%}
    {%- if is_incremental() -%}
        {%- if step == 0 -%}
            {{ touched_volumes_hook(0) }}
        {%- elif step == 1 -%}
            create temporary table {{ touched_files_table() }} on commit drop as
            select distinct source, file_id
            from {{ ref('stg_tape_files') }}
            where volume in (select volume from {{ touched_volumes_table() }} where changed)
        {%- elif step == 2 -%}
            analyze {{ touched_volumes_table() }}, {{ touched_files_table() }}
        {%- else -%}
            delete from {{ this }}
            where (source, file_id) in (select source, file_id from {{ touched_files_table() }})
        {%- endif -%}
    {%- endif -%}
{%- endmacro %}

{#- Spark: 0 and 1 list the volumes and the files in Delta tables; 2 deletes the files' rows by
    a MERGE. -#}
{% macro spark__touched_files_hook(step) -%}
    {%- if is_incremental() -%}
        {%- if step == 0 -%}
            {{ spark__touched_volumes_hook(0) }}
        {%- elif step == 1 -%}
            create or replace table {{ touched_files_table() }} using delta as
            select distinct source, file_id
            from {{ ref('stg_tape_files') }}
            where volume in (select volume from {{ touched_volumes_table() }} where changed)
        {%- elif step == 2 -%}
            merge into {{ this }} as built
            using {{ touched_files_table() }} as touched
            on built.source = touched.source and built.file_id = touched.file_id
            when matched then delete
        {%- endif -%}
    {%- endif -%}
{%- endmacro %}

{#- Post-hook: drop the lists of touched volumes (and files) once the model is built. On
    PostgreSQL they are temporary tables the build's commit drops. -#}
{% macro drop_touched(files=false) -%}
    {{ return(adapter.dispatch('drop_touched', 'tapelens')(files)) }}
{%- endmacro %}
{% macro default__drop_touched(files) -%}
{%- endmacro %}
{% macro spark__drop_touched(files) -%}
    drop table if exists {{ touched_files_table() if files else touched_volumes_table() }}
{%- endmacro %}

{% macro where_touched_files() -%}
    {%- if is_incremental() -%}
        (source, file_id) in (select source, file_id from {{ touched_files_table() }})
    {%- else -%}
        true
    {%- endif -%}
{%- endmacro %}
