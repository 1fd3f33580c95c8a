{{
    config(
        materialized='incremental',
        incremental_strategy='append',
        on_schema_change='fail',
        partition_by=(['volume_bucket'] if target.type == 'spark' else none),
        pre_hook=[
            "{{ touched_volumes_hook(0) }}",
            "{{ touched_volumes_hook(1) }}",
            "{{ touched_volumes_hook(2) }}",
        ],
        post_hook=["{{ analyze_this() }}", "{{ drop_touched() }}"],
        indexes=[{'columns': ['volume']}],
    )
}}

-- Each live copy on its tape, in its dataset's position order on that volume (position, then
-- offset inside an aggregate), with the gap before it. Byte gaps come from the tape objects
-- along the volume, by the one definition of a tape object's byte address that the planner's
-- caches use too (macros/tape_objects.sql): an aggregate is one object whose size is the sum
-- of its members, and the bytes of a copy the catalog no longer lists stay on the tape until
-- it is repacked, so a read passes over them: they count in the gaps around them, while the
-- copy itself is no file of its dataset any more.
-- A copy is named by its key (source, copy_id, written_at); its path and file id stay in the
-- catalog. They were half of this table's bytes (two copies of a 110-byte path a row at an
-- HPSS site) and widened every sort below, and no mart or chart reads them here.
with located as (
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
        is_live
    from {{ ref('int_copies__located') }}
    where {{ where_touched() }}
),

tape_objects as (
    -- every copy of the volume, removed ones included
    {{ tape_objects('located') }}
),

along_tape as (
    select
        located.*,
        tape_objects.start_bytes::bigint as start_bytes,
        (tape_objects.start_bytes + tape_objects.object_bytes)::bigint as end_bytes
    from located
    inner join tape_objects
        on located.volume = tape_objects.volume
        and located.position = tape_objects.position
    where located.is_live
),

ordered as (
    select
        along_tape.*,
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

-- On Spark also volume_bucket, the table's partition column (macros/dialect.sql).
select *{{ volume_bucket_column() }} from final
