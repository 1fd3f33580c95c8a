-- Transfers linked to the catalog copy they moved. Logs such as dCache billing name only the
-- path (or CTA's archive id); the copy gives volume, position, offset and dataset. Where a file
-- has several copies, the one on the logged volume/position wins, else the newest copy written
-- before the transfer (the copy tape clients recall).
create view tapelens.transfers_linked as
select
    t.*,
    coalesce(t.volume, c.volume) as linked_volume,
    coalesce(t.position, c.position) as linked_position,
    c.offset_bytes as linked_offset_bytes,
    c.copy_id as linked_copy_id,
    c.source as linked_source,
    c.dataset,
    c.dataset_type,
    c.experiment
from tapelens.transfers t
left join lateral (
    select f.source, f.copy_id, f.volume, f.position, f.offset_bytes, f.dataset,
           f.dataset_type, f.experiment
    from tapelens.tape_files f
    where ((t.path is not null and f.path = t.path)
           or (t.path is null and f.file_id = t.file_id))
      and (t.volume is null or f.volume = t.volume)
    order by (t.position is not null and f.position = t.position) desc,
             (f.written_at <= t.started_at) desc,
             f.written_at desc
    limit 1
) c on true;
