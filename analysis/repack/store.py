"""The repack advisor against the tables: screen candidates on the marts, read their copies,
build each repack's placement, weigh them (analysis/repack/advisor.py).

Screening reads the small per-dataset and per-tape marts (dim_datasets, fct_tape_occupancy,
fct_dataset_tape_gaps, and the placement costs the marts build priced,
analysis/recall/datasets/stored.py), so a 10 M-copy catalog costs only the copies of the
screened candidates. Scattered datasets are screened by their placement cost, the figure every
command quotes; the screens only choose which candidates the throughput model weighs.

The same queries run on PostgreSQL and on Spark (analysis/repack/candidates.py): `advise_from`
reads through the engine's FrameReader and weighs what it read with the same Python on
either; `advise` is it on a PostgreSQL connection.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import polars as pl
import psycopg

from tapelens.analysis.dedup import plan as dedup
from tapelens.analysis.recall.datasets.stored import DATASETS as PLACED_DATASETS
from tapelens.analysis.recall.engine import readable_media
from tapelens.analysis.recall.plan.summary import duration
from tapelens.analysis.repack import hint_groups, scenarios
from tapelens.analysis.repack.advisor import RepackOptions, empty_ranking, weigh
from tapelens.analysis.repack.candidates import (
    UNAVAILABLE,
    CopyReader,
    dataset_candidates,
    datasets_on,
    frame,
    tapes_only_of,
)
from tapelens.analysis.throughput.model import ModelParams
from tapelens.analysis.throughput.store import params_in_use, readable_by
from tapelens.dbt_runs import MARTS_SCHEMA
from tapelens.errors import DatabaseError, InputError
from tapelens.frames import SPARK, FrameReader, connection_reader, missing_relation
from tapelens.tape_states import WRITTEN_NO_MORE

SCATTERED_MIN_MEAN_GAP = 1.2

Progress = Callable[[str], None]


# What a file left out is named by, as plan recall names its unavailable files.


@dataclass(frozen=True)
class RepackAdvice:
    candidates: pl.DataFrame  # analysis.repack.advisor.COLUMNS, ranked
    summary: dict[str, Any]
    # Files a candidate's recall reads now from media no given drive reads (path, file_id,
    # size_bytes, reason): the recall engine leaves them out of the recall figures.
    unavailable: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=UNAVAILABLE))

    def top(self, n: int) -> pl.DataFrame:
        return self.candidates.head(n)

    def volumes(self, n: int) -> list[str]:
        """The volumes the top n repacks read, in rank order, each once."""
        seen: dict[str, None] = {}
        for volumes in self.top(n)["volumes"].to_list():
            for volume in volumes or []:
                seen.setdefault(volume, None)
        return list(seen)


def advise(
    conn: psycopg.Connection, options: RepackOptions, progress: Progress | None = None
) -> RepackAdvice:
    """Screen, evaluate and rank the repack candidates of the catalog in `conn` (PostgreSQL),
    with the model parameters in use there."""
    params = {m: p for m, (p, _) in params_in_use(conn).items()}
    return advise_from(connection_reader(conn), options, params, readable_by(conn), progress)


def advise_from(
    read: FrameReader,
    options: RepackOptions,
    params: Mapping[str, ModelParams],
    readers: Mapping[str, tuple[str, ...]],
    progress: Progress | None = None,
) -> RepackAdvice:
    """Screen, evaluate and rank the repack candidates of the tables `read` reads (either
    engine), each weighed with `params` on drives that read the media `readers` says."""
    say = progress or (lambda _msg: None)
    _require_marts(read)
    copies = CopyReader(frozenset(readable_media(options.drive_counts, dict(readers))))
    built: list[tuple[pl.DataFrame, scenarios.Scenario]] = []
    for kind in options.kinds:
        say(f"screening {kind}")
        found = SCREENS[kind](read, options, params, copies)
        if found[0].height:
            say(f"weighing {found[0].height} {kind} candidate(s)")
            built.append(found)
    unavailable = copies.unavailable()
    candidates = pl.concat([c for c, _ in built], how="diagonal_relaxed") if built else None
    scenario = scenarios.Scenario.concat([s for _, s in built])
    if unavailable.height and scenario.now.is_empty():
        drives = ",".join(f"{d}:{n}" for d, n in options.drive_counts.items())
        why = ", ".join(sorted(unavailable["reason"].unique().to_list()))
        raise InputError(
            f"nothing to weigh on drives {drives}: the candidates' files have no"
            f" readable copy ({why})"
        )
    if candidates is None:
        return RepackAdvice(empty_ranking(), _summary(empty_ranking(), options), unavailable)
    ranked = weigh(
        candidates,
        scenario.now,
        scenario.after,
        scenario.read,
        scenario.write,
        params,
        options,
        dict(readers),
    )
    return RepackAdvice(ranked, _summary(ranked, options), unavailable)


def _options_dict(options: RepackOptions) -> dict[str, Any]:
    return {
        "drives": options.drive_counts,
        "recalls_per_year": options.recalls_per_year,
        "horizon_years": options.horizon_years,
        "kinds": list(options.kinds),
    }


def _summary(ranked: pl.DataFrame, options: RepackOptions) -> dict[str, Any]:
    top = ranked.head(options.top)
    worth = top.filter(pl.col("net_gain_h") > 0)
    return {
        "candidates": ranked.height,
        "by_kind": {str(k): int(n) for k, n in ranked.group_by("kind").len().iter_rows()},
        "top": top.height,
        "worth_it": worth.height,
        "top_net_gain_h": float(worth["net_gain_h"].sum() or 0.0),
        "top_repack_cost_h": float(top["repack_cost_h"].sum() or 0.0),
        "top_tapes_freed": float(top["tapes_freed"].sum() or 0.0),
        "options": _options_dict(options),
    }


def _build_first(read: FrameReader, what: str) -> str:
    again = " --engine spark" if read.dialect == SPARK else ""
    return f"the {what} missing: run `tapelens marts build{again}` first"


def _require(read: FrameReader, query: str, what: str) -> None:
    """Refuse with the command that makes them when the tables `query` reads are missing."""
    try:
        read(query)
    except DatabaseError as exc:
        if missing_relation(str(exc)):
            raise InputError(_build_first(read, what)) from None
        raise


def _require_marts(read: FrameReader) -> None:
    for mart in ("dim_datasets", "fct_tape_occupancy"):
        _require(read, f"select 1 as present from {MARTS_SCHEMA}.{mart} limit 1", "marts are")


def _with_readable_copies(found: pl.DataFrame, copies: pl.DataFrame, column: str) -> pl.DataFrame:
    """The candidates (target: a dataset or a volume) left with a copy the drives read; the
    others' files are all unavailable (CopyReader), and there is no recall of them to weigh."""
    return found.filter(pl.col("target").is_in(copies[column].unique().implode()))


