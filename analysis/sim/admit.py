"""Requests entering the scheduler's view of the simulated library (analysis/sim/events.py
holds the state): admission from the backlog as the window frees up, one request at a time
after most reads, and new requests in batches. A recall is often submitted in one go, a
million requests at one instant, and placing them one call at a time would cost more than
reading them: place_new() leaves the state admit() would, entry for entry (each tape's list of
pooled requests aside, whose order is never read)."""

from __future__ import annotations

from bisect import bisect_right, insort
from collections.abc import Callable

import numpy as np

from tapelens.analysis.sim import drives as drive_ops
from tapelens.analysis.sim import pool as pooling
from tapelens.analysis.sim import schedulers as sched
from tapelens.analysis.sim import state
from tapelens.analysis.sim.state import (
    ARRIVE,
    ASSIGNED,
    BACKLOG,
    DOWN,
    IDLE,
    MOUNTING,
    POOL,
    WAITING,
    Arrays,
    SimState,
)

# Below this many requests a batch is placed one by one: the array operations' fixed cost
# (a few microseconds each) would exceed what they save.
BULK_MIN_REQUESTS = 256


def arrays(s: SimState) -> Arrays:
    if s.arrays is None:
        p = s.p
        s.arrays = Arrays(
            np.asarray(p.tape, dtype=np.int64),
            np.asarray(p.requester, dtype=np.int64),
            np.asarray(p.tape_media, dtype=np.int64),
        )
    return s.arrays


