"""A discrete-event model of a tape library serving recall requests: the public side.

What it models: robots (count, move time), drives by type (an LTO drive reads its own and the
previous generation), mounts and dismounts, per-file reads timed by the throughput model
(analysis/throughput/model.py: the same parameters a plan's prediction uses, so a plan and its
simulation agree), a stream of requests with submission times, a queue window (the scheduler
sees at most W requests, as dCache's limit on stage requests does), schedulers `fifo`, `sorted`
and `planned`, injected faults and retry policies. Times are seconds from the start of the run.
This module holds the options, the typed results and `simulate`; the rest is in sim_inputs.py
(request frame to flat lists, scalar read times), sim_engine.py (event loop, drive actions),
sim_schedulers.py, sim_faults.py, sim_results.py and sim_io.py (files in and out).

Schedulers (docs/domain.md, "What a good recall does"):
- fifo: requests in arrival order; one for a mounted tape joins that drive's queue, any other
  takes the first free compatible drive (an empty one first), whose tape is dismounted then; a
  request that finds no free drive holds up the ones behind it. A drive reads its queue in
  arrival order; a tape stays mounted until its drive is needed elsewhere.
- sorted: a drive reads one tape at a time in position order (aggregate members by offset),
  pulling in every visible request of that tape; requests arriving for the mounted tape are read
  in the same pass when ahead of the head, otherwise in one more pass after it. Which tape a
  free drive takes next is the policy: `time-slider` (the tape of the oldest visible request),
  `by-demand` (most requested bytes) or `equal` (the requester with the fewest drives first, so
  a lone request does not starve behind a big one).
- planned: each drive follows its part of a plan (columns drive and order, as the planner
  writes them), asking for a tape's files when it mounts the tape; files not sent yet when their
  turn comes, and retries, are left to `sorted` scheduling once the plans are done.

Faults and retries: a drive fault stops the drive for a period (the read in progress fails, the
tape stays in it). During a network outage the library keeps reading into its disk cache but
clients cannot reach it and see their requests fail. `immediate`: clients send every failed
request again as soon as they can (after the outage, each after its own turnaround, so the
retries arrive in no useful order): the library cancels the originals, drops their staged
copies (cache purges) and reads them again as new requests. `cycle:H`: failed requests are sent
again together every H hours, after asking the library, which still holds the originals; only
reads the library itself lost are sent again. docs/domain.md: immediate mass retries after an outage
caused cache purges and unsorted re-reads that cut BNL's rate 75-fold.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from enum import IntEnum
from typing import Any

import numpy as np
import polars as pl

from tapelens.analysis.throughput.model import ModelParams
from tapelens.errors import InputError
from tapelens.media import BY_NAME, normalise_drive_type

SCHEDULERS = ("fifo", "sorted", "planned")
POLICIES = ("time-slider", "by-demand", "equal")
RETRY_KINDS = ("immediate", "cycle")
# dCache's default limit on stage requests in flight to the tape system; GridKa raised it to
# 30,000 and gained about 50% in recall rate (docs/domain.md, "Deep queues").
DCACHE_WINDOW = 2_000
DEFAULT_ROBOTS = 2
DEFAULT_CYCLE_S = 4 * 3600.0
# Mean time a client takes to notice a failure and send the request again.
DEFAULT_CLIENT_DELAY_S = 120.0


class EventKind(IntEnum):
    """Kinds of event records (the `kind` column of the events frame)."""

    MOUNT = 0  # start: robot requested; end: tape loaded
    READ = 1  # start: positioning begins; end: file read (delivered unless the network is down)
    UNMOUNT = 2  # start: rewind begins; end: unloaded, drive free
    FAILED_READ = 3  # a read lost: interrupted by a drive fault, or cancelled by its client
    RETRY = 4  # start: the failure; end: the request is sent again
    PURGE = 5  # a staged copy dropped because its client cancelled the request
    DELIVER = 6  # start: read; end: delivered once the network was back
    DRIVE_DOWN = 7
    NETWORK_DOWN = 8


EVENT_NAMES = [k.name.lower() for k in EventKind]


@dataclass(frozen=True)
class Drive:
    name: str
    drive_type: str


@dataclass(frozen=True)
class Library:
    """Drives and robots. A robot move takes `robot_move_s`, or the media type's robot_s."""

    drives: tuple[Drive, ...]
    robots: int = DEFAULT_ROBOTS
    robot_move_s: float | None = None

    @classmethod
    def from_counts(
        cls,
        counts: Mapping[str, int],
        robots: int = DEFAULT_ROBOTS,
        robot_move_s: float | None = None,
    ) -> Library:
        """{'LTO-8': 2} -> drives LTO-8#1, LTO-8#2 (the names plans use)."""
        drives = tuple(
            Drive(f"{normalise_drive_type(t)}#{i}", normalise_drive_type(t))
            for t, n in counts.items()
            for i in range(1, int(n) + 1)
        )
        return cls(drives, robots, robot_move_s)

    @classmethod
    def from_names(
        cls, names: list[str], robots: int = DEFAULT_ROBOTS, robot_move_s: float | None = None
    ) -> Library:
        """Drives named TYPE#N (as plans name them): the type is the part before '#'."""
        return cls(
            tuple(Drive(n, normalise_drive_type(n.split("#")[0])) for n in names),
            robots,
            robot_move_s,
        )


