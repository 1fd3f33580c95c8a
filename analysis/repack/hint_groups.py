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
import psycopg
from psycopg import sql

from tapelens.analysis.repack import scenarios
from tapelens.analysis.repack.advisor import RepackOptions
from tapelens.analysis.repack.candidates import dataset_candidates, frame, tapes_only_of
from tapelens.analysis.throughput.inputs import fetch
from tapelens.analysis.throughput.model import ModelParams
from tapelens.catalog import file_identity
from tapelens.dbt_runs import MARTS_SCHEMA

if TYPE_CHECKING:
    from tapelens.analysis.repack.candidates import CopyReader

KIND = "hint-group"

# Each live file once (its lowest copy number), its group: its own hints', else its dataset's.
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
live as (
    select distinct on ({file}) {file} as file_key, dataset, volume, size_bytes
    from tapelens.tape_files
    where removed_at is null and dataset in (select dataset from hinted_datasets)
    order by {file}, copy_no, volume
),
per_dataset as (
    select live.dataset, hinted.hint_group, count(*) as files
    from live join hinted using (file_key)
    group by live.dataset, hinted.hint_group
),
dataset_group as (
    select distinct on (dataset) dataset, hint_group
    from per_dataset
    order by dataset, files desc, hint_group
),
grouped as (
    select live.file_key, live.dataset, live.volume, live.size_bytes,
           coalesce(hinted.hint_group, dataset_group.hint_group) as hint_group,
           hinted.hint_group is null as derived
    from live
    left join hinted using (file_key)
    left join dataset_group using (dataset)
)
"""

_SCREEN = (
    _GROUPED
    + """,
groups as (
    select g.hint_group, count(*) as files, sum(g.size_bytes) as bytes,
           count(distinct g.volume) as tapes_used,
           greatest(ceil(sum(g.size_bytes)::float8 / nullif(max(o.capacity_bytes), 0)), 1)
               as tapes_needed,
           count(*) filter (where g.derived) as derived_files,
           count(distinct g.dataset) as datasets
    from grouped as g
    left join {marts}.fct_tape_occupancy as o using (volume)
    where g.hint_group is not null
    group by g.hint_group
)
select hint_group, files, bytes, tapes_used, tapes_needed::bigint, derived_files, datasets
from groups
where tapes_used > tapes_needed
order by (tapes_used - tapes_needed) desc, hint_group
limit {limit}
"""
)

_MEMBERS = (
    _GROUPED
    + """
select file_key, dataset, hint_group from grouped where hint_group = any({groups})
"""
)


def _has_hints(conn: psycopg.Connection) -> bool:
    found = fetch(conn, "select to_regclass(%s)", (f"{MARTS_SCHEMA}.fct_hinted_files",))
    return found[0][0] is not None


def screen(
    conn: psycopg.Connection,
    options: RepackOptions,
    params: Mapping[str, ModelParams],
    read: CopyReader,
) -> tuple[pl.DataFrame, scenarios.Scenario]:
    """The hint groups on the most tapes beyond what their bytes need, each rewritten
    collocated: the candidates (as the repack advisor's other kinds) and their scenarios."""

    nothing = (pl.DataFrame(), scenarios.Scenario.concat([]))
    if not _has_hints(conn):
        return nothing
    names = {
        "marts": sql.Identifier(MARTS_SCHEMA),
        "file": sql.SQL(file_identity()),
        "file_t": sql.SQL(file_identity("t")),
    }
    query = sql.SQL(_SCREEN).format(limit=sql.Literal(options.screened), **names)
    columns = ["target", "files", "bytes", "tapes_used", "tapes_needed", "derived", "datasets"]
    found = frame(conn, query, columns)
    if found.height == 0:
        return nothing
    members = frame(
        conn,
        sql.SQL(_MEMBERS).format(groups=sql.Literal(found["target"].to_list()), **names),
        ["file_id", "dataset", "hint_group"],
    )
    copies = read(conn, datasets=members["dataset"].unique().sort().to_list())
    # The group stands where the dataset stood: the unit recalled, collocated and counted.
    copies = copies.join(members.select("file_id", "hint_group"), on="file_id", how="inner")
    copies = copies.with_columns(pl.col("hint_group").alias("dataset")).drop("hint_group")
    found = found.filter(pl.col("target").is_in(copies["dataset"].unique().implode()))
    if found.height == 0:
        return nothing
    freed = tapes_only_of(conn, copies)
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
