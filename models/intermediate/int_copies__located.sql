-- Every copy with the cartridge it sits on: media type, capacity and state. A copy is live
-- while its catalog still lists it (removed_at is null) and its tape has not been repacked;
-- volumes missing from the inventory count as state 'unknown', media 'unknown'.
with copies as (
    select * from {{ ref('stg_tape_files') }}
),

tapes as (
    select * from {{ ref('stg_tapes') }}
),

media_types as (
    select * from {{ ref('stg_media_types') }}
),

final as (
    select
        copies.source,
        copies.copy_id,
        copies.written_at,
        copies.file_id,
        copies.path,
        copies.dataset,
        copies.dataset_type,
        copies.experiment,
        copies.size_bytes,
        copies.volume,
        copies.position,
        copies.offset_bytes,
        copies.aggregate_id,
        copies.copy_no,
        copies.removed_at,
        coalesce(tapes.media_type, 'unknown') as media_type,
        coalesce(tapes.state, 'unknown') as tape_state,
        coalesce(tapes.capacity_bytes, media_types.capacity_bytes) as capacity_bytes,
        -- a copy is gone when the dump no longer lists it, or its tape was repacked or
        -- destroyed; a disabled, broken, exported or unavailable tape still holds it, but a
        -- recall cannot read it there (the planner's list, tapelens/tape_states.py)
        copies.removed_at is null
        and coalesce(tapes.state, 'unknown') not in {{ tape_states('copies_gone') }} as is_live,
        coalesce(tapes.state, 'unknown') not in {{ tape_states('not_recallable') }}
            as is_readable
    from copies
    left join tapes
        on copies.volume = tapes.volume
    left join media_types
        on tapes.media_type = media_types.media_type
)

select * from final
