"""Requests entering the scheduler's view of the simulated library (analysis/sim/events.py
holds the state): admission from the backlog as the window frees up, one request at a time
after most reads, and new requests in batches. A recall is often submitted in one go, a
million requests at one instant, and placing them one call at a time would cost more than
reading them: place_new() leaves the state admit() would, entry for entry (each tape's list of
pooled requests aside, whose order is never read)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from tapelens.analysis.sim import schedulers as sched
from tapelens.analysis.sim.state import BACKLOG, POOL

if TYPE_CHECKING:
    from tapelens.analysis.sim.events import Engine

# Below this many requests a batch is placed one by one: the array operations' fixed cost
# (a few microseconds each) would exceed what they save.
BULK_MIN_REQUESTS = 256


@dataclass(frozen=True)
class Arrays:
    """Per-request and per-tape inputs as arrays, made once per run on first use."""

    tape: np.ndarray
    requester: np.ndarray
    tape_media: np.ndarray


def arrays(e: Engine) -> Arrays:
    if e.arrays is None:
        p = e.p
        e.arrays = Arrays(
            np.asarray(p.tape, dtype=np.int64),
            np.asarray(p.requester, dtype=np.int64),
            np.asarray(p.tape_media, dtype=np.int64),
        )
    return e.arrays


def admitter(e: Engine) -> Callable[[float], None]:
    """Engine.admit(now): move requests from the backlog into the scheduler's view while the
    window has room: each joins the FIFO queue, the drive that holds or plans its tape
    (Engine.route), or the pool (as Engine.to_pool does); then free drives act. A closure
    over the engine's lists: it runs after most reads."""
    backlog, st, gen, n, window = e.backlog, e.st, e.gen, e.n, e.window
    popleft, idle = backlog.popleft, e.idle
    adm, admit_s, plan_live = e.adm, e.admit_s, e.plan_live
    tape_drive, pending, pool_bytes = e.tape_drive, e.pending, e.pool_bytes
    tape, size, media, requester = e.p.tape, e.p.size, e.p.tape_media, e.p.requester
    fifo_append, route, drives = e.fifo_pool.append, e.route, e.drives
    fifo, planned, count_bytes = e.fifo, e.sched == "planned", e.count_bytes
    by_demand = e.policy == "by-demand"
    rank, queued = e.line.rank, e.line.queued

    def admit(now: float) -> None:
        room = len(backlog) if window is None else window - e.window_used
        repeats = e.repeats  # no submission in here changes it
        while backlog and room > 0:
            entry = popleft()
            r = entry % n
            if st[r] != BACKLOG or (repeats and gen[r] != entry // n):
                continue  # cancelled, or sent again since
            room -= 1
            e.window_used += 1
            a = adm[r] = e.adm_next
            e.adm_next = a + 1
            if not repeats or admit_s[r] != admit_s[r]:  # NaN: first admission
                admit_s[r] = now
            t = tape[r]
            if fifo:
                held = tape_drive[t]
                if held >= 0 and not (drives[held].unloading() and drives[held].tape == t):
                    sched.fifo_join(e, r, drives[held], now)
                else:
                    st[r] = POOL
                    fifo_append(r)
                    pending[t].append(r)
            elif (planned and plan_live[r]) or tape_drive[t] >= 0:
                route(r, now)
            else:  # to the pool
                st[r] = POOL
                pending[t].append(r)
                if count_bytes:
                    pool_bytes[t] += size[r]
                if by_demand:
                    rank(t, media[t], (-pool_bytes[t],))
                elif not queued[t]:  # in line from its first pooled request
                    rank(t, media[t], (a,), requester[r])
        if fifo:
            sched.fifo_dispatch(e, now)
        elif idle:
            sched.wake_idle(e, now)

    return admit


def send(e: Engine, batch: list[int], now: float) -> None:
    """First submissions (each request's first: its gen goes from 0 to 1), the network up, no
    plan: they join the backlog, as to_backlog() does; what admit() would take out of it
    again at once is placed directly, when place_new() can."""
    gen, st = e.gen, e.st
    for r in in_id_order(batch):
        gen[r] = 1
        st[r] = BACKLOG
    room = 0
    if not e.backlog:
        room = len(batch) if e.window is None else e.window - e.window_used
    if room <= 0 or not place_new(e, batch[:room], now):
        room = 0
    n = e.n
    e.backlog.extend([n + r for r in batch[room:]])


def in_id_order(reqs: list[int]) -> list[int]:
    """reqs sorted, for writing per-request lists in memory order rather than all over."""
    if len(reqs) < BULK_MIN_REQUESTS:
        return sorted(reqs)
    return np.sort(np.asarray(reqs, dtype=np.int64)).tolist()


def place_new(e: Engine, reqs: list[int], now: float) -> bool:
    """Place a batch of requests, in admission order, as admit() would one by one, provided
    none of them goes to a drive (FIFO, or every tape in its cell); returns False, having
    changed nothing, when that does not hold or the batch is small."""
    if len(reqs) < BULK_MIN_REQUESTS:
        return False
    a = arrays(e)
    ids = np.asarray(reqs, dtype=np.int64)
    held = [t for t, d in enumerate(e.tape_drive) if d >= 0]
    if held and np.isin(a.tape[ids], held).any():  # some go to a drive: one by one
        return False
    first = e.adm_next
    # Per-request lists written in id order, not in the batch's (random) order: the same
    # values, with memory read in sequence rather than all over.
    order = np.argsort(ids)
    by_id = ids[order]
    adm, st, admit_s = e.adm, e.st, e.admit_s
    for r, k in zip(by_id.tolist(), (order + first).tolist(), strict=True):
        adm[r] = k
        st[r] = POOL
        if admit_s[r] != admit_s[r]:  # NaN: first admission
            admit_s[r] = now
    e.adm_next = first + len(reqs)
    e.window_used += len(reqs)
    if e.fifo:
        e.fifo_pool.extend(reqs)
        pending, tapes = e.pending, a.tape[ids].tolist()
        for r, t in zip(reqs, tapes, strict=True):
            pending[t].append(r)
        return True
    _pool(e, by_id, a.tape[by_id])
    if e.policy != "by-demand":
        _line_up(e, a, ids, first)
    return True


def _pool(e: Engine, by_id: np.ndarray, tapes: np.ndarray) -> None:
    """Each tape's pending list (in id order: that order is never read) and pooled bytes;
    by-demand, its heap entry with the bytes it ends with (the ones in between would be void
    at once). Ids run in tape order, so each tape's requests are one run of by_id."""
    pending, pool_bytes, size = e.pending, e.pool_bytes, e.p.size
    by_demand = e.policy == "by-demand"
    cuts = np.flatnonzero(tapes[1:] != tapes[:-1]) + 1
    starts = np.concatenate(([0], cuts)).tolist()
    ends = [*starts[1:], len(by_id)]
    ids = by_id.tolist()
    for t, start, end in zip(tapes[starts].tolist(), starts, ends, strict=True):
        group = ids[start:end]
        pending[t].extend(group)
        if e.count_bytes:
            pool_bytes[t] += sum(map(size.__getitem__, group))
        if by_demand:
            e.line.rank(t, e.p.tape_media[t], (-pool_bytes[t],))


def _line_up(e: Engine, a: Arrays, ids: np.ndarray, first: int) -> None:
    """time-slider, equal: each tape not in line yet joins it with the first of its requests in
    the batch (admission numbers first, first + 1, ... in batch order)."""
    tapes = a.tape[ids]
    _, at = np.unique(tapes, return_index=True)
    queued, media, requester = e.line.queued, e.p.tape_media, e.p.requester
    for i in np.sort(at).tolist():
        t = int(tapes[i])
        if not queued[t]:
            r = int(ids[i])
            e.line.rank(t, media[t], (first + i,), requester[r])
