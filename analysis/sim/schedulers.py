"""What a free drive of the simulated library does next (analysis/sim/simulator.py describes the
schedulers and policies; the state they read and change is analysis/sim/events.py's)."""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from tapelens.analysis.sim.state import ASSIGNED, IDLE, IDLE_ORDER, POOL, DriveState

if TYPE_CHECKING:
    from tapelens.analysis.sim.events import Engine


def sorted_in(reqs: list[int], st: Sequence[int], state: int) -> list[int]:
    """The distinct requests of `reqs` in `state`, sorted (a function of its own, so that its
    callers, which run once per mount, do not pay for a closure cell on every call)."""
    return sorted({r for r in reqs if st[r] == state})


def choose_and_go(e: Engine, drv: DriveState, now: float) -> None:
    """Sorted scheduling: a free drive reads the requests left behind its head in one more
    pass, or takes the tape its policy picks (all of that tape's visible requests with it)."""
    if drv.later:
        reqs = sorted_in(drv.later, e.st, ASSIGNED)
        drv.later = []
        if reqs and not (e.policy == "equal" and starved(e, drv)):
            drv.work, drv.wi = reqs, 0
            e.next_read(drv, now)
            return
        for r in reqs:  # another requester's turn: back to the pool, as new requests
            e.repeats = True
            e.adm[r] = e.adm_next
            e.adm_next += 1
            e.to_pool(r)
    if drv.owner >= 0:  # as own(drv, -1): the drive serves nobody while it chooses
        e.own(drv, -1)
    if e.policy == "time-slider":  # as choose() does, one call fewer on every mount
        r = top(e, drv, 0)
        t, requester = (e.p.tape[r], -1) if r >= 0 else (-1, -1)
    else:
        t, requester = choose(e, drv)
    if t < 0:
        return
    reqs = e.take(t)
    if requester >= 0:  # as own(drv, requester): the drive serves nobody just now
        drv.owner = requester
        e.active[requester] += 1
    if drv.tape == t:
        drv.work, drv.wi = reqs, 0
        e.next_read(drv, now)
        return
    e.tape_drive[t] = drv.index
    if drv.tape >= 0:
        drv.next_tape, drv.next_work = t, reqs
        e.unmount(drv, now)
    else:
        e.mount(drv, t, reqs, now)


def usable(e: Engine, drv: DriveState, t: int) -> bool:
    """The drive reads the tape's media and the tape is in its cell (or in this drive), not
    kept for a drive that follows a plan."""
    holder = e.tape_drive[t]
    return (
        drv.reads[e.p.tape_media[t]]
        and (holder < 0 or holder == drv.index)
        and e.plan_reserved[t] < 0
    )


