-- The tape families advice for the Write placement dashboard: each pool's last advice as
-- `tapelens plan families` kept it (tapelens.family_advice_runs, family_advice,
-- advised_families, migration 026). They read those tables, not the marts: the advice is
-- written by `plan families`, not built by dbt, and stays as it was until the next advice.

-- One row per pool: the advised placement beside the recorded one, what the advice saves in
-- recall mounts and drive hours over the history's recall campaigns, and what it costs at
-- write time: the write mounts of its migrations and the tapes it leaves partly filled, the
-- recorded placement's beside them. A pool told to keep writing as now has its recorded
-- figures on both sides and no write mounts (the recorded writes' are not replayed).
create view tapelens_dashboards.family_advice as
select
    runs.pool,
    runs.advised_at,
    advised.placement as advised_placement,
    case
        when advised.level is null then 'keep the recorded placement'
        else 'collocate by hint level ' || advised.level
    end as advice,
    advised.level as advised_level,
    advised.families,
    advised.open_families,
    advised.files,
    recorded.campaigns,
    recorded.recall_mounts as recorded_recall_mounts,
    advised.recall_mounts as advised_recall_mounts,
    recorded.recall_mounts - advised.recall_mounts as recall_mounts_saved,
    recorded.recall_hours as recorded_recall_hours,
    advised.recall_hours as advised_recall_hours,
    recorded.recall_hours - advised.recall_hours as recall_hours_saved,
    recorded.tapes_per_dataset as recorded_tapes_per_dataset,
    advised.tapes_per_dataset as advised_tapes_per_dataset,
    recorded.mean_gap as recorded_mean_gap,
    advised.mean_gap as advised_mean_gap,
    advised.write_mounts,
    advised.partly_filled_tapes,
    recorded.partly_filled_tapes as recorded_partly_filled_tapes
from tapelens.family_advice_runs as runs
inner join tapelens.family_advice as advised
    on advised.pool = runs.pool and advised.advised
inner join tapelens.family_advice as recorded
    on recorded.pool = runs.pool and recorded.placement = 'recorded';

-- One row per advised family, and one per pool told to keep its recorded placement (no
-- family): the family's name as the exports give it, the hint level and values it takes in,
-- its files, bytes and the tapes the advised placement writes it on.
create view tapelens_dashboards.advised_families as
select
    advice.pool,
    advice.advised_at,
    advice.advice,
    coalesce(families.name, '-') as family,
    coalesce(families.hint_level::text, '-') as hint_level,
    coalesce(families.hint_group, case
        when families.family is null then '-' else 'files of no group large enough'
    end) as hint_values,
    coalesce(families.files, 0) as files,
    coalesce(families.bytes, 0) as bytes,
    coalesce(families.tapes, 0) as tapes
from tapelens_dashboards.family_advice as advice
left join tapelens.advised_families as families
    on families.pool = advice.pool;
