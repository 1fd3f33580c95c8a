"""The write policy "collocate by hint level k with at most F open families".

Each written file belongs to a tape family: its collocation group at level k (the levels 0..k
it was sent with, fct_hinted_files' group_k; levels 0 to 3, and 4 where ATLAS sends it), or,
when that group is small, the group of the level above (a family holds at least
`min_family_bytes` of the pool's files, so a tape is not opened for a handful of files), up to
level 0; files without hints, and small groups with no level above that is large enough, share
one family per pool.

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

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import polars as pl

from tapelens.analysis.whatif import write as ww

LEVELS = 5  # 0-3 as WLCG's archive metadata names them, 4 as ATLAS sends it for AOD data
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


@dataclass(frozen=True)
class HintGroups:
    """Each file's hint group at every level as a code, -1 where it names none: codes are of
    (pool, group) pairs, so two pools' groups of one name are two groups."""

    codes: tuple[np.ndarray, ...]  # per level: int64 code of each file
    names: tuple[pl.Series, ...]  # per level: the group of each code


def hint_groups(frame: pl.DataFrame, pool: str = "pool") -> HintGroups:
    """The codes of `frame`'s group_0..group_4 within its `pool` column, numbered in the order
    of (pool, group) so that a replay does not depend on how the rows are hashed. A level
    without its column names no group."""
    pools = frame[pool].cast(pl.String)
    pool_code, n_pools = dense_codes(pools.fill_null(""))
    codes, names = [], []
    for k in range(LEVELS):
        name = f"group_{k}"
        if name not in frame.columns:
            codes.append(np.full(frame.height, -1, dtype=np.int64))
            names.append(pl.Series(name, [], dtype=pl.String))
            continue
        # Each (pool, group) pair as a number from the columns' categorical codes: only one
        # row of each pair is sorted by name, no string of every file is.
        values = frame[name]
        named = values.is_not_null().to_numpy()
        group_code, n_groups = dense_codes(values.drop_nulls())
        pair = np.full(frame.height, -1, dtype=np.int64)
        pair[named] = pool_code[named] * n_groups + group_code
        one_row = np.full(n_pools * n_groups, -1, dtype=np.int64)
        one_row[pair[named]] = np.flatnonzero(named)
        held = np.flatnonzero(one_row >= 0)
        at = pl.Series(one_row[held])
        distinct = pl.DataFrame(
            {"_pair": held, pool: pools.gather(at), name: values.gather(at)}
        ).sort(pool, name)
        code_of_pair = np.zeros(one_row.shape[0], dtype=np.int64)
        code_of_pair[distinct["_pair"].to_numpy()] = np.arange(distinct.height)
        code = np.full(frame.height, -1, dtype=np.int64)
        code[named] = code_of_pair[pair[named]]
        codes.append(code)
        names.append(distinct[name])
    return HintGroups(tuple(codes), tuple(names))


def dense_codes(values: pl.Series) -> tuple[np.ndarray, int]:
    """Each value's code among the distinct values, 0..n-1 in the order of their categorical
    codes (not of their names), and n. The values hold no null."""
    return renumbered(values.cast(pl.Categorical).to_physical().to_numpy().astype(np.int64))


def renumbered(codes: np.ndarray) -> tuple[np.ndarray, int]:
    """Non-negative integer codes renumbered 0..n-1 in their order, and n."""
    present = np.zeros(int(codes.max(initial=-1)) + 1, dtype=bool)
    present[codes] = True
    return (np.cumsum(present) - 1)[codes], int(present.sum())


def family_codes(
    groups: HintGroups, pool: np.ndarray, size: np.ndarray, level: int, min_family_bytes: int
) -> np.ndarray:
    """The family of each file as a code: its group at `level`, or at the nearest level above
    whose group holds min_family_bytes; -1 - pool (the pool's REST) when none does. A group of
    level k has code offset_k + its code, offset_k the groups of the levels before."""
    if not 0 <= level < LEVELS:
        raise ValueError(f"hint level {level}: expected 0 to {LEVELS - 1}")
    family = -1 - pool.astype(np.int64)
    offset = 0
    for k in range(level + 1):
        code = groups.codes[k]
        if len(groups.names[k]) == 0:
            continue  # no file names this level (KIT names level 3 only; few send level 4)
        named = code >= 0
        held = np.bincount(code[named], weights=size[named], minlength=len(groups.names[k]))
        big = named & (held[np.maximum(code, 0)] >= min_family_bytes)
        family = np.where(big, offset + code, family)
        offset += len(groups.names[k])
    return family


def family_names(groups: HintGroups, codes: np.ndarray) -> pl.Series:
    """The name of each family code: "k: group" for a group of level k, REST for a pool's
    rest."""
    unique = np.unique(codes)
    offsets = np.cumsum([0] + [len(n) for n in groups.names])
    labels = []
    for code in unique.tolist():
        if code < 0:
            labels.append(REST)
            continue
        k = int(np.searchsorted(offsets, code, side="right")) - 1
        labels.append(f"{k}: {groups.names[k][code - int(offsets[k])]}")
    return pl.Series("family", codes).replace_strict(
        unique.tolist(), labels, return_dtype=pl.String
    )


