-- The marts of a full `tapelens marts build`, written by hand as a DBA would: every table the
-- build materialises, with the same rows, in schema bench_hand. The copies are read twice (one
-- scan of tape_files joined to tapes builds fct_file_gaps, another finds the files with more
-- than one live copy, by file id, which fct_file_gaps does not carry); everything else is
-- derived from those tables or from the small per dataset x volume tables. Derived data is
-- unlogged (it can be rebuilt), each table is analysed before the next statement reads it, and
-- the tables get the indexes the dbt build gives them. Statements are separated by lines
-- holding only ";;" so that bench_models.py can time each one. Values of the dbt vars:
-- small_file_bytes 1e9, main_tapes_share 0.5, cutover_date 2020-10-01.
drop schema if exists bench_hand cascade
;;
create schema bench_hand
;;
-- the newest change the canonical tables show (the watermark a full build stamps on its rows)
create unlogged table bench_hand.watermark as
select coalesce(greatest(
    (select max(greatest(ingest_run_id, removed_run_id)) from tapelens.tape_files),
    (select max(updated_run_id) from tapelens.tapes)
), 0) as run_id
;;
-- one pass over the copies: byte positions along each tape (removed copies' bytes included:
-- they stay on the tape until it is repacked), then each live file's gap to the previous file
-- of its dataset on that tape
create unlogged table bench_hand.fct_file_gaps as
with copies as (
    select
        f.source, f.copy_id, f.written_at, f.dataset, f.dataset_type,
        f.experiment, f.size_bytes, f.volume, coalesce(t.media_type, 'unknown') as media_type,
        f.position, f.offset_bytes, f.aggregate_id, f.copy_no,
        f.removed_at is null
        and coalesce(t.state, 'unknown') not in ('repacked', 'destroyed') as is_live
    from tapelens.tape_files as f
    left join tapelens.tapes as t on t.volume = f.volume
),
along_tape as (
    select
        c.*,
        (sum(size_bytes) over (partition by volume order by position))::bigint as end_bytes,
        (sum(size_bytes) over (partition by volume, position))::bigint as object_bytes
    from copies as c
),
ordered as (
    select
        a.*,
        row_number() over w as file_rank,
        lag(position) over w as prev_position,
        lag(end_bytes) over w as prev_end_bytes
    from along_tape as a
    where a.is_live
    window w as (
        partition by dataset, volume
        order by position, offset_bytes nulls first, written_at, source, copy_id
    )
),
gaps as (
    select
        o.*,
        position - prev_position as posdiff,
        case
            when prev_end_bytes is not null
                then greatest(end_bytes - object_bytes - prev_end_bytes, 0)
        end as gap_bytes
    from ordered as o
)
select
    source, copy_id, written_at, dataset, dataset_type, experiment, size_bytes,
    volume, media_type, position, offset_bytes, aggregate_id, copy_no, file_rank,
    prev_position, posdiff, gap_bytes,
    case when posdiff between 1 and 99 then gap_bytes else 0 end as counted_gap_bytes,
    case
        when offset_bytes is not null or aggregate_id is not null then 'aggregate_member'
        when posdiff is null then 'first'
        when posdiff = 0 then 'aggregate_member'
        when posdiff < 100 then 'counted'
        else 'locate'
    end as gap_class,
    (select run_id from bench_hand.watermark) as watermark_run_id
from gaps
;;
create index on bench_hand.fct_file_gaps (volume)
;;
analyze bench_hand.fct_file_gaps
;;
-- duplicates: the few files with more than one live copy found by one hash aggregate, ranked
create unlogged table bench_hand.int_copies__duplicated as
with copies as (
    select
        f.source, f.copy_id, f.written_at, f.file_id, f.path, f.dataset, f.dataset_type,
        f.size_bytes, f.volume, f.position, f.copy_no,
        coalesce(t.media_type, 'unknown') as media_type
    from tapelens.tape_files as f
    left join tapelens.tapes as t on t.volume = f.volume
    where f.removed_at is null and coalesce(t.state, 'unknown') not in ('repacked', 'destroyed')
),
duplicated as (
    select source, file_id
    from copies
    group by source, file_id
    having count(*) > 1
),
ranked as (
    select
        g.*,
        row_number() over (
            partition by g.source, g.file_id order by g.written_at, g.copy_no, g.copy_id
        ) as copy_rank,
        count(*) over (partition by g.source, g.file_id) as file_copies
    from copies as g
    inner join duplicated as d on d.source = g.source and d.file_id = g.file_id
)
select
    source, copy_id, written_at, file_id, path, dataset, dataset_type, size_bytes, volume,
    position, media_type, copy_rank, file_copies, copy_rank = 1 as is_first_copy,
    copy_rank = file_copies as is_newest_copy,
    (select run_id from bench_hand.watermark) as watermark_run_id
