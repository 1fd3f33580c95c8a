-- Which Spark build the dashboards show: one row per `dashboards publish --engine spark` (run
-- at the end of `marts build --engine spark` too), which copies the aggregate marts and the
-- rows of the canonical tables the dashboard views read from the Spark warehouse into this
-- database. built_at is the newest commit among the Delta tables it read; tables gives each
-- copied relation's rows and the Delta version and commit time it was read at. Written in the
-- copy's own transaction, so a row here is a copy that landed whole.
create table tapelens.dashboard_publications (
    publication_id  bigint generated always as identity primary key,
    published_at    timestamptz not null default now(),
    warehouse       text not null,
    built_at        timestamptz,
    tables          jsonb not null
);
