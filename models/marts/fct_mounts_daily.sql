-- Mounts per UTC day (time_bucket on mounted_at), drive and media type of the mounted volume.
-- A mount that spans midnight counts on the day it was mounted. Missing drives and volumes
-- missing from the inventory group as 'unknown'. mounted_s sums mounts with a dismount record;
-- wait_s is mounted_at - requested_at where the request time is known. A failed or aborted
-- session is a mount that happened (its drive time counts in mounted_s); incomplete_mounts
-- are those whose mount or dismount record is missing.
with mounts as (
    select * from {{ ref('stg_mounts') }}
),

tapes as (
    select * from {{ ref('stg_tapes') }}
),

located as (
    select
        {{ utc_day('mounts.mounted_at') }} as day,
        coalesce(mounts.drive, 'unknown') as drive,
        coalesce(tapes.media_type, 'unknown') as media_type,
        mounts.volume,
        mounts.purpose,
        mounts.status,
        {{ seconds_between('mounts.mounted_at', 'mounts.dismounted_at') }} as mounted_s,
        {{ seconds_between('mounts.requested_at', 'mounts.mounted_at') }} as wait_s
    from mounts
    left join tapes
        on mounts.volume = tapes.volume
),

final as (
    select
        day,
        drive,
        media_type,
        count(*) as mounts,
        count(*) filter (where purpose = 'read') as read_mounts,
        count(*) filter (where purpose = 'write') as write_mounts,
        count(distinct volume) as volumes,
        count(*) filter (
            where status in ('no_dismount', 'no_mount', 'no_request')
        ) as incomplete_mounts,
        count(*) filter (where status in ('failed', 'aborted')) as failed_mounts,
        {{ as_double('coalesce(sum(mounted_s), 0)') }} as mounted_s,
        {{ as_double('avg(mounted_s)') }} as mean_mounted_s,
        {{ as_double('avg(wait_s)') }} as mean_wait_s,
        {{ as_double('max(wait_s)') }} as max_wait_s
    from located
    group by day, drive, media_type
)

select * from final
