"""What a free drive of the simulated library does next (analysis/simulator.py describes the
schedulers and policies; the state they read and change is analysis/sim_engine.py's)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tapelens.analysis.sim_state import ASSIGNED, IDLE, POOL, DriveState

if TYPE_CHECKING:
    from tapelens.analysis.sim_engine import Engine


def choose_and_go(e: Engine, drv: DriveState, now: float) -> None:
    """Sorted scheduling: a free drive reads the requests left behind its head in one more
    pass, or takes the tape its policy picks (all of that tape's visible requests with it)."""
    st = e.st
    if drv.later:
        reqs = sorted({r for r in drv.later if st[r] == ASSIGNED})
        drv.later = []
        if reqs and not (e.policy == "equal" and starved(e, drv)):
            drv.work, drv.wi = reqs, 0
            e.next_read(drv, now)
            return
        for r in reqs:  # another requester's turn: back to the pool, as new requests
            e.adm[r] = e.adm_next
            e.adm_next += 1
            e.to_pool(r)
    e.own(drv, -1)
    t, requester = choose(e, drv)
    if t < 0:
        return
    reqs = e.take(t)
    e.own(drv, requester)
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
    drive can take, or -1. Queue entries of requests that left the pool are dropped."""
    st, adm, tape, n = e.st, e.adm, e.p.tape, e.n
    best = -1
    base = requester * e.n_media
    for m, reads in enumerate(drv.reads):
        queue = e.queues[base + m]
        if not reads:
            continue
        while queue and (st[queue[0] % n] != POOL or adm[queue[0] % n] != queue[0] // n):
            queue.popleft()
        for entry in queue:  # the first usable one; tapes busy elsewhere are passed over
            r = entry % n
            if st[r] == POOL and adm[r] == entry // n and usable(e, drv, tape[r]):
                if best < 0 or adm[r] < adm[best]:
                    best = r
                break
    return best


def choose(e: Engine, drv: DriveState) -> tuple[int, int]:
    """The tape a free drive takes next and the requester it serves, or (-1, -1)."""
    p = e.p
    if e.policy == "time-slider":
        r = top(e, drv, 0)
        return (p.tape[r], p.requester[r]) if r >= 0 else (-1, -1)
    if e.policy == "equal":
        best: tuple[int, int, int] | None = None
        for q in range(len(p.requesters)):
            r = top(e, drv, q)
            if r >= 0 and (best is None or (e.active[q], e.adm[r]) < best[:2]):
                best = (e.active[q], e.adm[r], r)
        return (p.tape[best[2]], p.requester[best[2]]) if best else (-1, -1)
    while True:  # by-demand: the tape with the most requested bytes
        best_t, best_b = -1, 0
        for t, b in enumerate(e.pool_bytes):
            if b > best_b and usable(e, drv, t):
                best_t, best_b = t, b
        if best_t < 0:
            return -1, -1
        live = [r for r in e.pending[best_t] if e.st[r] == POOL]
        if live:
            return best_t, p.requester[min(live, key=e.adm.__getitem__)]
        e.pending[best_t], e.pool_bytes[best_t] = [], 0  # only cancelled requests were left


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
    for d in sorted(e.idle, key=lambda i: (drives[i].tape >= 0, drives[i].idle_since, i)):
        if drives[d].phase == IDLE:
            choose_and_go(e, drives[d], now)


def fifo_dispatch(e: Engine, now: float) -> None:
    """FIFO: requests in arrival order; one for a tape a drive holds joins that drive's list,
    any other takes the first free drive that reads it (an empty one first, then the longest
    idle), whose tape is dismounted then. A request that finds no free drive holds up the
    ones behind it."""
    pool, st, tape, drives = e.fifo_pool, e.st, e.p.tape, e.drives
    while pool:
        r = pool[0]
        if st[r] != POOL:
            pool.popleft()
            continue
        t = tape[r]
        d = e.tape_drive[t]
        if d >= 0:
            drv = drives[d]
            if drv.unloading() and drv.tape == t:
                return  # on its way back to its cell: wait until it is there
            pool.popleft()
            st[r] = ASSIGNED
            if drv.tape != t:
                drv.next_work.append(r)
            else:
                drv.work.append(r)
                if drv.phase == IDLE:
                    e.next_read(drv, now)
            continue
        media = e.p.tape_media[t]
        free = [drives[i] for i in e.idle if drives[i].reads[media]]
        if not free:
            return
        drv = min(free, key=lambda x: (x.tape >= 0, x.idle_since, x.index))
        pool.popleft()
        st[r] = ASSIGNED
        e.tape_drive[t] = drv.index
        if drv.tape >= 0:
            drv.next_tape, drv.next_work = t, [r]
            e.unmount(drv, now)
        else:
            e.mount(drv, t, [r], now)
