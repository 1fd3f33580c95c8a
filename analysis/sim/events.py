"""The event loop of the library simulator (analysis/sim/simulator.py says what it models).

State is explicit and flat: per-request lists indexed by request id (ids run in volume, position,
offset order, so sorting ids sorts requests along their tape), one DriveState per drive, per-tape
lists. The queue holds plain tuples (time, kind, argument, token), so events at one time are
taken in a fixed order (by kind, then drive or request) whatever order they were pushed in; a
drive's token changes when a fault interrupts it, which voids the events it had scheduled.
Records are tuples appended to one list and become a frame at the end. Scheduling decisions are
in analysis/sim/schedulers.py, faults and retries in analysis/sim/faults.py, results in
analysis/sim/results.py.

Speed (bench/bench_simulator.py, issue 7: >= 200k events per CPU second). The loop and the
admission closure (analysis/sim/admit.py) bind what they touch to local variables; common
transitions write the queue and the records directly; the class has slots; a long list of reads
is timed in one vectorised call (sim_inputs.pass_timer); a batch of new requests is placed at
once (sim_admit.place_new); the policies' line of tapes (analysis/recall/policies.py) keeps a
heap per media, so a choice costs a few heap operations, not a pass over every tape; checks
that only matter once a request is sent or pooled a second time wait until then. Every
shortcut leaves the results as they were (tests/analysis/sim/test_simulator_fastpaths.py).
"""

from __future__ import annotations

import gc
import heapq
import math
from bisect import bisect_right, insort
from collections import deque

import numpy as np

from tapelens.analysis.recall.policies import Sharing, TapeQueue
from tapelens.analysis.sim import admit as admission
from tapelens.analysis.sim import faults
from tapelens.analysis.sim import schedulers as sched
from tapelens.analysis.sim.config import (
    EventKind,
    Library,
    SimConfig,
    SimResult,
)
from tapelens.analysis.sim.inputs import Prepared, pass_timer, read_timer
from tapelens.analysis.sim.results import build_result
from tapelens.analysis.sim.state import (
    ARRIVE,
    ASSIGNED,
    BACKLOG,
    CYCLE,
    DONE,
    DOWN,
    DOWN_AT,
    FUTURE,
    HELD,
    IDLE,
    IDLE_END,
    MOUNTED,
    MOUNTING,
    NET_DOWN,
    NET_UP,
    POOL,
    READ,
    READ_DONE,
    READING,
    RESUBMIT,
    STAGED,
    UNLOADED,
    UNMOUNTING,
    UP_AT,
    WAITING,
    DriveState,
)
from tapelens.errors import InputError

JITTER_BLOCK = 65_536  # normal draws taken from the generator at a time
# Reads left on a list from which their times are worth one vectorised call: below this, the
# call's fixed cost (some twenty array operations) exceeds that of timing each read alone.
PASS_MIN_READS = 48
NO_TIMES: list[float] = []  # a short list's: each read is timed alone
MOUNT_KIND, READ_KIND, UNMOUNT_KIND = (
    int(EventKind.MOUNT),
    int(EventKind.READ),
    int(EventKind.UNMOUNT),
)


