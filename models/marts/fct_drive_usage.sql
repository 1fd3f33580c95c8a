-- Drive use per UTC day (time_bucket), drive and media type: time mounted (from mounts) and
-- data moved (from transfers, whose volume is filled from the catalog when the log has none).
-- busy_share = mounted_s / 86400. Missing drives group as 'unknown'.
with mounts as (
    select * from {{ ref('fct_mounts_daily') }}
),

transfers as (
    select * from {{ ref('stg_transfers') }}
    where status = 'ok'
),

reads as (
    select * from {{ ref('int_transfers__located') }}
),

tapes as (
    select * from {{ ref('stg_tapes') }}
),

moved as (
    select
        transfers.started_at,
        coalesce(transfers.drive, 'unknown') as drive,
        coalesce(tapes.media_type, 'unknown') as media_type,
        transfers.direction,
        coalesce(transfers.size_bytes, reads.size_bytes) as size_bytes,
        transfers.duration_s
    from transfers
    left join reads
        on transfers.transfer_key = reads.transfer_key
    left join tapes
        on coalesce(transfers.volume, reads.volume) = tapes.volume
),

per_day_moved as (
    select
        {{ utc_day('started_at') }} as day,
        drive,
        media_type,
        count(*) filter (where direction = 'read') as files_read,
        count(*) filter (where direction = 'write') as files_written,
        coalesce(sum(size_bytes) filter (where direction = 'read'), 0)::bigint as read_bytes,
        coalesce(sum(size_bytes) filter (where direction = 'write'), 0)::bigint as written_bytes,
        {{ as_double('coalesce(sum(duration_s), 0)') }} as transfer_s
    from moved
    group by 1, 2, 3
),

final as (
    select
        coalesce(mounts.day, per_day_moved.day) as day,
        coalesce(mounts.drive, per_day_moved.drive) as drive,
        coalesce(mounts.media_type, per_day_moved.media_type) as media_type,
        coalesce(mounts.mounts, 0) as mounts,
        coalesce(mounts.mounted_s, 0) as mounted_s,
        coalesce(mounts.mounted_s, 0) / {{ as_double('86400.0') }} as busy_share,
        coalesce(per_day_moved.files_read, 0) as files_read,
        coalesce(per_day_moved.files_written, 0) as files_written,
        coalesce(per_day_moved.read_bytes, 0) as read_bytes,
        coalesce(per_day_moved.written_bytes, 0) as written_bytes,
        coalesce(per_day_moved.transfer_s, 0) as transfer_s,
        (coalesce(per_day_moved.read_bytes, 0) + coalesce(per_day_moved.written_bytes, 0))
        / {{ as_double('1e6') }} / nullif(per_day_moved.transfer_s, 0) as transfer_rate_mb_s
    from mounts
    full outer join per_day_moved
        on mounts.day = per_day_moved.day
        and mounts.drive = per_day_moved.drive
        and mounts.media_type = per_day_moved.media_type
)

select * from final
