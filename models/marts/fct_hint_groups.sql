{{ config(post_hook='{{ analyze_this() }}') }}

-- One row per collocation group at each hint level: the files whose hints agree on levels 0
-- to `level` (a group at level 2 is one run of one data type of one kind of data), as a tape
-- system collocating on that level would keep them together. Only files whose hints are ok
-- count. For each group: what it holds against what the experiment announced
-- (additional_hints' length and size at that level, the largest announced), and how it sits
-- on tape today through each file's first live copy: tapes used against tapes needed at
-- capacity, the gaps between the group's own files along each tape (the gap conventions of
-- fct_file_gaps: first file on a tape has no gap, aggregate members left out, posdiff >= 100 a
-- locate, counted apart) and how interleaved with other files it was written: of the
-- positions from the group's first to its last file on each tape, the share other files hold.
with files as (
    select * from {{ ref('fct_hinted_files') }}
    where status = 'ok'
),

levels as (
    {{ integer_rows('level', 0, 3) }}
),

members as (
    select
        levels.level,
        case levels.level
            when 0 then files.group_0
            when 1 then files.group_1
            when 2 then files.group_2
            else files.group_3
        end as hint_group,
        files.level_0,
        case when levels.level >= 1 then files.level_1 end as level_1,
        case when levels.level >= 2 then files.level_2 end as level_2,
        case when levels.level >= 3 then files.level_3 end as level_3,
        case levels.level
            when 0 then files.length_0
            when 1 then files.length_1
            when 2 then files.length_2
            else files.length_3
        end as announced_files,
        case levels.level
            when 0 then files.size_0
            when 1 then files.size_1
            when 2 then files.size_2
            else files.size_3
        end as announced_bytes,
        files.file_key,
        files.experiment,
        files.size_bytes,
        files.written_at,
        files.on_tape,
        files.volume,
        files.position,
        files.offset_bytes,
        files.aggregate_id,
        files.capacity_bytes,
        files.copy_bytes
    from files
    cross join levels
    where case levels.level
            when 0 then files.group_0
            when 1 then files.group_1
            when 2 then files.group_2
            else files.group_3
        end is not null
),

ordered as (
    select
        level,
        hint_group,
        offset_bytes,
        aggregate_id,
        position - lag(position) over (
            partition by level, hint_group, volume
            order by position, offset_bytes nulls first, file_key
        ) as posdiff
    from members
    where on_tape
),

classified as (
    select
        level,
        hint_group,
        posdiff,
        {{ gap_class('posdiff', 'offset_bytes', 'aggregate_id') }} as gap_class
    from ordered
),

gaps as (
    select
        level,
        hint_group,
        count(*) filter (where gap_class = 'counted') as n_counted_gaps,
        sum(posdiff) filter (where gap_class = 'counted') as sum_posdiff,
        sum(posdiff * posdiff) filter (where gap_class = 'counted') as sum_posdiff_sq,
        count(*) filter (where gap_class = 'locate') as n_locates
    from classified
    group by level, hint_group
),

spans as (
    select
        level,
        hint_group,
        volume,
        max(position) - min(position) + 1 as span_positions,
        count(distinct position) as held_positions
    from members
    where on_tape
    group by level, hint_group, volume
),

span_totals as (
    select
        level,
        hint_group,
        count(*) as tapes_used,
        sum(span_positions)::bigint as span_positions,
        sum(held_positions)::bigint as held_positions
    from spans
    group by level, hint_group
),

capacities as (
    select
        level,
        hint_group,
        capacity_bytes,
        row_number() over (
            partition by level, hint_group
            order by sum(copy_bytes) desc, capacity_bytes desc
        ) as capacity_rank
    from members
    where on_tape and capacity_bytes is not null
    group by level, hint_group, capacity_bytes
),

per_group as (
    select
        level,
        hint_group,
        min(level_0) as level_0,
        min(level_1) as level_1,
        min(level_2) as level_2,
        min(level_3) as level_3,
        min(experiment) as experiment,
        count(*) as files,
        coalesce(sum(size_bytes), 0)::bigint as size_bytes,
        max(announced_files) as announced_files,
        max(announced_bytes) as announced_bytes,
        count(*) filter (where on_tape) as files_on_tape,
        coalesce(sum(copy_bytes), 0)::bigint as bytes_on_tape,
        min(written_at) as first_written_at,
        max(written_at) as last_written_at
    from members
    group by level, hint_group
),

final as (
    select
        per_group.level,
        per_group.hint_group,
        per_group.level_0,
        per_group.level_1,
        per_group.level_2,
        per_group.level_3,
        per_group.experiment,
        per_group.files,
        per_group.size_bytes,
        per_group.announced_files,
        per_group.announced_bytes,
        {{ as_double('per_group.files') }} / nullif(per_group.announced_files, 0)
            as announced_files_share,
        {{ as_double('per_group.size_bytes') }} / nullif(per_group.announced_bytes, 0)
            as announced_bytes_share,
        per_group.files_on_tape,
        per_group.bytes_on_tape,
        coalesce(span_totals.tapes_used, 0) as tapes_used,
        capacities.capacity_bytes,
        {{ ceil_div('per_group.bytes_on_tape', 'capacities.capacity_bytes') }} as tapes_needed,
        coalesce(gaps.n_counted_gaps, 0) as n_counted_gaps,
        {{ pooled_mean('gaps.n_counted_gaps', 'gaps.sum_posdiff') }} as mean_gap,
        {{ pooled_sigma('gaps.n_counted_gaps', 'gaps.sum_posdiff', 'gaps.sum_posdiff_sq') }}
            as sigma_gap,
        coalesce(gaps.n_locates, 0) as n_locates,
        span_totals.span_positions,
        span_totals.held_positions,
        {{ as_double('span_totals.span_positions - span_totals.held_positions') }}
        / nullif(span_totals.span_positions, 0) as interleaved_share,
        per_group.first_written_at,
        per_group.last_written_at
    from per_group
    left join gaps
        on per_group.level = gaps.level
        and per_group.hint_group = gaps.hint_group
    left join span_totals
        on per_group.level = span_totals.level
        and per_group.hint_group = span_totals.hint_group
    left join capacities
        on per_group.level = capacities.level
        and per_group.hint_group = capacities.hint_group
        and capacities.capacity_rank = 1
)

select * from final
