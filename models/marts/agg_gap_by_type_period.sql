-- Gap statistics per dataset type and write period, the shape of the published table: by
-- month of writing (period_kind 'month', period '2021-03', UTC) and before/after the cutover
-- date var('cutover_date') (period_kind 'cutover', period 'before' | 'after'). mu, n and sigma
-- are over files with a counted gap (posdiff 1..99); sigma is the sample standard deviation and
-- sem = sigma / sqrt(n). A period holding only first files, locates or aggregate members has
-- n = 0 and null mu. One pass over the copies makes exact sums per type, month and side of
-- the cutover; both period kinds are rolled up from them.
with file_gaps as (
    select * from {{ ref('fct_file_gaps') }}
),

summed as (
    select
        dataset_type,
        {{ utc_month_text('written_at') }} as month,
        written_at >= {{ utc_midnight(var('cutover_date')) }} as is_after,
        count(*) as files,
        count(*) filter (where gap_class = 'counted') as n,
        coalesce(sum(posdiff) filter (where gap_class = 'counted'), 0) as s,
        coalesce(sum(posdiff * posdiff) filter (where gap_class = 'counted'), 0) as ss,
        count(*) filter (where gap_class = 'locate') as n_locates,
        count(*) filter (where gap_class = 'aggregate_member') as n_aggregate_members
    from file_gaps
    group by 1, 2, 3
),

periods as (
    select
        dataset_type,
        'month' as period_kind,
        month as period,
        files, n, s, ss, n_locates, n_aggregate_members
    from summed
    union all
    select
        dataset_type,
        'cutover' as period_kind,
        case when is_after then 'after' else 'before' end as period,
        files, n, s, ss, n_locates, n_aggregate_members
    from summed
),

stats as (
    select
        dataset_type,
        period_kind,
        period,
        sum(files)::bigint as files,
        sum(n)::bigint as n,
        sum(s) as s,
        sum(ss) as ss,
        sum(n_locates)::bigint as n_locates,
        sum(n_aggregate_members)::bigint as n_aggregate_members
    from periods
    group by dataset_type, period_kind, period
),

final as (
    select
        dataset_type,
        period_kind,
        period,
        files,
        n,
        {{ pooled_mean('n', 's') }} as mu,
        {{ pooled_sigma('n', 's', 'ss') }} as sigma,
        {{ pooled_sem('n', 's', 'ss') }} as sem,
        n_locates,
        n_aggregate_members
    from stats
)

select * from final
