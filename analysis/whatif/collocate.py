"""Collocated writes: each dataset written whole, in directory order, onto the fewest tapes.

The dataset is held in the cache until its last file has arrived, then written in one go on
one write drive of its pool: the drive whose open tape has the least room that still holds the
whole dataset (best fit); when no open tape holds it, a dataset that fits on one tape starts a
new tape on the drive with the least room left (that room stays unused), and a larger one
continues the open tape with the most room and runs over onto new tapes. So a dataset of up to
one tape's size lands on one tape, a larger one on at most one tape more than it needs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tapelens.analysis.whatif.write import fill


@dataclass(frozen=True)
class Groups:
    """The datasets in write order: per group its pool, its media index and the range of its
    tape objects (objects are numbered in write order, one dataset after the other)."""

    pool: np.ndarray  # int64
    media: np.ndarray  # int64
    obj_first: np.ndarray  # int64
    obj_end: np.ndarray  # int64 (exclusive)


def place_groups(
    groups: Groups, obj_size: np.ndarray, drives_of_pool: np.ndarray, capacity: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Tape of every object, and the media index of every tape."""
    obj_tape = np.empty(obj_size.shape[0], dtype=np.int64)
    tape_media: list[int] = []
    # Per pool and drive: the open tape, its media and the bytes still free on it.
    open_tape = {p: [-1] * int(k) for p, k in enumerate(drives_of_pool)}
    free = {p: [0] * int(k) for p, k in enumerate(drives_of_pool)}
    media_of = {p: [-1] * int(k) for p, k in enumerate(drives_of_pool)}
    cum = np.cumsum(obj_size)
    for g in range(groups.pool.shape[0]):
        p, m = int(groups.pool[g]), int(groups.media[g])
        a, b = int(groups.obj_first[g]), int(groups.obj_end[g])
        total = int(cum[b - 1] - (cum[a - 1] if a else 0))
        cap = int(capacity[m])
        room = [
            f if media_of[p][k] == m and open_tape[p][k] >= 0 else -1 for k, f in enumerate(free[p])
        ]
        fitting = [k for k, r in enumerate(room) if r >= total]
        if fitting:
            k = min(fitting, key=lambda d: (room[d], d))
            obj_tape[a:b] = open_tape[p][k]
            free[p][k] -= total
            continue
        if total <= cap:
            k = min(range(len(room)), key=lambda d: (room[d], d))
            obj_tape[a:b] = len(tape_media)
            open_tape[p][k] = len(tape_media)
            tape_media.append(m)
            free[p][k], media_of[p][k] = cap - total, m
            continue
        k = max(range(len(room)), key=lambda d: (room[d], -d))
        start = a
        if room[k] > 0:
            base = cum[a - 1] if a else 0
            on_open = int(np.searchsorted(cum[a:b], base + room[k], side="right"))
            obj_tape[a : a + on_open] = open_tape[p][k]
            start = a + on_open
        local = fill(obj_size[start:b], np.array([cap]), np.array([0]))
        obj_tape[start:b] = local + len(tape_media)
        last = int(local[-1]) if local.size else -1
        tape_media.extend([m] * (last + 1))
        open_tape[p][k] = len(tape_media) - 1
        free[p][k] = cap - int(obj_size[start:b][local == last].sum())
        media_of[p][k] = m
    return obj_tape, np.asarray(tape_media, dtype=np.int64)
