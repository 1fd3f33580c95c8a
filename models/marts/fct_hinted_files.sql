{{ config(post_hook='{{ analyze_this() }}') }}

-- One row per written file with hint records: the record that speaks for it (an ok record
-- first, the latest; then a contradictory one; then empty, truncated, malformed, absent), and
-- where its first live copy sits on tape, found by the catalog's file identity (file_key is
-- the path, or the file id the record gave). Files not in the catalog have no copy columns.
with hints as (
    select * from {{ ref('stg_write_hints') }}
),

copies as (
    select * from {{ ref('int_copies__located') }}
),

ranked as (
    select
        hints.*,
        count(*) over (partition by hints.file_key) as records,
        row_number() over (
            partition by hints.file_key
            order by
                case hints.status
                    when 'ok' then 0
                    when 'contradictory' then 1
                    when 'empty' then 2
                    when 'truncated' then 3
                    when 'malformed' then 4
                    else 5
                end,
                hints.written_at desc,
                hints.source
        ) as record_rank
    from hints
),

files as (
    select * from ranked where record_rank = 1
),

first_copies as (
    select
        copies.file_id,
        copies.volume,
        copies.position,
        copies.offset_bytes,
        copies.aggregate_id,
        copies.media_type,
        copies.capacity_bytes,
        copies.size_bytes,
        row_number() over (
            partition by copies.file_id
            order by copies.written_at, copies.copy_no, copies.copy_id
        ) as copy_rank
    from copies
    inner join files
        on copies.file_id = files.file_key
    where copies.is_live
),

final as (
    select
        files.file_key,
        files.source,
        files.path,
        files.written_at,
        coalesce(files.experiment, 'other') as experiment,
        coalesce(files.activity, 'unknown') as activity,
        coalesce(files.size_bytes, first_copies.size_bytes) as size_bytes,
        files.status,
        files.reason,
        files.records,
        files.level_0,
        files.level_1,
        files.level_2,
        files.level_3,
        files.level_4,
        files.length_0,
        files.length_1,
        files.length_2,
        files.length_3,
        files.length_4,
        files.size_0,
        files.size_1,
        files.size_2,
        files.size_3,
        files.size_4,
        files.schema_version,
        -- the file's collocation group at each level: levels 0 to n, where level n is named
        {%- for n in range(5) %}
        case when files.level_{{ n }} is not null then concat_ws(
            ' | '
            {%- for k in range(n + 1) %}, coalesce(files.level_{{ k }}, ''){% endfor %}
        ) end as group_{{ n }},
        {%- endfor %}
        first_copies.volume is not null as on_tape,
        first_copies.volume,
        first_copies.position,
        first_copies.offset_bytes,
        first_copies.aggregate_id,
        first_copies.media_type,
        first_copies.capacity_bytes,
        first_copies.size_bytes as copy_bytes
    from files
    left join first_copies
        on files.file_key = first_copies.file_id
        and first_copies.copy_rank = 1
)

select * from final
