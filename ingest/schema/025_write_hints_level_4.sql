-- A fifth collocation level: ATLAS's policy package sends "4" (the parent dataset) for AOD
-- data, after the data type, stream, project and version (docs/formats/wlcg-hints.md).
alter table tapelens.write_hints
    add column level_4 text,
    add column length_4 bigint check (length_4 >= 0),
    add column size_4 bigint check (size_4 >= 0);