from ranked
;;
create index on bench_hand.int_copies__duplicated (source, file_id)
;;
analyze bench_hand.int_copies__duplicated
;;
-- per dataset and volume, one aggregate of the file gaps feeds both the gap statistics (type of
-- most files) and the volume ranking
create unlogged table bench_hand.fct_dataset_tape_gaps as
with type_counts as (
    select
        dataset, volume, dataset_type,
        row_number() over (
            partition by dataset, volume order by count(*) desc, dataset_type
        ) as type_rank
    from bench_hand.fct_file_gaps
    group by dataset, volume, dataset_type
),
per_dataset_tape as (
    select
        dataset, volume,
        min(experiment) as experiment,
        min(media_type) as media_type,
        count(*) as files,
        sum(size_bytes)::bigint as size_bytes,
        count(*) filter (where gap_class = 'counted') as n_counted_gaps,
        avg(posdiff::numeric(40, 20)) filter (where gap_class = 'counted') as mean_posdiff,
        stddev_samp(posdiff::numeric(40, 20)) filter (where gap_class = 'counted')
            as sigma_posdiff,
        coalesce(sum(posdiff) filter (where gap_class = 'counted'), 0) as sum_posdiff,
        coalesce(sum(posdiff * posdiff) filter (where gap_class = 'counted'), 0)
            as sum_posdiff_sq,
        count(*) filter (where gap_class = 'locate') as n_locates,
        count(*) filter (where gap_class = 'aggregate_member') as n_aggregate_members,
        count(*) filter (where gap_class = 'first') as n_first,
        sum(counted_gap_bytes)::bigint as counted_gap_bytes,
        min(position) as first_position,
        max(position) as last_position,
        min(written_at) as first_written_at,
        max(written_at) as last_written_at
    from bench_hand.fct_file_gaps
    group by dataset, volume
)
select
    p.dataset, p.volume, t.dataset_type, p.experiment, p.media_type, p.files, p.size_bytes,
    p.n_counted_gaps, p.mean_posdiff::double precision as mean_posdiff,
    p.sigma_posdiff::double precision as sigma_posdiff, p.sum_posdiff::numeric as sum_posdiff,
    p.sum_posdiff_sq::numeric as sum_posdiff_sq, p.n_locates, p.n_aggregate_members,
    p.n_first, p.counted_gap_bytes,
    (p.size_bytes::numeric / nullif(p.size_bytes + p.counted_gap_bytes, 0))::double precision
        as rate_factor,
    p.first_position, p.last_position, p.first_written_at, p.last_written_at,
    (select run_id from bench_hand.watermark) as watermark_run_id
from per_dataset_tape as p
inner join type_counts as t
    on t.dataset = p.dataset and t.volume = p.volume and t.type_rank = 1
;;
create index on bench_hand.fct_dataset_tape_gaps (volume)
;;
create index on bench_hand.fct_dataset_tape_gaps (dataset)
;;
analyze bench_hand.fct_dataset_tape_gaps
;;
create unlogged table bench_hand.int_dataset_volumes__ranked as
with per_volume_all as (
    select
        dataset, volume,
        count(*) as files,
        sum(size_bytes)::bigint as size_bytes,
        count(*) filter (where size_bytes < 1000000000) as small_copies
    from bench_hand.fct_file_gaps
    group by dataset, volume
),
later_copies as (
    select
        dataset, volume,
        count(*) as later_copies,
        sum(size_bytes) as later_bytes,
        count(*) filter (where size_bytes < 1000000000) as later_small
    from bench_hand.int_copies__duplicated
    where not is_first_copy
    group by dataset, volume
),
per_volume as (
    select
        a.dataset, a.volume,
        a.files as copies,
        a.size_bytes as copy_bytes,
        a.files - coalesce(l.later_copies, 0) as first_copies,
        a.size_bytes - coalesce(l.later_bytes, 0) as first_bytes,
        a.small_copies,
        a.small_copies - coalesce(l.later_small, 0) as small_first_copies
    from per_volume_all as a
    left join later_copies as l on l.dataset = a.dataset and l.volume = a.volume
),
ranked as (
    select
        per_volume.*,
        sum(first_copies) over (partition by dataset) as dataset_files,
        row_number() over (partition by dataset order by first_copies desc, volume)
            as volume_rank,
        sum(first_copies) over (
            partition by dataset order by first_copies desc, volume
            rows between unbounded preceding and 1 preceding
        ) as first_copies_before
    from per_volume
)
select
    dataset, volume, copies, copy_bytes, first_copies, first_bytes::bigint as first_bytes,
    small_copies, small_first_copies, dataset_files::bigint as dataset_files, volume_rank,
    first_copies > 0 as holds_first_copy,
    first_copies > 0 and coalesce(first_copies_before, 0) < 0.5 * dataset_files as is_main
