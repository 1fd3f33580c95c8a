-- A copy's file id is stored only where it differs from its path; null means the path is the
-- file's identity. Where a system has no file identity of its own (HPSS, Enstore) every row
-- held its path twice: a quarter of the catalog's heap, and of the bytes a load sends.
-- Readers take coalesce(file_id, path) (dbt's stg_tape_files, the planner, the analyses). Rows
-- stored before keep their file id: both forms read the same, and rewriting every row of a
-- large catalog here would double its size until a vacuum.
alter table tapelens.tape_files alter column file_id drop not null;