def _screen_scattered(
    read: FrameReader,
    options: RepackOptions,
    params: Mapping[str, ModelParams],
    copies_of: CopyReader,
) -> tuple[pl.DataFrame, scenarios.Scenario]:
    # Screened by the placement cost the marts build priced (analysis/recall/datasets): the
    # drive time a recall of the dataset spends beyond the same bytes ideally placed.
    placed = f"{MARTS_SCHEMA}.{PLACED_DATASETS}"
    _require(read, f"select 1 as present from {placed} limit 1", "placement costs are")
    query = f"""select d.dataset, d.files, d.size_bytes, d.tapes_used,
                  coalesce(d.tapes_needed, 1), d.mean_gap, d.n_locates, p.placement_cost_s
           from {MARTS_SCHEMA}.dim_datasets as d
           join {placed} as p on p.dataset = d.dataset
           where p.placement_cost_s > 0
             and (d.tapes_used > coalesce(d.tapes_needed, 1) or d.mean_gap > {read.dialect.param(1)}
                  or d.n_locates > 0)
           order by p.placement_cost_s desc, d.dataset
           limit {int(options.screened)}"""
    schema = {
        "target": pl.String(),
        "files": pl.Int64(),
        "bytes": pl.Int64(),
        "tapes_used": pl.Int64(),
        "tapes_needed": pl.Int64(),
        "mean_gap": pl.Float64(),
        "n_locates": pl.Int64(),
        "placement_cost_s": pl.Float64(),
    }
    found = frame(read, query, schema, [SCATTERED_MIN_MEAN_GAP])
    if found.height == 0:
        return found, scenarios.Scenario.concat([])
    copies = copies_of(read, datasets=found["target"].to_list())
    found = _with_readable_copies(found, copies, "dataset")
    if found.height == 0:
        return found, scenarios.Scenario.concat([])
    freed = tapes_only_of(read, copies)
    built = []
    for dataset in found["target"].to_list():
        built.append(
            scenarios.collocated(
                _cand("scattered-dataset", dataset),
                copies.filter(pl.col("dataset") == dataset),
                params,
            )
        )
    found = found.with_columns(
        pl.col("placement_cost_s").map_elements(duration, return_dtype=pl.String).alias("_cost")
    )
    evidence = pl.format(
        "placement cost {} of drive time; {} tapes for {} needed; mean gap {}; {} locates",
        pl.col("_cost"),
        pl.col("tapes_used"),
        pl.col("tapes_needed"),
        pl.col("mean_gap").round(2),
        pl.col("n_locates"),
    )
    candidates = dataset_candidates(found, "scattered-dataset", evidence, copies, freed)
    return candidates, scenarios.Scenario.concat(built)


