-- A request that was never mounted, or a dismount whose mount is in another log file, is a
-- piece of a mount, not a mount: it waits here until the file holding the rest of its mount is
-- loaded (hpss_pvl.merge_open_mounts joins them), and a request no mount followed stays here.
create table tapelens.mount_pieces (
    source         text not null,
    volume         text not null,
    kind           text not null check (kind in ('request', 'dismount')),
    at             timestamptz not null,
    drive          text,
    ingest_run_id  bigint not null,
    primary key (source, volume, kind, at)
);

-- Pieces stored as mounts before (status no_mount, mounted at the request or dismount time).
with moved as (
    delete from tapelens.mounts m
    using tapelens.ingest_runs r
    where r.run_id = m.ingest_run_id and r.format = 'hpss-pvl' and m.status = 'no_mount'
    returning m.source, m.volume, m.drive, m.requested_at, m.dismounted_at, m.ingest_run_id
)
insert into tapelens.mount_pieces (source, volume, kind, at, drive, ingest_run_id)
select source, volume,
       case when dismounted_at is null then 'request' else 'dismount' end,
       coalesce(dismounted_at, requested_at), drive, ingest_run_id
from moved
on conflict do nothing;
