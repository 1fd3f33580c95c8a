"""A simulated tape library serving recall requests: drives, robot arms, mounts and reads.

The library is event driven. Work arrives as units, each ready at a time: one request (fifo) or
one tape's requests in byte order (sorted). A unit for a mounted tape runs on that drive; any
other unit takes the compatible drive that can mount it earliest, preferring an empty one, and
the tape on it is dismounted then. An idle tape is dismounted after `idle_dismount_s`. Robot
moves are booked on the arm that can start them first. Read times come from physics.py.

State is explicit and plain: numbers and lists indexed by drive, tape code and request number.
"""

from __future__ import annotations

import bisect
import heapq
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tapelens.world.physics import (
    Head,
    PhysicsParams,
    lognormal_multiplier,
    read_step,
    read_timeline,
)

FIFO, SORTED = "fifo", "sorted"
_UNIT, _RETRY_BATCH = 0, 1
PRUNE_EVERY = 1024  # events between clean-ups of past robot moves
TIE_S = 1e-3  # an empty drive wins over one that must first dismount, when both are as early


@dataclass(frozen=True)
class Requests:
    """One entry per request (a file of a campaign); per-attempt draws in (n, attempts) arrays."""

    tape: np.ndarray  # tape code
    position: np.ndarray
    object_start_bytes: np.ndarray
    address_bytes: np.ndarray
    size_bytes: np.ndarray
    arrival_s: np.ndarray
    campaign: np.ndarray
    failed: np.ndarray  # bool (n, attempts): does this attempt fail
    rate_z: np.ndarray  # standard normal (n, attempts)
    locate_z: np.ndarray


@dataclass(frozen=True)
class Library:
    """What the library holds: drives (by type), robot arms, the physics of each tape."""

    drive_types: tuple[str, ...]
    readable_by: tuple[tuple[str, ...], ...]  # per media index: drive types that read it
    physics: tuple[PhysicsParams, ...]  # per media index
    tape_media: tuple[int, ...]  # per tape code: media index
    robots: int
    idle_dismount_s: float


@dataclass(frozen=True)
class Campaign:
    start_s: float
    scheduler: str  # fifo | sorted


@dataclass
class Log:
    """What happened, in plain lists (float epoch seconds); operations.py makes frames of it."""

    # (req, attempt, mount, start, duration, locate, failed, ready) per read
    reads: list[tuple[int, int, int, float, float, float, bool, float]] = field(
        default_factory=list
    )
    mounts: dict[str, list[float]] = field(
        default_factory=lambda: {
            k: [] for k in ("tape", "drive", "requested", "mounted", "dismounted", "put_away")
        }
    )


class _Robots:
    """Robot arms as booked intervals: a move goes to the arm that can start it earliest."""

    def __init__(self, count: int) -> None:
        self.starts: list[list[float]] = [[] for _ in range(count)]
        self.ends: list[list[float]] = [[] for _ in range(count)]

    def book(self, earliest: float, duration: float) -> float:
        best_t, best_arm = math.inf, 0
        for arm, (starts, ends) in enumerate(zip(self.starts, self.ends, strict=True)):
            if not ends or earliest >= ends[-1]:
                t = earliest  # after everything booked on this arm: the common case
            else:
                k = bisect.bisect_right(ends, earliest)
                t = earliest
                while k < len(starts) and t + duration > starts[k]:
                    t = max(t, ends[k])
                    k += 1
            if t < best_t:
                best_t, best_arm = t, arm
                if t == earliest:
                    break
        starts, ends = self.starts[best_arm], self.ends[best_arm]
        if not starts or best_t >= starts[-1]:
            starts.append(best_t)
            ends.append(best_t + duration)
        else:
            k = bisect.bisect_left(starts, best_t)
            starts.insert(k, best_t)
            ends.insert(k, best_t + duration)
        return best_t

    def forget_before(self, t: float) -> None:
        """Drop moves that ended before t: no later booking starts that early, and short lists
        keep out-of-order bookings (a busy drive's mount lies ahead of an idle one's) cheap."""
        for starts, ends in zip(self.starts, self.ends, strict=True):
            k = bisect.bisect_right(ends, t)
            del starts[:k], ends[:k]


