-- What the experiments said about each file they sent to tape: the WLCG archive metadata's
-- collocation hints (docs/formats/wlcg-hints.md). One row is one record of a written file: a
-- file recorded twice with the same hints is one row; with different hints, both rows stay
-- and both are marked contradictory, since no one can say which is right.
alter table tapelens.ingest_runs drop constraint if exists ingest_runs_kind_check;
alter table tapelens.ingest_runs add constraint ingest_runs_kind_check
    check (kind in ('catalog', 'transfers', 'mounts', 'tapes', 'hints'));

create table tapelens.write_hints (
    source          text not null,        -- fts, csv, kit: where the record was read
    file_key        text not null,        -- the file as the catalog names it: path, or file id
    path            text,                 -- the path the record gives, after --path-map
    written_at      timestamptz not null, -- when the file reached the storage
    size_bytes      bigint check (size_bytes >= 0),
    experiment      text,                 -- the VO the record names, else from the path
    activity        text,
    -- Collocation levels from broad ("0") to narrow ("3"); null where the hints leave one out.
    level_0         text,
    level_1         text,
    level_2         text,
    level_3         text,
    -- The group's announced number of files and bytes at each level (additional_hints).
    length_0        bigint check (length_0 >= 0),
    length_1        bigint check (length_1 >= 0),
    length_2        bigint check (length_2 >= 0),
    length_3        bigint check (length_3 >= 0),
    size_0          bigint check (size_0 >= 0),
    size_1          bigint check (size_1 >= 0),
    size_2          bigint check (size_2 >= 0),
    size_3          bigint check (size_3 >= 0),
    schema_version  integer,
    status          text not null check (
        status in ('ok', 'empty', 'absent', 'malformed', 'truncated', 'contradictory')
    ),
    reason          text,                 -- why the hints are not ok
    raw_metadata    text,                 -- the metadata as read, kept when it cannot be read
    -- md5 of the levels as one text: a record repeated with the same hints is the same row.
    levels_digest   text not null,
    ingest_run_id   bigint not null
);
create unique index write_hints_key
    on tapelens.write_hints (source, file_key, written_at, levels_digest);
create index write_hints_file on tapelens.write_hints (file_key);
create index write_hints_written on tapelens.write_hints (written_at);
