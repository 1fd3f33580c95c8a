-- Fitted throughput-model parameters per media type (tapelens model calibrate). Every fit that
-- was stored stays as history; exactly one row per media type is 'current', the one in use.
-- Media types without a current row use the defaults derived from tapelens.media_types.
create table tapelens.model_params (
    fit_id                bigint generated always as identity primary key,
    media_type            text not null references tapelens.media_types (media_type),
    parameters            jsonb not null,            -- ModelParams fields (analysis/throughput/model.py)
    n_reads               integer not null check (n_reads >= 0),
    n_mounts              integer not null check (n_mounts >= 0),
    r2                    double precision,          -- of per-read durations
    median_abs_pct_error  double precision,          -- of per-read rates, percent
    data_from             timestamptz,               -- first read used
    data_until            timestamptz,               -- last read used
    fitted_at             timestamptz not null default now(),
    status                text not null default 'current'
        check (status in ('current', 'superseded')),
    forced                boolean not null default false, -- stored with --force despite too little data
    notes                 text[] not null default '{}'    -- parameters left at their defaults, and why
);
create unique index model_params_one_current
    on tapelens.model_params (media_type) where status = 'current';
create index model_params_history on tapelens.model_params (media_type, fitted_at);
