-- Each successful read with its gap at read time and its rate. Reads are grouped by the mount
-- they happened in: the latest mount of the volume that started at or before the read and had
-- not been dismounted before it (a mount with no dismount record stays open until the next
-- mount of the volume). Reads of a volume that fall in no recorded mount form sessions of
-- consecutive reads, each starting within var('read_session_gap_s') seconds of the previous
-- one. Within a session, in start order, read_posdiff = position - the previous read's
-- position; read_gap_class is first | same_object (0) | counted (1..99) |
-- locate (>= 100) | backward (< 0). rate_mb_s = size_bytes / 1e6 / duration_s.
with reads as (
    select * from {{ ref('int_transfers__located') }}
),

mounts as (
    select * from {{ ref('stg_mounts') }}
    where volume in (select volume from reads)
),

tapes as (
    select * from {{ ref('stg_tapes') }}
),

events as (
    select
        volume,
        mounted_at as event_at,
        0 as event_order,
        cast(null as {{ type_text() }}) as transfer_key,
        mounted_at,
        dismounted_at
    from mounts
    union all
    select
        volume,
        started_at as event_at,
        1 as event_order,
        transfer_key,
        cast(null as {{ type_instant() }}) as mounted_at,
        cast(null as {{ type_instant() }}) as dismounted_at
    from reads
    where volume is not null
),

numbered as (
    select
        events.*,
        sum(1 - event_order) over volume_time as mount_seq
    from events
    window volume_time as (
        partition by volume order by event_at, event_order, transfer_key
        rows unbounded preceding
    )
),

in_mount as (
    select
        numbered.*,
        first_value(mounted_at) over (
            partition by volume, mount_seq order by event_order, event_at
        ) as mount_mounted_at,
        first_value(dismounted_at) over (
            partition by volume, mount_seq order by event_order, event_at
        ) as mount_dismounted_at
    from numbered
),

read_mounts as (
    select
        transfer_key,
        volume,
        event_at as started_at,
        case
            when mount_seq > 0
                and (mount_dismounted_at is null or event_at <= mount_dismounted_at)
                then mount_mounted_at
        end as mount_mounted_at
    from in_mount
    where event_order = 1
),

windowed as (
    select
        read_mounts.*,
        case
            when mount_mounted_at is null
                and (
                    lag(started_at) over unmounted is null
                    or {{ more_than_seconds_after(
                        'started_at', 'lag(started_at) over unmounted',
                        number_var('read_session_gap_s')
                    ) }}
                )
                then 1
            else 0
        end as starts_window
    from read_mounts
    window unmounted as (
        partition by volume, mount_mounted_at is null order by started_at, transfer_key
    )
),

sessions as (
    select
        transfer_key,
        volume,
        mount_mounted_at,
        case
            when mount_mounted_at is not null
                then 'mount:' || volume || '@' || {{ utc_iso_text('mount_mounted_at') }}
            else 'window:' || volume || '#' || sum(starts_window) over (
                partition by volume, mount_mounted_at is null
                order by started_at, transfer_key
                rows unbounded preceding
            )
        end as session_id
    from windowed
),

sequenced as (
    select
        reads.*,
        sessions.session_id,
        case
            when sessions.mount_mounted_at is not null then 'mount'
            when sessions.session_id is not null then 'window'
        end as session_kind,
        sessions.mount_mounted_at,
        row_number() over session_order as read_seq,
        lag(reads.position) over session_order as prev_position
    from reads
    left join sessions
        on reads.transfer_key = sessions.transfer_key
    window session_order as (
        partition by sessions.session_id
        order by reads.started_at, reads.position nulls last, reads.transfer_key
    )
),

final as (
    select
        sequenced.transfer_key,
        sequenced.source,
        sequenced.started_at,
        sequenced.volume,
        sequenced.volume_from,
        coalesce(tapes.media_type, 'unknown') as media_type,
        sequenced.drive,
        sequenced.host,
        sequenced.file_id,
        sequenced.path,
        sequenced.dataset,
        sequenced.dataset_type,
        sequenced.position,
        sequenced.offset_bytes,
        sequenced.size_bytes,
        sequenced.duration_s,
        sequenced.queued_s,
        sequenced.locate_s,
        {{ as_double(
            'case when sequenced.duration_s > 0 then '
            ~ as_double('sequenced.size_bytes') ~ ' / 1e6 / sequenced.duration_s end'
        ) }} as rate_mb_s,
        sequenced.session_kind,
        sequenced.session_id,
        sequenced.mount_mounted_at,
        case when sequenced.session_id is not null then sequenced.read_seq end as read_seq,
        case when sequenced.session_id is not null then sequenced.prev_position end
            as prev_position,
        case
            when sequenced.session_id is not null
                then sequenced.position - sequenced.prev_position
        end as read_posdiff,
        case
            when sequenced.session_id is null or sequenced.position is null then null
            when sequenced.prev_position is null then 'first'
            when sequenced.position = sequenced.prev_position then 'same_object'
            when sequenced.position < sequenced.prev_position then 'backward'
            when sequenced.position - sequenced.prev_position < {{ locate_min_posdiff() }}
                then 'counted'
            else 'locate'
        end as read_gap_class,
        sequenced.requester
    from sequenced
    left join tapes
        on sequenced.volume = tapes.volume
)

select * from final