from ranked
;;
analyze bench_hand.int_dataset_volumes__ranked
;;
create unlogged table bench_hand.agg_gap_by_type_period as
with summed as (
    select
        dataset_type,
        to_char(written_at at time zone 'UTC', 'YYYY-MM') as month,
        written_at >= ('2020-10-01'::date::timestamp at time zone 'UTC') as is_after,
        count(*) as files,
        count(*) filter (where gap_class = 'counted') as n,
        coalesce(sum(posdiff) filter (where gap_class = 'counted'), 0) as s,
        coalesce(sum(posdiff * posdiff) filter (where gap_class = 'counted'), 0) as ss,
        count(*) filter (where gap_class = 'locate') as n_locates,
        count(*) filter (where gap_class = 'aggregate_member') as n_aggregate_members
    from bench_hand.fct_file_gaps
    group by 1, 2, 3
),
stats as (
    select
        dataset_type, period_kind, period,
        sum(files)::bigint as files, sum(n)::bigint as n, sum(s) as s, sum(ss) as ss,
        sum(n_locates)::bigint as n_locates,
        sum(n_aggregate_members)::bigint as n_aggregate_members
    from summed
    cross join lateral (
        values ('month', month), ('cutover', case when is_after then 'after' else 'before' end)
    ) as periods (period_kind, period)
    group by dataset_type, period_kind, period
)
select
    dataset_type, period_kind, period, files, n,
    (s::numeric(40, 20) / nullif(n, 0))::double precision as mu,
    case
        when n > 1
            then sqrt(greatest((n * ss - s * s)::numeric(60, 20), 0) / (n * (n - 1)))
                ::double precision
    end as sigma,
    case
        when n > 1
            then sqrt(greatest((n * ss - s * s)::numeric(60, 20), 0) / (n * (n - 1)) / n)
                ::double precision
    end as sem,
    n_locates, n_aggregate_members
