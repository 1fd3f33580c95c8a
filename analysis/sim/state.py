"""The state codes and per-drive state of the library simulator (analysis/sim/events.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import attrgetter

# Queue event kinds.
ARRIVE, MOUNTED, READ_DONE, UNLOADED, DOWN_AT, UP_AT, NET_DOWN, NET_UP, RESUBMIT, CYCLE = range(10)
IDLE_END = 10  # fifo: a mounted tape has had no request for the dismount delay
# Drive phases.
IDLE, MOUNTING, READING, UNMOUNTING, DOWN, WAITING = range(6)
# Request states: not yet submitted, held by its client, submitted but outside the window, in the
# scheduler's pool, on a drive's list, being read, read but not delivered (network down), done.
FUTURE, HELD, BACKLOG, POOL, ASSIGNED, READ, STAGED, DONE = range(8)


@dataclass(slots=True)
class DriveState:
    """One drive: what it holds, what it does, what it has left to read."""

    index: int
    reads: list[bool]  # per media index
    media: list[int]  # the media indices it reads
    phase: int = IDLE
    tape: int = -1  # in the drive (loading, mounted, unloading, or stuck in a failed drive)
    head: int = -1  # last request read on this mount; -1: at the load point
    current: int = -1  # request being read
    work: list[int] = field(default_factory=list)  # this pass, in read order
    wi: int = 0  # next index into work
    later: list[int] = field(default_factory=list)  # sorted: requests behind the head
    timed: list[int] | None = None  # the list whose read times are in times (Engine.read_times)
    times: list[float] = field(default_factory=list)
    next_tape: int = -1  # to mount once the tape in it is unloaded
    next_work: list[int] = field(default_factory=list)
    owner: int = -1  # requester whose request chose the tape (fair sharing)
    token: int = 0
    started_at: float = 0.0  # start of the activity in progress
    idle_since: float = 0.0
    # Which idle drive acts first: an empty one, then the longest idle, then the lowest index.
    # Set when the drive goes idle; its tape does not change while it is.
    idle_key: tuple[bool, float, int] = (False, 0.0, 0)
    down_phase: int = IDLE
    down_until: float = 0.0
    plan: list[tuple[int, list[int]]] = field(default_factory=list)
    plan_i: int = 0
    planned: bool = False  # still following its plan
    waiting: int = -1  # planned: the request it waits for
    idle_timer: int = 0  # fifo: numbers the idle periods; an IDLE_END of an older one is void

    def unloading(self) -> bool:
        """Its tape is on its way out (a fault in the middle of it does not change that)."""
        return self.phase == UNMOUNTING or (self.phase == DOWN and self.down_phase == UNMOUNTING)


IDLE_ORDER = attrgetter("idle_key")