def _screen_small_files(
    read: FrameReader,
    options: RepackOptions,
    params: Mapping[str, ModelParams],
    copies_of: CopyReader,
) -> tuple[pl.DataFrame, scenarios.Scenario]:
    loose = "d.small_files - least(coalesce(a.members, 0), d.small_files)"
    query = f"""with aggregated as (
               select dataset, sum(n_aggregate_members) as members
               from {MARTS_SCHEMA}.fct_dataset_tape_gaps group by dataset
           )
           select d.dataset, d.files, d.size_bytes, d.small_files,
                  cast({loose} as bigint) as loose
           from {MARTS_SCHEMA}.dim_datasets as d
           left join aggregated as a on a.dataset = d.dataset
           where d.small_file_share >= {read.dialect.param(1)}
             and d.small_files > coalesce(a.members, 0)
           order by {loose} desc, d.dataset
           limit {int(options.screened)}"""
    schema = {
        "target": pl.String(),
        "files": pl.Int64(),
        "bytes": pl.Int64(),
        "small_files": pl.Int64(),
        "loose": pl.Int64(),
    }
    found = frame(read, query, schema, [float(options.min_small_file_share)])
    if found.height == 0:
        return found, scenarios.Scenario.concat([])
    copies = copies_of(read, datasets=found["target"].to_list())
    found = _with_readable_copies(found, copies, "dataset")
    if found.height == 0:
        return found, scenarios.Scenario.concat([])
    freed = tapes_only_of(read, copies)
    built = [
        scenarios.containerised(
            _cand("small-files", dataset),
            copies.filter(pl.col("dataset") == dataset),
            params,
            options.small_file_bytes,
            options.container_bytes,
        )
        for dataset in found["target"].to_list()
    ]
    evidence = pl.format(
        "{} of {} files under {} GB, about {} outside aggregates",
        pl.col("small_files"),
        pl.col("files"),
        pl.lit(options.small_file_bytes / 1e9),
        pl.col("loose"),
    )
    candidates = dataset_candidates(found, "small-files", evidence, copies, freed)
    return candidates, scenarios.Scenario.concat(built)


def _screen_stray(
    read: FrameReader,
    options: RepackOptions,
    params: Mapping[str, ModelParams],
    copies_of: CopyReader,
) -> tuple[pl.DataFrame, scenarios.Scenario]:
    query = f"""select volume, files, live_bytes, duplicate_copies, capacity_bytes
           from {MARTS_SCHEMA}.fct_tape_occupancy
           where stray_copies > 0 and state <> 'repacked'
           order by stray_copies desc, duplicate_copies desc, volume
           limit {int(options.screened)}"""
    schema = {
        "target": pl.String(),
        "files": pl.Int64(),
        "bytes": pl.Int64(),
        "duplicates": pl.Int64(),
        "capacity_bytes": pl.Int64(),
    }
    found = frame(read, query, schema)
    if found.height == 0:
        return found, scenarios.Scenario.concat([])
    volumes = found["target"].to_list()
    copies = copies_of(read, datasets=datasets_on(read, volumes), volumes=volumes)
    found = _with_readable_copies(found, copies, "volume")
    if found.height == 0:
        return found, scenarios.Scenario.concat([])
    volumes = found["target"].to_list()
    plan = dedup.classify_copies(copies)
    retired = plan.filter((pl.col("action") == "retire") & pl.col("volume").is_in(volumes))
    per_volume = retired.group_by("volume").agg(
        pl.len().alias("retire"),
        pl.col("stray").sum().alias("stray"),
        pl.col("dataset").filter(pl.col("stray")).n_unique().alias("stray_datasets"),
    )
    found = found.join(per_volume, left_on="target", right_on="volume", how="inner").filter(
        pl.col("stray") > 0
    )
    built = [
        scenarios.strays_retired(
            _cand("stray-copies", volume),
            volume,
            copies.join(
                copies.filter(pl.col("volume") == volume).select("dataset").unique(),
                on="dataset",
                how="semi",
            ),
            plan,
        )
        for volume in found["target"].to_list()
    ]
    # A tape holding nothing but stray copies is emptied by retiring them: freed, no move.
    emptied = pl.col("stray") >= pl.col("files")
    candidates = found.select(
        pl.format("stray-copies:{}", pl.col("target")).alias("cand"),
        pl.lit("stray-copies").alias("kind"),
        "target",
        pl.format(
            "{} stray copies off their datasets' tapes, from {} datasets, to retire; "
            "{} of {} copies on the tape are duplicates",
            pl.col("stray"),
            pl.col("stray_datasets"),
            pl.col("retire"),
            pl.col("files"),
        ).alias("evidence"),
        "files",
        "bytes",
        emptied.cast(pl.Float64).alias("tapes_freed"),
        # Otherwise the retired copies leave dead space, reclaimed when the tape is repacked.
        pl.when(emptied)
        .then(pl.col("capacity_bytes"))
        .otherwise(pl.lit(0))
        .alias("capacity_reclaimed_bytes"),
        pl.concat_list(pl.col("target")).alias("volumes"),
    )
    return candidates, scenarios.Scenario.concat(built)


