"""What the simulated library's drives and robots do: mount, read, unload, go idle
(analysis/sim/state.py holds the state). What a free drive does next is its scheduler's
decision (s.schedule, analysis/sim/schedulers.py); a planned drive follows its plan first."""

from __future__ import annotations

import heapq

from tapelens.analysis.sim import pool, state
from tapelens.analysis.sim.config import EventKind
from tapelens.analysis.sim.state import (
    ASSIGNED,
    BACKLOG,
    DONE,
    FUTURE,
    HELD,
    IDLE,
    MOUNTED,
    MOUNTING,
    READ,
    READ_DONE,
    READING,
    STAGED,
    UNLOADED,
    UNMOUNTING,
    WAITING,
    DriveState,
    SimState,
)

JITTER_BLOCK = 65_536  # normal draws taken from the generator at a time
UNMOUNT_KIND = int(EventKind.UNMOUNT)


def read_times(s: SimState, drv: DriveState, w: list[int], i: int) -> list[float]:
    """The times of the reads on a long list w from its i-th on, in one call, once per
    list (the loop times the reads of a short one one by one). A list that grows
    afterwards (requests inserted ahead of the head) no longer matches its times in
    length, and is timed read by read from then on."""
    drv.timed = w
    drv.times = s.pass_times(w, i)
    return drv.times


def leave_idle(s: SimState, drv: DriveState) -> None:
    if drv.phase == IDLE:
        s.idle.remove(drv.index)


def go_idle(s: SimState, drv: DriveState, now: float) -> None:
    if drv.phase != IDLE:
        drv.phase = IDLE
        drv.idle_since = now
        drv.idle_key = (drv.tape >= 0, now, drv.index)
        s.idle.append(drv.index)


def robot(s: SimState, t: int, now: float) -> float:
    """The first free robot moves tape t; returns when it is done."""
    free_s, i = s.robots[0]
    done_s = (now if now > free_s else free_s) + s.robot_s[t]
    heapq.heapreplace(s.robots, (done_s, i))
    return done_s


def mount(s: SimState, drv: DriveState, t: int, reqs: list[int], now: float) -> None:
    """The first free robot fetches the tape, the drive loads it."""
    if drv.phase == IDLE:
        s.idle.remove(drv.index)
    if s.rao is not None:
        reqs = s.rao.ordered(reqs)
    drv.tape, drv.head, drv.work, drv.wi, drv.later = t, -1, reqs, 0, []
    loaded_s = robot(s, t, now) + s.load_s[t]
    drv.phase, drv.started_at = MOUNTING, now
    s.tally.mounts += 1
    heapq.heappush(s.heap, (loaded_s, MOUNTED, drv.index, drv.token))
    if drv.planned and drv.plan[drv.plan_i][0] == t:
        pool.open_block(s, reqs, now)


def take_tape(s: SimState, drv: DriveState, t: int, reqs: list[int], now: float) -> None:
    """The drive takes tape t to read `reqs`: it mounts it, once the tape it holds (if any)
    is unloaded."""
    s.pool.tape_drive[t] = drv.index
    if drv.tape >= 0:
        drv.next_tape, drv.next_work = t, reqs
        unmount(s, drv, now)
    else:
        mount(s, drv, t, reqs, now)


def unmount(s: SimState, drv: DriveState, now: float) -> None:
    if drv.phase == IDLE:
        s.idle.remove(drv.index)
    if drv.owner >= 0:
        pool.own(s, drv, -1)
    drv.phase, drv.started_at = UNMOUNTING, now
    t, h = drv.tape, drv.head
    # The rewind from where the last read left the head, as the engine prices a plan's mounts.
    rewind = s.rewind_after_s[h] if h >= 0 else s.rewind_unknown_s[t]
    heapq.heappush(s.heap, (now + rewind + s.unload_s[t], UNLOADED, drv.index, drv.token))


def unloaded(s: SimState, drv: DriveState, now: float) -> None:
    """Unloaded: the drive is free, a robot takes the tape back to its cell."""
    t = drv.tape
    s.tally.records.append((UNMOUNT_KIND, drv.started_at, now, drv.index, t, -1))
    if now > s.tally.last_s:
        s.tally.last_s = now
    s.pool.tape_drive[t] = -1
    drv.tape, drv.head = -1, -1
    robot(s, t, now)
    if drv.next_tape >= 0:  # straight on: not idle in between (nothing would see it)
        t2, reqs = drv.next_tape, drv.next_work
        drv.next_tape, drv.next_work = -1, []
        mount(s, drv, t2, reqs, now)
    else:
        go_idle(s, drv, now)
        work_done(s, drv, now)
    s.tape_back(s, t, now)


