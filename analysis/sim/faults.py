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
from typing import TYPE_CHECKING

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
)

if TYPE_CHECKING:
    from tapelens.analysis.sim.events import Engine


def fail(e: Engine, r: int, now: float) -> None:
    """Request r is back with its client (its read was lost, or its client gave up on it)."""
    e.repeats = True  # a request left the backlog or the pool other than by being taken
    if e.st[r] == POOL and not e.fifo:
        e.dirty.add(e.p.tape[r])  # its tape's place in line may change
    e.st[r] = HELD
    e.plan_live[r] = False
    e.failed_at[r] = now
    e.retries += 1
    if e.config.retry.kind == "immediate":
        delay = float(e.rng.exponential(e.config.retry.client_delay_s))
        e.record(EventKind.RETRY, -1, e.p.tape[r], r, now, now + delay)
        e.push(now + delay, RESUBMIT, r)
        return
    e.cycle_list.append(r)
    if e.cycle_at < now:
        cycle_s = e.config.retry.cycle_s
        e.cycle_at = (math.floor(now / cycle_s) + 1) * cycle_s
        e.push(e.cycle_at, CYCLE, 0)


def resubmit(e: Engine, reqs: list[int], now: float) -> None:
    for r in reqs:
        e.submit(r)
    e.admit(now)


def cycle(e: Engine, now: float) -> None:
    """A retry cycle: every request that failed since the last one is sent again, together."""
    reqs, e.cycle_list = e.cycle_list, []
    for r in reqs:
        e.record(EventKind.RETRY, -1, e.p.tape[r], r, e.failed_at[r], now)
    resubmit(e, reqs, now)


def drive_down(e: Engine, fault: Fault, now: float) -> None:
    drv = e.drives[[d.name for d in e.library.drives].index(str(fault.drive))]
    until = now + fault.duration_s
    e.record(EventKind.DRIVE_DOWN, drv.index, -1, -1, now, until)
    e.push(until, UP_AT, drv.index)
    if drv.phase == DOWN:
        drv.down_until = max(drv.down_until, until)
        return
    drv.token += 1  # voids the event the drive was waiting for
    drv.down_until = until
    e.leave_idle(drv)
    was, drv.down_phase, drv.phase = drv.phase, drv.phase, DOWN
    if was == READING:
        r = drv.current
        drv.current = -1
        e.record(EventKind.FAILED_READ, drv.index, drv.tape, r, drv.started_at, now)
        if e.st[r] == READ:
            e.window_used -= 1
            fail(e, r, now)
            e.admit(now)


def drive_up(e: Engine, drv: DriveState, now: float) -> None:
    if drv.phase != DOWN or now < drv.down_until:
        return
    was = drv.down_phase
    drv.head = -1  # the position is lost: the next read locates from the load point
    if was == MOUNTING:  # the tape is in the drive: load it again
        drv.phase, drv.started_at = MOUNTING, now
        e.push(now + e.load_s[drv.tape], MOUNTED, drv.index, drv.token)
    elif was == UNMOUNTING:
        drv.phase = READING  # not idle: unmount() must not look for it among the idle
        e.unmount(drv, now)
    else:
        drv.phase = READING  # next_read() decides, and records the drive idle if it is
        e.next_read(drv, now)


def net_down(e: Engine, fault: Fault, now: float) -> None:
    until = now + fault.duration_s
    e.record(EventKind.NETWORK_DOWN, -1, -1, -1, now, until)
    e.net_until = max(e.net_until, until)
    e.net_up = False
    e.push(until, NET_UP, 0)


def net_up(e: Engine, now: float) -> None:
    if e.net_up or now < e.net_until:
        return
    e.net_up = True
    st = e.st
    if e.config.retry.kind == "immediate":
        # Every client saw its request fail and sends it again now: the library cancels the
        # original and drops the copy it staged for it.
        for r in range(e.n):
            s = st[r]
            if s < BACKLOG or s == DONE:
                continue
            if s == STAGED:
                e.record(EventKind.PURGE, -1, e.p.tape[r], r, e.done_s[r], now)
                e.done_s[r] = math.nan
                e.purged += 1
                e.to_read += 1
            elif s >= POOL:
                e.window_used -= 1
            fail(e, r, now)
        for drv in e.drives:
            if drv.phase == WAITING:
                e.next_read(drv, now)
    else:  # clients wait for their cycle; what was staged is delivered now
        for r in e.staged:
            st[r] = DONE
            e.record(EventKind.DELIVER, -1, e.p.tape[r], r, e.done_s[r], now)
            e.done_s[r] = now
        e.last_s = max(e.last_s, now)
    e.staged = []
    held, e.held_out = e.held_out, []
    resubmit(e, held, now)
