"""What a free drive of the simulated library does next (analysis/sim/simulator.py describes the
schedulers and policies; the state they read and change is analysis/sim/events.py's)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
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
    if e.dirty:
        e.rerank()
    t = e.line.choose(drv.media, e.active, NO_GROUPS, usable=usable_by(e, drv))
    if t < 0:
        return
    requester = e.line.requester_of(t) if e.policy == "equal" else -1
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


NO_GROUPS = [0]  # the simulator's requests carry no group: one, never busy


def usable_by(e: Engine, drv: DriveState) -> Callable[[int], bool]:
    """Whether the drive may take a tape: in its cell (or in this drive), not kept for a
    drive that follows a plan (the line only holds media the drive reads)."""
    tape_drive, reserved, d = e.tape_drive, e.plan_reserved, drv.index

    def usable(t: int) -> bool:
        holder = tape_drive[t]
        return (holder < 0 or holder == d) and reserved[t] < 0

    return usable


def starved(e: Engine, drv: DriveState) -> bool:
    """Equal sharing: another requester with work this drive could do has at least two drives
    fewer than the requester this drive serves."""
    mine = e.active[drv.owner] if drv.owner >= 0 else 0
    if e.dirty:
        e.rerank()
    usable = usable_by(e, drv)
    return any(
        q != drv.owner and e.active[q] + 1 < mine and e.line.has_work(q, drv.media, usable)
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
