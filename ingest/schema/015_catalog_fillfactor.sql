-- Room in each catalog page for a newer dump's updates. A newer dump retires copies and
-- rewrites changed ones in place; neither touches an indexed column, so with free space on the
-- row's page PostgreSQL keeps the new version there (a heap-only update) and none of the
-- table's five indexes gets a new entry. On full pages every such update adds an entry to each
-- index, in random places of indexes larger than memory at ten million copies. A tenth of each
-- page is left free, existing chunks included (they keep it from their next write on).
alter table tapelens.tape_files set (fillfactor = 90);
