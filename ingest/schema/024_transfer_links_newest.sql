-- Transfers linked to the copy they moved: where no copy sits at the logged position, the newest
-- copy written before the transfer, its ties broken as the product breaks them everywhere
-- (analysis/recall/baselines.py newest_first): the highest copy number, then volume, position
-- and offset. The view of migration 005 left copies written in the same second in no order.
create or replace view tapelens.transfers_linked as
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
             f.written_at desc,
             f.copy_no desc,
             f.volume,
             f.position,
             f.offset_bytes
    limit 1
) c on true;
