-- Saved recall plans (tapelens.recall_plans, recall_plan_files) against the reads that followed:
-- a planned file counts as read by its first successful read since the plan was saved, as the
-- view tapelens.recall_plan_reads (migration 023) finds it for `plan compare` too. Predicted
-- times are seconds from the start of the recall; they are placed on the clock so that the first
-- predicted read starts with the first actual one (or at the time the plan was saved while
-- nothing has been read).
-- It reads the canonical tables, not the marts: saved plans (tapelens.recall_plans,
-- recall_plan_files) are written by `plan recall --save`, not built by dbt, and plan against
-- actual has one definition, the view tapelens.recall_plan_reads, which `plan compare` reads too;
-- the media type comes from the live inventory (tapelens.tapes), as in the plan itself.
create view tapelens_dashboards.recall_plan_files as
with planned as (
    select
        files.*,
        plans.created_at,
        (plans.summary ->> 'makespan_s')::double precision as predicted_makespan_s
    from tapelens.recall_plan_files as files
    inner join tapelens.recall_plans as plans
        on plans.name = files.plan_name
),

anchored as (
    select
        planned.*,
        first_reads.volume as actual_volume,
        first_reads.drive as actual_drive,
        first_reads.started_at as actual_started_at,
        first_reads.started_at
            + coalesce(first_reads.duration_s, 0) * interval '1 second' as actual_ended_at,
        -- the first actual read lines up with the first predicted read
        coalesce(
            min(first_reads.started_at) over (partition by planned.plan_name)
            - min(planned.predicted_start_s) over (partition by planned.plan_name)
            * interval '1 second',
            planned.created_at
        ) as recall_started_at
    from planned
    left join tapelens.recall_plan_reads as first_reads
        on first_reads.plan_name = planned.plan_name
        and first_reads.read_order = planned.read_order
)

select
    anchored.plan_name,
    anchored.created_at,
    anchored.recall_started_at,
    anchored.read_order,
    anchored.mount_order,
    anchored.drive,
    anchored.volume,
    coalesce(tapes.media_type, 'unknown') as media_type,
    anchored.path,
    anchored.file_id,
    anchored.size_bytes,
    anchored.requester,
    anchored.predicted_makespan_s,
    anchored.predicted_start_s,
    anchored.predicted_end_s,
    anchored.recall_started_at
        + anchored.predicted_start_s * interval '1 second' as predicted_started_at,
    anchored.recall_started_at
        + anchored.predicted_end_s * interval '1 second' as predicted_ended_at,
    anchored.actual_volume,
    anchored.actual_drive,
    anchored.actual_started_at,
    anchored.actual_ended_at,
    extract(epoch from anchored.actual_started_at - anchored.recall_started_at)::double precision
        as actual_start_s,
    extract(epoch from anchored.actual_ended_at - anchored.recall_started_at)::double precision
        as actual_end_s,
    anchored.actual_started_at is not null as is_read
from anchored
left join tapelens.tapes as tapes
    on tapes.volume = anchored.volume;

-- Progress of each plan in long form: one row per file and kind (predicted | actual) at the
-- time it is (or was predicted to be) done, for cumulative progress curves.
create view tapelens_dashboards.recall_plan_progress as
select
    plan_name,
    'predicted' as kind,
    predicted_ended_at as done_at,
    round((predicted_end_s / 3600.0)::numeric, 2)::double precision as elapsed_h,
    media_type,
    size_bytes
from tapelens_dashboards.recall_plan_files
union all
select
    plan_name,
    'actual' as kind,
    actual_ended_at as done_at,
    round((actual_end_s / 3600.0)::numeric, 2)::double precision as elapsed_h,
    media_type,
    size_bytes
from tapelens_dashboards.recall_plan_files
where is_read;

-- One row per plan, mount and kind: when the tape is (or was predicted to be) read.
create view tapelens_dashboards.recall_plan_tapes as
select
    plan_name,
    mount_order,
    volume,
    drive,
    media_type,
    'predicted' as kind,
    min(predicted_started_at) as started_at,
    max(predicted_ended_at) as ended_at,
    count(*) as files,
    sum(size_bytes)::bigint as size_bytes
from tapelens_dashboards.recall_plan_files
group by plan_name, mount_order, volume, drive, media_type
union all
select
    plan_name,
    mount_order,
    volume,
    coalesce(actual_drive, drive) as drive,
    media_type,
    'actual' as kind,
    min(actual_started_at) as started_at,
    max(actual_ended_at) as ended_at,
    count(*) as files,
    sum(size_bytes)::bigint as size_bytes
from tapelens_dashboards.recall_plan_files
where is_read
group by plan_name, mount_order, volume, coalesce(actual_drive, drive), media_type;
