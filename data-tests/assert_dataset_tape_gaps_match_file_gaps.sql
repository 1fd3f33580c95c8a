-- The per dataset x volume counts agree with the copies they summarise: an incremental build
-- that missed or doubled a volume shows up here.
with file_gaps as (
    select * from {{ ref('fct_file_gaps') }}
),

dataset_tape_gaps as (
    select * from {{ ref('fct_dataset_tape_gaps') }}
),

counted as (
    select
        dataset,
        volume,
        count(*) as files,
        count(*) filter (where gap_class = 'counted') as n_counted_gaps,
        count(*) filter (where gap_class = 'locate') as n_locates
    from file_gaps
    group by dataset, volume
),

final as (
    select
        coalesce(counted.dataset, dataset_tape_gaps.dataset) as dataset,
        coalesce(counted.volume, dataset_tape_gaps.volume) as volume,
        counted.files as counted_files,
        dataset_tape_gaps.files as summarised_files
    from counted
    full outer join dataset_tape_gaps
        on counted.dataset = dataset_tape_gaps.dataset
        and counted.volume = dataset_tape_gaps.volume
    where counted.files is distinct from dataset_tape_gaps.files
        or counted.n_counted_gaps is distinct from dataset_tape_gaps.n_counted_gaps
        or counted.n_locates is distinct from dataset_tape_gaps.n_locates
)

select * from final
