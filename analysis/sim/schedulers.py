"""What a free drive of the simulated library does next (analysis/sim/simulator.py describes the
schedulers and policies; the state they read and change is analysis/sim/events.py's)."""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Iterable

from tapelens.analysis.sim import drives as drive_ops
from tapelens.analysis.sim import pool as pooling
from tapelens.analysis.sim.state import (
    ASSIGNED,
    IDLE,
    IDLE_END,
    IDLE_ORDER,
    POOL,
    DriveState,
    SimState,
)


def free_drive(s: SimState, drv: DriveState, now: float) -> None:
    """What a drive whose list is read does next (drives.work_done asks, s.schedule)."""
    if not s.fifo:
        choose_and_go(s, drv, now)
        return
    pooling.own(s, drv, -1)
    fifo_dispatch(s, now)
    if drv.phase == IDLE and drv.tape >= 0 and s.to_read:
        # The deferred dismount: the tape leaves unless a request comes for it first.
        drv.idle_timer += 1
        delay = s.config.idle_dismount_s
        if delay <= 0:  # unloaded as soon as its queue is empty
            drive_ops.unmount(s, drv, now)
        else:
            heapq.heappush(s.heap, (now + delay, IDLE_END, drv.index, drv.idle_timer))


def tape_back(s: SimState, t: int, now: float) -> None:
    """Tape t is back in its cell (drives.unloaded tells, s.tape_back): whoever waited for
    it, or for the drive it left, may go on."""
    if s.fifo:
        fifo_dispatch(s, now)
    elif s.idle and pooling.pooled(s, t):
        wake_idle(s, now)


def choose_and_go(s: SimState, drv: DriveState, now: float) -> None:
    """Sorted scheduling: a free drive reads the requests left behind its head in one more
    pass, or takes the tape its policy picks (all of that tape's visible requests with it)."""
    if drv.later:
        reqs = pooling.sorted_in(drv.later, s.req.st, ASSIGNED)
        drv.later = []
        if reqs and not (s.policy == "equal" and starved(s, drv)):
            drv.work, drv.wi = reqs if s.rao is None else s.rao.ordered(reqs), 0
            drive_ops.next_read(s, drv, now)
            return
        for r in reqs:  # another requester's turn: back to the pool, as new requests
            s.front.repeats = True
            s.req.adm[r] = s.front.adm_next
            s.front.adm_next += 1
            pooling.to_pool(s, r)
    if drv.owner >= 0:  # as own(drv, -1): the drive serves nobody while it chooses
        pooling.own(s, drv, -1)
    if s.pool.dirty:
        pooling.rerank(s)
    t = s.pool.line.choose(drv.media, s.pool.active, NO_GROUPS, usable=usable_by(s, drv))
    if t < 0:
        return
    requester = s.pool.line.requester_of(t) if s.policy == "equal" else -1
    reqs = pooling.take(s, t)
    if requester >= 0:  # as own(drv, requester): the drive serves nobody just now
        drv.owner = requester
        s.pool.active[requester] += 1
    if drv.tape == t:
        drv.work, drv.wi = reqs if s.rao is None else s.rao.ordered(reqs), 0
        drive_ops.next_read(s, drv, now)
        return
    drive_ops.take_tape(s, drv, t, reqs, now)


NO_GROUPS = [0]  # the simulator's requests carry no group: one, never busy


def usable_by(s: SimState, drv: DriveState) -> Callable[[int], bool]:
    """Whether the drive may take a tape: in its cell (or in this drive), not kept for a
    drive that follows a plan (the line only holds media the drive reads)."""
    tape_drive, reserved, d = s.pool.tape_drive, s.pool.plan_reserved, drv.index

    def usable(t: int) -> bool:
        holder = tape_drive[t]
        return (holder < 0 or holder == d) and reserved[t] < 0

    return usable


def starved(s: SimState, drv: DriveState) -> bool:
    """Equal sharing: another requester with work this drive could do has at least two drives
    fewer than the requester this drive serves."""
    mine = s.pool.active[drv.owner] if drv.owner >= 0 else 0
    if s.pool.dirty:
        pooling.rerank(s)
    usable = usable_by(s, drv)
    return any(
        q != drv.owner
        and s.pool.active[q] + 1 < mine
        and s.pool.line.has_work(q, drv.media, usable)
        for q in range(len(s.p.requesters))
    )