def top(e: Engine, drv: DriveState, requester: int) -> int:
    """The oldest pooled request (of `requester`, 0 unless sharing is equal) on a tape this
    drive can take, or -1. Queue entries of requests that left the pool are dropped once at
    the head. The usable() test is written out: this runs once per mount."""
    st, adm, tape, n = e.st, e.adm, e.p.tape, e.n
    tape_drive, reserved, d = e.tape_drive, e.plan_reserved, drv.index
    queues, base = e.queues, requester * e.n_media
    best, repeats = -1, e.repeats
    for m in drv.media:
        queue = queues[base + m]
        stale = 0  # leading entries found void
        for entry in queue:  # the first usable one; tapes busy elsewhere are passed over
            r = entry % n
            if st[r] != POOL or (repeats and adm[r] != entry // n):
                if stale >= 0:
                    stale += 1
                continue
            if stale >= 0:  # the leading run of void entries ends: ~stale keeps its length
                stale = ~stale
            t = tape[r]
            holder = tape_drive[t]
            if (holder < 0 or holder == d) and reserved[t] < 0:
                if best < 0 or adm[r] < adm[best]:
                    best = r
                break
        stale = stale if stale >= 0 else ~stale
        while stale:
            queue.popleft()
            stale -= 1
    return best


def most_demanded(e: Engine, drv: DriveState) -> int:
    """By-demand: the tape this drive can take with the most pooled bytes (the lowest index
    among equals), or -1. Each media's heap of (-bytes, tape) drops void entries (the tape's
    bytes changed since); valid ones of tapes this drive cannot take now are set aside and put
    back, so a decision costs a few heap operations, not a pass over every tape."""
    pool_bytes, tape_drive, reserved, d = e.pool_bytes, e.tape_drive, e.plan_reserved, drv.index
    best: tuple[int, int] | None = None
    for m in drv.media:
        heap = e.demand[m]
        aside = []
        while heap:
            entry = heap[0]
            t = entry[1]
            if pool_bytes[t] != -entry[0]:
                heapq.heappop(heap)
                continue
            holder = tape_drive[t]
            if (holder < 0 or holder == d) and reserved[t] < 0:
                if best is None or entry < best:
                    best = entry
                break
            aside.append(heapq.heappop(heap))
        for entry in aside:
            heapq.heappush(heap, entry)
    return best[1] if best is not None else -1


def choose(e: Engine, drv: DriveState) -> tuple[int, int]:
    """The tape a free drive takes next and the requester it serves, or (-1, -1)."""
    p = e.p
    if e.policy == "time-slider":  # drives serve no requester in particular (see own())
        r = top(e, drv, 0)
        return (p.tape[r], -1) if r >= 0 else (-1, -1)
    if e.policy == "equal":
        best: tuple[int, int, int] | None = None
        for q in range(len(p.requesters)):
            r = top(e, drv, q)
            if r >= 0 and (best is None or (e.active[q], e.adm[r]) < best[:2]):
                best = (e.active[q], e.adm[r], r)
        return (p.tape[best[2]], p.requester[best[2]]) if best else (-1, -1)
    while True:  # by-demand: the tape with the most requested bytes
        t = most_demanded(e, drv)
        if t < 0:
            return -1, -1
        live = [r for r in e.pending[t] if e.st[r] == POOL]
        if live:
            return t, -1
        e.pending[t], e.pool_bytes[t] = [], 0  # only cancelled requests were left


def starved(e: Engine, drv: DriveState) -> bool:
    """Equal sharing: another requester with work this drive could do has at least two drives
    fewer than the requester this drive serves."""
    mine = e.active[drv.owner] if drv.owner >= 0 else 0
    return any(
        q != drv.owner and e.active[q] + 1 < mine and top(e, drv, q) >= 0
        for q in range(len(e.p.requesters))
    )


def wake_idle(e: Engine, now: float) -> None:
    """Work entered the pool (admissions, a tape back in its cell): idle drives decide again,
    empty ones first, then the longest idle."""
    drives = e.drives
    for drv in sorted(map(drives.__getitem__, e.idle), key=IDLE_ORDER):
        if drv.phase == IDLE:
            choose_and_go(e, drv, now)


def fifo_join(e: Engine, r: int, drv: DriveState, now: float) -> None:
    """Request r goes to the drive that holds (or is about to mount) its tape, read after the
    ones before it: a tape system reads a mounted tape's queue in arrival order."""
    e.st[r] = ASSIGNED
    if drv.tape != e.p.tape[r]:
        drv.next_work.append(r)
    else:
        drv.work.append(r)
        if drv.phase == IDLE:
            e.next_read(drv, now)


def fifo_dispatch(e: Engine, now: float) -> None:
    """FIFO as a tape system serves direct submission: one queue per tape. A request for a tape
    a drive holds has joined that drive's list on admission (fifo_join); each free drive mounts
    the tape of the oldest waiting request it can read (an empty drive first, then the longest
    idle, whose tape is dismounted then), with every request waiting for that tape, in arrival
    order. A request that waits for a drive holds up no request behind it for another tape."""
    pool, st, tape, drives, pending = e.fifo_pool, e.st, e.p.tape, e.drives, e.pending
    blocked: set[int] = set()  # media no free drive reads just now
    i = 0  # requests before it wait; from it on, not looked at yet
    while e.idle and i < len(pool):
        r = pool[i]
        if st[r] != POOL:  # taken with its tape's queue, or gone: drop it when at the front
            if i == 0:
                pool.popleft()
            else:
                i += 1
            continue
        t = tape[r]
        if e.tape_drive[t] >= 0:  # its tape is on its way out of a drive: it waits for the cell
            i += 1
            continue
        media = e.p.tape_media[t]
        if media in blocked:
            i += 1
            continue
        free: Iterable[DriveState] = map(drives.__getitem__, e.idle)
        if not e.read_by_all[media]:
            free = [x for x in free if x.reads[media]]
        drv = min(free, key=IDLE_ORDER, default=None)
        if drv is None:
            blocked.add(media)
            i += 1
            continue
        reqs = list(dict.fromkeys(x for x in pending[t] if st[x] == POOL))  # listed once each
        pending[t] = []
        for x in reqs:
            st[x] = ASSIGNED
        e.tape_drive[t] = drv.index
        if drv.tape >= 0:
            drv.next_tape, drv.next_work = t, reqs
            e.unmount(drv, now)
        else:
            e.mount(drv, t, reqs, now)
    while pool and st[pool[0]] != POOL:
        pool.popleft()
