-- Failed transfers with the tape, drive, media type and dataset they concern. Logs that name
-- only the path (dCache billing) get the volume and the dataset from the catalog: the newest
-- copy of that path, the one a tape client would have read. Logs that name the tape but not
-- the drive (staging exports, billing) get the drive of the mount of that volume covering the
-- transfer's start (a mount without a dismount record covers a day at most). drive_from says
-- where the drive came from: log, mount or unknown.
-- It reads the canonical tables (tapelens.transfers, tape_files, mounts, tapes), not the marts:
-- the marts hold successful reads only (fct_transfer_rates), and a failure should show on the
-- dashboard as soon as its log is loaded, not after the next `marts build` (which replaces the
-- mart tables, and would drop a view over them).
create view tapelens_dashboards.failed_transfers as
select
    transfers.started_at,
    transfers.direction,
    transfers.source,
    coalesce(transfers.volume, copies.volume) as volume,
    coalesce(transfers.drive, covering.drive, 'unknown') as drive,
    case
        when transfers.drive is not null then 'log'
        when covering.drive is not null then 'mount'
        else 'unknown'
    end as drive_from,
    coalesce(tapes.media_type, 'unknown') as media_type,
    coalesce(copies.dataset, 'unknown') as dataset,
    coalesce(copies.dataset_type, 'unknown') as dataset_type,
    coalesce(copies.experiment, 'unknown') as experiment,
    coalesce(transfers.size_bytes, copies.size_bytes) as size_bytes,
    coalesce(nullif(left(transfers.error, 80), ''), 'no error text') as error,
    transfers.path,
    transfers.requester
from tapelens.transfers as transfers
left join lateral (
    select tape_files.volume, tape_files.dataset, tape_files.dataset_type,
        tape_files.experiment, tape_files.size_bytes
    from tapelens.tape_files
    where tape_files.path = transfers.path
    order by tape_files.written_at desc
    limit 1
) as copies on true
left join lateral (
    select mounts.drive
    from tapelens.mounts as mounts
    where transfers.drive is null
        and mounts.drive is not null
        and mounts.volume = coalesce(transfers.volume, copies.volume)
        and mounts.mounted_at <= transfers.started_at
        and mounts.mounted_at > transfers.started_at - interval '1 day'
        and coalesce(mounts.dismounted_at, mounts.mounted_at + interval '1 day')
        >= transfers.started_at
    order by mounts.mounted_at desc
    limit 1
) as covering on true
left join tapelens.tapes as tapes
    on tapes.volume = coalesce(transfers.volume, copies.volume)
where transfers.status = 'failed';
