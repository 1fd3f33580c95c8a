-- Saved recall plans (tapelens plan recall --save NAME): the plan's summary and options, and one
-- row per file in plan order with its predicted times, so that dashboards can show a plan and
-- `tapelens plan compare NAME` can match it against the transfers that followed.
create table tapelens.recall_plans (
    name        text primary key,
    created_at  timestamptz not null default now(),
    summary     jsonb not null,            -- the summary JSON of `plan recall`
    params      jsonb not null             -- drives, sharing policy, model parameters used
);

create table tapelens.recall_plan_files (
    plan_name          text not null references tapelens.recall_plans (name) on delete cascade,
    read_order         bigint not null,      -- 1 = first file submitted
    mount_order        bigint not null,      -- 1 = first tape mounted
    drive              text not null,
    volume             text not null,
    position           bigint not null,
    offset_bytes       bigint,
    path               text not null,
    file_id            text not null,
    size_bytes         bigint not null,
    requester          text,
    predicted_start_s  double precision not null,  -- seconds from the start of the recall
    predicted_end_s    double precision not null,
    primary key (plan_name, read_order)
);
create index recall_plan_files_path on tapelens.recall_plan_files (plan_name, path);
