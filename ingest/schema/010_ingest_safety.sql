-- Loads that can restore an older dump, and marts whose watermark is the ingest run id.

-- The same bytes may be loaded again once a newer file has replaced them (restoring the older
-- state); the loader decides when a file is a no-op, so the unique index becomes a plain one.
drop index if exists tapelens.ingest_runs_loaded_once;
create index if not exists ingest_runs_by_sha
    on tapelens.ingest_runs (sha256, kind, format, source) where status = 'loaded';
create index if not exists ingest_runs_by_source
    on tapelens.ingest_runs (kind, source, run_id) where status = 'loaded';

-- The volumes a per-volume listing covered (null for a whole-catalog dump).
alter table tapelens.ingest_runs add column if not exists volumes text[];

-- Which run retired a copy, and which run last changed a tape. Loads are serialised, so run ids
-- grow in commit order: incremental marts take the highest run id they have seen as their
-- watermark, which, unlike a clock, cannot miss a load that committed late.
alter table tapelens.tape_files add column if not exists removed_run_id bigint;
alter table tapelens.tapes add column if not exists updated_run_id bigint;

-- The incremental marts built with a clock watermark cannot be extended with a run-id one: they
-- are derived data, dropped here and built whole by the next `tapelens models build`.
drop table if exists tapelens_marts.fct_file_gaps cascade;
drop table if exists tapelens_marts.fct_dataset_tape_gaps cascade;
drop table if exists tapelens_intermediate.int_copies__duplicated cascade;
