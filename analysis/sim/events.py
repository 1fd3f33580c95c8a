"""The event loop of the library simulator (analysis/sim/simulator.py says what it models).

The state is one SimState (analysis/sim/state.py), passed to every function. The queue holds
plain tuples (time, kind, argument, token), so events at one time are
taken in a fixed order (by kind, then drive or request) whatever order they were pushed in; a
drive's token changes when a fault interrupts it, which voids the events it had scheduled.
Records are tuples appended to one list and become a frame at the end. new_run binds the
decisions other modules make (admission, what a free drive does, a tape back in its cell).

Speed (bench/bench_simulator.py; the target is >= 200k events per CPU second). The loop and
the admission closure (analysis/sim/admit.py) bind what they touch to local variables; common
transitions write the queue and the records directly; the state's parts have slots; a long
list of reads is timed in one vectorised call (inputs.pass_timer); a batch of new requests is
placed at once (admit.place_new); the policies' line of tapes (analysis/recall/schedule/policies.py)
keeps a heap per media, so a choice costs a few heap operations, not a pass over every tape;
checks that only matter once a request is sent or pooled a second time wait until then. Every
shortcut leaves the results as they were (tests/analysis/sim/test_simulator_fastpaths.py).
"""

from __future__ import annotations

import gc
import heapq

from tapelens.analysis.sim import admit as admission
from tapelens.analysis.sim import drives as drive_ops
from tapelens.analysis.sim import faults, schedulers, state
from tapelens.analysis.sim.config import EventKind, SimResult
from tapelens.analysis.sim.results import build_result
from tapelens.analysis.sim.state import (
    ARRIVE,
    ASSIGNED,
    CYCLE,
    DONE,
    DOWN_AT,
    IDLE,
    IDLE_END,
    MOUNTED,
    NET_DOWN,
    NET_UP,
    READ,
    READ_DONE,
    RESUBMIT,
    UNLOADED,
    UP_AT,
    SimState,
)

# Reads left on a list from which their times are worth one vectorised call: below this, the
# call's fixed cost (some twenty array operations) exceeds that of timing each read alone.
PASS_MIN_READS = 48
NO_TIMES: list[float] = []  # a short list's: each read is timed alone
MOUNT_KIND, READ_KIND = int(EventKind.MOUNT), int(EventKind.READ)


def bind(s: SimState) -> SimState:
    """A new run's state (state.new_state) with the decisions other modules make bound to it."""
    s.schedule = schedulers.free_drive
    s.tape_back = schedulers.tape_back
    s.admit = admission.admitter(s)
    return s


def simulate_run(s: SimState) -> SimResult:
    """Run the queue to its end; the results."""
    run(s)
    return build_result(s)


def run(s: SimState) -> None:
    for i, fault in enumerate(s.config.faults):
        state.push(s, fault.start_s, NET_DOWN if fault.kind == "network" else DOWN_AT, i)
    if s.front.arrival:
        state.push(s, s.p.submit_s[s.front.arrival[0]], ARRIVE, 0)
    for drv in s.drives:
        if drv.plan:
            drv.planned = True
            t, block = drv.plan[0]
            s.pool.tape_drive[t] = drv.index
            drive_ops.mount(s, drv, t, block, 0.0)
    # The loop allocates millions of short-lived tuples and no reference cycles: the cyclic
    # garbage collector, which would walk the young ones every 700 allocations for nothing,
    # waits until it is done (about a tenth of the loop's time).
    collecting = gc.isenabled()
    gc.disable()
    try:
        s.tally.steps = _loop(s)
    finally:
        if collecting:
            gc.enable()


def _loop(s: SimState) -> int:
    """Take events off the queue until none is left; returns how many were taken, plus the
    reads the fast path below takes without the queue.

    The common step, a drive finishing a read and starting the next one on its list, runs
    inline with what it touches in local variables, and goes on without the queue while
    that drive's next read ends before any other event; every other transition is a function
    of its module.
    """
    heap, drive_list, st, done_s = s.heap, s.drives, s.req.st, s.req.done_s
    pop, push = heapq.heappop, heapq.heappush
    record, read_s, admit, backlog = s.tally.records.append, s.read_s, s.admit, s.front.backlog
    next_read, read_times = drive_ops.next_read, drive_ops.read_times
    fast = not s.config.jitter
    net_up = s.net.up  # changes only through the NET_DOWN and NET_UP events below
    steps = 0
    # Not `while heap:`: its conditional back edge does not count towards CPython 3.11's
    # warm-up, and this function, entered once per run, would run unspecialised bytecode
    # (generic attribute and global lookups) to the end: a third slower.
    while True:
        if not heap:
            break
        now, kind, arg, token = pop(heap)
        steps += 1
        if kind == READ_DONE:
            drv = drive_list[arg]
            if token != drv.token:
                continue
            r = drv.current
            while True:  # this drive's reads, as long as no other event comes between
                if st[r] != READ or not net_up:
                    drive_ops.read_done(s, drv, now)
                    break
                record((READ_KIND, drv.started_at, now, arg, drv.tape, r))
                st[r] = DONE
                done_s[r] = now
                s.to_read -= 1
                s.front.window_used -= 1
                if backlog:
                    admit(now)
                w, i = drv.work, drv.wi
                if not (fast and i < len(w) and st[w[i]] == ASSIGNED):
                    drv.current = -1
                    next_read(s, drv, now)
                    break
                nxt = w[i]
                drv.wi = i + 1
                st[nxt] = READ
                drv.head = drv.current = nxt
                drv.started_at = now
                # r is w[i - 1]: the read before on this list (next_read keeps it so).
                if drv.timed is w:  # times of this very list (another's may match in length)
                    times = drv.times
                elif len(w) - i >= PASS_MIN_READS:
                    times = read_times(s, drv, w, i)
                else:
                    times = NO_TIMES
                end = now + (times[i] if len(times) == len(w) else read_s(r, nxt))
                if heap and heap[0][0] <= end:
                    push(heap, (end, READ_DONE, arg, token))
                    break
                now = end  # the next event anywhere: take it at once
                r = nxt
                steps += 1
        elif kind == MOUNTED:
            drv = drive_list[arg]
            if token == drv.token:
                record((MOUNT_KIND, drv.started_at, now, arg, drv.tape, -1))
                next_read(s, drv, now)
        elif kind == UNLOADED:
            drv = drive_list[arg]
            if token == drv.token:
                drive_ops.unloaded(s, drv, now)
        elif kind == ARRIVE:
            admission.arrive(s, now)
        elif kind == RESUBMIT:
            faults.resubmit(s, [arg], now)
        elif kind == CYCLE:
            faults.cycle(s, now)
        elif kind == DOWN_AT:
            faults.drive_down(s, s.config.faults[arg], now)
        elif kind == UP_AT:
            faults.drive_up(s, drive_list[arg], now)
        elif kind == NET_DOWN:
            faults.net_down(s, s.config.faults[arg], now)
            net_up = s.net.up
        elif kind == NET_UP:
            faults.net_up(s, now)
            net_up = s.net.up
        elif kind == IDLE_END:
            drv = drive_list[arg]
            if token == drv.idle_timer and drv.phase == IDLE and drv.tape >= 0:
                drive_ops.unmount(s, drv, now)
    return steps
