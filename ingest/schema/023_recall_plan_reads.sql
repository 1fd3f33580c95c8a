-- What became of each file of a saved recall plan: its first successful read since the plan was
-- saved, matched by path, or by file id where the log names no path. One definition for
-- `tapelens plan compare` and the dashboards' plan views, which both read this view.
create view tapelens.recall_plan_reads as
with reads as (
    select files.plan_name, files.read_order, transfers.volume, transfers.drive,
        transfers.started_at, transfers.duration_s
    from tapelens.recall_plan_files as files
    inner join tapelens.recall_plans as plans
        on plans.name = files.plan_name
    inner join tapelens.transfers as transfers
        on transfers.path = files.path
    where transfers.direction = 'read' and transfers.status = 'ok'
        and transfers.started_at >= plans.created_at
    union all
    select files.plan_name, files.read_order, transfers.volume, transfers.drive,
        transfers.started_at, transfers.duration_s
    from tapelens.recall_plan_files as files
    inner join tapelens.recall_plans as plans
        on plans.name = files.plan_name
    inner join tapelens.transfers as transfers
        on transfers.file_id = files.file_id and transfers.path is null
    where transfers.direction = 'read' and transfers.status = 'ok'
        and transfers.started_at >= plans.created_at
)
select distinct on (plan_name, read_order)
    plan_name, read_order, volume, drive, started_at, duration_s
from reads
order by plan_name, read_order, started_at, volume, drive;
