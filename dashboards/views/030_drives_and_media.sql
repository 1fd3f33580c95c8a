-- Mounts, errors and latencies for the Drives and media dashboard. They read the canonical
-- tables (tapelens.mounts, transfers, tapes, drives), not the marts, on purpose: they show
-- single events (one mount, one failed read, the reads of the latest week, failed ones
-- included) where the marts hold successful reads only (fct_transfer_rates) and mounts per day
-- (fct_mounts_daily), and an operator looking for a worn drive or cartridge needs the events
-- as soon as their logs are loaded, not after the next `marts build` (which replaces the mart
-- tables, and would drop a view over them).

-- One row per mount: the drive ('unknown' when the log does not say), the tape's media type,
-- pool and state, the wait from request to mount and the time mounted (seconds).
create view tapelens_dashboards.mount_events as
select
    mounts.source,
    mounts.volume,
    coalesce(mounts.drive, 'unknown') as drive,
    coalesce(tapes.media_type, 'unknown') as media_type,
    coalesce(tapes.pool, 'none') as pool,
    coalesce(tapes.state, 'unknown') as tape_state,
    mounts.purpose,
    mounts.status,
    mounts.requested_at,
    mounts.mounted_at,
    mounts.dismounted_at,
    extract(epoch from mounts.mounted_at - mounts.requested_at)::double precision as wait_s,
    extract(epoch from mounts.dismounted_at - mounts.mounted_at)::double precision as mounted_s
from tapelens.mounts as mounts
left join tapelens.tapes as tapes
    on tapes.volume = mounts.volume;

-- How long a recall waits before its tape turns, in two measures: the queue in front of the
-- tape system (transfers.queued_s, from staging exports and billing) and the wait for a mount
-- (mounts.requested_at -> mounted_at). One row per read or mount that tells.
create view tapelens_dashboards.recall_latency as
select
    'queued before the read' as measure,
    transfers.started_at as at,
    transfers.queued_s as latency_s,
    coalesce(tapes.media_type, 'unknown') as media_type
from tapelens.transfers as transfers
left join tapelens.tapes as tapes
    on tapes.volume = transfers.volume
where transfers.direction = 'read' and transfers.queued_s is not null
    and transfers.queued_s >= 0
union all
select
    'mount wait' as measure,
    mount_events.mounted_at as at,
    mount_events.wait_s as latency_s,
    mount_events.media_type
from tapelens_dashboards.mount_events
where mount_events.wait_s is not null and mount_events.wait_s >= 0;

