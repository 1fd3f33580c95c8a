"""The repack advisor: which datasets and tapes to repack, what each would gain and cost.

Five kinds of candidate, each with its evidence (see analysis/repack/scenarios.py for what each
repack does to the placement):
- scattered-dataset: a dataset on far more tapes than its bytes need, with high gaps or many
  locates; rewritten collocated in position order onto the fewest tapes.
- stray-copies: a tape holding duplicate copies away from their datasets' tapes; those
  copies are retired (tapelens plan dedup says which), the rest of the tape stays (a tape of
  nothing but stray copies is freed).
- low-occupancy: a filled tape holding little live data; its live data rewritten compactly and
  the cartridge freed.
- small-files: a dataset of mostly small files outside aggregates; rewritten collocated with
  the small files packed into containers (docs/domain.md: per-file overhead dominates small files).
- hint-group: a collocation hint group (the files an experiment sends with the same hints, the
  files written before it sent any grouped by their dataset) on far more tapes than its bytes
  need; rewritten collocated as one (analysis/repack/hint_groups.py).

For each: the predicted recall of the affected datasets now and after (each dataset recalled on
its own on the given drives; elapsed hours, and drive hours), the repack cost in drive hours
(reading what moves and writing it, timed by the same throughput model), tapes freed and
consumed, the payback in recalls (cost / drive hours saved per recall) and the net gain over
the horizon: recalls_per_year * horizon_years * saving - cost. Ranked by net gain.
Pure: frames and options in, one frame out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import polars as pl

from tapelens.analysis.recall.engine import Policy, engine_inputs, recall
from tapelens.analysis.recall.schedule.drives import readable_by_catalog
from tapelens.analysis.throughput.model import ModelParams, tape_times

KINDS = ("scattered-dataset", "stray-copies", "low-occupancy", "small-files", "hint-group")
HOUR_S = 3600.0
GB = 1_000_000_000


@dataclass(frozen=True)
class RepackOptions:
    """How candidates are chosen and weighed.

    small_file_bytes follows the models' small_file_bytes var (1 GB: GridKa read files under
    1 GB at 30-50 MB/s against 160-210 MB/s above 9 GB, docs/domain.md). container_bytes: the size
    of the containers small files are packed into (HPSS aggregates reach 16 GB).
    """

    drives: tuple[tuple[str, int], ...]
    top: int = 20
    kinds: tuple[str, ...] = KINDS
    recalls_per_year: float = 1.0
    horizon_years: float = 5.0
    max_occupancy: float = 0.5
    min_small_file_share: float = 0.5
    small_file_bytes: int = GB
    container_bytes: int = 10 * GB
    screen: int = 0  # candidates per kind evaluated with the model; 0: max(3 * top, 30)

    @property
    def drive_counts(self) -> dict[str, int]:
        return {d: n for d, n in self.drives if n > 0}

    @property
    def screened(self) -> int:
        return self.screen if self.screen > 0 else max(3 * self.top, 30)

    @property
    def recalls_over_horizon(self) -> float:
        return self.recalls_per_year * self.horizon_years


def _group_key() -> pl.Expr:
    return pl.format("{}\x1f{}", pl.col("cand"), pl.col("dataset")).alias("_group")


def recall_hours(
    frame: pl.DataFrame,
    params: Mapping[str, ModelParams],
    drives: Mapping[str, int],
    readable_by: Mapping[str, tuple[str, ...]] | None,
    prefix: str,
) -> pl.DataFrame:
    """Per candidate: the recall of each affected dataset on its own (the recall engine, each
    dataset on its own copy of the drives), summed over datasets: elapsed hours (makespan on
    the drives), drive hours and tapes mounted."""
    readers = dict(readable_by) if readable_by is not None else readable_by_catalog()
    counts = {d: n for d, n in drives.items() if n > 0}
    copies, wanted = engine_inputs(frame.with_columns(_group_key()), group="_group")
    done = recall(copies, wanted, params, counts, readers, Policy(), own_drives=True)
    placed = done.schedule.tapes.join(
        copies.select("vid", "cand", "dataset").unique("vid"), on="vid", how="left"
    )
    per_dataset = placed.group_by("cand", "dataset").agg(
        pl.col("end_s").max().alias("_elapsed_s"),
        pl.col("total_s").sum().alias("_drive_s"),
        pl.len().alias("_mounts"),
    )
    # Summed over the datasets in one order: in the order a hash grouping leaves them, a sum of
    # three or more floats changes its last bits from one run (or engine) to the next.
    return (
        per_dataset.sort("cand", "dataset")
        .group_by("cand", maintain_order=True)
        .agg(
            (pl.col("_elapsed_s").sum() / HOUR_S).alias(f"recall_{prefix}_h"),
            (pl.col("_drive_s").sum() / HOUR_S).alias(f"recall_{prefix}_drive_h"),
            pl.col("_mounts").sum().alias(f"mounts_{prefix}"),
            pl.len().alias("datasets"),
        )
    )


def drive_hours(frame: pl.DataFrame, params: Mapping[str, ModelParams], name: str) -> pl.DataFrame:
    """Per candidate: drive hours to stream `frame` tape by tape (mount, positioning, reads)."""
    keys = ["cand", "volume"]
    tapes = tape_times(frame, params, keys)
    return tapes.group_by("cand").agg(
        (pl.col("total_s").sum() / HOUR_S).alias(name),
        pl.col("volume").n_unique().alias(f"{name}_tapes"),
    )


def weigh(
    candidates: pl.DataFrame,
    now: pl.DataFrame,
    after: pl.DataFrame,
    read: pl.DataFrame,
    write: pl.DataFrame,
    params: Mapping[str, ModelParams],
    options: RepackOptions,
    readable_by: Mapping[str, tuple[str, ...]] | None = None,
) -> pl.DataFrame:
    """Join the predictions to the candidates (cand, kind, target, evidence, tapes_freed,
    capacity_reclaimed_bytes, volumes) and rank them by net gain over the horizon."""
    drives = options.drive_counts
    written = write.group_by("cand").agg(
        pl.col("size_bytes").sum().alias("_written_bytes"),
        # On a tie, the first media type by name: mode() gives the tied ones in any order.
        pl.col("media_type").mode().sort().first().alias("_write_media"),
    )
    capacity = {m: p.capacity_bytes for m, p in params.items()}
    out = (
        candidates.join(
            recall_hours(now, params, drives, readable_by, "now"), on="cand", how="left"
        )
        .join(
            recall_hours(after, params, drives, readable_by, "after").drop("datasets"),
            on="cand",
            how="left",
        )
        .join(drive_hours(read, params, "repack_read_h"), on="cand", how="left")
        .join(drive_hours(write, params, "repack_write_h"), on="cand", how="left")
        .join(written, on="cand", how="left")
        .with_columns(
            pl.col("repack_read_h", "repack_write_h").fill_null(0.0),
            (
                pl.col("_written_bytes")
                / pl.col("_write_media").replace_strict(
                    capacity, default=None, return_dtype=pl.Float64
                )
            )
            .fill_null(0.0)
            .alias("tapes_consumed"),
        )
        .with_columns(
            (pl.col("recall_now_drive_h") - pl.col("recall_after_drive_h")).alias(
                "saving_per_recall_drive_h"
            ),
            (pl.col("recall_now_h") - pl.col("recall_after_h")).alias("saving_per_recall_h"),
            (pl.col("repack_read_h") + pl.col("repack_write_h")).alias("repack_cost_h"),
        )
        .with_columns(
            pl.when(pl.col("saving_per_recall_drive_h") > 0)
            .then(pl.col("repack_cost_h") / pl.col("saving_per_recall_drive_h"))
            .alias("payback_recalls"),
            (
                options.recalls_over_horizon * pl.col("saving_per_recall_drive_h")
                - pl.col("repack_cost_h")
            ).alias("net_gain_h"),
        )
        .sort(["net_gain_h", "kind", "target"], descending=[True, False, False], nulls_last=True)
    )
    return out.with_columns(
        pl.int_range(1, pl.len() + 1).alias("rank"),
        pl.int_range(1, pl.len() + 1).over("kind").alias("kind_rank"),
    ).select(*COLUMNS)


COLUMNS = [
    "rank",
    "kind",
    "kind_rank",
    "target",
    "evidence",
    "datasets",
    "files",
    "bytes",
    "mounts_now",
    "mounts_after",
    "recall_now_h",
    "recall_after_h",
    "recall_now_drive_h",
    "recall_after_drive_h",
    "saving_per_recall_h",
    "saving_per_recall_drive_h",
    "repack_read_h",
    "repack_write_h",
    "repack_cost_h",
    "tapes_freed",
    "tapes_consumed",
    "capacity_reclaimed_bytes",
    "payback_recalls",
    "net_gain_h",
    "volumes",
]


_DTYPES: dict[str, pl.DataType] = {
    "rank": pl.Int64(),
    "kind": pl.String(),
    "kind_rank": pl.Int64(),
    "target": pl.String(),
    "evidence": pl.String(),
    "datasets": pl.UInt32(),
    "files": pl.Int64(),
    "bytes": pl.Int64(),
    "mounts_now": pl.UInt32(),
    "mounts_after": pl.UInt32(),
    "volumes": pl.List(pl.String()),
}


def empty_ranking() -> pl.DataFrame:
    """No candidates: the ranking's columns and nothing else."""
    return pl.DataFrame(schema={c: _DTYPES.get(c, pl.Float64()) for c in COLUMNS})
