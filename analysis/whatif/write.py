"""The mechanics of a write replay: migrations, queue order, write drives, aggregates, tapes.

A disk cache fills with arriving files; a migration takes the whole cache when the oldest file
has waited the sort window, or when the cache holds `batch_bytes`. A migration's queue (per
pool) is either in arrival order (FIFO) or sorted by directory and file name, then dealt one file
each to as many write drives as its volume needs (one per `drive_bytes`, up to the pool's
drives), taking the drives in turn from one migration to the next. Runs of consecutive small
files on a drive become aggregates (one tape object each). Each drive fills one tape at a time
until the next object does not fit; the media type (and so the capacity) is the one in use when
the migration runs. Everything is numpy over arrays of the stream's length, sorted by arrival.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Arrivals:
    """The write stream as arrays, sorted by arrival (row index = FIFO order)."""

    arrived_s: np.ndarray  # float64
    size: np.ndarray  # int64 bytes
    pool: np.ndarray  # int64 pool code
    dataset: np.ndarray  # int64 dataset code
    path_rank: np.ndarray  # int64 rank of (directory, file name)


@dataclass(frozen=True)
class Aggregation:
    """Small-file aggregation (HPSS, TSM): files under max_file_bytes are packed."""

    enabled: bool
    max_file_bytes: int
    max_bytes: int
    max_members: int


@dataclass
class Objects:
    """Where every file went: per file the object, member index and offset; per object the
    tape and position; per tape its media index."""

    file_obj: np.ndarray  # int64
    file_member: np.ndarray  # int64: 1-based index inside an aggregate, 0 when alone
    file_offset: np.ndarray  # int64: byte offset inside the aggregate, -1 when alone
    file_time_s: np.ndarray  # float64: when the migration (or collocated write) ran
    obj_tape: np.ndarray  # int64
    obj_pos: np.ndarray  # int64, 1-based
    obj_start: np.ndarray  # int64: bytes before the object on its tape
    tape_media: np.ndarray  # int64 index into the media list


def migrations(
    arrived_s: np.ndarray, size: np.ndarray, window_s: float, batch_bytes: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """Cut the arrival stream into migrations: (migration of every file, time each ran).

    A migration closes when the oldest waiting file has waited `window_s` (it runs then) or when
    a file brings the cache to `batch_bytes` (it runs at that arrival), whichever comes first.
    """
    n = arrived_s.shape[0]
    cum = np.cumsum(size)
    firsts: list[int] = []
    times: list[float] = []
    i = 0
    while i < n:
        j_age = int(np.searchsorted(arrived_s, np.float64(arrived_s[i] + window_s), side="left"))
        j = j_age
        by_volume = False
        if batch_bytes is not None:
            before = int(cum[i - 1]) if i else 0
            j_bytes = int(np.searchsorted(cum, np.int64(before + batch_bytes), side="left")) + 1
            if j_bytes <= j_age:
                j, by_volume = j_bytes, True
        j = max(min(j, n), i + 1)
        firsts.append(i)
        ran = arrived_s[j - 1] if by_volume or j == n else arrived_s[i] + window_s
        times.append(float(ran))
        i = j
    first = np.asarray(firsts, dtype=np.int64)
    batch = np.searchsorted(first, np.arange(n), side="right") - 1
    return batch.astype(np.int64), np.asarray(times, dtype=np.float64)


def deal(
    pool: np.ndarray,
    batch: np.ndarray,
    size: np.ndarray,
    drives_of_pool: np.ndarray,
    drive_bytes: int,
) -> np.ndarray:
    """Write drive of each file, for files in queue order (sorted by pool, then migration).

    A migration starts one drive per `drive_bytes` of its volume, up to the pool's drives,
    continuing the rotation of the pool's previous migration; files go one each in turn.
    """
    m = pool.shape[0]
    if m == 0:
        return np.zeros(0, dtype=np.int64)
    change = np.ones(m, dtype=bool)
    change[1:] = (pool[1:] != pool[:-1]) | (batch[1:] != batch[:-1])
    group = np.cumsum(change) - 1
    firsts = np.flatnonzero(change)
    g_pool = pool[firsts]
    g_drives = drives_of_pool[g_pool]
    g_bytes = np.bincount(group, weights=size)
    active = np.clip(np.ceil(g_bytes / drive_bytes), 1, g_drives).astype(np.int64)
    pool_start = np.ones(firsts.size, dtype=bool)
    pool_start[1:] = g_pool[1:] != g_pool[:-1]
    used = np.cumsum(active) - active
    used -= used[np.flatnonzero(pool_start)][np.cumsum(pool_start) - 1]
    first_drive = used % g_drives
    rank = np.arange(m) - firsts[group]
    return (first_drive[group] + rank % active[group]) % g_drives[group]


def pack(
    stream_key: np.ndarray, size: np.ndarray, agg: Aggregation
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Tape objects of files in drive order (`stream_key` changes where a drive's migration
    changes): (object of each file, 1-based member index or 0, offset or -1).

    A run of consecutive small files of one stream is cut into aggregates at max_bytes and
    max_members; a run of one file is written alone.
    """
    m = size.shape[0]
    member = np.zeros(m, dtype=np.int64)
    offset = np.full(m, -1, dtype=np.int64)
    head = np.ones(m, dtype=bool)
    if agg.enabled and m:
        small = size < agg.max_file_bytes
        new_stream = np.ones(m, dtype=bool)
        new_stream[1:] = stream_key[1:] != stream_key[:-1]
        run_start = small & (new_stream | np.append(True, ~small[:-1]))
        idx = np.flatnonzero(small)
        if idx.size:
            starts = run_start[idx]
            run = np.cumsum(starts) - 1
            s = size[idx]
            before = np.cumsum(s) - s
            into_run = before - before[np.flatnonzero(starts)][run]
            seg_start = starts.copy()
            chunk = into_run // agg.max_bytes
            seg_start[1:] |= chunk[1:] != chunk[:-1]
            seg = np.cumsum(seg_start) - 1
            rank = np.arange(idx.size) - np.flatnonzero(seg_start)[seg]
            seg_start |= (rank % agg.max_members) == 0
            seg = np.cumsum(seg_start) - 1
            seg_first = np.flatnonzero(seg_start)
            members = np.diff(np.append(seg_first, idx.size))[seg]
            in_agg = members > 1
            sel = idx[in_agg]
            member[sel] = (np.arange(idx.size) - seg_first[seg] + 1)[in_agg]
            offset[sel] = (before - before[seg_first][seg])[in_agg]
            head[sel] = member[sel] == 1
    obj = np.cumsum(head) - 1
    return obj, member, offset


