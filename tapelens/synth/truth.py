"""Ground truth: the gap statistics, duplicates and copies the generator knows to be true.

Gap conventions (the published analysis, DOMAIN.md): on one tape, a dataset's files in position
order; the gap (posdiff) of a file is its position minus the previous file's. The first file of
a dataset on a tape has no gap; members of small-file aggregates are left out of the statistics,
every member (the posdiff is taken over all the dataset's copies on the tape, members included,
so a file right after an aggregate of its own dataset has posdiff 1); posdiff >= 100 is a
locate, counted apart and not in the mean; repacked tapes (state `repacked`: emptied by a repack,
their copies removed) are left out. A gap belongs to the period (before/after the cutover) of its
file's `written_at`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from tapelens.synth.site import Site
from tapelens.synth.tapes import REPACKED, Placement

LOCATE_POSDIFF = 100


@dataclass
class GapIndex:
    """The live copies by (volume, dataset): their gaps, and how many copies each pair holds."""

    rows: pl.DataFrame  # ds, tape, posdiff (null: first on the tape), after; members left out
    groups: pl.DataFrame  # ds, tape, n_copies, n_aggregated


def gap_index(frame: pl.DataFrame, site: Site, placement: Placement, cutover_s: int) -> GapIndex:
    """Posdiffs of the live copies on tapes not repacked, per dataset and volume.

    posdiff is taken over all the dataset's live copies on the tape, aggregate members
    included, in (position, offset) order; members are then left out. The copy table is in
    (volume, position, member) order already, so a stable sort by (volume, dataset) keeps the
    position order inside each dataset.
    """
    tape = frame["tape"].to_numpy()
    keep = ~frame["removed"].to_numpy() & (placement.tape_state[tape] != REPACKED)
    idx = np.flatnonzero(keep).astype(np.int32)
    del keep
    tape = tape[idx]
    ds = site.f_ds[frame["file"].to_numpy()[idx]]
    key = tape.astype(np.int64) * (len(site.ds_dir) + 1) + ds
    order = np.argsort(key, kind="stable")
    key = key[order]
    tape, ds = tape[order], ds[order]
    idx = idx[order]
    del order
    new_group = np.ones(idx.size, dtype=bool)
    new_group[1:] = key[1:] != key[:-1]
    del key
    position = frame["position"].to_numpy()[idx]
    posdiff = np.full(idx.size, -1, dtype=np.int32)
    posdiff[1:] = np.where(new_group[1:], -1, position[1:] - position[:-1])
    del position
    alone = frame["member"].to_numpy()[idx] == 0
    after = frame["written_s"].to_numpy()[idx] >= cutover_s
    del idx
    starts = np.flatnonzero(new_group)
    groups = pl.DataFrame(
        {
            "ds": ds[starts],
            "tape": tape[starts],
            "n_copies": np.diff(np.append(starts, ds.size)).astype(np.int64),
            "n_aggregated": np.add.reduceat(~alone, starts).astype(np.int64)
            if starts.size
            else np.zeros(0, dtype=np.int64),
        }
    )
    rows = pl.DataFrame(
        {"ds": ds[alone], "tape": tape[alone], "posdiff": posdiff[alone], "after": after[alone]}
    ).with_columns(pl.when(pl.col("posdiff") >= 0).then(pl.col("posdiff")).alias("posdiff"))
    return GapIndex(rows=rows, groups=groups)


def dataset_tape_gaps(index: GapIndex) -> pl.DataFrame:
    """Per dataset x volume: copies, aggregated copies left out, gaps N / mean / sigma, locates."""
    gaps = index.rows.group_by(["ds", "tape"]).agg(**_gap_aggs())
    out = index.groups.join(gaps, on=["ds", "tape"], how="left").sort(["ds", "tape"])
    return out.with_columns(pl.col("n").fill_null(0), pl.col("n_locates").fill_null(0))


def tapes_per_dataset(index: GapIndex, n_datasets: int) -> np.ndarray:
    """Number of volumes holding live copies of each dataset."""
    return np.bincount(index.groups["ds"].to_numpy(), minlength=n_datasets).astype(np.int64)


def gap_by_type_period(rows: pl.DataFrame, site: Site) -> pl.DataFrame:
    """Per dataset type and period (before/after the cutover): mu, n, sigma, locates."""
    types = pl.Series([site.type_names[int(t)] for t in site.ds_type], dtype=pl.String)
    return (
        rows.with_columns(
            dataset_type=types.gather(rows["ds"].to_numpy()),
            period=pl.when(pl.col("after")).then(pl.lit("after")).otherwise(pl.lit("before")),
        )
        .group_by(["dataset_type", "period"])
        .agg(**_gap_aggs())
        .rename({"mean": "mu"})
        .sort(["dataset_type", "period"], descending=[False, True])
    )


def _gap_aggs() -> dict[str, pl.Expr]:
    counted = pl.col("posdiff").filter(pl.col("posdiff") < LOCATE_POSDIFF)
    return {
        "n": counted.count().cast(pl.Int64),
        "mean": counted.cast(pl.Float64).mean(),
        "sigma": counted.cast(pl.Float64).std(ddof=1),
        "n_locates": (pl.col("posdiff") >= LOCATE_POSDIFF).sum().cast(pl.Int64),
    }