def wake_idle(s: SimState, now: float) -> None:
    """Work entered the pool (admissions, a tape back in its cell): idle drives decide again,
    empty ones first, then the longest idle."""
    drives = s.drives
    for drv in sorted(map(drives.__getitem__, s.idle), key=IDLE_ORDER):
        if drv.phase == IDLE:
            choose_and_go(s, drv, now)


def fifo_order(drv: DriveState) -> tuple[bool, float, int]:
    """Which free drive takes a tape: an empty one first, the first in the library's order
    (direct submission lists older generations first, so newer drives stay free for the media
    only they read), then the one whose tape has been idle longest."""
    has_tape = drv.tape >= 0
    return (has_tape, drv.idle_since if has_tape else 0.0, drv.index)


def fifo_join(s: SimState, r: int, drv: DriveState, now: float) -> None:
    """Request r goes to the drive that holds (or is about to mount) its tape, read after the
    ones before it: a tape system reads a mounted tape's queue in arrival order."""
    s.req.st[r] = ASSIGNED
    if drv.tape != s.p.tape[r]:
        drv.next_work.append(r)
    else:
        drv.work.append(r)
        if drv.phase == IDLE:
            drive_ops.next_read(s, drv, now)


def fifo_dispatch(s: SimState, now: float) -> None:
    """FIFO as a tape system serves direct submission: one queue per tape. A request for a tape
    a drive holds has joined that drive's list on admission (fifo_join); each free drive mounts
    the tape of the oldest waiting request it can read (an empty drive first, in the library's
    order, then the longest idle, whose tape is dismounted then, unless idle tapes are kept:
    config.preempt_idle), with every request waiting for that tape, in arrival order. A
    request that waits for a drive holds up no request behind it for another tape. This is the
    direct-submission baseline's service discipline too (analysis/recall/baselines/direct.py
    runs it).

    The oldest request a free drive can read is the oldest of the heads of the per-media
    queues (Pool.fifo_pool) whose media a free drive reads: a few heads a choice, where one
    queue of every request was walked past the ones no free drive reads, each time a drive
    came free (quadratic in the requests)."""
    queues, st, tape, pending = s.pool.fifo_pool, s.req.st, s.p.tape, s.pool.pending
    n = s.n
    while s.idle:
        best, best_drv = -1, None
        for media, queue in enumerate(queues):
            entry = _oldest_mountable(s, queue)
            if entry < 0 or (best >= 0 and entry > best):
                continue
            drv = _fifo_drive(s, media)
            if drv is not None:
                best, best_drv = entry, drv
        if best_drv is None:
            return
        t = tape[best % n]
        reqs = list(dict.fromkeys(x for x in pending[t] if st[x] == POOL))  # listed once each
        pending[t] = []
        for x in reqs:
            st[x] = ASSIGNED
        drive_ops.take_tape(s, best_drv, t, reqs, now)


def _oldest_mountable(s: SimState, queue: deque[int]) -> int:
    """The entry (adm * n + r) of the queue's oldest request still waiting whose tape is in
    its cell, or -1. Entries no longer waiting (taken with their tape's queue, gone, or
    admitted again since: adm moved on) are dropped; requests whose tape is on its way out of
    a drive wait for the cell and keep their place."""
    st, adm, tape, tape_drive, n = s.req.st, s.req.adm, s.p.tape, s.pool.tape_drive, s.n
    held: list[int] = []
    found = -1
    while queue:
        entry = queue[0]
        r = entry % n
        if st[r] != POOL or adm[r] != entry // n:
            queue.popleft()
        elif tape_drive[tape[r]] >= 0:
            held.append(queue.popleft())
        else:
            found = entry
            break
    queue.extendleft(reversed(held))
    return found


def _fifo_drive(s: SimState, media: int) -> DriveState | None:
    """The free drive that takes a tape of `media` (fifo_order), or None."""
    drives = s.drives
    free: Iterable[DriveState] = map(drives.__getitem__, s.idle)
    if not s.read_by_all[media]:
        free = [x for x in free if x.reads[media]]
    if not s.config.preempt_idle:
        free = [x for x in free if x.tape < 0]
    return min(free, key=fifo_order, default=None)