def fill(sizes: np.ndarray, capacity: np.ndarray, seg_starts: np.ndarray) -> np.ndarray:
    """Greedy fill of one drive's objects: a new tape when the next object does not fit or a
    new segment starts (a new media type); capacity per segment.
    Returns the local tape number of every object."""
    n = sizes.shape[0]
    cum = np.cumsum(sizes)
    tape = np.empty(n, dtype=np.int64)
    bounds = np.append(seg_starts, n)
    k = 0
    for s, (a, b) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
        cap = np.int64(capacity[s])
        i = int(a)
        while i < b:
            base = cum[i - 1] if i else np.int64(0)
            j = max(int(np.searchsorted(cum[i:b], base + cap, side="right")) + i, i + 1)
            tape[i:j] = k
            k += 1
            i = j
    return tape


def positions(obj_tape: np.ndarray, obj_size: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Objects numbered in write order: (1-based position, bytes before) on their tape."""
    n = obj_tape.shape[0]
    if n > 1 and bool((obj_tape[1:] >= obj_tape[:-1]).all()):
        order = np.arange(n)  # numbered tape after tape, as the drives fill them
    else:
        order = np.argsort(obj_tape, kind="stable")
    tape_sorted = obj_tape[order]
    new = np.ones(n, dtype=bool)
    new[1:] = tape_sorted[1:] != tape_sorted[:-1]
    firsts = np.flatnonzero(new)
    group = np.cumsum(new) - 1
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n) - firsts[group] + 1
    size_sorted = obj_size[order]
    before = np.cumsum(size_sorted) - size_sorted
    start = np.empty(n, dtype=np.int64)
    start[order] = before - before[firsts][group]
    return pos, start


def drive_streams(
    pool: np.ndarray,
    drive: np.ndarray,
    obj_size: np.ndarray,
    obj_media: np.ndarray,
    capacity: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Tapes of objects given in write order per (pool, drive): (tape of each object, media of
    each tape). Objects are grouped by drive keeping their order."""
    n = obj_size.shape[0]
    order = stable_order(pool * (int(drive.max(initial=0)) + 1) + drive)
    p, d, media = pool[order], drive[order], obj_media[order]
    sizes = obj_size[order]
    new_stream = np.ones(n, dtype=bool)
    new_stream[1:] = (p[1:] != p[:-1]) | (d[1:] != d[:-1])
    segment = new_stream.copy()
    segment[1:] |= media[1:] != media[:-1]
    bounds = np.append(np.flatnonzero(new_stream), n)
    tape_sorted = np.empty(n, dtype=np.int64)
    seg_all = np.flatnonzero(segment)
    tapes_before = 0
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        lo, hi = np.searchsorted(seg_all, [a, b], side="left")
        segs = seg_all[lo:hi] - a
        local = fill(sizes[a:b], capacity[media[a + segs]], segs)
        tape_sorted[a:b] = local + tapes_before
        tapes_before += int(local.max()) + 1 if b > a else 0
    tape = np.empty(n, dtype=np.int64)
    tape[order] = tape_sorted
    tape_media = np.zeros(tapes_before, dtype=np.int64)
    tape_media[tape] = obj_media
    return tape, tape_media


def stable_order(key: np.ndarray) -> np.ndarray:
    """np.argsort(key, kind="stable") of non-negative integer keys: as 16-bit integers (a
    radix sort, one pass) when they fit, as they do for pools times drives."""
    if key.shape[0] and int(key.max()) < 1 << 15:
        return np.argsort(key.astype(np.int16), kind="stable")
    return np.argsort(key, kind="stable")
