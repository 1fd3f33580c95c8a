"""The write policy "collocate by hint level k with at most F open families".

Each written file belongs to a tape family: its collocation group at level k (the levels 0..k
it was sent with, fct_hinted_files' group_k), or, when that group is small, the group of the
level above (a family holds at least `min_family_bytes` of the pool's files, so a tape is not
opened for a handful of files), up to level 0; files without hints, and small groups with no
level above that is large enough, share one family per pool.

Migrations run as the site's (the sort window and batch bytes of write.py). A pool keeps at
most F tapes open for writing, one per family being written: a family that writes again
appends to its open tape; a family that has none takes a free one, else the tape of the family
that wrote least recently, which is then that family's no more (its later files open another).
Within a migration each family's files are written together, in directory and file name
order. So a family's files lie in long runs on few tapes, as HPSS file families, Spectrum
Protect collocation groups and CTA storage classes with their own tape pools lay them.

What it costs: write mounts (each open tape written in a migration is mounted for it) and the
tapes left partly filled (a family's last tape, a tape closed by a media change).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from tapelens.analysis.whatif import write as ww

LEVELS = 4
GB = 1_000_000_000
# A family holds at least this much of a pool's bytes (a few minutes of one write drive):
# smaller groups are written with the group of the level above, rather than take an open tape
# from a larger family for a handful of files.
DEFAULT_MIN_FAMILY_BYTES = 20 * GB
REST = "(rest)"  # the family of files without hints, and of small groups with no large parent
# A tape filled to less than this share of its capacity is counted as partly filled.
FULL_SHARE = 0.9


@dataclass(frozen=True)
class FamilyPolicy:
    """Collocate by hint level `level` with at most `open_families` tapes open per pool."""

    level: int
    open_families: tuple[tuple[str, int], ...]  # (pool, open tapes) for every pool written
    min_family_bytes: int = DEFAULT_MIN_FAMILY_BYTES


@dataclass(frozen=True)
class WriteCost:
    """What a replayed placement costs at write time, per pool."""

    frame: pl.DataFrame  # pool, tapes, write_mounts, partly_filled_tapes


def families(stream: pl.DataFrame, level: int, min_family_bytes: int) -> pl.Series:
    """The family of each file of `stream` (columns pool, size_bytes, group_0..group_3): its
    group at `level`, or at the nearest level above whose group holds min_family_bytes of the
    pool; REST when none does. Names are prefixed with the level they come from ("2: ...")."""
    if not 0 <= level < LEVELS:
        raise ValueError(f"hint level {level}: expected 0 to {LEVELS - 1}")
    frame = stream.select("pool", "size_bytes", *[f"group_{k}" for k in range(LEVELS)])
    choice: pl.Expr = pl.lit(REST)
    # From the broadest level to the asked one, each large enough group overrides.
    for k in range(level + 1):
        name = f"group_{k}"
        big = pl.col("size_bytes").sum().over("pool", name) >= min_family_bytes
        choice = (
            pl.when(pl.col(name).is_not_null() & big)
            .then(pl.format(f"{k}: {{}}", pl.col(name)))
            .otherwise(choice)
        )
    return frame.select(choice.alias("family")).to_series()


def place_families(
    a: ww.Arrivals,
    family: np.ndarray,
    open_per_pool: np.ndarray,
    window_s: float,
    batch_bytes: int | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Write order of the files (indices into the arrays), the open tape slot of each file,
    the migration of each file and the time each migration ran."""
    batch, ran_s = ww.migrations(a.arrived_s, a.size, window_s, batch_bytes)
    n = a.size.shape[0]
    order = np.lexsort((a.path_rank, family, batch, a.pool))
    key_p, key_b, key_f = a.pool[order], batch[order], family[order]
    new = np.ones(n, dtype=bool)
    new[1:] = (key_p[1:] != key_p[:-1]) | (key_b[1:] != key_b[:-1]) | (key_f[1:] != key_f[:-1])
    heads = np.flatnonzero(new)
    chunk_slot: np.ndarray = np.empty(heads.size, dtype=np.int64)
    # Per pool: which family holds each slot, and when the slot last wrote.
    holder: dict[int, list[int]] = {}
    last: dict[int, list[int]] = {}
    slot_of: dict[tuple[int, int], int] = {}
    for c, i in enumerate(heads.tolist()):
        pool, fam = int(key_p[i]), int(key_f[i])
        slots = holder.setdefault(pool, [-1] * int(open_per_pool[pool]))
        used = last.setdefault(pool, [-1] * len(slots))
        k = slot_of.get((pool, fam), -1)
        if k < 0 or slots[k] != fam:
            k = min(range(len(slots)), key=lambda s: (slots[s] >= 0, used[s], s))
            if slots[k] >= 0:
                slot_of.pop((pool, slots[k]), None)
            slots[k] = fam
            slot_of[(pool, fam)] = k
        used[k] = c
        chunk_slot[c] = k
    slot_sorted = chunk_slot[np.cumsum(new) - 1]
    slot: np.ndarray = np.empty(n, dtype=np.int64)
    slot[order] = slot_sorted
    # Write order: per pool and slot, the migrations in turn, each family's files together.
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    write_order = np.lexsort((rank, slot, a.pool))
    return write_order, slot, batch, ran_s


def write_cost(
    pools: list[str],
    obj: ww.Objects,
    obj_pool: np.ndarray,
    obj_batch: np.ndarray,
    obj_size: np.ndarray,
    capacity: np.ndarray,
) -> WriteCost:
    """Tapes, write mounts (distinct tape and migration pairs) and partly filled tapes per pool
    of a replayed placement."""
    n_tapes = obj.tape_media.shape[0]
    used = np.bincount(obj.obj_tape, weights=obj_size, minlength=n_tapes)
    tape_pool = np.zeros(n_tapes, dtype=np.int64)
    tape_pool[obj.obj_tape] = obj_pool
    partly = used < FULL_SHARE * capacity[obj.tape_media]
    pairs = np.unique(obj.obj_tape * (int(obj_batch.max(initial=0)) + 1) + obj_batch)
    pair_tape = pairs // (int(obj_batch.max(initial=0)) + 1)
    mounts = np.bincount(tape_pool[pair_tape], minlength=len(pools))
    return WriteCost(
        pl.DataFrame(
            {
                "pool": pools,
                "tapes": np.bincount(tape_pool, minlength=len(pools)),
                "write_mounts": mounts,
                "partly_filled_tapes": np.bincount(
                    tape_pool, weights=partly.astype(np.int64), minlength=len(pools)
                ).astype(np.int64),
            },
            schema={
                "pool": pl.String,
                "tapes": pl.Int64,
                "write_mounts": pl.Int64,
                "partly_filled_tapes": pl.Int64,
            },
        )
    )