def families(stream: pl.DataFrame, level: int, min_family_bytes: int) -> pl.Series:
    """The family of each file of `stream` (columns pool, size_bytes, group_0..group_4): its
    group at `level`, or at the nearest level above whose group holds min_family_bytes of the
    pool; REST when none does. Names are prefixed with the level they come from ("2: ...")."""
    groups = hint_groups(stream)
    pools = stream["pool"].cast(pl.String).rank("dense").to_numpy().astype(np.int64) - 1
    size = stream["size_bytes"].to_numpy().astype(np.float64)
    return family_names(groups, family_codes(groups, pools, size, level, min_family_bytes))


def place_families(
    a: ww.Arrivals,
    family: np.ndarray,
    open_per_pool: np.ndarray,
    window_s: float,
    batch_bytes: int | None,
    cut: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Write order of the files (indices into the arrays), the open tape slot of each file,
    the migration of each file and the time each migration ran (`cut`: the migrations and
    their times when already cut, ww.migrations of the same window)."""
    batch, ran_s = cut or ww.migrations(a.arrived_s, a.size, window_s, batch_bytes)
    n = a.size.shape[0]
    order = _argsort_keys([a.pool, batch, family], a.path_rank)
    key_p, key_b, key_f = a.pool[order], batch[order], family[order]
    new = np.ones(n, dtype=bool)
    new[1:] = (key_p[1:] != key_p[:-1]) | (key_b[1:] != key_b[:-1]) | (key_f[1:] != key_f[:-1])
    heads = np.flatnonzero(new)
    chunk_slot = _lru_slots(key_p[heads], key_f[heads], open_per_pool)
    slot_sorted = chunk_slot[np.cumsum(new) - 1]
    slot: np.ndarray = np.empty(n, dtype=np.int64)
    slot[order] = slot_sorted
    # Write order: per pool and slot, the migrations in turn, each family's files together:
    # `order` already takes them so, so a stable sort of it by pool and slot alone (a small
    # key, sorted by radix) gives it.
    write_order = order[ww.stable_order(key_p * (int(open_per_pool.max()) + 1) + slot_sorted)]
    return write_order, slot, batch, ran_s


def _argsort_keys(keys: list[np.ndarray], last: np.ndarray) -> np.ndarray:
    """The order of np.lexsort((last, *reversed(keys))) for integer keys, `last` distinct
    values 0..n-1: one sort of a single int64 key when the keys fit in one, else lexsort."""
    n = last.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    combined = np.zeros(n, dtype=np.int64)
    span = 1
    for key in keys:
        low, high = int(key.min()), int(key.max())
        width = high - low + 1
        span *= width
        if span * n >= 1 << 62:
            return np.lexsort((last, *reversed(keys)))
        combined = combined * width + (key - low)
    # Distinct values: any sort gives the one order, the fastest will do.
    return np.argsort(combined * n + last)


def _lru_slots(
    chunk_pool: np.ndarray, chunk_family: np.ndarray, open_per_pool: np.ndarray
) -> np.ndarray:
    """The open tape slot of each chunk (a family's files of one migration, in write order):
    the family's slot while it holds one, else a free slot (lowest first), else the slot of
    the pool's least recently written family."""
    slot = np.zeros(chunk_pool.shape[0], dtype=np.int64)
    for pool in np.unique(chunk_pool).tolist():
        if int(open_per_pool[pool]) <= 1:
            continue  # one open tape: every chunk writes to slot 0
        mine = np.flatnonzero(chunk_pool == pool)
        slot[mine] = _lru_pool(chunk_family[mine].tolist(), int(open_per_pool[pool]))
    return slot


def _lru_pool(families: list[int], n_slots: int) -> list[int]:
    """The slots of one pool's chunks: an LRU cache of n_slots families. Slots are never freed,
    so while some are free the next one is the count of families held; once all are held the
    least recently written family gives up its slot."""
    held: OrderedDict[int, int] = OrderedDict()  # family -> slot, least recently written first
    out = [0] * len(families)
    for c, fam in enumerate(families):
        k = held.get(fam)
        if k is None:
            k = len(held) if len(held) < n_slots else held.popitem(last=False)[1]
            held[fam] = k
        else:
            held.move_to_end(fam)
        out[c] = k
    return out


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
    pair = obj.obj_tape * (int(obj_batch.max(initial=0)) + 1) + obj_batch
    if pair.shape[0] > 1 and bool((pair[1:] >= pair[:-1]).all()):
        # Objects numbered in write order: each tape's, and its migrations', in turn.
        pairs = pair[np.flatnonzero(np.append(True, pair[1:] != pair[:-1]))]
    else:
        pairs = np.unique(pair)
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
