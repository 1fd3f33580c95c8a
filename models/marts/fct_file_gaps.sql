{{
    config(
        materialized='incremental',
        incremental_strategy='append',
        on_schema_change='fail',
        pre_hook=[
            "{{ touched_volumes_hook(0) }}",
            "{{ touched_volumes_hook(1) }}",
            "{{ touched_volumes_hook(2) }}",
        ],
        post_hook="analyze {{ this }}",
        indexes=[{'columns': ['volume']}],
    )
}}

-- Each live copy on its tape, in its dataset's position order on that volume (position, then
-- offset inside an aggregate), with the gap before it. Byte gaps come from the tape objects
-- along the volume: an aggregate is one object whose size is the sum of its members.
-- A copy is named by its key (source, copy_id, written_at); its path and file id stay in the
-- catalog. They were half of this table's bytes (two copies of a 110-byte path a row at an
-- HPSS site) and widened every sort below, and no mart or chart reads them here.
with copies as (
    select
        source,
        copy_id,
        written_at,
        dataset,
        dataset_type,
        experiment,
        size_bytes,
        volume,
        media_type,
        position,
        offset_bytes,
        aggregate_id,
        copy_no
    from {{ ref('int_copies__located') }}
    where is_live and {{ where_touched() }}
),

along_tape as (
    -- one sort by (volume, position) serves both windows: the running total over a RANGE
    -- frame includes every member of the current object, so it ends where the object ends
    select
        copies.*,
        (sum(size_bytes) over to_object_end)::bigint as end_bytes,
        (sum(size_bytes) over tape_object)::bigint as object_bytes
    from copies
    window
        to_object_end as (partition by volume order by position),
        tape_object as (partition by volume, position)
),

ordered as (
    select
        along_tape.*,
        end_bytes - object_bytes as start_bytes,
        row_number() over dataset_on_tape as file_rank,
        lag(position) over dataset_on_tape as prev_position,
        lag(end_bytes) over dataset_on_tape as prev_end_bytes
    from along_tape
    window dataset_on_tape as (
        partition by dataset, volume
        order by position, offset_bytes nulls first, written_at, source, copy_id
    )
),

gaps as (
    select
        ordered.*,
        position - prev_position as posdiff,
        -- bytes of the tape objects strictly between the previous file's object and this one
        case
            when prev_end_bytes is not null then greatest(start_bytes - prev_end_bytes, 0)
        end as gap_bytes
    from ordered
),

final as (
    select
        source,
        copy_id,
        written_at,
        dataset,
        dataset_type,
        experiment,
        size_bytes,
        volume,
        media_type,
        position,
        offset_bytes,
        aggregate_id,
        copy_no,
        file_rank,
        prev_position,
        posdiff,
        gap_bytes,
        -- bytes streamed past before this file: the byte-gap model's skipped bytes, counted for
        -- gaps of 1..99 (an aggregate's first member carries the gap before the object)
        case
            when posdiff between 1 and {{ locate_min_posdiff() }} - 1 then gap_bytes
            else 0
        end as counted_gap_bytes,
        {{ gap_class('posdiff', 'offset_bytes', 'aggregate_id') }} as gap_class,
        {{ new_watermark() }} as watermark_run_id
    from gaps
)

select * from final
