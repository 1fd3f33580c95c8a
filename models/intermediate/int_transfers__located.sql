-- Successful reads with the copy they read. Logs such as dCache billing name only the path (CTA
-- the archive id): the copy gives volume, position, offset and dataset. Candidate copies match
-- by path, else by file_id; among them the copy on the logged volume and position wins, then a
-- copy that was in the catalog when the read started, then the newest (tape clients recall the
-- newest copy; ties as analysis/recall/baselines/newest.py breaks them). A volume or position the log
-- gives is kept as logged.
with reads as {{ not_materialized() }} (
    select * from {{ ref('stg_transfers') }}
    where direction = 'read' and status = 'ok'
),

copies as {{ not_materialized() }} (
    select * from {{ ref('int_copies__located') }}
),

by_path as (
    select
        reads.transfer_key,
        copies.source as copy_source,
        copies.copy_id,
        copies.volume,
        copies.position,
        copies.offset_bytes,
        copies.size_bytes,
        copies.dataset,
        copies.dataset_type,
        copies.written_at,
        copies.copy_no,
        copies.removed_at,
        0 as match_rank
    from reads
    inner join copies
        on reads.path = copies.path
),

by_file_id as (
    select
        reads.transfer_key,
        copies.source as copy_source,
        copies.copy_id,
        copies.volume,
        copies.position,
        copies.offset_bytes,
        copies.size_bytes,
        copies.dataset,
        copies.dataset_type,
        copies.written_at,
        copies.copy_no,
        copies.removed_at,
        1 as match_rank
    from reads
    inner join copies
        on reads.file_id = copies.file_id
    where reads.path is null
        or not exists (select 1 from copies as same_path where same_path.path = reads.path)
),

candidates as (
    select * from by_path
    union all
    select * from by_file_id
),

on_logged_volume as (
    select
        candidates.*,
        reads.position is not null and candidates.position = reads.position
            as at_logged_position,
        candidates.written_at <= reads.started_at
        and (candidates.removed_at is null or candidates.removed_at > reads.started_at)
            as listed_at_read
    from candidates
    inner join reads
        on candidates.transfer_key = reads.transfer_key
    where reads.volume is null or candidates.volume = reads.volume
),

-- The copy on the logged position, then one listed when the read started, then by path, then
-- the newest as the product orders a file's copies (analysis/recall/baselines/newest.py
-- newest_first): the latest write, the highest copy number, then volume and position. Where
-- nulls sort is spelt out (PostgreSQL's defaults): Spark's defaults differ.
chosen as (
    {{ first_row_per('on_logged_volume', 'transfer_key',
        'at_logged_position desc nulls first,
        listed_at_read desc nulls first,
        match_rank,
        written_at desc nulls first,
        copy_no desc nulls first,
        volume nulls last,
        position nulls last,
        offset_bytes nulls last,
        copy_id nulls last') }}
),

final as (
    select
        reads.transfer_key,
        reads.source,
        reads.started_at,
        reads.drive,
        reads.host,
        reads.file_id,
        reads.path,
        coalesce(reads.volume, chosen.volume) as volume,
        case
            when reads.volume is not null then 'transfer'
            when chosen.volume is not null then 'catalog'
        end as volume_from,
        coalesce(reads.position, chosen.position) as position,
        chosen.offset_bytes,
        chosen.copy_source,
        chosen.copy_id,
        chosen.dataset,
        chosen.dataset_type,
        coalesce(reads.size_bytes, chosen.size_bytes) as size_bytes,
        reads.duration_s,
        reads.queued_s,
        reads.locate_s,
        reads.requester
    from reads
    left join chosen
        on reads.transfer_key = chosen.transfer_key
)

select * from final