from stats
;;
create unlogged table bench_hand.dim_datasets as
with capacities as (
    select
        v.dataset,
        coalesce(t.capacity_bytes, m.capacity_bytes) as capacity_bytes,
        row_number() over (
            partition by v.dataset
            order by sum(v.copy_bytes) desc, coalesce(t.capacity_bytes, m.capacity_bytes) desc
        ) as capacity_rank
    from bench_hand.int_dataset_volumes__ranked as v
    left join tapelens.tapes as t on t.volume = v.volume
    left join tapelens.media_types as m on m.media_type = t.media_type
    where coalesce(t.capacity_bytes, m.capacity_bytes) is not null
    group by v.dataset, coalesce(t.capacity_bytes, m.capacity_bytes)
),
type_counts as (
    select
        dataset, dataset_type,
        row_number() over (partition by dataset order by sum(files) desc, dataset_type)
            as type_rank
    from bench_hand.fct_dataset_tape_gaps
    group by dataset, dataset_type
),
per_dataset as (
    select
        dataset,
        min(experiment) as experiment,
        sum(files)::bigint as copies,
        sum(size_bytes)::bigint as copy_bytes,
        count(*) as tapes_used,
        sum(n_counted_gaps)::bigint as n_counted_gaps,
        sum(sum_posdiff) as sum_posdiff,
        sum(sum_posdiff_sq) as sum_posdiff_sq,
        sum(n_locates)::bigint as n_locates,
        min(first_written_at) as first_written_at,
        max(last_written_at) as last_written_at
    from bench_hand.fct_dataset_tape_gaps
    group by dataset
),
per_dataset_volumes as (
    select
        dataset,
        sum(first_copies)::bigint as files,
        sum(first_bytes)::bigint as size_bytes,
        sum(small_first_copies)::bigint as small_files,
        count(*) filter (where is_main) as main_tapes
    from bench_hand.int_dataset_volumes__ranked
    group by dataset
),
duplicated as (
    select dataset, count(*) filter (where is_first_copy) as duplicated_files
    from bench_hand.int_copies__duplicated
    group by dataset
),
extra_mounts as (
    select d.dataset, count(distinct d.volume) as extra_mounts
    from bench_hand.int_copies__duplicated as d
    inner join bench_hand.int_dataset_volumes__ranked as v
        on v.dataset = d.dataset and v.volume = d.volume
    where d.is_newest_copy and not v.holds_first_copy
    group by d.dataset
)
select
    p.dataset, t.dataset_type, p.experiment, v.files, p.copies, v.size_bytes, p.copy_bytes,
    p.copies - v.files as duplicate_copies,
    coalesce(d.duplicated_files, 0) as duplicated_files,
    p.tapes_used, v.main_tapes, c.capacity_bytes,
    ceil(v.size_bytes::numeric / nullif(c.capacity_bytes, 0))::bigint as tapes_needed,
    p.n_counted_gaps,
    (p.sum_posdiff::numeric(40, 20) / nullif(p.n_counted_gaps, 0))::double precision as mean_gap,
    case
        when p.n_counted_gaps > 1
            then sqrt(
                greatest(
                    (p.n_counted_gaps * p.sum_posdiff_sq - p.sum_posdiff * p.sum_posdiff)
                        ::numeric(60, 20),
                    0
                ) / (p.n_counted_gaps * (p.n_counted_gaps - 1))
            )::double precision
    end as sigma_gap,
    p.n_locates, v.small_files,
    v.small_files::double precision / nullif(v.files, 0) as small_file_share,
    coalesce(e.extra_mounts, 0) as extra_mounts,
    p.first_written_at, p.last_written_at
from per_dataset as p
inner join per_dataset_volumes as v on v.dataset = p.dataset
inner join type_counts as t on t.dataset = p.dataset and t.type_rank = 1
left join capacities as c on c.dataset = p.dataset and c.capacity_rank = 1
left join duplicated as d on d.dataset = p.dataset
left join extra_mounts as e on e.dataset = p.dataset
;;
analyze bench_hand.dim_datasets
;;
create unlogged table bench_hand.fct_duplicate_copies as
with per_file as (
    select
        source, file_id,
        count(*) as copies,
        array_agg(distinct volume order by volume) as volumes,
        count(distinct volume) as n_volumes,
        min(written_at) as first_written_at,
        max(written_at) as last_written_at
    from bench_hand.int_copies__duplicated
    group by source, file_id
)
select
    p.source, p.file_id, f.path, f.dataset, f.dataset_type, f.size_bytes, p.copies,
    p.copies - 1 as extra_copies, ((p.copies - 1) * f.size_bytes)::bigint as extra_bytes,
    p.volumes, p.n_volumes, p.first_written_at, p.last_written_at,
    f.volume as first_volume, f.position as first_position,
    n.volume as newest_volume, n.position as newest_position,
    not coalesce(v.is_main, false) as newest_off_main,
    case when coalesce(v.holds_first_copy, false) then 0 else 1 end as extra_mounts
from per_file as p
inner join bench_hand.int_copies__duplicated as f
    on f.source = p.source and f.file_id = p.file_id and f.is_first_copy
inner join bench_hand.int_copies__duplicated as n
    on n.source = p.source and n.file_id = p.file_id and n.is_newest_copy
left join bench_hand.int_dataset_volumes__ranked as v
    on v.dataset = n.dataset and v.volume = n.volume
