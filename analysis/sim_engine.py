"""The event loop of the library simulator (analysis/simulator.py says what it models).

State is explicit and flat: per-request lists indexed by request id (ids run in volume, position,
offset order, so sorting ids sorts requests along their tape), one DriveState per drive, per-tape
lists. The queue holds plain tuples (time, kind, argument, token), so events at one time are
taken in a fixed order (by kind, then drive or request); a drive's token
changes when a fault interrupts it, which voids the events it had scheduled. Records are tuples
appended to one list and become a frame at the end. Scheduling decisions are in
analysis/sim_schedulers.py, faults and retries in analysis/sim_faults.py, results in
analysis/sim_results.py.
"""

from __future__ import annotations

import heapq
import math
from bisect import insort
from collections import deque
from collections.abc import Callable

import numpy as np

from tapelens.analysis import sim_faults as faults
from tapelens.analysis import sim_schedulers as sched
from tapelens.analysis.sim_inputs import Prepared, read_timer
from tapelens.analysis.sim_results import build_result
from tapelens.analysis.sim_state import (
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
from tapelens.analysis.simulator import (
    EventKind,
    Library,
    SimConfig,
    SimResult,
)
from tapelens.errors import InputError

JITTER_BLOCK = 65_536  # normal draws taken from the generator at a time


class Engine:
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
        self.drives = [DriveState(i, readable[i]) for i in range(len(library.drives))]
        n_tapes = len(p.volumes)
        self.tape_drive = [-1] * n_tapes  # the drive a tape is in, or reserved for
        self.pending: list[list[int]] = [[] for _ in range(n_tapes)]  # pooled requests per tape
        self.pool_bytes = [0] * n_tapes
        # Pooled requests in admission order (oldest first) per requester (0 unless sharing is
        # equal) and media index: queues[q * media + m] holds adm * n + r; entries of requests
        # that have left the pool since are dropped when met.
        self.n_media = len(p.media)
        self.queues: list[deque[int]] = [
            deque() for _ in range(max(len(p.requesters), 1) * self.n_media)
        ]
        self.plan_reserved = [-1] * n_tapes
        self.robots = [0.0] * library.robots
        move = library.robot_move_s
        self.robot_s = [move if move is not None else p.media[m].robot_s for m in p.tape_media]
        self.load_s = [p.media[m].load_s for m in p.tape_media]
        self.dismount_s = [p.media[m].rewind_s + p.media[m].unload_s for m in p.tape_media]
        self.read_s = read_timer(p)
        self.st = [FUTURE] * n
        self.gen = [0] * n  # submissions of each request (backlog entries of older ones are void)
        self.adm = [0] * n  # admission order
        self.adm_next = 0
        self.plan_live = [False] * n
        self.admit_s = [math.nan] * n
        self.done_s = [math.nan] * n
        self.failed_at = [0.0] * n
        self.backlog: deque[int] = deque()
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
        self.arrival: list[int] = np.lexsort((tie, np.asarray(p.submit_s))).tolist()
        self.ai = 0
        # Planned runs: per request its block (one tape of one drive's plan); a block opens when
        # its drive mounts the tape, and only then are its files asked for.
        self.block_of = [-1] * n
        self.block_open: list[bool] = []
        self.arrived = [False] * n
        self.stalled = False  # unstall() is running
        if self.sched == "planned":
            self._load_plan()
        self.admit = self._admitter()

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
        self.steps = self._loop()

    def _loop(self) -> int:
        """Take events off the queue until none is left; returns how many were taken.

        The common step, a drive finishing a read and starting the next one on its list, runs
        inline with what it touches in local variables, and goes on without the queue while
        that drive's next read ends before any other event; every other transition is a method.
        """
        heap, drives, st, done_s = self.heap, self.drives, self.st, self.done_s
        pop, push = heapq.heappop, heapq.heappush
        record, read_s = self.records.append, self.read_s
        fast = not self.config.jitter
        read_kind = int(EventKind.READ)
        steps = 0
        while heap:
            now, kind, arg, token = pop(heap)
            steps += 1
            if kind == READ_DONE:
                drv = drives[arg]
                if token != drv.token:
                    continue
                while True:  # this drive's reads, as long as no other event comes between
                    r = drv.current
                    if st[r] != READ or not self.net_up:
                        self.read_done(drv, now)
                        break
                    record((read_kind, drv.started_at, now, arg, drv.tape, r))
                    st[r] = DONE
                    done_s[r] = now
                    self.to_read -= 1
                    self.window_used -= 1
                    if self.backlog:
                        self.admit(now)
                    w, i = drv.work, drv.wi
                    if not (fast and i < len(w) and st[w[i]] == ASSIGNED):
                        drv.current = -1
                        self.next_read(drv, now)
                        break
                    nxt = w[i]
                    drv.wi = i + 1
                    st[nxt] = READ
                    drv.head = drv.current = nxt
                    drv.started_at = now
                    end = now + read_s(r, nxt)
                    if heap and heap[0][0] <= end:
                        push(heap, (end, READ_DONE, arg, token))
                        break
                    now = end  # the next event anywhere: take it at once
                    steps += 1
            elif kind == ARRIVE:
                self.arrive(now)
            elif kind == MOUNTED:
                drv = drives[arg]
                if token == drv.token:
                    self.record(EventKind.MOUNT, arg, drv.tape, -1, drv.started_at, now)
                    self.next_read(drv, now)
            elif kind == UNLOADED:
                drv = drives[arg]
                if token == drv.token:
                    self.unloaded(drv, now)
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
            elif kind == NET_UP:
                faults.net_up(self, now)
        return steps

    # ---- requests -----------------------------------------------------------------------

    def arrive(self, now: float) -> None:
        order, submit, st, i = self.arrival, self.p.submit_s, self.st, self.ai
        gen, n, backlog = self.gen, self.n, self.backlog
        planned = self.sched == "planned"
        while i < len(order) and submit[order[i]] <= now:
            r = order[i]
            i += 1
            if planned:
                self.submit(r)
            elif self.net_up:  # as submit() does
                st[r] = BACKLOG
                gen[r] += 1
                backlog.append(gen[r] * n + r)
            else:  # the client cannot reach the library yet
                st[r] = HELD
                self.held_out.append(r)
        self.ai = i
        if i < len(order):
            self.push(submit[order[i]], ARRIVE, 0)
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
        self.backlog.append(self.gen[r] * self.n + r)

    def _admitter(self) -> Callable[[float], None]:
        """admit(now): move requests from the backlog into the scheduler's view while the
        window has room. A closure over the engine's lists: it runs after most reads."""
        backlog, st, gen, n, window = self.backlog, self.st, self.gen, self.n, self.window
        adm, admit_s, plan_live = self.adm, self.admit_s, self.plan_live
        p, tape_drive, pending, pool_bytes = self.p, self.tape_drive, self.pending, self.pool_bytes
        tape, size, media, requester = p.tape, p.size, p.tape_media, p.requester
        fifo_pool, idle, route = self.fifo_pool, self.idle, self.route
        fifo = self.sched == "fifo"
        queues = self.queues if self.policy != "by-demand" else None
        per_requester = self.n_media if self.policy == "equal" else 0

        def admit(now: float) -> None:
            room = len(backlog) if window is None else window - self.window_used
            a = self.adm_next
            while backlog and room > 0:
                e = backlog.popleft()
                r = e % n
                if st[r] != BACKLOG or gen[r] != e // n:
                    continue  # cancelled, or sent again since
                room -= 1
                self.window_used += 1
                adm[r] = a
                a += 1
                if admit_s[r] != admit_s[r]:
                    admit_s[r] = now
                t = tape[r]
                if fifo and not plan_live[r]:
                    st[r] = POOL
                    fifo_pool.append(r)
                elif plan_live[r] or tape_drive[t] >= 0:
                    self.adm_next = a
                    route(r, now)
                else:  # to the pool, as to_pool() does
                    st[r] = POOL
                    pending[t].append(r)
                    pool_bytes[t] += size[r]
                    if queues is not None:
                        queues[requester[r] * per_requester + media[t]].append(adm[r] * n + r)
            self.adm_next = a
            if fifo:
                sched.fifo_dispatch(self, now)
            elif idle:
                sched.wake_idle(self, now)

        return admit

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
        self.pool_bytes[t] += p.size[r]
        if self.policy != "by-demand":
            q = p.requester[r] if self.policy == "equal" else 0
            self.queues[q * self.n_media + p.tape_media[t]].append(self.adm[r] * self.n + r)

    def take(self, t: int) -> list[int]:
        """Every pooled request of tape t, in position order, now assigned."""
        st = self.st
        reqs = sorted({r for r in self.pending[t] if st[r] == POOL})
        for r in reqs:
            st[r] = ASSIGNED
        self.pending[t] = []
        self.pool_bytes[t] = 0
        return reqs

    # ---- drives -------------------------------------------------------------------------

    def leave_idle(self, drv: DriveState) -> None:
        if drv.phase == IDLE:
            self.idle.remove(drv.index)

    def go_idle(self, drv: DriveState, now: float) -> None:
        if drv.phase != IDLE:
            drv.phase = IDLE
            drv.idle_since = now
            self.idle.append(drv.index)

    def own(self, drv: DriveState, requester: int) -> None:
        if drv.owner >= 0:
            self.active[drv.owner] -= 1
        drv.owner = requester
        if requester >= 0:
            self.active[requester] += 1

    def mount(self, drv: DriveState, t: int, reqs: list[int], now: float) -> None:
        """The first free robot fetches the tape, the drive loads it."""
        self.leave_idle(drv)
        drv.tape, drv.head, drv.work, drv.wi, drv.later = t, -1, reqs, 0, []
        robots = self.robots
        i = robots.index(min(robots))
        robots[i] = max(now, robots[i]) + self.robot_s[t]
        drv.phase, drv.started_at = MOUNTING, now
        self.mounts += 1
        self.push(robots[i] + self.load_s[t], MOUNTED, drv.index, drv.token)
        if drv.planned and drv.plan[drv.plan_i][0] == t:
            self.open_block(reqs, now)

    def unmount(self, drv: DriveState, now: float) -> None:
        self.leave_idle(drv)
        self.own(drv, -1)
        drv.phase, drv.started_at = UNMOUNTING, now
        self.push(now + self.dismount_s[drv.tape], UNLOADED, drv.index, drv.token)

    def unloaded(self, drv: DriveState, now: float) -> None:
        """Unloaded: the drive is free, a robot takes the tape back to its cell."""
        t = drv.tape
        self.record(EventKind.UNMOUNT, drv.index, t, -1, drv.started_at, now)
        self.last_s = max(self.last_s, now)
        self.tape_drive[t] = -1
        drv.tape, drv.head = -1, -1
        robots = self.robots
        i = robots.index(min(robots))
        robots[i] = max(now, robots[i]) + self.robot_s[t]
        self.go_idle(drv, now)
        if drv.next_tape >= 0:
            t2, reqs = drv.next_tape, drv.next_work
            drv.next_tape, drv.next_work = -1, []
            self.mount(drv, t2, reqs, now)
        else:
            self.work_done(drv, now)
        if self.sched == "fifo":
            sched.fifo_dispatch(self, now)
        elif self.idle and self.pool_bytes[t]:
            sched.wake_idle(self, now)

    def start_read(self, drv: DriveState, r: int, now: float) -> None:
        dur = self.read_s(drv.head, r)
        if self.config.jitter:
            if self.ji >= len(self.jit):
                self.jit = self.rng.standard_normal(JITTER_BLOCK).tolist()
                self.ji = 0
            dur *= max(0.05, 1.0 + self.config.jitter * self.jit[self.ji])
            self.ji += 1
        self.leave_idle(drv)
        self.st[r] = READ
        drv.head = drv.current = r
        drv.phase, drv.started_at = READING, now
        self.push(now + dur, READ_DONE, drv.index, drv.token)

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

    def next_read(self, drv: DriveState, now: float) -> None:
        """Start the drive's next read, or decide what it does once its list is read."""
        st, w, i = self.st, drv.work, drv.wi
        while i < len(w):
            r = w[i]
            s = st[r]
            if s == ASSIGNED:
                drv.wi = i + 1
                self.start_read(drv, r, now)
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
        self.go_idle(drv, now)
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
        if self.sched == "fifo":
            self.own(drv, -1)
            sched.fifo_dispatch(self, now)
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