def _screen_low_occupancy(
    read: FrameReader,
    options: RepackOptions,
    params: Mapping[str, ModelParams],
    copies_of: CopyReader,
) -> tuple[pl.DataFrame, scenarios.Scenario]:
    d = read.dialect
    # Tapes written no more: nothing is appended, so their dead space stays until a repack.
    states = ", ".join(d.param(n) for n in range(2, len(WRITTEN_NO_MORE) + 2))
    query = f"""select volume, files, live_bytes, capacity_bytes, occupancy, state
           from {MARTS_SCHEMA}.fct_tape_occupancy
           where state in ({states}) and files > 0 and occupancy < {d.param(1)}
           order by occupancy, volume
           limit {int(options.screened)}"""
    schema = {
        "target": pl.String(),
        "files": pl.Int64(),
        "bytes": pl.Int64(),
        "capacity_bytes": pl.Int64(),
        "occupancy": pl.Float64(),
        "state": pl.String(),
    }
    found = frame(read, query, schema, [float(options.max_occupancy), *WRITTEN_NO_MORE])
    if found.height == 0:
        return found, scenarios.Scenario.concat([])
    volumes = found["target"].to_list()
    copies = copies_of(read, datasets=datasets_on(read, volumes), volumes=volumes)
    found = _with_readable_copies(found, copies, "volume")
    if found.height == 0:
        return found, scenarios.Scenario.concat([])
    volumes = found["target"].to_list()
    built = []
    for volume in volumes:
        mine = copies.filter(pl.col("volume") == volume).select("dataset").unique()
        built.append(
            scenarios.tape_emptied(
                _cand("low-occupancy", volume),
                volume,
                copies.join(mine, on="dataset", how="semi"),
            )
        )
    candidates = found.select(
        pl.format("low-occupancy:{}", pl.col("target")).alias("cand"),
        pl.lit("low-occupancy").alias("kind"),
        "target",
        pl.format(
            "occupancy {}% ({} GB live of {} GB), state {}",
            (pl.col("occupancy") * 100).round(1),
            (pl.col("bytes") / 1e9).round(1),
            (pl.col("capacity_bytes") / 1e9).round(0),
            pl.col("state"),
        ).alias("evidence"),
        "files",
        "bytes",
        pl.lit(1.0).alias("tapes_freed"),
        (pl.col("capacity_bytes") - pl.col("bytes")).alias("capacity_reclaimed_bytes"),
        pl.concat_list(pl.col("target")).alias("volumes"),
    )
    return candidates, scenarios.Scenario.concat(built)


def _cand(kind: str, target: str) -> str:
    return f"{kind}:{target}"


SCREENS: dict[
    str,
    Callable[
        [FrameReader, RepackOptions, Mapping[str, ModelParams], CopyReader],
        tuple[pl.DataFrame, scenarios.Scenario],
    ],
] = {
    "scattered-dataset": _screen_scattered,
    "stray-copies": _screen_stray,
    "low-occupancy": _screen_low_occupancy,
    "small-files": _screen_small_files,
    "hint-group": hint_groups.screen,
}
