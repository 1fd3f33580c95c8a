-- Canonical tables of tapelens. Raw observations (tape_files, transfers, mounts) are
-- hypertables; dbt reads them as sources and never writes them.

create table tapelens.media_types (
    media_type        text primary key,           -- 'LTO-7', 'LTO-7M', '3592-JE', 'T10000D'
    family            text not null,              -- LTO | 3592 | T10000
    generation        integer not null,
    barcode_suffix    text,                       -- L7, M8, JE ... as printed on labels
    native_rate_mb_s  double precision not null,  -- uncompressed streaming rate, 1 MB = 1e6 B
    capacity_bytes    bigint not null,            -- uncompressed, 1 TB = 1e12 B
    robot_s           double precision not null,  -- cell to drive (the same back)
    load_s            double precision not null,  -- thread and load until ready
    locate_avg_s      double precision not null,  -- average locate from load point
    rewind_avg_s      double precision not null,
    unload_s          double precision not null,
    readable_by       text[] not null,            -- drive types that read this media
    writable_by       text[] not null,
    source            text not null               -- where the figures come from
);

create table tapelens.drives (
    drive       text primary key,
    drive_type  text not null,            -- a media_type name: the generation the drive writes
    library     text,
    state       text not null default 'online'
);

create table tapelens.tapes (
    volume          text primary key,     -- as the catalogs name it (HPSS: cartridge, no side)
    barcode         text,                 -- label with media suffix, e.g. A85532L8
    media_type      text not null default 'unknown',
    library         text,
    pool            text,
    capacity_bytes  bigint,
    state           text not null default 'full'
        check (state in ('empty', 'filling', 'full', 'readonly', 'disabled', 'repacked', 'unknown')),
    media_from      text not null default 'inventory'
        check (media_from in ('inventory', 'barcode', 'unknown')),
    updated_at      timestamptz not null default now()
);
create index tapes_media_type_idx on tapelens.tapes (media_type);

create table tapelens.ingest_runs (
    run_id       bigint generated always as identity primary key,
    kind         text not null check (kind in ('catalog', 'transfers', 'mounts', 'tapes')),
    format       text not null,
    source       text not null,
    path         text not null,
    sha256       text not null,
    started_at   timestamptz not null default now(),
    finished_at  timestamptz,
    rows         bigint not null default 0,
    rejects      bigint not null default 0,
    status       text not null check (status in ('running', 'loaded', 'failed')),
    message      text
);
-- A file is loaded once per kind, format and source: a re-run of the same bytes is a no-op.
create unique index ingest_runs_loaded_once
    on tapelens.ingest_runs (sha256, kind, format, source) where status = 'loaded';

create table tapelens.ingest_rejects (
    run_id   bigint not null references tapelens.ingest_runs (run_id) on delete cascade,
    line_no  bigint not null,
    raw      text not null,            -- the line as read (undecodable bytes escaped)
    reason   text not null,
    primary key (run_id, line_no)
);

-- One copy of one file on one tape.
create table tapelens.tape_files (
    source        text not null,        -- the catalog it came from (an HPSS, TSM, CTA... system)
    copy_id       text not null,        -- the system's identity of this copy
    file_id       text not null,        -- the logical file; copies of one file share it
    path          text not null,
    dataset       text not null,
    dataset_type  text not null,
    experiment    text not null,
    size_bytes    bigint not null check (size_bytes >= 0),
    volume        text not null,
    position      bigint not null,      -- the system's own unit: section, rank, fseq, file number
    offset_bytes  bigint,               -- order inside a small-file aggregate; null when alone
    aggregate_id  text,
    copy_no       integer not null default 1,
    written_at    timestamptz not null,
    checksum      text,
    ingest_run_id bigint not null,
    last_seen_at  timestamptz not null default now(),
    removed_at    timestamptz           -- set when a newer dump of the source no longer lists it
);
select create_hypertable('tapelens.tape_files', 'written_at',
                         chunk_time_interval => interval '180 days');
create unique index tape_files_copy_key on tapelens.tape_files (source, copy_id, written_at);
-- The gap query walks a tape in position order; per-dataset lookups start from the dataset.
create index tape_files_volume_pos on tapelens.tape_files (volume, position, offset_bytes);
create index tape_files_dataset on tapelens.tape_files (dataset, volume);
create index tape_files_file on tapelens.tape_files (file_id);
create index tape_files_path on tapelens.tape_files (path);

-- One file moved to or from tape.
create table tapelens.transfers (
    source        text not null,
    direction     text not null check (direction in ('read', 'write')),
    volume        text,                 -- null when the log does not say (dCache billing)
    drive         text,
    host          text,                 -- pool or tape server that did the transfer
    file_id       text,
    path          text,
    position      bigint,
    size_bytes    bigint,
    started_at    timestamptz not null,
    duration_s    double precision,     -- transfer itself, queueing excluded
    queued_s      double precision,
    locate_s      double precision,     -- positioning time when the log gives it
    status        text not null check (status in ('ok', 'failed')),
    error         text,
    requester     text,
    ingest_run_id bigint not null
);
select create_hypertable('tapelens.transfers', 'started_at',
                         chunk_time_interval => interval '30 days');
create unique index transfers_key on tapelens.transfers
    (source, direction, coalesce(file_id, ''), coalesce(path, ''), started_at);
create index transfers_volume on tapelens.transfers (volume, started_at);
create index transfers_path on tapelens.transfers (path);

-- One cartridge mount.
create table tapelens.mounts (
    source         text not null,
    volume         text not null,
    drive          text,
    requested_at   timestamptz,
    mounted_at     timestamptz not null,
    dismounted_at  timestamptz,
    purpose        text not null default 'unknown' check (purpose in ('read', 'write', 'unknown')),
    status         text not null default 'complete'
        check (status in ('complete', 'no_dismount', 'no_mount', 'no_request')),
    ingest_run_id  bigint not null
);
select create_hypertable('tapelens.mounts', 'mounted_at',
                         chunk_time_interval => interval '90 days');
create unique index mounts_key on tapelens.mounts (source, volume, mounted_at);
create index mounts_drive on tapelens.mounts (drive, mounted_at);