def read_done(s: SimState, drv: DriveState, now: float) -> None:
    """A read ends (the loop handles the common case itself)."""
    r = drv.current
    drv.current = -1
    st = s.req.st
    if st[r] != READ:  # its client cancelled it meanwhile: the read is lost
        state.record(s, EventKind.FAILED_READ, drv.index, drv.tape, r, drv.started_at, now)
    else:
        state.record(s, EventKind.READ, drv.index, drv.tape, r, drv.started_at, now)
        s.to_read -= 1
        s.front.window_used -= 1
        s.req.done_s[r] = now
        if s.net.up:
            st[r] = DONE
        else:
            st[r] = STAGED
            s.net.staged.append(r)
        if s.front.backlog:
            s.admit(now)
    next_read(s, drv, now)


def jitter_factor(s: SimState) -> float:
    """A read's time relative to the model's: normal around 1, at least 0.05."""
    if s.ji >= len(s.jit):
        s.jit = s.rng.standard_normal(JITTER_BLOCK).tolist()
        s.ji = 0
    s.ji += 1
    return max(0.05, 1.0 + s.jitter * s.jit[s.ji - 1])


def next_read(s: SimState, drv: DriveState, now: float) -> None:
    """Start the drive's next read, or decide what it does once its list is read."""
    st, w, i = s.req.st, drv.work, drv.wi
    while i < len(w):
        r = w[i]
        code = st[r]
        if code == ASSIGNED:  # start reading it
            drv.wi = i + 1
            h = drv.head
            dur = s.first_s[r] if h < 0 else s.read_s(h, r)  # as read_s(-1, r) is
            if s.jitter:
                dur *= jitter_factor(s)
            if drv.phase == IDLE:
                s.idle.remove(drv.index)
            st[r] = READ
            drv.head = drv.current = r
            drv.phase, drv.started_at = READING, now
            heapq.heappush(s.heap, (now + dur, READ_DONE, drv.index, drv.token))
            return
        if drv.planned and s.req.plan_live[r]:
            if code == BACKLOG:  # asked for, not visible yet (the window is full): wait
                drv.wi = i
                leave_idle(s, drv)
                drv.phase, drv.waiting = WAITING, r
                unstall(s, now)
                return
            if code in (FUTURE, HELD):  # not asked for yet: left to the scheduler
                s.req.plan_live[r] = False
        i += 1
    drv.wi = i
    if drv.phase != IDLE:  # as go_idle()
        drv.phase = IDLE
        drv.idle_since = now
        drv.idle_key = (drv.tape >= 0, now, drv.index)
        s.idle.append(drv.index)
    work_done(s, drv, now)


def work_done(s: SimState, drv: DriveState, now: float) -> None:
    """The drive's list is read: the next tape of its plan, or whatever its scheduler
    gives it; once nothing at all is left to read, every idle drive dismounts (from when it
    fell idle)."""
    if drv.planned and drv.tape >= 0:
        drv.plan_i += 1
        s.pool.plan_reserved[drv.tape] = -1
        if drv.plan_i < len(drv.plan):
            t2, block = drv.plan[drv.plan_i]
            s.pool.tape_drive[t2] = drv.index
            drv.next_tape, drv.next_work = t2, block
            unmount(s, drv, now)
            return
        drv.planned = False
    s.schedule(s, drv, now)
    if drv.phase == IDLE and s.to_read == 0:
        # The recall is read: each tape still held is rewound and unloaded from when its drive
        # fell idle, as a plan's mounts are (its rewind, priced from where its last read
        # ended, may be longer than that of the tape read last).
        for d in list(s.idle):
            other = s.drives[d]
            if other.tape >= 0:
                unmount(s, other, other.idle_since)
    elif drv.phase == IDLE:
        unstall(s, now)


def unstall(s: SimState, now: float) -> None:
    """Planned drives wait for files the full window keeps out; if nothing else runs that
    would free a place in it, the window holds only work no free drive may take (retries
    for tapes whose only readers follow a plan): the waiting drives leave the files they
    wait for to the scheduler and go on with their plans."""
    if s.stalled or s.front.window is None or s.front.window_used < s.front.window:
        return
    s.stalled = True
    while s.front.window_used >= s.front.window:
        if any(d.phase not in (IDLE, WAITING) for d in s.drives):
            break
        waiting = [d for d in s.drives if d.phase == WAITING]
        if not waiting:
            break
        for drv in waiting:
            s.req.plan_live[drv.waiting] = False
            drv.waiting = -1
            drv.phase = READING  # next_read() decides and records the drive idle if it is
            next_read(s, drv, now)
    s.stalled = False
