"""The simulator's options and typed results: the library, faults, retries, the summary.

analysis/sim/simulator.py says what the simulator models; this module holds what its parts
share, so that none of them imports the public side.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from enum import IntEnum
from typing import Any

import polars as pl

from tapelens.errors import InputError
from tapelens.media import normalise_drive_type

# HPSS "Defer Dismounts": the PVL keeps an idle cartridge mounted "until the drive is required
# by another job or until an approximate 15 minutes time limit is exceeded" (HPSS Installation
# Guide 4.5, Table 6-31, Physical Volume Repository configuration; later releases make the
# Dismount Delay configurable in minutes). BNL's direct submission went to HPSS.
HPSS_DISMOUNT_DELAY_S = 15 * 60.0
# IBM Spectrum Protect (TSM) DEFINE DEVCLASS MOUNTRETENTION: minutes an idle sequential-access
# volume stays mounted, default 60.
TSM_MOUNT_RETENTION_S = 60 * 60.0

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
    # fifo: how long a drive keeps a tape no request waits for before it rewinds and unloads it
    # (HPSS's deferred dismount by default; docs/baselines.md gives the sources). The sorted
    # and planned schedulers keep an idle tape until its drive is needed: they choose the next
    # tape themselves.
    idle_dismount_s: float = HPSS_DISMOUNT_DELAY_S
    # fifo: a request waiting for a drive takes one that holds an idle tape before the dismount
    # delay ends (HPSS and Spectrum Protect do); False keeps idle tapes for the whole delay.
    preempt_idle: bool = True
    # The reads on a mounted tape: position (a forward pass, moves timed by the throughput
    # model) or rao (the sorted scheduler reads each mount's requests in recommended access
    # order; every scheduler's moves are timed by the tape's geometry, as plan recall --order
    # rao times them).
    order: str = "position"

    def __post_init__(self) -> None:
        if self.scheduler not in SCHEDULERS:
            raise InputError(f"scheduler {self.scheduler!r}: expected one of {SCHEDULERS}")
        if self.policy not in POLICIES:
            raise InputError(f"policy {self.policy!r}: expected one of {POLICIES}")
        if self.window is not None and self.window < 1:
            raise InputError(f"queue window must be at least 1, got {self.window}")
        if not self.idle_dismount_s >= 0:
            raise InputError(f"idle dismount delay must be >= 0 s, got {self.idle_dismount_s}")
        if self.order not in ("position", "rao"):
            raise InputError(f"read order {self.order!r}: expected position or rao")
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
