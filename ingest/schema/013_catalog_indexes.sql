-- The catalog table keeps only indexes a query needs, each once.
--
-- The index TimescaleDB adds on the time column by default is not read: time ranges on the
-- catalog are met by chunk exclusion, and the copy key already ends with written_at.
drop index if exists tapelens.tape_files_written_at_idx;

-- Where a system has no file identity of its own (HPSS, Enstore), file_id is the path, and an
-- index on file_id would repeat the path index entry for entry. The file_id index holds only
-- the copies whose identity differs from their path; a lookup by file id reads the path index
-- for the others (analysis/recall/store.py).
drop index if exists tapelens.tape_files_file;
create index if not exists tape_files_file_id on tapelens.tape_files (file_id)
    where file_id <> path;
