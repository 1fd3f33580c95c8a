-- What the figures of the dashboards stand on, for the "Data as of" table at the foot of
-- Placement health, Recall operations, Drives and media and Recall campaigns. It reads the
-- records the loads and the Spark copies keep (tapelens.ingest_runs,
-- tapelens.dashboard_publications, migration 027), not the marts: a load shows here as soon
-- as it commits, and `marts build` replaces the mart tables (which would drop a view over
-- them).
--
-- On a database loaded on PostgreSQL, one row per kind of input and source: its newest
-- successful load. The files one command loads commit in one transaction (one finished_at):
-- they are one load, their rows and refused lines summed, their first file named and their
-- number given. A failed load, or one still running, changed nothing and is not shown.
--
-- A database fed by a Spark build has no loads (the copy refuses a database with loads):
-- its last copy gives a row for the build (built_at, the newest Delta commit among the tables
-- it read; when it was copied here; the warehouse) and a row per input whose table it read,
-- at that Delta table's commit time: when that input last changed in the warehouse. The
-- catalog, tapes, transfers and mounts are inputs; drives are worked out or listed apart.
create view tapelens_dashboards.data_as_of as
with loads as (
    select
        runs.run_id,
        runs.kind,
        runs.source,
        runs.format,
        runs.path,
        runs.finished_at,
        runs.rows,
        runs.rejects,
        rank() over (
            partition by runs.kind, runs.source order by runs.finished_at desc
        ) as recency
    from tapelens.ingest_runs as runs
    where runs.status = 'loaded' and runs.finished_at is not null
),

newest_loads as (
    select
        'PostgreSQL' as engine,
        loads.kind,
        loads.source,
        -- one command loads one format; several would be listed
        string_agg(distinct loads.format, ', ') as format,
        (array_agg(loads.path order by loads.run_id))[1] as path,
        count(*) as files,
        loads.finished_at as as_of,
        sum(loads.rows)::bigint as rows,
        sum(loads.rejects)::bigint as rejects,
        null::timestamptz as published_at,
        null::text as warehouse,
        null::bigint as delta_version
    from loads
    where loads.recency = 1
    group by loads.kind, loads.source, loads.finished_at
),

last_copy as (
    select
        publications.published_at,
        publications.warehouse,
        publications.built_at,
        publications.tables
    from tapelens.dashboard_publications as publications
    order by publications.publication_id desc
    limit 1
),

-- The canonical tables a copy reads, as the kinds of input they hold.
inputs (relation, kind) as (
    values
        ('tapelens.tape_files', 'catalog'),
        ('tapelens.tapes', 'tapes'),
        ('tapelens.transfers', 'transfers'),
        ('tapelens.mounts', 'mounts')
),

spark_build as (
    select
        'Spark' as engine,
        'marts' as kind,
        null::text as source,
        null::text as format,
        null::text as path,
        null::bigint as files,
        last_copy.built_at as as_of,
        null::bigint as rows,
        null::bigint as rejects,
        last_copy.published_at,
        last_copy.warehouse,
        null::bigint as delta_version
    from last_copy
),

spark_inputs as (
    select
        'Spark' as engine,
        inputs.kind,
        null::text as source,
        null::text as format,
        inputs.relation as path,
        null::bigint as files,
        (copied.value ->> 'committed_at')::timestamptz as as_of,
        null::bigint as rows,
        null::bigint as rejects,
        last_copy.published_at,
        last_copy.warehouse,
        (copied.value ->> 'delta_version')::bigint as delta_version
    from last_copy
    cross join lateral jsonb_each(last_copy.tables) as copied (relation, value)
    inner join inputs
        on inputs.relation = copied.relation
)

select * from newest_loads
union all
select * from spark_build
union all
select * from spark_inputs;