@dataclass(frozen=True)
class Fault:
    """A drive (by name) or the network down from start_s for duration_s."""

    kind: str  # drive | network
    start_s: float
    duration_s: float
    drive: str | None = None


@dataclass(frozen=True)
class RetryPolicy:
    kind: str = "cycle"  # immediate | cycle
    cycle_s: float = DEFAULT_CYCLE_S
    client_delay_s: float = DEFAULT_CLIENT_DELAY_S


@dataclass(frozen=True)
class SimConfig:
    scheduler: str = "sorted"
    policy: str = "time-slider"
    window: int | None = None  # None: the scheduler sees every submitted request
    faults: tuple[Fault, ...] = ()
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    # Relative spread of read times (normal, mean 1); 0 keeps the model's times exactly.
    jitter: float = 0.0

    def __post_init__(self) -> None:
        if self.scheduler not in SCHEDULERS:
            raise InputError(f"scheduler {self.scheduler!r}: expected one of {SCHEDULERS}")
        if self.policy not in POLICIES:
            raise InputError(f"policy {self.policy!r}: expected one of {POLICIES}")
        if self.window is not None and self.window < 1:
            raise InputError(f"queue window must be at least 1, got {self.window}")
        if self.retry.kind not in RETRY_KINDS:
            raise InputError(f"retry {self.retry.kind!r}: expected one of {RETRY_KINDS}")


_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(s|m|h|d)?\s*$", re.IGNORECASE)
_UNIT_S = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(text: str, what: str = "duration") -> float:
    """'90' or '90s', '30m', '2h', '1d' -> seconds."""
    match = _DURATION.match(text)
    if not match:
        raise InputError(f"{what}: expected seconds or a number with s/m/h/d, got {text!r}")
    return float(match[1]) * _UNIT_S[(match[2] or "s").lower()]


def parse_fault(text: str) -> Fault:
    """'drive:ID:START:DURATION' or 'network:START:DURATION' (times as for parse_duration)."""
    parts = text.split(":")
    if parts[0] == "drive" and len(parts) == 4 and parts[1]:
        start, duration = parts[2], parts[3]
        drive: str | None = parts[1]
    elif parts[0] == "network" and len(parts) == 3:
        start, duration, drive = parts[1], parts[2], None
    else:
        raise InputError(
            f"--fault: expected drive:ID:START:DURATION or network:START:DURATION, got {text!r}"
        )
    return Fault(
        parts[0], parse_duration(start, "--fault start"), parse_duration(duration, "--fault"), drive
    )


def parse_retry(text: str, client_delay_s: float = DEFAULT_CLIENT_DELAY_S) -> RetryPolicy:
    """'immediate' or 'cycle:HOURS'."""
    if text == "immediate":
        return RetryPolicy("immediate", DEFAULT_CYCLE_S, client_delay_s)
    kind, _, hours = text.partition(":")
    if kind == "cycle":
        try:
            cycle_h = float(hours) if hours else DEFAULT_CYCLE_S / 3600
        except ValueError:
            cycle_h = -1.0
        if cycle_h > 0:
            return RetryPolicy("cycle", cycle_h * 3600, client_delay_s)
    raise InputError(f"--retry: expected immediate or cycle:HOURS (e.g. cycle:4), got {text!r}")


