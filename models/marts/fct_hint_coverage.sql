{{ config(post_hook='{{ analyze_this() }}') }}

-- How many written files came with collocation hints, per experiment, activity and month of
-- writing (UTC): files and bytes with hints (status ok), and apart from them those whose
-- hints were empty, absent, unreadable (malformed or cut short) or contradictory. One file
-- counts once, under the record that speaks for it (fct_hinted_files).
with files as (
    select * from {{ ref('fct_hinted_files') }}
),

final as (
    select
        experiment,
        activity,
        {{ utc_month_start('written_at') }} as month,
        count(*) as files,
        coalesce(sum(size_bytes), 0)::bigint as size_bytes,
        count(*) filter (where status = 'ok') as hinted_files,
        coalesce(sum(size_bytes) filter (where status = 'ok'), 0)::bigint as hinted_bytes,
        count(*) filter (where status = 'empty') as empty_files,
        coalesce(sum(size_bytes) filter (where status = 'empty'), 0)::bigint as empty_bytes,
        count(*) filter (where status = 'absent') as absent_files,
        count(*) filter (where status in ('malformed', 'truncated')) as unreadable_files,
        count(*) filter (where status = 'truncated') as truncated_files,
        count(*) filter (where status = 'contradictory') as contradictory_files,
        {{ as_double("count(*) filter (where status = 'ok')") }} / count(*) as hinted_share,
        {{ as_double("sum(size_bytes) filter (where status = 'ok')") }}
        / nullif(sum(size_bytes), 0) as hinted_bytes_share,
        count(*) filter (where on_tape) as files_on_tape
    from files
    group by experiment, activity, {{ utc_month_start('written_at') }}
)

select * from final
