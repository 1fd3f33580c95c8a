"""The state of a library simulator run: one explicit object, passed to every function that
reads or changes it (analysis/sim/simulator.py says what is modelled).

A run's state is a SimState made of parts, each with one concern: the requests (per-request
lists indexed by request id; ids run in volume, position, offset order, so sorting ids sorts
requests along their tape), the front end (what clients have sent and the window lets
through), the pool (the scheduler's view: per tape, where it is and what waits for it), the
network (outages and what waits for their end), the drives (one DriveState each), and the
tally (records and counters the results are built from). Functions live with their concern:
pool.py moves requests into and out of the pool, drives.py is what drives and robots do,
schedulers.py decides what a free drive does, admit.py lets requests through the window,
faults.py breaks things, events.py runs the queue, results.py reads the tally.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import attrgetter

import numpy as np

from tapelens.analysis.recall.schedule.policies import Sharing, TapeQueue
from tapelens.analysis.sim.config import Library, SimConfig
from tapelens.analysis.sim.inputs import (
    Geometric,
    Prepared,
    geometric,
    geometric_pass_timer,
    geometric_read_timer,
    pass_timer,
    read_timer,
)
from tapelens.errors import InputError

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
    timed: list[int] | None = None  # the list whose read times are in times (drives.read_times)
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


@dataclass(slots=True)
class Requests:
    """Per request, indexed by request id."""

    # States as bytes: a tenth of the memory of a list, which the scattered lookups of a
    # large run (admissions, queue entries) feel more than the slower indexing.
    st: bytearray
    gen: list[int]  # submissions of each request (backlog entries of older ones are void)
    adm: list[int]  # admission order
    admit_s: list[float]  # first admission (NaN: not yet)
    done_s: list[float]
    failed_at: list[float]
    plan_live: list[bool]  # planned runs: still to be read as its drive's plan says
    arrived: list[bool]  # planned runs: sent, waiting for its tape's turn
    block_of: list[int]  # planned runs: its block (one tape of one drive's plan), or -1


@dataclass(slots=True)
class FrontEnd:
    """What clients have sent, and what the window lets through to the scheduler."""

    window: int | None  # requests the scheduler sees at once (None: all)
    arrival: list[int]  # requests in submission order: by time, then plan or input order
    arrival_s: list[float]  # their times (inf: never), to find who has come by bisection
    ai: int  # arrivals taken so far
    backlog: deque[int]  # sent, outside the window: gen * n + request, oldest first
    window_used: int
    adm_next: int  # the next admission number
    # Whether a request has failed, or been sent or pooled a second time. Until then a
    # backlog or queue entry of a request still waiting where it was put is its only one
    # (its submission and admission numbers need not be compared), and each tape's pending
    # list holds just its pooled requests, each once (take() need not look them up).
    repeats: bool
    held_out: list[int]  # submissions waiting for the network


@dataclass(slots=True)
class Pool:
    """The scheduler's view: per tape, where it is and what waits for it."""

    tape_drive: list[int]  # the drive a tape is in, or reserved for; -1: in its cell
    pending: list[list[int]]  # pooled requests per tape
    pool_bytes: list[int]
    # Pooled bytes are counted only where their amount is read (by-demand). Elsewhere only
    # whether a tape has any is asked (pooled()), and with no empty file in the run that is
    # whether it has pooled requests at all: admissions then skip a size lookup.
    count_bytes: bool
    # Tapes with pooled requests, ranked by the policy as the recall engine ranks them
    # (analysis/recall/schedule/policies.py): by-demand by pooled bytes (ranked again as they grow),
    # time-slider and equal by the admission of the request that put the tape in line, for
    # that request's requester. Tapes whose pooled requests left other than by being taken
    # (failures) are `dirty`: ranked again before the next choice.
    line: TapeQueue
    dirty: set[int]
    # fifo: per media type, the requests waiting for a drive in arrival order, each entry
    # adm * n + r (fifo_entry): per media because a free drive takes the oldest request it
    # can read, and one queue of all would be walked past the others' requests every time.
    fifo_pool: list[deque[int]]
    plan_reserved: list[int]  # the drive whose plan holds a tape, or -1
    block_open: list[bool]  # planned runs: per block, whether its drive has mounted its tape
    active: list[int]  # drives serving each requester (equal sharing)