@dataclass(frozen=True)
class SimSummary:
    """The figures of one run. Times in seconds from the start of the simulation."""

    scheduler: str
    policy: str
    window: int | None
    files: int  # distinct requested files
    bytes: int
    files_delivered: int
    makespan_s: float  # last dismount or delivery
    rate_mb_s: float  # delivered bytes over the makespan
    mounts: int
    reads: int  # file reads, failed and wasted ones included
    retries: int
    failed_reads: int
    purged: int
    drive_busy_share: dict[str, float]
    requester_done_s: dict[str, float]  # when each requester's last file arrived
    events: int  # event records
    steps: int  # events taken off the engine's queue

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("makespan_s", "rate_mb_s"):
            data[key] = round(data[key], 3)
        data["drive_busy_share"] = {k: round(v, 4) for k, v in self.drive_busy_share.items()}
        data["requester_done_s"] = {k: round(v, 3) for k, v in self.requester_done_s.items()}
        return data


@dataclass(frozen=True)
class SimResult:
    summary: SimSummary
    events: pl.DataFrame  # EVENTS_SCHEMA
    requests: pl.DataFrame  # one row per requested file: submit_s, read/done times, attempts


EVENTS_SCHEMA: dict[str, pl.DataType] = {
    "kind": pl.Enum(EVENT_NAMES),
    "start_s": pl.Float64(),
    "end_s": pl.Float64(),
    "drive": pl.String(),
    "volume": pl.String(),
    "path": pl.String(),
    "requester": pl.String(),
    "size_bytes": pl.Int64(),
}


def simulate(
    requests: pl.DataFrame,
    library: Library,
    params_by_media: Mapping[str, ModelParams],
    config: SimConfig,
    rng: np.random.Generator,
) -> SimResult:
    """Run the library on a request stream; randomness (client turnaround, read-time jitter)
    comes only from `rng`, so one seed gives one history."""
    from tapelens.analysis.sim.events import Engine
    from tapelens.analysis.sim.inputs import can_read, prepare

    if not library.drives:
        raise InputError("the library has no drives")
    if library.robots < 1:
        raise InputError(f"the library needs at least one robot, got {library.robots}")
    names = [d.name for d in library.drives]
    if len(set(names)) != len(names):
        raise InputError("drive names must be unique")
    for fault in config.faults:
        if fault.kind == "drive" and fault.drive not in names:
            raise InputError(
                f"--fault names drive {fault.drive!r}; the drives are {', '.join(names[:8])}"
            )
        if fault.kind not in ("drive", "network") or fault.duration_s < 0 or fault.start_s < 0:
            raise InputError(f"fault {fault}: expected a drive or network fault with times >= 0")
    if config.scheduler == "planned" and "drive" not in requests.columns:
        raise InputError("the planned scheduler needs a plan (columns drive and order)")
    if config.scheduler != "planned":  # a plan run by another scheduler: only its files count
        requests = requests.drop("drive", strict=False)
    prepared = prepare(requests, params_by_media, names)
    readable = can_read(library, prepared.media)
    unreadable = [
        prepared.media[m].media_type
        for m in range(len(prepared.media))
        if not any(row[m] for row in readable)
    ]
    if unreadable:
        raise InputError(f"no drive of the library reads {', '.join(sorted(set(unreadable)))}")
    engine = Engine(prepared, library, readable, config, rng)
    engine.run()
    return engine.result()


def scattered_requests(
    rng: np.random.Generator,
    tapes: int,
    files_per_tape: int,
    objects_per_tape: int,
    size_bytes: int = 2_000_000_000,
    media_type: str = "LTO-7",
    requester: str = "default",
) -> pl.DataFrame:
    """A synthetic scattered recall (benchmarks, tests, the demo): on each tape, files at
    distinct random positions among `objects_per_tape` objects of `size_bytes`, all submitted at
    once in random order, so arrival order says nothing about where files sit."""
    positions = np.concatenate(
        [np.sort(rng.choice(objects_per_tape, files_per_tape, replace=False)) for _ in range(tapes)]
    )
    tape = np.repeat(np.arange(tapes), files_per_tape)
    order = rng.permutation(tape.size)
    suffix = BY_NAME[media_type].barcode_suffix or ""
    return pl.DataFrame(
        {
            "path": [
                f"/scattered/t{t:05d}/p{p:06d}"
                for t, p in zip(tape[order], positions[order], strict=True)
            ],
            "volume": [f"S{t:05d}{suffix}" for t in tape[order]],
            "media_type": media_type,
            "position": positions[order].astype(np.int64),
            "size_bytes": np.full(tape.size, size_bytes, dtype=np.int64),
            "avg_object_bytes": float(size_bytes),
            "requester": requester,
            "submit_s": 0.0,
        }
    )
