"""The repack advisor's regroup-by-hint-group candidates: a collocation hint group scattered
over many more tapes than its bytes need, rewritten together onto the fewest tapes.

A file's group is the narrowest hint group its archive metadata names (fct_hinted_files'
group_3, else group_2, group_1, group_0: the levels 0 to k it was sent with, joined). Files
written before the experiment sent hints have none; they take the group their catalog dataset's
hinted files have (the one most of them have; ties to the first by name), so a dataset written
half before and half after hints existed is regrouped whole. A dataset none of whose files has
hints is left to the scattered-dataset kind. What a repack does is the scattered-dataset one
(analysis/repack/scenarios.py collocated), with the hint group in the place of the dataset:
the group's recall now and after, each recalled on its own, is what the experiment recalls
together.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import polars as pl

from tapelens.analysis.repack import scenarios
from tapelens.analysis.repack.advisor import RepackOptions
from tapelens.analysis.repack.candidates import dataset_candidates, frame, in_list, tapes_only_of
from tapelens.analysis.throughput.model import ModelParams
from tapelens.catalog import file_identity
from tapelens.dbt_runs import MARTS_SCHEMA
from tapelens.errors import DatabaseError
from tapelens.frames import Dialect, FrameReader, missing_relation

if TYPE_CHECKING:
    from tapelens.analysis.repack.candidates import CopyReader

KIND = "hint-group"

# Each live file once (its lowest copy number), its group: its own hints', else its dataset's.
# The first row of each partition by row_number() rather than PostgreSQL's distinct on, so
# that Spark runs the same text.
_GROUPED = """
with hinted as (
    select file_key, coalesce(group_3, group_2, group_1, group_0) as hint_group
    from {marts}.fct_hinted_files
    where status = 'ok'
),
-- Only the datasets some hinted file belongs to: a catalog without hints costs nothing here.
hinted_datasets as (
    select distinct t.dataset
    from tapelens.tape_files as t join hinted as h on h.file_key = {file_t}
    where t.removed_at is null
),
copies as (
    select {file} as file_key, dataset, volume, size_bytes,
           row_number() over (partition by {file} order by copy_no, volume) as nth
    from tapelens.tape_files
    where removed_at is null and dataset in (select dataset from hinted_datasets)
),
live as (
    select file_key, dataset, volume, size_bytes from copies where nth = 1
),
per_dataset as (
    select live.dataset, hinted.hint_group, count(*) as files
    from live join hinted on hinted.file_key = live.file_key
    group by live.dataset, hinted.hint_group
),
dataset_group as (
    select dataset, hint_group from (
        select dataset, hint_group,
               row_number() over (partition by dataset order by files desc, hint_group) as nth
        from per_dataset
    ) as ranked
    where nth = 1
),
grouped as (
    select live.file_key, live.dataset, live.volume, live.size_bytes,
           coalesce(hinted.hint_group, dataset_group.hint_group) as hint_group,
           hinted.hint_group is null as derived
    from live
    left join hinted on hinted.file_key = live.file_key
    left join dataset_group on dataset_group.dataset = live.dataset
)
"""

_SCREEN = (
    _GROUPED
    + """,
groups as (
    select g.hint_group, count(*) as files, sum(g.size_bytes) as bytes,
           count(distinct g.volume) as tapes_used,
           greatest(ceil(sum(g.size_bytes)::{float8} / nullif(max(o.capacity_bytes), 0)), 1)
               as tapes_needed,
           count(*) filter (where g.derived) as derived_files,
           count(distinct g.dataset) as datasets
    from grouped as g
    left join {marts}.fct_tape_occupancy as o on o.volume = g.volume
    where g.hint_group is not null
    group by g.hint_group
)
select hint_group, files, cast(bytes as bigint) as bytes, tapes_used,
       cast(tapes_needed as bigint) as tapes_needed, derived_files, datasets
from groups
where tapes_used > tapes_needed
order by (tapes_used - tapes_needed) desc, hint_group
limit {limit}
"""
)

_MEMBERS = (
    _GROUPED
    + """
select file_key, dataset, hint_group from grouped where {wanted}
"""
)
SCREENED = {
    "target": pl.String(),
    "files": pl.Int64(),
    "bytes": pl.Int64(),
    "tapes_used": pl.Int64(),
    "tapes_needed": pl.Int64(),
    "derived": pl.Int64(),
    "datasets": pl.Int64(),
}
MEMBERS = {"file_id": pl.String(), "dataset": pl.String(), "hint_group": pl.String()}


def _names(d: Dialect) -> dict[str, str]:
    return {
        "marts": MARTS_SCHEMA,
        "file": file_identity(),
        "file_t": file_identity("t"),
        "float8": d.float8,
    }


def screen(
    read: FrameReader,
    options: RepackOptions,
    params: Mapping[str, ModelParams],
    copies_of: CopyReader,
) -> tuple[pl.DataFrame, scenarios.Scenario]:
    """The hint groups on the most tapes beyond what their bytes need, each rewritten
    collocated: the candidates (as the repack advisor's other kinds) and their scenarios."""

    nothing = (pl.DataFrame(), scenarios.Scenario.concat([]))
    names = _names(read.dialect)
    try:
        found = frame(read, _SCREEN.format(limit=int(options.screened), **names), SCREENED)
    except DatabaseError as exc:
        # No hint records were ever loaded: no hint groups, and nothing to regroup.
        if missing_relation(str(exc)) and "fct_hinted_files" in str(exc):
            return nothing
        raise
    if found.height == 0:
        return nothing
    members = frame(
        read,
        _MEMBERS.format(wanted=in_list(read.dialect, "hint_group", 1), **names),
        MEMBERS,
        [sorted(found["target"].to_list())],
    )
    copies = copies_of(read, datasets=members["dataset"].unique().sort().to_list())
    # The group stands where the dataset stood: the unit recalled, collocated and counted.
    copies = copies.join(members.select("file_id", "hint_group"), on="file_id", how="inner")
    copies = copies.with_columns(pl.col("hint_group").alias("dataset")).drop("hint_group")
    found = found.filter(pl.col("target").is_in(copies["dataset"].unique().implode()))
    if found.height == 0:
        return nothing
    freed = tapes_only_of(read, copies)
    built = [
        scenarios.collocated(f"{KIND}:{group}", copies.filter(pl.col("dataset") == group), params)
        for group in found["target"].to_list()
    ]
    evidence = pl.format(
        "{} tapes for {} needed; {} files from {} datasets, {} of them grouped by their dataset",
        pl.col("tapes_used"),
        pl.col("tapes_needed"),
        pl.col("files"),
        pl.col("datasets"),
        pl.col("derived"),
    )
    candidates = dataset_candidates(found, KIND, evidence, copies, freed)
    return candidates, scenarios.Scenario.concat(built)