@dataclass(slots=True)
class Network:
    """Outages, and what waits for their end."""

    up: bool
    until: float
    staged: list[int]  # read while the network was down, not delivered yet
    cycle_list: list[int]  # failed, to be sent again at the next retry cycle
    cycle_at: float


@dataclass(slots=True)
class Tally:
    """What happened: the records and counters the results are built from."""

    # (kind, start_s, end_s, drive, tape, request), -1 where none
    records: list[tuple[int, float, float, int, int, int]]
    mounts: int = 0
    retries: int = 0
    purged: int = 0
    steps: int = 0
    last_s: float = 0.0


@dataclass(frozen=True)
class Arrays:
    """Per-request and per-tape inputs as arrays, made once per run on first use."""

    tape: np.ndarray
    requester: np.ndarray
    tape_media: np.ndarray


def _unbound(*_: object) -> None:
    raise RuntimeError("the simulator's decisions are bound by events.new_run")


@dataclass(slots=True)
class SimState:
    """One run of the library (see the module text for its parts)."""

    # The inputs, fixed for the run.
    p: Prepared
    library: Library
    config: SimConfig
    rng: np.random.Generator
    n: int  # requests
    sched: str
    policy: str
    fifo: bool
    n_media: int
    read_by_all: list[bool]  # per media index: every drive reads it (fifo need not filter)
    robot_s: list[float]  # per tape
    load_s: list[float]
    # The final rewind from where the mount's last read left the head, per request
    # (Prepared.rewind_s); per tape, the media's average, where the head's place is not known
    # (nothing read on the mount, or lost in a drive failure), and the unload.
    rewind_after_s: list[float]
    rewind_unknown_s: list[float]
    unload_s: list[float]
    read_s: Callable[[int, int], float]
    first_s: list[float]
    pass_times: Callable[[list[int], int], list[float]]
    jitter: float
    # Sorted scheduling in RAO order: orders a mount's requests (None: position order).
    rao: Geometric | None
    # The library.
    drives: list[DriveState]
    idle: list[int]
    robots: list[tuple[float, int]]  # (free_s, robot) as a heap: the first free one first
    heap: list[tuple[float, int, int, int]]  # the event queue: (time, kind, argument, token)
    to_read: int  # requests still to be read successfully
    stalled: bool  # unstall() is running
    # The parts.
    req: Requests
    front: FrontEnd
    pool: Pool
    net: Network
    tally: Tally
    jit: list[float] = field(default_factory=list)  # normal draws for read-time jitter
    ji: int = 0
    arrays: Arrays | None = None  # made by admit.arrays when first needed
    # What other modules decide, bound when the run is set up (events.new_run): letting
    # requests through the window, what a free drive does, what a tape back in its cell
    # changes.
    admit: Callable[[float], None] = _unbound
    schedule: Callable[[SimState, DriveState, float], None] = _unbound
    tape_back: Callable[[SimState, int, float], None] = _unbound


