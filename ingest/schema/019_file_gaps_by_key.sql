-- fct_file_gaps names each copy by its catalog key alone; the path and file id it used to repeat
-- stay in tape_files. An incremental build cannot drop columns from the table it extends, so
-- the mart (derived data) is dropped here and built whole by the next `tapelens marts build`.
drop table if exists tapelens_marts.fct_file_gaps cascade;