-- One row per error a drive and a cartridge were part of: a failed read (with the drive its
-- log gives or its covering mount's) or a failed or aborted mount.
create view tapelens_dashboards.media_errors as
select
    started_at as at,
    volume,
    drive,
    media_type,
    'failed read' as kind,
    error
from tapelens_dashboards.failed_transfers
where direction = 'read' and volume is not null
union all
select
    mounted_at as at,
    volume,
    drive,
    media_type,
    'failed mount' as kind,
    status as error
from tapelens_dashboards.mount_events
where status in ('failed', 'aborted');

-- Errors per cartridge and drive, and which of them look worn. Errors that follow a cartridge
-- across drives point at the medium; a drive that fails on many cartridges points at the drive.
-- In three steps, so that one worn partner does not implicate the others: a cartridge with
-- errors on 2 or more drives is a media candidate; a drive with errors on 3 or more cartridges
-- other than media candidates is a suspect drive; a cartridge with errors on 2 or more drives
-- other than suspect drives is suspect media.
create view tapelens_dashboards.media_error_pairs as
with pairs as (
    select volume, drive, count(*) as errors
    from tapelens_dashboards.media_errors
    where drive <> 'unknown'
    group by volume, drive
),

candidates as (
    select volume
    from pairs
    group by volume
    having count(*) >= 2
),

suspect_drives as (
    select pairs.drive
    from pairs
    left join candidates
        on candidates.volume = pairs.volume
    where candidates.volume is null
    group by pairs.drive
    having count(*) >= 3
),

suspect_media as (
    select pairs.volume
    from pairs
    left join suspect_drives
        on suspect_drives.drive = pairs.drive
    where suspect_drives.drive is null
    group by pairs.volume
    having count(*) >= 2
)

select
    pairs.volume,
    pairs.drive,
    pairs.errors,
    suspect_media.volume is not null as suspect_media,
    suspect_drives.drive is not null as suspect_drive
from pairs
left join suspect_media
    on suspect_media.volume = pairs.volume
left join suspect_drives
    on suspect_drives.drive = pairs.drive;

-- Per cartridge: mounts, drives, errors, the drives its errors came from, and a verdict
-- (suspect media, errors, ok).
create view tapelens_dashboards.cartridge_health as
with mounted as (
    select volume, min(media_type) as media_type, min(pool) as pool,
        count(*) as mounts, count(distinct drive) as drives
    from tapelens_dashboards.mount_events
    group by volume
),

failing as (
    select volume, min(media_type) as media_type, count(*) as errors,
        count(*) filter (where kind = 'failed read') as failed_reads,
        count(*) filter (where kind = 'failed mount') as failed_mounts,
        count(distinct drive) filter (where drive <> 'unknown') as drives_with_errors
    from tapelens_dashboards.media_errors
    group by volume
),

suspect as (
    select distinct volume from tapelens_dashboards.media_error_pairs where suspect_media
)

select
    coalesce(mounted.volume, failing.volume) as volume,
    coalesce(mounted.media_type, failing.media_type) as media_type,
    coalesce(mounted.pool, 'none') as pool,
    coalesce(mounted.mounts, 0) as mounts,
    coalesce(mounted.drives, 0) as drives,
    coalesce(failing.errors, 0) as errors,
    coalesce(failing.failed_reads, 0) as failed_reads,
    coalesce(failing.failed_mounts, 0) as failed_mounts,
    coalesce(failing.drives_with_errors, 0) as drives_with_errors,
    coalesce(failing.errors, 0)::double precision / nullif(mounted.mounts, 0) as errors_per_mount,
    case
        when suspect.volume is not null then 'suspect media'
        when coalesce(failing.errors, 0) > 0 then 'errors'
        else 'ok'
    end as verdict
from mounted
full outer join failing
    on failing.volume = mounted.volume
left join suspect
    on suspect.volume = coalesce(mounted.volume, failing.volume);

-- Per drive: mounts, cartridges, hours mounted, errors, the cartridges its errors came from,
-- and a verdict (suspect drive, errors, ok; 'drive not logged' for errors whose drive neither
-- the log nor a mount tells).
create view tapelens_dashboards.drive_health as
with mounted as (
    select drive, count(*) as mounts,
        count(distinct volume) as cartridges,
        coalesce(sum(mounted_s), 0) / 3600.0 as mounted_h
    from tapelens_dashboards.mount_events
    group by drive
),

failing as (
    select drive, count(*) as errors,
        count(*) filter (where kind = 'failed read') as failed_reads,
        count(*) filter (where kind = 'failed mount') as failed_mounts,
        count(distinct volume) as cartridges_with_errors
    from tapelens_dashboards.media_errors
    group by drive
),

suspect as (
    select distinct drive from tapelens_dashboards.media_error_pairs where suspect_drive
)

select
    coalesce(mounted.drive, failing.drive) as drive,
    coalesce(drives.drive_type, 'unknown') as drive_type,
    coalesce(mounted.mounts, 0) as mounts,
    coalesce(mounted.cartridges, 0) as cartridges,
    coalesce(mounted.mounted_h, 0)::double precision as mounted_h,
    coalesce(failing.errors, 0) as errors,
    coalesce(failing.failed_reads, 0) as failed_reads,
    coalesce(failing.failed_mounts, 0) as failed_mounts,
    coalesce(failing.cartridges_with_errors, 0) as cartridges_with_errors,
    coalesce(failing.errors, 0)::double precision / nullif(mounted.mounts, 0) as errors_per_mount,
    case
        when coalesce(mounted.drive, failing.drive) = 'unknown' then 'drive not logged'
        when suspect.drive is not null then 'suspect drive'
        when coalesce(failing.errors, 0) > 0 then 'errors'
        else 'ok'
    end as verdict
from mounted
full outer join failing
    on failing.drive = mounted.drive
left join suspect
    on suspect.drive = coalesce(mounted.drive, failing.drive)
left join tapelens.drives as drives
    on drives.drive = coalesce(mounted.drive, failing.drive);

-- Reads of the last 7 days of the data itself (the 7 days ending on the day of the newest
-- read), so that a site loaded from old logs still shows its latest week.
create view tapelens_dashboards.recent_reads as
with latest as (
    select date_trunc('day', max(started_at)) + interval '1 day' as day_end
    from tapelens.transfers
    where direction = 'read'
)

select
    transfers.started_at,
    transfers.status,
    transfers.volume,
    transfers.size_bytes,
    transfers.duration_s
from tapelens.transfers as transfers
cross join latest
where transfers.direction = 'read'
    and transfers.started_at >= latest.day_end - interval '7 days'
    and transfers.started_at < latest.day_end;
