{{ config(post_hook='{{ analyze_this() }}') }}

-- Per pool, media type and tape state: tapes, their capacity and what is on them. Tapes
-- without a pool group as 'none'. scratch_bytes is the space still writable: the whole
-- capacity of empty tapes and the unwritten rest of filling ones. reclaimable_bytes is
-- fct_tape_occupancy's (removed and duplicate copies on full and readonly tapes): what a
-- repack of those tapes gives back. Live bytes count tapes in the live data only (not
-- repacked, destroyed or exported).
with occupancy as (
    select * from {{ ref('fct_tape_occupancy') }}
),

final as (
    select
        coalesce(pool, 'none') as pool,
        media_type,
        state,
        bool_and(is_live_tape) as is_live_tape,
        count(*) as tapes,
        count(*) filter (where state = 'empty') as scratch_tapes,
        coalesce(sum(capacity_bytes), 0)::bigint as capacity_bytes,
        coalesce(sum(live_bytes) filter (where is_live_tape), 0)::bigint as live_bytes,
        coalesce(sum(
            case
                when state = 'empty' then capacity_bytes
                when state = 'filling' then greatest(capacity_bytes - live_bytes, 0)
                else 0
            end
        ), 0)::bigint as scratch_bytes,
        coalesce(sum(reclaimable_bytes), 0)::bigint as reclaimable_bytes,
        coalesce(sum(removed_bytes), 0)::bigint as removed_bytes,
        coalesce(sum(duplicate_bytes) filter (where is_live_tape), 0)::bigint as duplicate_bytes
    from occupancy
    group by coalesce(pool, 'none'), media_type, state
)

select * from final
