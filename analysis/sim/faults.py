"""Faults and retries of the simulated library (analysis/sim/simulator.py says what they model; the
state they change is analysis/sim/events.py's).

A drive fault stops one drive: the read in progress fails, the tape stays in the drive, the drive
comes back with its position lost. A network outage lets the library go on reading into its disk
cache while clients cannot reach it: submissions wait, and every request outstanding when the
network comes back has failed in its client's eyes. Failed requests go back to their clients,
who send them again at once (`immediate`, each after its own turnaround) or at the next multiple
of the cycle (`cycle`).
"""

from __future__ import annotations

import math

from tapelens.analysis.sim import drives as drive_ops
from tapelens.analysis.sim import pool as pooling
from tapelens.analysis.sim import state
from tapelens.analysis.sim.config import EventKind, Fault
from tapelens.analysis.sim.state import (
    BACKLOG,
    CYCLE,
    DONE,
    DOWN,
    HELD,
    MOUNTED,
    MOUNTING,
    NET_UP,
    POOL,
    READ,
    READING,
    RESUBMIT,
    STAGED,
    UNMOUNTING,
    UP_AT,
    WAITING,
    DriveState,
    SimState,
)


def fail(s: SimState, r: int, now: float) -> None:
    """Request r is back with its client (its read was lost, or its client gave up on it)."""
    s.front.repeats = True  # a request left the backlog or the pool other than by being taken
    if s.req.st[r] == POOL and not s.fifo:
        s.pool.dirty.add(s.p.tape[r])  # its tape's place in line may change
    s.req.st[r] = HELD
    s.req.plan_live[r] = False
    s.req.failed_at[r] = now
    s.tally.retries += 1
    if s.config.retry.kind == "immediate":
        delay = float(s.rng.exponential(s.config.retry.client_delay_s))
        state.record(s, EventKind.RETRY, -1, s.p.tape[r], r, now, now + delay)
        state.push(s, now + delay, RESUBMIT, r)
        return
    s.net.cycle_list.append(r)
    if s.net.cycle_at < now:
        cycle_s = s.config.retry.cycle_s
        s.net.cycle_at = (math.floor(now / cycle_s) + 1) * cycle_s
        state.push(s, s.net.cycle_at, CYCLE, 0)


def resubmit(s: SimState, reqs: list[int], now: float) -> None:
    for r in reqs:
        pooling.submit(s, r)
    s.admit(now)


def cycle(s: SimState, now: float) -> None:
    """A retry cycle: every request that failed since the last one is sent again, together."""
    reqs, s.net.cycle_list = s.net.cycle_list, []
    for r in reqs:
        state.record(s, EventKind.RETRY, -1, s.p.tape[r], r, s.req.failed_at[r], now)
    resubmit(s, reqs, now)


def drive_down(s: SimState, fault: Fault, now: float) -> None:
    drv = s.drives[[d.name for d in s.library.drives].index(str(fault.drive))]
    until = now + fault.duration_s
    state.record(s, EventKind.DRIVE_DOWN, drv.index, -1, -1, now, until)
    state.push(s, until, UP_AT, drv.index)
    if drv.phase == DOWN:
        drv.down_until = max(drv.down_until, until)
        return
    drv.token += 1  # voids the event the drive was waiting for
    drv.down_until = until
    drive_ops.leave_idle(s, drv)
    was, drv.down_phase, drv.phase = drv.phase, drv.phase, DOWN
    if was == READING:
        r = drv.current
        drv.current = -1
        state.record(s, EventKind.FAILED_READ, drv.index, drv.tape, r, drv.started_at, now)
        if s.req.st[r] == READ:
            s.front.window_used -= 1
            fail(s, r, now)
            s.admit(now)


def drive_up(s: SimState, drv: DriveState, now: float) -> None:
    if drv.phase != DOWN or now < drv.down_until:
        return
    was = drv.down_phase
    drv.head = -1  # the position is lost: the next read locates from the load point
    if was == MOUNTING:  # the tape is in the drive: load it again
        drv.phase, drv.started_at = MOUNTING, now
        state.push(s, now + s.load_s[drv.tape], MOUNTED, drv.index, drv.token)
    elif was == UNMOUNTING:
        drv.phase = READING  # not idle: unmount() must not look for it among the idle
        drive_ops.unmount(s, drv, now)
    else:
        drv.phase = READING  # next_read() decides, and records the drive idle if it is
        drive_ops.next_read(s, drv, now)


def net_down(s: SimState, fault: Fault, now: float) -> None:
    until = now + fault.duration_s
    state.record(s, EventKind.NETWORK_DOWN, -1, -1, -1, now, until)
    s.net.until = max(s.net.until, until)
    s.net.up = False
    state.push(s, until, NET_UP, 0)


def net_up(s: SimState, now: float) -> None:
    if s.net.up or now < s.net.until:
        return
    s.net.up = True
    st = s.req.st
    if s.config.retry.kind == "immediate":
        # Every client saw its request fail and sends it again now: the library cancels the
        # original and drops the copy it staged for it.
        for r in range(s.n):
            code = st[r]
            if code < BACKLOG or code == DONE:
                continue
            if code == STAGED:
                state.record(s, EventKind.PURGE, -1, s.p.tape[r], r, s.req.done_s[r], now)
                s.req.done_s[r] = math.nan
                s.tally.purged += 1
                s.to_read += 1
            elif code >= POOL:
                s.front.window_used -= 1
            fail(s, r, now)
        for drv in s.drives:
            if drv.phase == WAITING:
                drive_ops.next_read(s, drv, now)
    else:  # clients wait for their cycle; what was staged is delivered now
        for r in s.net.staged:
            st[r] = DONE
            state.record(s, EventKind.DELIVER, -1, s.p.tape[r], r, s.req.done_s[r], now)
            s.req.done_s[r] = now
        s.tally.last_s = max(s.tally.last_s, now)
    s.net.staged = []
    held, s.front.held_out = s.front.held_out, []
    resubmit(s, held, now)