;;
create unlogged table bench_hand.fct_tape_occupancy as
with volumes as (
    select volume from tapelens.tapes
    union
    select volume from bench_hand.fct_dataset_tape_gaps
),
per_volume as (
    select
        volume,
        min(media_type) as media_type,
        sum(files)::bigint as files,
        sum(size_bytes)::bigint as live_bytes,
        count(*) as n_datasets,
        sum(n_counted_gaps)::bigint as n_counted_gaps,
        sum(sum_posdiff) as sum_posdiff,
        min(first_written_at) as first_written_at,
        max(last_written_at) as last_written_at
    from bench_hand.fct_dataset_tape_gaps
    group by volume
),
per_volume_copies as (
    select
        v.volume,
        sum(v.copies - v.first_copies)::bigint as duplicate_copies,
        sum(v.copy_bytes - v.first_bytes)::bigint as duplicate_bytes,
        coalesce(sum(v.copies) filter (where v.first_copies = 0), 0)::bigint as stray_copies,
        sum(v.small_copies)::bigint as small_files,
        avg(d.mean_gap::numeric(40, 20)) as datasets_mean_gap
    from bench_hand.int_dataset_volumes__ranked as v
    inner join bench_hand.dim_datasets as d on d.dataset = v.dataset
    group by v.volume
),
removed as (
    select volume, count(*) as removed_copies, sum(size_bytes)::bigint as removed_bytes
    from tapelens.tape_files
    where removed_at is not null
    group by volume
)
select
    vs.volume,
    coalesce(t.media_type, p.media_type, 'unknown') as media_type,
    coalesce(t.state, 'unknown') as state,
    t.pool,
    t.library,
    coalesce(t.capacity_bytes, m.capacity_bytes) as capacity_bytes,
    coalesce(p.files, 0) as files,
    coalesce(p.live_bytes, 0) as live_bytes,
    coalesce(c.duplicate_bytes, 0) as duplicate_bytes,
    coalesce(c.duplicate_copies, 0) as duplicate_copies,
    coalesce(c.stray_copies, 0) as stray_copies,
    coalesce(p.live_bytes, 0)::double precision
    / nullif(coalesce(t.capacity_bytes, m.capacity_bytes), 0) as occupancy,
    coalesce(p.n_datasets, 0) as n_datasets,
    coalesce(c.small_files, 0) as small_files,
    c.small_files::double precision / nullif(p.files, 0) as small_file_share,
    coalesce(p.n_counted_gaps, 0) as n_counted_gaps,
    (p.sum_posdiff::numeric(40, 20) / nullif(p.n_counted_gaps, 0))::double precision as mean_gap,
    c.datasets_mean_gap::double precision as datasets_mean_gap,
    p.first_written_at,
    p.last_written_at,
    coalesce(t.state, 'unknown') not in ('repacked', 'destroyed', 'exported') as is_live_tape,
    case when coalesce(t.state, 'unknown') in ('repacked', 'destroyed') then 0
        else coalesce(r.removed_copies, 0) end::bigint as removed_copies,
    case when coalesce(t.state, 'unknown') in ('repacked', 'destroyed') then 0
        else coalesce(r.removed_bytes, 0) end::bigint as removed_bytes,
    case when t.state in ('full', 'readonly')
        then coalesce(r.removed_bytes, 0) + coalesce(c.duplicate_bytes, 0)
        else 0 end::bigint as reclaimable_bytes
from volumes as vs
left join tapelens.tapes as t on t.volume = vs.volume
left join tapelens.media_types as m on m.media_type = t.media_type
left join per_volume as p on p.volume = vs.volume
left join per_volume_copies as c on c.volume = vs.volume
left join removed as r on r.volume = vs.volume
;;
-- byte addresses of every tape object, removed copies included: one aggregate, one window
create unlogged table bench_hand.plan_tape_objects as
select
    volume,
    position,
    object_bytes::bigint as object_bytes,
    coalesce(sum(object_bytes) over (
        partition by volume order by position rows between unbounded preceding and 1 preceding
    ), 0)::bigint as start_bytes,
    (select run_id from bench_hand.watermark) as watermark_run_id
from (
    select volume, position, sum(size_bytes::double precision) as object_bytes
    from tapelens.tape_files
    group by volume, position
) as objects
;;
create unique index on bench_hand.plan_tape_objects (volume, position)
;;
analyze bench_hand.plan_tape_objects
;;
create unlogged table bench_hand.plan_tape_layouts as
select
    volume,
    count(*) as objects,
    sum(object_bytes)::bigint as object_bytes,
    avg(object_bytes)::double precision as avg_object_bytes,
    max(watermark_run_id) as watermark_run_id
from bench_hand.plan_tape_objects
group by volume
;;
create unique index on bench_hand.plan_tape_layouts (volume)
