-- A digest of the listing line each catalog row was read from, for formats whose every row
-- follows from its own line (and the load's options and dataset rules, which seed it): CTA's
-- `tf ls`. A newer dump of such a catalog leaves a line whose digest is a live copy's unread:
-- it lists that copy unchanged. A row without one (loaded before this column, or from a
-- format whose rows depend on other lines) is never recognised by its line; a newer dump that
-- reads its line and finds the row unchanged gives it one.
alter table tapelens.tape_files add column if not exists line_digest bigint;