def simulate(
    library: Library,
    requests: Requests,
    campaigns: list[Campaign],
    retry_interval_s: float,
) -> Log:
    """Serve every campaign's requests; failed reads come back at the next retry cycle."""
    sim = _Simulation(library, requests, campaigns, retry_interval_s)
    sim.run()
    return sim.log


class _Simulation:
    """The event loop. Hot paths work on plain lists: numpy scalar access costs more than the
    arithmetic (a fifo history of a million reads is a million single-read units)."""

    def __init__(
        self, lib: Library, req: Requests, campaigns: list[Campaign], retry_interval_s: float
    ) -> None:
        self.lib, self.req, self.campaigns = lib, req, campaigns
        self.retry_interval_s = retry_interval_s
        self.idle_s = lib.idle_dismount_s
        self.max_attempts = req.failed.shape[1]
        self.compat = [
            [d for d, t in enumerate(lib.drive_types) if t in readers]
            for readers in lib.readable_by
        ]
        self.tape_phys = [lib.physics[m] for m in lib.tape_media]
        sigma_rate = np.array([p.rate_noise for p in self.tape_phys])[req.tape][:, None]
        sigma_loc = np.array([p.locate_noise for p in self.tape_phys])[req.tape][:, None]
        # per attempt, flat: index r * max_attempts + a
        self.rate_m = lognormal_multiplier(sigma_rate, req.rate_z).ravel().tolist()
        self.loc_m = lognormal_multiplier(sigma_loc, req.locate_z).ravel().tolist()
        self.failed = set(np.flatnonzero(req.failed.ravel()).tolist())
        self.dismount_s = [p.dismount_s for p in self.tape_phys]
        self.r_tape = req.tape.tolist()
        self.r_pos = req.position.tolist()
        self.r_obj = req.object_start_bytes.tolist()
        self.r_addr = req.address_bytes.tolist()
        self.r_size = req.size_bytes.tolist()
        self.r_arrival = req.arrival_s.tolist()
        self.r_campaign = req.campaign.tolist()
        n = len(lib.drive_types)
        self.d_tape, self.d_mount = [-1] * n, [-1] * n
        self.d_busy = [-math.inf] * n  # end of the last read (or of the load)
        self.d_free = [-math.inf] * n  # when an empty drive can take a cartridge
        self.d_head_pos, self.d_head_bytes = [0] * n, [0] * n
        self.robots = _Robots(lib.robots)
        self.tape_drive: dict[int, int] = {}
        self.tape_free: dict[int, float] = {}  # back in its cell
        self.pending: dict[tuple[int, float], list[tuple[int, int]]] = {}
        self.heap: list[tuple[float, int, int, Any]] = []
        self.seq = 0
        self.log = Log()

    # -- events ----------------------------------------------------------------------------------
    def _push(self, t: float, kind: int, payload: Any) -> None:
        heapq.heappush(self.heap, (t, self.seq, kind, payload))
        self.seq += 1

    def run(self) -> None:
        """Serve events in time order: the fifo requests' first attempts (a sorted stream, kept
        out of the heap for speed), and in the heap sorted jobs, retries and retry batches."""
        req = self.req
        is_fifo = np.array([c.scheduler == FIFO for c in self.campaigns], dtype=bool)
        fifo = is_fifo[req.campaign] if len(req.campaign) else np.zeros(0, dtype=bool)
        for c in np.flatnonzero(~is_fifo).tolist():
            rows = np.flatnonzero(req.campaign == c)
            self._push_jobs([(r, 0) for r in rows.tolist()], req.arrival_s[rows])
        rows = np.flatnonzero(fifo)
        stream = rows[np.argsort(req.arrival_s[rows], kind="stable")].tolist()
        arrival, heap = self.r_arrival, self.heap
        i, n, events = 0, len(stream), 0
        while i < n or heap:
            events += 1
            if i < n and (not heap or arrival[stream[i]] <= heap[0][0]):
                r, t = stream[i], arrival[stream[i]]
                i += 1
                self._serve_one(self.r_tape[r], r, 0, t)
            else:
                t, _, kind, payload = heapq.heappop(heap)
                if kind == _UNIT:
                    tape, items = payload
                    if len(items) == 1:
                        self._serve_one(tape, items[0][0], items[0][1], t)
                    else:
                        self._serve_job(tape, items, t)
                else:
                    items = self.pending.pop(payload)
                    self._push_jobs(items, np.full(len(items), t))
            if events % PRUNE_EVERY == 0:
                self.robots.forget_before(self._earliest_booking(t))
        for d, tape in enumerate(self.d_tape):
            if tape >= 0:
                self._dismount(d, self.d_busy[d] + self.idle_s)

    def _earliest_booking(self, t: float) -> float:
        """No robot move booked from now on starts before this: mounts start at or after the
        current event, dismounts when a drive's last read ends (or later)."""
        mounted = [self.d_busy[d] for d, tape in enumerate(self.d_tape) if tape >= 0]
        return min([t, *mounted])

    def _push_jobs(self, items: list[tuple[int, int]], ready: np.ndarray) -> None:
        """One unit per tape, its reads in byte order, ready when its last request is in."""
        if not items:
            return
        rs = np.array([r for r, _ in items])
        order = np.lexsort((self.req.address_bytes[rs], self.req.tape[rs]))
        cuts = np.flatnonzero(np.diff(self.req.tape[rs][order])) + 1
        for chunk in np.split(order, cuts):
            job = [items[i] for i in chunk.tolist()]
            self._push(float(ready[chunk].max()), _UNIT, (self.r_tape[job[0][0]], job))

    def _retry(self, r: int, attempt: int, failed_at: float) -> None:
        c = self.r_campaign[r]
        camp, step = self.campaigns[c], self.retry_interval_s
        at = camp.start_s + step * (math.floor((failed_at - camp.start_s) / step) + 1)
        if camp.scheduler == FIFO:
            self._push(at, _UNIT, (self.r_tape[r], [(r, attempt)]))
            return
        key = (c, at)
        if key not in self.pending:
            self.pending[key] = []
            self._push(at, _RETRY_BATCH, key)
        self.pending[key].append((r, attempt))

    # -- reads -----------------------------------------------------------------------------------
    def _record(
        self, r: int, a: int, d: int, start: float, dur: float, pos_s: float, ready: float
    ) -> None:
        failed = r * self.max_attempts + a in self.failed
        self.log.reads.append(
            (
                r,
                a,
                self.d_mount[d],
                start,
                dur,
                pos_s,
                failed,
                self.r_arrival[r] if a == 0 else ready,
            )
        )
        if failed and a + 1 < self.max_attempts:
            self._retry(r, a + 1, start + dur)

    def _serve_one(self, tape: int, r: int, a: int, ready: float) -> None:
        d = self._drive_for(tape, ready)
        pos_s, ovh_s, read_s = read_step(
            self.tape_phys[tape],
            self.d_head_pos[d],
            self.d_head_bytes[d],
            self.r_pos[r],
            self.r_obj[r],
            self.r_addr[r],
            self.r_size[r],
            self.rate_m[r * self.max_attempts + a],
            self.loc_m[r * self.max_attempts + a],
        )
        self.d_head_pos[d] = self.r_pos[r]
        self.d_head_bytes[d] = self.r_addr[r] + self.r_size[r]
        start = ready if ready > self.d_busy[d] else self.d_busy[d]
        dur = pos_s + ovh_s + read_s
        self.d_busy[d] = start + dur
        self._record(r, a, d, start, dur, pos_s, ready)

    def _serve_job(self, tape: int, items: list[tuple[int, int]], ready: float) -> None:
        d = self._drive_for(tape, ready)
        req = self.req
        rs = np.array([r for r, _ in items])
        timeline = read_timeline(
            self.tape_phys[tape],
            req.position[rs],
            req.object_start_bytes[rs],
            req.address_bytes[rs],
            req.size_bytes[rs],
            np.array([self.rate_m[r * self.max_attempts + a] for r, a in items]),
            np.array([self.loc_m[r * self.max_attempts + a] for r, a in items]),
            Head(self.d_head_pos[d], self.d_head_bytes[d]),
        )
        self.d_head_pos[d], self.d_head_bytes[d] = timeline.head.position, timeline.head.bytes
        t = max(ready, self.d_busy[d])
        durations = timeline.duration_s.tolist()
        for (r, a), pos_s, dur in zip(
            items, timeline.positioning_s.tolist(), durations, strict=True
        ):
            self._record(r, a, d, t, dur, pos_s, ready)
            t += dur
        self.d_busy[d] = t

    # -- drives, mounts, robots ------------------------------------------------------------------
    def _drive_for(self, tape: int, t: float) -> int:
        """The drive that reads `tape` from t: its own if mounted, else the compatible drive that
        can mount it first (an empty one on a tie), dismounting what that drive holds."""
        busy, idle_s = self.d_busy, self.idle_s
        d = self.tape_drive.get(tape, -1)
        if d >= 0:
            if t <= busy[d] + idle_s:
                return d
            self._dismount(d, busy[d] + idle_s)
        best_key, best = math.inf, -1
        d_tape, d_free, dismount_s = self.d_tape, self.d_free, self.dismount_s
        for d in self.compat[self.lib.tape_media[tape]]:
            other = d_tape[d]
            if other >= 0:
                rewind = busy[d] if busy[d] > t else t
                if rewind > busy[d] + idle_s:
                    rewind = busy[d] + idle_s
                avail = rewind + dismount_s[other]
                key = (avail if avail > t else t) + TIE_S
            else:
                key = d_free[d] if d_free[d] > t else t
            if key < best_key:
                best_key, best = key, d
        if best < 0:
            raise ValueError(f"no drive reads tape code {tape}")  # requests are filtered first
        if d_tape[best] >= 0:
            b = busy[best]
            self._dismount(best, min(max(b, t), b + idle_s))
        self._mount(tape, best, t)
        return best

    def _mount(self, tape: int, d: int, t: float) -> None:
        p = self.tape_phys[tape]
        requested = max(t, self.d_free[d])
        robot = self.robots.book(max(requested, self.tape_free.get(tape, -math.inf)), p.robot_s)
        mounted = robot + p.robot_s + p.load_s
        mounts = self.log.mounts
        self.d_mount[d] = len(mounts["tape"])
        mounts["tape"].append(tape)
        mounts["drive"].append(d)
        mounts["requested"].append(requested)
        mounts["mounted"].append(mounted)
        mounts["dismounted"].append(math.nan)
        mounts["put_away"].append(math.nan)
        self.d_tape[d], self.d_busy[d] = tape, mounted
        self.d_head_pos[d] = self.d_head_bytes[d] = 0
        self.tape_drive[tape] = d

    def _dismount(self, d: int, rewind_at: float) -> None:
        tape = self.d_tape[d]
        p = self.tape_phys[tape]
        dismounted = rewind_at + p.dismount_s
        put_away = self.robots.book(dismounted, p.robot_s) + p.robot_s
        self.log.mounts["dismounted"][self.d_mount[d]] = dismounted
        self.log.mounts["put_away"][self.d_mount[d]] = put_away
        self.tape_free[tape] = put_away
        self.d_free[d], self.d_tape[d] = dismounted, -1
        del self.tape_drive[tape]
