-- A digest of each catalog row's values, written by the loader: a newer dump of a catalog is
-- compared with the stored copies by key and digest in the loader, and only the copies that
-- differ are sent to the server. A row without one (loaded before this column) counts as
-- changed once, and gets one.
alter table tapelens.tape_files add column if not exists row_digest bigint;