class Engine:
    # Slots: an instance dict of this many names is not shared-key, and every self.name in
    # the loop would be a dict lookup.
    __slots__ = (
        ("p", "library", "config", "rng", "n", "sched", "fifo", "policy", "window", "arrays")
        + ("drives", "idle", "robots", "robot_s", "load_s", "dismount_s", "heap", "records")
        + ("tape_drive", "pending", "pool_bytes", "count_bytes", "n_media", "line", "dirty")
        + ("read_s", "first_s", "jitter", "pass_times", "jit", "ji", "plan_reserved", "active")
        + ("st", "gen", "adm", "adm_next", "plan_live", "admit_s", "done_s", "failed_at")
        + ("backlog", "repeats", "window_used", "fifo_pool", "to_read", "admit", "stalled")
        + ("net_up", "net_until", "held_out", "staged", "cycle_list", "cycle_at", "last_s")
        + ("mounts", "retries", "purged", "steps", "arrival", "arrival_s", "ai", "block_of")
        + ("block_open", "arrived", "read_by_all")
    )

    def __init__(
        self,
        p: Prepared,
        library: Library,
        readable: list[list[bool]],
        config: SimConfig,
        rng: np.random.Generator,
    ) -> None:
        self.p, self.library, self.config, self.rng = p, library, config, rng
        n = self.n = len(p.tape)
        self.sched, self.policy, self.window = config.scheduler, config.policy, config.window
        self.fifo = self.sched == "fifo"
        self.drives = [
            DriveState(i, reads, [m for m, ok in enumerate(reads) if ok], idle_key=(False, 0.0, i))
            for i, reads in enumerate(readable)
        ]
        # Per media index: whether every drive reads it (FIFO need not filter the idle ones).
        self.read_by_all = [all(row[m] for row in readable) for m in range(len(p.media))]
        n_tapes = len(p.volumes)
        self.tape_drive = [-1] * n_tapes  # the drive a tape is in, or reserved for
        self.pending: list[list[int]] = [[] for _ in range(n_tapes)]  # pooled requests per tape
        self.pool_bytes = [0] * n_tapes
        # Pooled bytes are counted only where their amount is read (by-demand). Elsewhere only
        # whether a tape has any is asked (pooled()), and with no empty file in the run that is
        # whether it has pooled requests at all: admissions then skip a size lookup.
        self.count_bytes = self.policy == "by-demand" or 0 in p.size
        self.n_media = len(p.media)
        # Tapes with pooled requests, ranked by the policy as the recall engine ranks them
        # (analysis/recall/policies.py): by-demand by pooled bytes (ranked again as they grow),
        # time-slider and equal by the admission of the request that put the tape in line, for
        # that request's requester. Tapes whose pooled requests left other than by being
        # taken (failures) are `dirty`: ranked again before the next choice.
        self.line = TapeQueue(Sharing(self.policy), n_tapes)
        self.dirty: set[int] = set()
        self.plan_reserved = [-1] * n_tapes
        # (free_s, robot) as a heap: the first free robot, the lowest-numbered among equals
        self.robots = [(0.0, i) for i in range(library.robots)]
        move = library.robot_move_s
        self.robot_s = [move if move is not None else p.media[m].robot_s for m in p.tape_media]
        self.load_s = [p.media[m].load_s for m in p.tape_media]
        self.dismount_s = [p.media[m].rewind_s + p.media[m].unload_s for m in p.tape_media]
        self.read_s = read_timer(p)
        self.first_s = p.first_s
        self.jitter = config.jitter
        self.pass_times = pass_timer(p)
        # Request states as bytes: a tenth of the memory of a list, which the scattered
        # lookups of a large run (admissions, queue entries) feel more than the slower indexing.
        self.st = bytearray([FUTURE]) * n
        self.gen = [0] * n  # submissions of each request (backlog entries of older ones are void)
        self.adm = [0] * n  # admission order
        self.adm_next = 0
        self.plan_live = [False] * n
        self.admit_s = [math.nan] * n
        self.done_s = [math.nan] * n
        self.failed_at = [0.0] * n
        self.backlog: deque[int] = deque()
        # Whether a request has failed, or been sent or pooled a second time. Until then a
        # backlog or queue entry of a request still waiting where it was put is its only one
        # (its submission and admission numbers need not be compared), and each tape's pending
        # list holds just its pooled requests, each once (take() need not look them up).
        self.repeats = False
        self.window_used = 0
        self.fifo_pool: deque[int] = deque()
        self.active = [0] * len(p.requesters)  # drives serving each requester
        self.idle: list[int] = list(range(len(self.drives)))
        self.to_read = n  # requests still to be read successfully
        self.net_up, self.net_until = True, 0.0
        self.held_out: list[int] = []  # submissions waiting for the network
        self.staged: list[int] = []
        self.cycle_list: list[int] = []
        self.cycle_at = -1.0
        self.heap: list[tuple[float, int, int, int]] = []
        self.jit: list[float] = []
        self.ji = 0
        # (kind, start_s, end_s, drive, tape, request), -1 where none
        self.records: list[tuple[int, float, float, int, int, int]] = []
        self.mounts = self.retries = self.purged = self.steps = 0
        self.last_s = 0.0
        # Submission order: by time, then plan order (planned) or the order of the input rows.
        tie = np.asarray(p.plan_order if p.plan_order else p.frame["_row"].to_numpy())
        submit_s = np.asarray(p.submit_s, dtype=np.float64)
        order = np.lexsort((tie, submit_s))
        self.arrival: list[int] = order.tolist()
        # Their times in that order, to find who has arrived by bisection; a NaN time (sorted
        # last) never arrives.
        self.arrival_s: list[float] = np.nan_to_num(submit_s[order], nan=math.inf).tolist()
        self.ai = 0
        # Planned runs: per request its block (one tape of one drive's plan); a block opens when
        # its drive mounts the tape, and only then are its files asked for.
        self.block_of = [-1] * n
        self.block_open: list[bool] = []
        self.arrived = [False] * n
        self.stalled = False  # unstall() is running
        if self.sched == "planned":
            self._load_plan()
        self.arrays: admission.Arrays | None = None  # made by sim_admit when first needed
        self.admit = admission.admitter(self)

    def _load_plan(self) -> None:
        """Per drive, its tapes in plan order, each with its files in plan order."""
        p = self.p
        blocks: dict[tuple[int, int], tuple[int, list[int]]] = {}
        owner_of: dict[int, int] = {}
        for r in sorted(range(self.n), key=p.plan_order.__getitem__):
            d = p.plan_drive[r]
            if d < 0:
                continue
            t = p.tape[r]
            if owner_of.setdefault(t, d) != d:
                raise InputError(f"the plan mounts volume {p.volumes[t]} on two drives")
            if (d, t) not in blocks:
                blocks[(d, t)] = (len(self.block_open), [])
                self.drives[d].plan.append((t, blocks[(d, t)][1]))
                self.block_open.append(False)
            block_id, block = blocks[(d, t)]
            block.append(r)
            self.block_of[r] = block_id
            self.plan_live[r] = True
        for t, d in owner_of.items():
            self.plan_reserved[t] = d

    def push(self, when: float, kind: int, arg: int, token: int = 0) -> None:
        heapq.heappush(self.heap, (when, kind, arg, token))

    def record(self, kind: int, drive: int, tape: int, req: int, start: float, end: float) -> None:
        self.records.append((kind, start, end, drive, tape, req))

    # ---- the loop -----------------------------------------------------------------------

    def run(self) -> None:
        for i, fault in enumerate(self.config.faults):
            self.push(fault.start_s, NET_DOWN if fault.kind == "network" else DOWN_AT, i)
        if self.arrival:
            self.push(self.p.submit_s[self.arrival[0]], ARRIVE, 0)
        for drv in self.drives:
            if drv.plan:
                drv.planned = True
                t, block = drv.plan[0]
                self.tape_drive[t] = drv.index
                self.mount(drv, t, block, 0.0)
        # The loop allocates millions of short-lived tuples and no reference cycles: the cyclic
        # garbage collector, which would walk the young ones every 700 allocations for nothing,
        # waits until it is done (about a tenth of the loop's time).
        collecting = gc.isenabled()
        gc.disable()
        try:
            self.steps = self._loop()
        finally:
            if collecting:
                gc.enable()

    def _loop(self) -> int:
        """Take events off the queue until none is left; returns how many were taken, plus the
        reads the fast path below takes without the queue.

        The common step, a drive finishing a read and starting the next one on its list, runs
        inline with what it touches in local variables, and goes on without the queue while
        that drive's next read ends before any other event; every other transition is a method.
        """
        heap, drives, st, done_s = self.heap, self.drives, self.st, self.done_s
        pop, push = heapq.heappop, heapq.heappush
        record, read_s, admit, backlog = self.records.append, self.read_s, self.admit, self.backlog
        next_read, read_times = self.next_read, self.read_times
        fast = not self.config.jitter
        net_up = self.net_up  # changes only through the NET_DOWN and NET_UP events below
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
                drv = drives[arg]
                if token != drv.token:
                    continue
                r = drv.current
                while True:  # this drive's reads, as long as no other event comes between
                    if st[r] != READ or not net_up:
                        self.read_done(drv, now)
                        break
                    record((READ_KIND, drv.started_at, now, arg, drv.tape, r))
                    st[r] = DONE
                    done_s[r] = now
                    self.to_read -= 1
                    self.window_used -= 1
                    if backlog:
                        admit(now)
                    w, i = drv.work, drv.wi
                    if not (fast and i < len(w) and st[w[i]] == ASSIGNED):
                        drv.current = -1
                        next_read(drv, now)
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
                        times = read_times(drv, w, i)
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
                drv = drives[arg]
                if token == drv.token:
                    record((MOUNT_KIND, drv.started_at, now, arg, drv.tape, -1))
                    next_read(drv, now)
            elif kind == UNLOADED:
                drv = drives[arg]
                if token == drv.token:
                    self.unloaded(drv, now)
            elif kind == ARRIVE:
                self.arrive(now)
            elif kind == RESUBMIT:
                faults.resubmit(self, [arg], now)
            elif kind == CYCLE:
                faults.cycle(self, now)
            elif kind == DOWN_AT:
                faults.drive_down(self, self.config.faults[arg], now)
            elif kind == UP_AT:
                faults.drive_up(self, drives[arg], now)
            elif kind == NET_DOWN:
                faults.net_down(self, self.config.faults[arg], now)
                net_up = self.net_up
            elif kind == NET_UP:
                faults.net_up(self, now)
                net_up = self.net_up
            elif kind == IDLE_END:
                drv = drives[arg]
                if token == drv.idle_timer and drv.phase == IDLE and drv.tape >= 0:
                    self.unmount(drv, now)
        return steps

    def read_times(self, drv: DriveState, w: list[int], i: int) -> list[float]:
        """The times of the reads on a long list w from its i-th on, in one call, once per
        list (the loop times the reads of a short one one by one). A list that grows
        afterwards (requests inserted ahead of the head) no longer matches its times in
        length, and is timed read by read from then on."""
        drv.timed = w
        drv.times = self.pass_times(w, i)
        return drv.times

    # ---- requests -----------------------------------------------------------------------

    def arrive(self, now: float) -> None:
        """Every request submitted by now is sent; the next submission is queued."""
        order, i = self.arrival, self.ai
        j = bisect_right(self.arrival_s, now, i)
        batch = order[i:j]
        self.ai = j
        if j < len(order):
            self.push(self.p.submit_s[order[j]], ARRIVE, 0)
        if self.sched == "planned" or not self.net_up:
            for r in batch:
                self.submit(r)
        else:
            admission.send(self, batch, now)
        self.admit(now)

    def submit(self, r: int) -> None:
        """Request r is sent: it waits for the network, or (planned) for its tape's turn, or
        joins the backlog."""
        if not self.net_up:
            self.st[r] = HELD
            self.held_out.append(r)
        elif self.plan_live[r] and not self.block_open[self.block_of[r]]:
            self.st[r] = FUTURE
            self.arrived[r] = True
        else:
            self.to_backlog(r)

    def open_block(self, block: list[int], now: float) -> None:
        """A planned drive mounts a tape of its plan: the files of it sent so far are asked for,
        in plan order; the others will be as they come."""
        self.block_open[self.block_of[block[0]]] = True
        for r in block:
            if self.arrived[r] and self.st[r] == FUTURE:
                self.to_backlog(r)
        self.admit(now)

    def to_backlog(self, r: int) -> None:
        self.st[r] = BACKLOG
        self.gen[r] += 1
        if self.gen[r] > 1:
            self.repeats = True
        self.backlog.append(self.gen[r] * self.n + r)

    def route(self, r: int, now: float) -> None:
        """An admitted request whose tape a drive holds or plans: to that drive, else to the
        pool (sorted scheduling)."""
        st = self.st
        if self.plan_live[r]:
            st[r] = ASSIGNED
            drv = self.drives[self.p.plan_drive[r]]
            if drv.phase == WAITING and drv.waiting == r:
                drv.waiting = -1
                self.next_read(drv, now)
            return
        t = self.p.tape[r]
        drv = self.drives[self.tape_drive[t]]
        if drv.planned or drv.unloading():
            self.to_pool(r)
            return
        st[r] = ASSIGNED
        if drv.tape != t:  # the drive unloads another tape before it mounts this one
            insort(drv.next_work, r)
        elif drv.phase == IDLE:
            drv.work, drv.wi = [r], 0
            if self.policy == "equal":
                self.own(drv, self.p.requester[r])
            self.next_read(drv, now)
        elif drv.phase in (MOUNTING, DOWN) or r > drv.head:
            insort(drv.work, r, drv.wi)  # ahead of the head: read in this pass
        else:
            drv.later.append(r)  # behind it: after this pass, with one rewind

    def to_pool(self, r: int) -> None:
        p = self.p
        t = p.tape[r]
        self.st[r] = POOL
        self.pending[t].append(r)
        if self.count_bytes:
            self.pool_bytes[t] += p.size[r]
        if self.policy == "by-demand":
            self.line.rank(t, p.tape_media[t], (-self.pool_bytes[t],))
        elif not self.line.queued[t]:
            self.line.rank(t, p.tape_media[t], (self.adm[r],), p.requester[r])

    def rerank(self) -> None:
        """Tapes whose pooled requests failed: in line again by those still pooled, or out."""
        p, st, adm = self.p, self.st, self.adm
        for t in sorted(self.dirty):
            live = [r for r in dict.fromkeys(self.pending[t]) if st[r] == POOL]
            self.pending[t] = live
            self.pool_bytes[t] = sum(p.size[r] for r in live)
            if not live:
                self.line.drop(t)
            elif self.policy == "by-demand":
                self.line.rank(t, p.tape_media[t], (-self.pool_bytes[t],))
            else:
                oldest = min(live, key=adm.__getitem__)
                self.line.rank(t, p.tape_media[t], (adm[oldest],), p.requester[oldest])
        self.dirty.clear()

    def pooled(self, t: int) -> bool:
        """Whether tape t has pooled bytes."""
        return self.pool_bytes[t] > 0 if self.count_bytes else bool(self.pending[t])

    def take(self, t: int) -> list[int]:
        """Every pooled request of tape t, in position order, now assigned."""
        st = self.st
        pending = self.pending[t]
        if not self.repeats:  # all pooled, each once (see repeats)
            pending.sort()
            reqs = pending
        elif len(pending) == 1:  # the common cases: no set, no sort
            reqs = pending if st[pending[0]] == POOL else []
        elif len(pending) == 2:
            a, b = sorted(pending)
            reqs = [a] if st[a] == POOL else []
            if b != a and st[b] == POOL:
                reqs.append(b)
        else:  # a request back in the pool may be listed twice
            reqs = sched.sorted_in(pending, st, POOL)
        for r in reqs:
            st[r] = ASSIGNED
        self.pending[t] = []
        self.pool_bytes[t] = 0
        self.line.drop(t)
        return reqs

    # ---- drives -------------------------------------------------------------------------

    def leave_idle(self, drv: DriveState) -> None:
        if drv.phase == IDLE:
            self.idle.remove(drv.index)

    def go_idle(self, drv: DriveState, now: float) -> None:
        if drv.phase != IDLE:
            drv.phase = IDLE
            drv.idle_since = now
            drv.idle_key = (drv.tape >= 0, now, drv.index)
            self.idle.append(drv.index)

    def own(self, drv: DriveState, requester: int) -> None:
        """The drive serves `requester` (-1: nobody). Counted for equal sharing only, the one
        policy that reads it: the others leave every drive's owner at -1."""
        if drv.owner >= 0:
            self.active[drv.owner] -= 1
        drv.owner = requester
        if requester >= 0:
            self.active[requester] += 1

    def robot(self, t: int, now: float) -> float:
        """The first free robot moves tape t; returns when it is done."""
        free_s, i = self.robots[0]
        done_s = (now if now > free_s else free_s) + self.robot_s[t]
        heapq.heapreplace(self.robots, (done_s, i))
        return done_s

    def mount(self, drv: DriveState, t: int, reqs: list[int], now: float) -> None:
        """The first free robot fetches the tape, the drive loads it."""
        if drv.phase == IDLE:
            self.idle.remove(drv.index)
        drv.tape, drv.head, drv.work, drv.wi, drv.later = t, -1, reqs, 0, []
        loaded_s = self.robot(t, now) + self.load_s[t]
        drv.phase, drv.started_at = MOUNTING, now
        self.mounts += 1
        heapq.heappush(self.heap, (loaded_s, MOUNTED, drv.index, drv.token))
        if drv.planned and drv.plan[drv.plan_i][0] == t:
            self.open_block(reqs, now)

    def unmount(self, drv: DriveState, now: float) -> None:
        if drv.phase == IDLE:
            self.idle.remove(drv.index)
        if drv.owner >= 0:
            self.own(drv, -1)
        drv.phase, drv.started_at = UNMOUNTING, now
        heapq.heappush(self.heap, (now + self.dismount_s[drv.tape], UNLOADED, drv.index, drv.token))

    def unloaded(self, drv: DriveState, now: float) -> None:
        """Unloaded: the drive is free, a robot takes the tape back to its cell."""
        t = drv.tape
        self.records.append((UNMOUNT_KIND, drv.started_at, now, drv.index, t, -1))
        if now > self.last_s:
            self.last_s = now
        self.tape_drive[t] = -1
        drv.tape, drv.head = -1, -1
        self.robot(t, now)
        if drv.next_tape >= 0:  # straight on: not idle in between (nothing would see it)
            t2, reqs = drv.next_tape, drv.next_work
            drv.next_tape, drv.next_work = -1, []
            self.mount(drv, t2, reqs, now)
        else:
            self.go_idle(drv, now)
            self.work_done(drv, now)
        if self.fifo:
            sched.fifo_dispatch(self, now)
        elif self.idle and self.pooled(t):
            sched.wake_idle(self, now)

    def read_done(self, drv: DriveState, now: float) -> None:
        """A read ends (the loop handles the common case itself)."""
        r = drv.current
        drv.current = -1
        st = self.st
        if st[r] != READ:  # its client cancelled it meanwhile: the read is lost
            self.record(EventKind.FAILED_READ, drv.index, drv.tape, r, drv.started_at, now)
        else:
            self.record(EventKind.READ, drv.index, drv.tape, r, drv.started_at, now)
            self.to_read -= 1
            self.window_used -= 1
            self.done_s[r] = now
            if self.net_up:
                st[r] = DONE
            else:
                st[r] = STAGED
                self.staged.append(r)
            if self.backlog:
                self.admit(now)
        self.next_read(drv, now)

    def jitter_factor(self) -> float:
        """A read's time relative to the model's: normal around 1, at least 0.05."""
        if self.ji >= len(self.jit):
            self.jit = self.rng.standard_normal(JITTER_BLOCK).tolist()
            self.ji = 0
        self.ji += 1
        return max(0.05, 1.0 + self.jitter * self.jit[self.ji - 1])

    def next_read(self, drv: DriveState, now: float) -> None:
        """Start the drive's next read, or decide what it does once its list is read."""
        st, w, i = self.st, drv.work, drv.wi
        while i < len(w):
            r = w[i]
            s = st[r]
            if s == ASSIGNED:  # start reading it
                drv.wi = i + 1
                h = drv.head
                dur = self.first_s[r] if h < 0 else self.read_s(h, r)  # as read_s(-1, r) is
                if self.jitter:
                    dur *= self.jitter_factor()
                if drv.phase == IDLE:
                    self.idle.remove(drv.index)
                st[r] = READ
                drv.head = drv.current = r
                drv.phase, drv.started_at = READING, now
                heapq.heappush(self.heap, (now + dur, READ_DONE, drv.index, drv.token))
                return
            if drv.planned and self.plan_live[r]:
                if s == BACKLOG:  # asked for, not visible yet (the window is full): wait
                    drv.wi = i
                    self.leave_idle(drv)
                    drv.phase, drv.waiting = WAITING, r
                    self.unstall(now)
                    return
                if s in (FUTURE, HELD):  # not asked for yet: left to the scheduler
                    self.plan_live[r] = False
            i += 1
        drv.wi = i
        if drv.phase != IDLE:  # as go_idle()
            drv.phase = IDLE
            drv.idle_since = now
            drv.idle_key = (drv.tape >= 0, now, drv.index)
            self.idle.append(drv.index)
        self.work_done(drv, now)

    def work_done(self, drv: DriveState, now: float) -> None:
        """The drive's list is read: the next tape of its plan, or whatever its scheduler
        gives it; once nothing at all is left to read, every idle drive dismounts."""
        if drv.planned and drv.tape >= 0:
            drv.plan_i += 1
            self.plan_reserved[drv.tape] = -1
            if drv.plan_i < len(drv.plan):
                t2, block = drv.plan[drv.plan_i]
                self.tape_drive[t2] = drv.index
                drv.next_tape, drv.next_work = t2, block
                self.unmount(drv, now)
                return
            drv.planned = False
        if self.fifo:
            self.own(drv, -1)
            sched.fifo_dispatch(self, now)
            if drv.phase == IDLE and drv.tape >= 0 and self.to_read:
                # The deferred dismount: the tape leaves unless a request comes for it first.
                drv.idle_timer += 1
                delay = self.config.idle_dismount_s
                if delay <= 0:  # unloaded as soon as its queue is empty
                    self.unmount(drv, now)
                else:
                    heapq.heappush(self.heap, (now + delay, IDLE_END, drv.index, drv.idle_timer))
        else:
            sched.choose_and_go(self, drv, now)
        if drv.phase == IDLE and self.to_read == 0:
            for d in list(self.idle):
                if self.drives[d].tape >= 0:
                    self.unmount(self.drives[d], now)
        elif drv.phase == IDLE:
            self.unstall(now)

    def unstall(self, now: float) -> None:
        """Planned drives wait for files the full window keeps out; if nothing else runs that
        would free a place in it, the window holds only work no free drive may take (retries
        for tapes whose only readers follow a plan): the waiting drives leave the files they
        wait for to the scheduler and go on with their plans."""
        if self.stalled or self.window is None or self.window_used < self.window:
            return
        self.stalled = True
        while self.window_used >= self.window:
            if any(d.phase not in (IDLE, WAITING) for d in self.drives):
                break
            waiting = [d for d in self.drives if d.phase == WAITING]
            if not waiting:
                break
            for drv in waiting:
                self.plan_live[drv.waiting] = False
                drv.waiting = -1
                drv.phase = READING  # next_read() decides and records the drive idle if it is
                self.next_read(drv, now)
        self.stalled = False

    def result(self) -> SimResult:
        return build_result(self)
