{{ config(post_hook='{{ analyze_this() }}') }}

{#- Reads of one requester belong to one recall campaign while each starts within this many
    seconds of the previous one (6 hours unless --var recall_campaign_gap_s=... says). -#}
{%- set gap_s = var('recall_campaign_gap_s', 21600) -%}
{%- if gap_s is not number or gap_s is boolean -%}
    {{ exceptions.raise_compiler_error("var recall_campaign_gap_s must be a number") }}
{%- endif %}

-- Which hint level predicts what is recalled together: one row per recall campaign (the
-- successful reads of one requester, none more than recall_campaign_gap_s after the one
-- before) and hint level. Of the campaign's files with ok hints, how many groups of that level
-- they fall in, and the share the largest group holds: 1 when the level's group is what the
-- campaign asked for, low when the campaign cuts across the level's groups.
with reads as (
    select * from {{ ref('stg_transfers') }}
    where direction = 'read' and status = 'ok'
),

files as (
    select * from {{ ref('fct_hinted_files') }}
    where status = 'ok'
),

ordered as (
    select
        coalesce(requester, 'unknown') as requester,
        started_at,
        file_id,
        path,
        case
            when lag(started_at) over by_requester is null
                or {{ more_than_seconds_after('started_at', 'lag(started_at) over by_requester', gap_s) }}
                then 1
            else 0
        end as starts_campaign
    from reads
    window by_requester as (
        partition by coalesce(requester, 'unknown') order by started_at, transfer_key
    )
),

numbered as (
    select
        requester,
        started_at,
        coalesce(file_id, path) as read_file,
        file_id,
        path,
        sum(starts_campaign) over (
            partition by requester
            order by started_at, starts_campaign desc, coalesce(file_id, path)
            rows unbounded preceding
        ) as campaign_no
    from ordered
),

campaigns as (
    select
        requester,
        campaign_no,
        min(started_at) as campaign_start,
        max(started_at) as campaign_end,
        count(distinct read_file) as files_recalled
    from numbered
    group by requester, campaign_no
),

-- A read names its file by path or by file id (a pnfsid, an archive id), as the hints may.
recalled as (
    select numbered.requester, numbered.campaign_no, files.file_key
    from numbered
    inner join files
        on numbered.path = files.file_key
    union
    select numbered.requester, numbered.campaign_no, files.file_key
    from numbered
    inner join files
        on numbered.file_id = files.file_key
),

levels as (
    {{ integer_rows('level', 0, 3) }}
),

grouped as (
    select
        recalled.requester,
        recalled.campaign_no,
        levels.level,
        case levels.level
            when 0 then files.group_0
            when 1 then files.group_1
            when 2 then files.group_2
            else files.group_3
        end as hint_group,
        count(*) as files
    from recalled
    inner join files
        on recalled.file_key = files.file_key
    cross join levels
    group by 1, 2, 3, 4
),

ranked as (
    select
        grouped.*,
        row_number() over (
            partition by requester, campaign_no, level
            order by hint_group is null, files desc, hint_group
        ) as group_rank
    from grouped
),

per_level as (
    select
        requester,
        campaign_no,
        level,
        sum(files)::bigint as hinted_files,
        count(hint_group) as groups,
        sum(files) filter (where hint_group is null)::bigint as files_without_level,
        max(hint_group) filter (where group_rank = 1) as top_group,
        max(files) filter (where group_rank = 1 and hint_group is not null)::bigint
            as top_group_files
    from ranked
    group by requester, campaign_no, level
),

final as (
    select
        campaigns.requester,
        campaigns.campaign_start,
        campaigns.campaign_end,
        per_level.level,
        campaigns.files_recalled,
        per_level.hinted_files,
        per_level.groups,
        coalesce(per_level.files_without_level, 0) as files_without_level,
        per_level.top_group,
        coalesce(per_level.top_group_files, 0) as top_group_files,
        {{ as_double('coalesce(per_level.top_group_files, 0)') }}
        / per_level.hinted_files as top_group_share
    from per_level
    inner join campaigns
        on per_level.requester = campaigns.requester
        and per_level.campaign_no = campaigns.campaign_no
)

select * from final