def new_state(
    p: Prepared,
    library: Library,
    readable: list[list[bool]],
    config: SimConfig,
    rng: np.random.Generator,
) -> SimState:
    """The state at the start of a run (planned runs: with each drive's plan loaded)."""
    n, n_tapes = len(p.tape), len(p.volumes)
    geo = geometric(p) if config.order == "rao" else None
    drives = [
        DriveState(i, reads, [m for m, ok in enumerate(reads) if ok], idle_key=(False, 0.0, i))
        for i, reads in enumerate(readable)
    ]
    move = library.robot_move_s
    # Submission order: by time, then plan order (planned) or the order of the input rows.
    tie = np.asarray(p.plan_order if p.plan_order else p.frame["_row"].to_numpy())
    submit_s = np.asarray(p.submit_s, dtype=np.float64)
    order = np.lexsort((tie, submit_s))
    s = SimState(
        p=p,
        library=library,
        config=config,
        rng=rng,
        n=n,
        sched=config.scheduler,
        policy=config.policy,
        fifo=config.scheduler == "fifo",
        n_media=len(p.media),
        read_by_all=[all(row[m] for row in readable) for m in range(len(p.media))],
        robot_s=[move if move is not None else p.media[m].robot_s for m in p.tape_media],
        load_s=[p.media[m].load_s for m in p.tape_media],
        rewind_after_s=p.rewind_s,
        rewind_unknown_s=[p.media[m].rewind_s for m in p.tape_media],
        unload_s=[p.media[m].unload_s for m in p.tape_media],
        read_s=read_timer(p) if geo is None else geometric_read_timer(p, geo),
        first_s=p.first_s if geo is None else geo.first_s,
        pass_times=pass_timer(p) if geo is None else geometric_pass_timer(p, geo),
        jitter=config.jitter,
        rao=geo if config.scheduler == "sorted" else None,
        drives=drives,
        idle=list(range(len(drives))),
        robots=[(0.0, i) for i in range(library.robots)],
        heap=[],
        to_read=n,
        stalled=False,
        req=Requests(
            st=bytearray([FUTURE]) * n,
            gen=[0] * n,
            adm=[0] * n,
            admit_s=[math.nan] * n,
            done_s=[math.nan] * n,
            failed_at=[0.0] * n,
            plan_live=[False] * n,
            arrived=[False] * n,
            block_of=[-1] * n,
        ),
        front=FrontEnd(
            window=config.window,
            arrival=order.tolist(),
            arrival_s=np.nan_to_num(submit_s[order], nan=math.inf).tolist(),
            ai=0,
            backlog=deque(),
            window_used=0,
            adm_next=0,
            repeats=False,
            held_out=[],
        ),
        pool=Pool(
            tape_drive=[-1] * n_tapes,
            pending=[[] for _ in range(n_tapes)],
            pool_bytes=[0] * n_tapes,
            count_bytes=config.policy == "by-demand" or 0 in p.size,
            line=TapeQueue(Sharing(config.policy), n_tapes),
            dirty=set(),
            fifo_pool=[deque() for _ in p.media],
            plan_reserved=[-1] * n_tapes,
            block_open=[],
            active=[0] * len(p.requesters),
        ),
        net=Network(up=True, until=0.0, staged=[], cycle_list=[], cycle_at=-1.0),
        tally=Tally(records=[]),
    )
    if s.sched == "planned":
        _load_plan(s)
    return s


def _load_plan(s: SimState) -> None:
    """Per drive, its tapes in plan order, each with its files in plan order."""
    p = s.p
    blocks: dict[tuple[int, int], tuple[int, list[int]]] = {}
    owner_of: dict[int, int] = {}
    for r in sorted(range(s.n), key=p.plan_order.__getitem__):
        d = p.plan_drive[r]
        if d < 0:
            continue
        t = p.tape[r]
        if owner_of.setdefault(t, d) != d:
            raise InputError(f"the plan mounts volume {p.volumes[t]} on two drives")
        if (d, t) not in blocks:
            blocks[(d, t)] = (len(s.pool.block_open), [])
            s.drives[d].plan.append((t, blocks[(d, t)][1]))
            s.pool.block_open.append(False)
        block_id, block = blocks[(d, t)]
        block.append(r)
        s.req.block_of[r] = block_id
        s.req.plan_live[r] = True
    for t, d in owner_of.items():
        s.pool.plan_reserved[t] = d


def push(s: SimState, when: float, kind: int, arg: int, token: int = 0) -> None:
    heapq.heappush(s.heap, (when, kind, arg, token))


def record(
    s: SimState, kind: int, drive: int, tape: int, req: int, start: float, end: float
) -> None:
    s.tally.records.append((kind, start, end, drive, tape, req))
