"""Ground truth: the gap statistics the generator knows to be true.

Gap conventions (the published analysis, docs/domain.md): on one tape, a dataset's files in position
order; the gap (posdiff) of a file is its position minus the previous file's. The first file of
a dataset on a tape has no gap; members of small-file aggregates are left out of the statistics,
every member (the posdiff is taken over all the dataset's copies on the tape, members included,
so a file right after an aggregate of its own dataset has posdiff 1); posdiff >= 100 is a
locate, counted apart and not in the mean; repacked tapes (state `repacked`: emptied by a repack,
their copies removed) are left out. A gap belongs to the period (before/after the cutover) of its
file's `written_at`. Statistics are taken with numpy over integer group keys, so that 10 M
copies need no more than a few arrays of their length.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from tapelens.world.site import Site
from tapelens.world.tapes import REPACKED, Placement

LOCATE_POSDIFF = 100


@dataclass
class GapIndex:
    """Live copies on tapes not repacked, in (volume, dataset, position) order.

    Pairs (volume, dataset) are numbered 0.. in that order; rows are the copies outside
    aggregates with their posdiff (-1: the first copy of the dataset on the volume).
    """

    pair_ds: np.ndarray  # int32 per pair
    pair_tape: np.ndarray  # int32 per pair
    pair_copies: np.ndarray  # int64 live copies of the dataset on the volume
    pair_aggregated: np.ndarray  # int64 of which aggregate members
    row_pair: np.ndarray  # int64 per row
    row_posdiff: np.ndarray  # int32 per row
    row_after: np.ndarray  # bool per row: written on or after the cutover


def gap_index(frame: pl.DataFrame, site: Site, placement: Placement, cutover_s: int) -> GapIndex:
    """Posdiffs of the live copies per dataset and volume.

    The copy table is in (volume, position, member) order already, so a stable sort by
    (volume, dataset) keeps the position (and offset) order inside each dataset.
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
    tape, ds, idx = tape[order], ds[order], idx[order]
    del order
    new_pair = np.ones(idx.size, dtype=bool)
    new_pair[1:] = key[1:] != key[:-1]
    del key
    position = frame["position"].to_numpy()[idx]
    posdiff = np.full(idx.size, -1, dtype=np.int32)
    posdiff[1:] = np.where(new_pair[1:], -1, position[1:] - position[:-1])
    del position
    alone = frame["member"].to_numpy()[idx] == 0
    after = frame["written_s"].to_numpy()[idx] >= cutover_s
    del idx
    starts = np.flatnonzero(new_pair)
    pair = np.cumsum(new_pair) - 1
    del new_pair
    n_pairs = starts.size
    return GapIndex(
        pair_ds=ds[starts],
        pair_tape=tape[starts],
        pair_copies=np.bincount(pair, minlength=n_pairs).astype(np.int64),
        pair_aggregated=np.bincount(pair[~alone], minlength=n_pairs).astype(np.int64),
        row_pair=pair[alone],
        row_posdiff=posdiff[alone],
        row_after=after[alone],
    )


@dataclass(frozen=True)
class _Stats:
    n: np.ndarray
    mean: np.ndarray  # nan where n == 0
    sigma: np.ndarray  # sample standard deviation, nan where n < 2
    locates: np.ndarray
    rows: np.ndarray  # rows of the group (first copies included)


def _stats(group: np.ndarray, posdiff: np.ndarray, n_groups: int) -> _Stats:
    """Read-through gaps (1..99) per group: n, mean, two-pass sample sigma; locates apart."""
    counted = (posdiff > 0) & (posdiff < LOCATE_POSDIFF)
    g = group[counted]
    x = posdiff[counted].astype(np.float64)
    n = np.bincount(g, minlength=n_groups)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.bincount(g, weights=x, minlength=n_groups) / n
        dev = x - mean[g]
        ss = np.bincount(g, weights=dev * dev, minlength=n_groups)
        sigma = np.where(n >= 2, np.sqrt(ss / np.maximum(n - 1, 1)), np.nan)
    locates = np.bincount(group[posdiff >= LOCATE_POSDIFF], minlength=n_groups)
    rows = np.bincount(group, minlength=n_groups)
    return _Stats(n.astype(np.int64), mean, sigma, locates.astype(np.int64), rows)


def _nullable(values: np.ndarray) -> pl.Series:
    return pl.Series(values).fill_nan(None)


def dataset_tape_gaps(index: GapIndex) -> pl.DataFrame:
    """Per dataset x volume: copies, aggregated copies left out, gaps N / mean / sigma, locates."""
    st = _stats(index.row_pair, index.row_posdiff, index.pair_ds.size)
    frame = pl.DataFrame(
        {
            "ds": index.pair_ds,
            "tape": index.pair_tape,
            "n_copies": index.pair_copies,
            "n_aggregated": index.pair_aggregated,
            "n": st.n,
            "mean": _nullable(st.mean),
            "sigma": _nullable(st.sigma),
            "n_locates": st.locates,
        }
    )
    return frame.sort(["ds", "tape"])


def gap_by_type_period(index: GapIndex, site: Site) -> pl.DataFrame:
    """Per dataset type and period (before/after the cutover): mu, n, sigma, locates."""
    n_types = len(site.type_names)
    row_type = site.ds_type[index.pair_ds[index.row_pair]].astype(np.int64)
    group = row_type * 2 + index.row_after
    st = _stats(group, index.row_posdiff, 2 * n_types)
    present = np.flatnonzero(st.rows > 0)
    frame = pl.DataFrame(
        {
            "dataset_type": [site.type_names[int(k) // 2] for k in present],
            "period": ["after" if k % 2 else "before" for k in present],
            "n": st.n[present],
            "mu": _nullable(st.mean[present]),
            "sigma": _nullable(st.sigma[present]),
            "n_locates": st.locates[present],
        },
        schema={
            "dataset_type": pl.String,
            "period": pl.String,
            "n": pl.Int64,
            "mu": pl.Float64,
            "sigma": pl.Float64,
            "n_locates": pl.Int64,
        },
    )
    return frame.sort(["dataset_type", "period"], descending=[False, True])


def tapes_per_dataset(index: GapIndex, n_datasets: int) -> np.ndarray:
    """Number of volumes holding live copies of each dataset."""
    return np.bincount(index.pair_ds, minlength=n_datasets).astype(np.int64)