def admitter(s: SimState) -> Callable[[float], None]:
    """s.admit(now): move requests from the backlog into the scheduler's view while the
    window has room: each joins the FIFO queue, the drive that holds or plans its tape
    (route), or the pool (as pool.to_pool does); then free drives act. A closure over the
    state's lists: it runs after most reads."""
    backlog, st, gen, n, window = s.front.backlog, s.req.st, s.req.gen, s.n, s.front.window
    popleft, idle = backlog.popleft, s.idle
    adm, admit_s, plan_live = s.req.adm, s.req.admit_s, s.req.plan_live
    tape_drive, pending, pool_bytes = s.pool.tape_drive, s.pool.pending, s.pool.pool_bytes
    tape, size, media, requester = s.p.tape, s.p.size, s.p.tape_media, s.p.requester
    fifo_queues, drives = s.pool.fifo_pool, s.drives
    fifo, planned, count_bytes = s.fifo, s.sched == "planned", s.pool.count_bytes
    by_demand = s.policy == "by-demand"
    rank, queued = s.pool.line.rank, s.pool.line.queued

    def admit(now: float) -> None:
        room = len(backlog) if window is None else window - s.front.window_used
        repeats = s.front.repeats  # no submission in here changes it
        while backlog and room > 0:
            entry = popleft()
            r = entry % n
            if st[r] != BACKLOG or (repeats and gen[r] != entry // n):
                continue  # cancelled, or sent again since
            room -= 1
            s.front.window_used += 1
            a = adm[r] = s.front.adm_next
            s.front.adm_next = a + 1
            if not repeats or admit_s[r] != admit_s[r]:  # NaN: first admission
                admit_s[r] = now
            t = tape[r]
            if fifo:
                held = tape_drive[t]
                if held >= 0 and not (drives[held].unloading() and drives[held].tape == t):
                    sched.fifo_join(s, r, drives[held], now)
                else:
                    st[r] = POOL
                    fifo_queues[media[t]].append(a * n + r)
                    pending[t].append(r)
            elif (planned and plan_live[r]) or tape_drive[t] >= 0:
                route(s, r, now)
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
            sched.fifo_dispatch(s, now)
        elif idle:
            sched.wake_idle(s, now)

    return admit


def send(s: SimState, batch: list[int], now: float) -> None:
    """First submissions (each request's first: its gen goes from 0 to 1), the network up, no
    plan: they join the backlog, as to_backlog() does; what admit() would take out of it
    again at once is placed directly, when place_new() can."""
    gen, st = s.req.gen, s.req.st
    for r in in_id_order(batch):
        gen[r] = 1
        st[r] = BACKLOG
    room = 0
    if not s.front.backlog:
        room = len(batch) if s.front.window is None else s.front.window - s.front.window_used
    if room <= 0 or not place_new(s, batch[:room], now):
        room = 0
    n = s.n
    s.front.backlog.extend([n + r for r in batch[room:]])


def in_id_order(reqs: list[int]) -> list[int]:
    """reqs sorted, for writing per-request lists in memory order rather than all over."""
    if len(reqs) < BULK_MIN_REQUESTS:
        return sorted(reqs)
    return np.sort(np.asarray(reqs, dtype=np.int64)).tolist()


def place_new(s: SimState, reqs: list[int], now: float) -> bool:
    """Place a batch of requests, in admission order, as admit() would one by one, provided
    none of them goes to a drive (FIFO, or every tape in its cell); returns False, having
    changed nothing, when that does not hold or the batch is small."""
    if len(reqs) < BULK_MIN_REQUESTS:
        return False
    a = arrays(s)
    ids = np.asarray(reqs, dtype=np.int64)
    held = [t for t, d in enumerate(s.pool.tape_drive) if d >= 0]
    if held and np.isin(a.tape[ids], held).any():  # some go to a drive: one by one
        return False
    first = s.front.adm_next
    # Per-request lists written in id order, not in the batch's (random) order: the same
    # values, with memory read in sequence rather than all over.
    order = np.argsort(ids)
    by_id = ids[order]
    adm, st, admit_s = s.req.adm, s.req.st, s.req.admit_s
    for r, k in zip(by_id.tolist(), (order + first).tolist(), strict=True):
        adm[r] = k
        st[r] = POOL
        if admit_s[r] != admit_s[r]:  # NaN: first admission
            admit_s[r] = now
    s.front.adm_next = first + len(reqs)
    s.front.window_used += len(reqs)
    if s.fifo:
        pending, tapes = s.pool.pending, a.tape[ids].tolist()
        queues, media, n = s.pool.fifo_pool, s.p.tape_media, s.n
        for k, (r, t) in enumerate(zip(reqs, tapes, strict=True), start=first):
            pending[t].append(r)
            queues[media[t]].append(k * n + r)  # adm[r] is k
        return True
    _pool(s, by_id, a.tape[by_id])
    if s.policy != "by-demand":
        _line_up(s, a, ids, first)
    return True


def _pool(s: SimState, by_id: np.ndarray, tapes: np.ndarray) -> None:
    """Each tape's pending list (in id order: that order is never read) and pooled bytes;
    by-demand, its heap entry with the bytes it ends with (the ones in between would be void
    at once). Ids run in tape order, so each tape's requests are one run of by_id."""
    pending, pool_bytes, size = s.pool.pending, s.pool.pool_bytes, s.p.size
    by_demand = s.policy == "by-demand"
    cuts = np.flatnonzero(tapes[1:] != tapes[:-1]) + 1
    starts = np.concatenate(([0], cuts)).tolist()
    ends = [*starts[1:], len(by_id)]
    ids = by_id.tolist()
    for t, start, end in zip(tapes[starts].tolist(), starts, ends, strict=True):
        group = ids[start:end]
        pending[t].extend(group)
        if s.pool.count_bytes:
            pool_bytes[t] += sum(map(size.__getitem__, group))
        if by_demand:
            s.pool.line.rank(t, s.p.tape_media[t], (-pool_bytes[t],))


def _line_up(s: SimState, a: Arrays, ids: np.ndarray, first: int) -> None:
    """time-slider, equal: each tape not in line yet joins it with the first of its requests in
    the batch (admission numbers first, first + 1, ... in batch order)."""
    tapes = a.tape[ids]
    _, at = np.unique(tapes, return_index=True)
    queued, media, requester = s.pool.line.queued, s.p.tape_media, s.p.requester
    for i in np.sort(at).tolist():
        t = int(tapes[i])
        if not queued[t]:
            r = int(ids[i])
            s.pool.line.rank(t, media[t], (first + i,), requester[r])


def arrive(s: SimState, now: float) -> None:
    """Every request submitted by now is sent; the next submission is queued."""
    order, i = s.front.arrival, s.front.ai
    j = bisect_right(s.front.arrival_s, now, i)
    batch = order[i:j]
    s.front.ai = j
    if j < len(order):
        state.push(s, s.p.submit_s[order[j]], ARRIVE, 0)
    if s.sched == "planned" or not s.net.up:
        for r in batch:
            pooling.submit(s, r)
    else:
        send(s, batch, now)
    s.admit(now)


def route(s: SimState, r: int, now: float) -> None:
    """An admitted request whose tape a drive holds or plans: to that drive, else to the
    pool (sorted scheduling)."""
    st = s.req.st
    if s.req.plan_live[r]:
        st[r] = ASSIGNED
        drv = s.drives[s.p.plan_drive[r]]
        if drv.phase == WAITING and drv.waiting == r:
            drv.waiting = -1
            drive_ops.next_read(s, drv, now)
        return
    t = s.p.tape[r]
    drv = s.drives[s.pool.tape_drive[t]]
    if drv.planned or drv.unloading():
        pooling.to_pool(s, r)
        return
    st[r] = ASSIGNED
    if drv.tape != t:  # the drive unloads another tape before it mounts this one
        insort(drv.next_work, r)
    elif drv.phase == IDLE:
        drv.work, drv.wi = [r], 0
        if s.policy == "equal":
            pooling.own(s, drv, s.p.requester[r])
        drive_ops.next_read(s, drv, now)
    elif s.rao is None and (drv.phase in (MOUNTING, DOWN) or r > drv.head):
        insort(drv.work, r, drv.wi)  # ahead of the head: read in this pass
    else:
        # Behind the head: after this pass, with one rewind. In RAO order a pass is ordered
        # as a whole: what comes during it is read in the next one.
        drv.later.append(r)
