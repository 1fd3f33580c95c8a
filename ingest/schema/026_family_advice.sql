-- The last tape families advice of each pool, as `tapelens plan families` printed it: the options
-- it was computed with, its table (one row per pool and placement: the recorded one and each
-- hint level replayed) and the advised families. A later advice of a pool replaces the pool's
-- rows and leaves the other pools' alone; the dashboards read them through views.
create table tapelens.family_advice_runs (
    pool              text primary key,
    advised_at        timestamptz not null default now(),
    levels            integer[] not null,        -- the hint levels tried
    write_drives      integer not null check (write_drives > 0),
    open_families     integer not null check (open_families > 0),  -- the site's, all pools
    min_family_bytes  bigint not null check (min_family_bytes >= 0),
    sort_window_s     double precision not null check (sort_window_s >= 0),
    batch_bytes       bigint check (batch_bytes > 0),   -- null: migrate at each window's end
    written_since     timestamptz,               -- the write stream's window, null: open
    written_until     timestamptz,
    recall_drives     jsonb                      -- drive type -> drives the recalls were priced
                                                 -- on; null: the site's own
);

create table tapelens.family_advice (
    pool                  text not null
        references tapelens.family_advice_runs (pool) on delete cascade,
    placement             text not null,          -- 'recorded' or 'level k'
    level                 integer,                -- null for the recorded placement
    advised               boolean not null,       -- the pool's advice (recorded: keep as now)
    families              bigint,
    open_families         bigint,                 -- this pool's share of the open tapes
    files                 bigint not null,
    tapes                 bigint not null,
    tapes_per_dataset     double precision,
    mean_gap              double precision,       -- posdiff, 1 = contiguous
    campaigns             bigint not null,        -- the history's recall campaigns priced
    recall_mounts         bigint not null,
    recall_hours          double precision not null,   -- drive hours, mount to dismount
    recall_elapsed_hours  double precision not null,
    write_mounts          bigint,                 -- null for the recorded placement
    partly_filled_tapes   bigint,
    primary key (pool, placement)
);

create table tapelens.advised_families (
    pool        text not null
        references tapelens.family_advice_runs (pool) on delete cascade,
    family      text not null,   -- 'k: v0 | ... | vk', or '(rest)': files of no large group
    name        text not null,   -- as the exports name it: POOL_L<k>_<n>, POOL_REST
    hint_level  integer,         -- k; null for the rest
    hint_group  text,            -- the hint values of levels 0 to k, joined by ' | '
    files       bigint not null,
    bytes       bigint not null,
    tapes       bigint not null,  -- tapes the advised placement writes it on
    primary key (pool, family)
);
