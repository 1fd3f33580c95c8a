"""Direct submission: what a tape system does with files sent to it in request order, no planner.

HPSS, CTA and IBM Spectrum Protect (TSM) serve a stream of recall requests the same way, and this
module replays that behaviour as a discrete-event model (docs/baselines.md):

- a front end (dCache's restore queue, an FTS or hsi client) lets at most `window` requests be
  outstanding at the tape system; the next request enters only when one completes, in
  submission order, and never before its own `submit_s`;
- the tape system keeps one queue per tape; a drive that frees mounts the tape of the oldest
  waiting request among the tapes its generation reads (an LTO drive reads its own generation
  and the previous one);
- on a mounted tape, queued requests are read in arrival order, not in position order: each read
  is timed from where the head is, so requests that arrived out of position order locate back
  and forth;
- requests that arrive for a mounted tape join its queue while it stays mounted;
- a drive whose tape has no queued request keeps it mounted for `idle_dismount_s` (HPSS's
  deferred dismount, TSM's mount retention) unless a waiting request for another tape needs the
  drive first: then the idle tape is rewound and unloaded at once (HPSS: "until the drive is
  required by another job or until the Dismount Delay time limit is exceeded");
- a request that arrives after its tape left the drive forces a remount.

Every time comes from the throughput model (`predict_reads`): each request is timed once as the
first read of a mount (from the load point) and once as reached from the previous request of its
tape, and the rewind that ends a mount is priced from where its last read leaves the head (the
one price of a move, as a plan's mounts are). Because a tape's queue is served in arrival order
and requests arrive in submission order, the reads of one tape always follow its requests'
submission order; only where a mount starts depends on the run, so every timing can be
computed up front and the event loop stays a heap walk over plain floats (100,000 files take a
second or two).
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from tapelens.analysis.geometry import GEOMETRIES
from tapelens.analysis.geometry.place import start_address
from tapelens.analysis.recall.baselines.newest import BaselineResult
from tapelens.analysis.recall.schedule.dispatch import drive_names, readers_of
from tapelens.analysis.throughput.model import MB, ModelParams, predict_reads
from tapelens.analysis.throughput.moves import move_s, rewind_s
from tapelens.errors import InputError

# HPSS "Defer Dismounts": the PVL keeps an idle cartridge mounted "until the drive is required
# by another job or until an approximate 15 minutes time limit is exceeded" (HPSS Installation
# Guide 4.5, Table 6-31, Physical Volume Repository configuration; later releases make the
# Dismount Delay configurable in minutes). BNL's direct submission went to HPSS.
HPSS_DISMOUNT_DELAY_S = 15 * 60.0
# IBM Spectrum Protect (TSM) DEFINE DEVCLASS MOUNTRETENTION: minutes an idle sequential-access
# volume stays mounted, default 60.
TSM_MOUNT_RETENTION_S = 60 * 60.0
# What a front end lets through at once has no published default: dCache hands restores to the
# tape system through a pool's restore queue whose concurrency each site sets (`rh set max
# active`, later the nearline provider's `c:gets`), and a request list given to hsi, pftp or an
# FTS bring-online job goes in one piece. The baseline therefore lets the whole list through at
# once (window None) unless told otherwise; the BNL bench shows how the figures move with it.

# Event kinds, in the order they are handled when they fall at the same time.
_ARRIVE, _DONE, _IDLE_END = 0, 1, 2
# What a drive is doing, and what a busy drive is busy with.
_EMPTY, _BUSY, _IDLE = 0, 1, 2
_MOUNT, _READ, _UNLOAD = 0, 1, 2
# A tape that is not on any drive, or is being rewound and unloaded.
_SHELF, _UNLOADING = -1, -2

TIMELINE_SCHEMA: dict[str, pl.DataType] = {
    "drive": pl.String(),
    "volume": pl.String(),
    "event": pl.String(),
    "start_s": pl.Float64(),
    "end_s": pl.Float64(),
}
READS_SCHEMA: dict[str, pl.DataType] = {
    "fid": pl.Int64(),
    "volume": pl.String(),
    "drive": pl.String(),
    "mount": pl.Int64(),
    "arrive_s": pl.Float64(),
    "start_s": pl.Float64(),
    "end_s": pl.Float64(),
}


@dataclass(frozen=True)
class DirectSubmission:
    """How the front end and the tape system behave (docs/baselines.md, with sources).

    window: requests outstanding at the tape system at once (at least 1); None lets the whole
        request list through at once.
    idle_dismount_s: how long a drive keeps a tape with no queued request before it rewinds and
        unloads it (HPSS deferred dismount by default; TSM_MOUNT_RETENTION_S for TSM; 0 for a
        system that unloads as soon as a tape's queue is empty).
    preempt_idle: a waiting request for another tape takes a drive that holds an idle tape
        before the retention ends (HPSS and TSM do; False keeps idle tapes for the full time).
    locates: how a move between two reads is priced: "model" (the throughput model, by the
        objects and bytes between them) or "geometry" (the tape's serpentine layout, as plans
        read in RAO order are timed, so that both sides of a comparison use the same physics).
    """

    window: int | None = None
    idle_dismount_s: float = HPSS_DISMOUNT_DELAY_S
    preempt_idle: bool = True
    locates: str = "model"

    @classmethod
    def spectrum_protect(cls, window: int | None = None) -> DirectSubmission:
        """IBM Spectrum Protect's defaults: an idle volume stays mounted 60 minutes."""
        return cls(window=window, idle_dismount_s=TSM_MOUNT_RETENTION_S)

    def window_for(self, files: int) -> int:
        """The window in requests for a list of this many files."""
        if self.window is None:
            return max(1, files)
        if self.window < 1:
            raise InputError(f"the submission window must be at least 1 request, got {self.window}")
        return self.window

    def as_dict(self) -> dict[str, Any]:
        return {
            "window": self.window,
            "idle_dismount_s": self.idle_dismount_s,
            "preempt_idle": self.preempt_idle,
            "locates": self.locates,
        }


@dataclass(frozen=True)
class DirectResult:
    """What direct submission costs: its makespan, mounts, files and bytes, and per drive the
    events (mount, position, read, rewind, dismount). `reads` has one row per file: the drive
    and mount that read it, when it entered the tape system and when it was read."""

    makespan_s: float
    mounts: int
    files: int
    bytes: int
    timeline: pl.DataFrame = field(repr=False)
    reads: pl.DataFrame = field(repr=False)
    window: int = 0

    @property
    def rate_mb_s(self) -> float:
        return self.bytes / MB / self.makespan_s if self.makespan_s > 0 else 0.0

    @property
    def tapes(self) -> int:
        return int(self.reads["volume"].n_unique()) if self.reads.height else 0

    @property
    def remounts(self) -> int:
        """Mounts beyond one per tape: tapes that left a drive before all their requests came."""
        return self.mounts - self.tapes

    def baseline(self) -> BaselineResult:
        """The figures in the form the planner's other baselines take."""
        return BaselineResult(self.makespan_s, self.mounts, self.files, self.bytes)

    def as_dict(self) -> dict[str, Any]:
        return {
            "makespan_s": round(self.makespan_s, 3),
            "mounts": self.mounts,
            "remounts": self.remounts,
            "files": self.files,
            "rate_mb_s": round(self.rate_mb_s, 3),
            "window": self.window,
        }


def serve_direct(
    requests: pl.DataFrame,
    drives: Mapping[str, int],
    params_by_media: Mapping[str, ModelParams],
    readers: Mapping[str, tuple[str, ...]],
    options: DirectSubmission = DirectSubmission(),  # noqa: B008 - frozen, shared safely
) -> DirectResult:
    """Serve `requests` (one row per file in submission order: fid, volume, media_type, position,
    offset_bytes, size_bytes; optional submit_s, start_bytes, avg_object_bytes) on `drives`
    (drive type -> count) as a tape system does under direct submission. `readers`: media type
    -> drive types that read it (drives.readable_by_catalog())."""
    required = ["fid", "volume", "media_type", "position", "size_bytes"]
    missing = [c for c in required if c not in requests.columns]
    if missing:
        raise InputError(f"requests lack column(s) {', '.join(missing)}")
    counts = {d: n for d, n in drives.items() if n > 0}
    if not counts:
        raise InputError("direct submission needs at least one drive")
    n = requests.height
    window = options.window_for(n)
    if n == 0:
        return DirectResult(
            0.0, 0, 0, 0, pl.DataFrame(schema=TIMELINE_SCHEMA), pl.DataFrame(schema=READS_SCHEMA)
        )
    media = requests["media_type"].unique().to_list()
    unknown = sorted(str(m) for m in media if m not in params_by_media)
    if unknown:
        raise InputError(f"no throughput parameters for media type(s) {', '.join(unknown)}")
    reader_types = readers_of(media, counts, readers)
    timing = _request_times(requests, params_by_media)
    if options.locates == "geometry":
        timing = _geometry_positioning(requests, timing, params_by_media)
    run = _Run(requests, timing, counts, reader_types, params_by_media, options, window)
    return run.serve()


def _request_times(requests: pl.DataFrame, params: Mapping[str, ModelParams]) -> pl.DataFrame:
    """Per request, in submission order: its positioning and total time as the first read of a
    mount (from the load point) and as reached from the previous request of its tape."""
    optional = [c for c in ("avg_object_bytes", "start_bytes") if c in requests.columns]
    steps = [(pl.col("position") - pl.col("position").shift(1).over("volume")).alias("gap")]
    if "start_bytes" in requests.columns:
        # Bytes between the end of the tape's previous read and this file (< 0: behind it).
        prev_end = (pl.col("start_bytes") + pl.col("size_bytes")).shift(1).over("volume")
        steps.append((pl.col("start_bytes") - prev_end).alias("gap_bytes"))
    reads = requests.select(
        "volume", "media_type", "size_bytes", "position", *optional
    ).with_columns(steps)
    going_on = predict_reads(reads, params)
    fresh = predict_reads(reads.with_columns(pl.lit(None, pl.Int64).alias("gap")), params)
    return pl.DataFrame(
        {
            "cont_pos_s": going_on["predicted_positioning_s"],
            "cont_s": going_on["predicted_duration_s"],
            "fresh_pos_s": fresh["predicted_positioning_s"],
            "fresh_s": fresh["predicted_duration_s"],
            "rewind_s": _rewinds_after(requests, params),
        }
    )


def _rewinds_after(requests: pl.DataFrame, params: Mapping[str, ModelParams]) -> np.ndarray:
    """Per request, the final rewind of a mount whose last read it is: the one price of a move
    (moves.rewind_s) from where reading it leaves the head, placed as throughput.file_times
    places a plan's reads (its object's address from start_bytes, else its position and the
    tape's average object, then its offset inside an aggregate and its size)."""
    avg = pl.col("size_bytes").cast(pl.Float64).mean().over("volume")
    if "avg_object_bytes" in requests.columns:
        avg = pl.coalesce(pl.col("avg_object_bytes"), avg)
    into = (
        pl.col("offset_bytes").fill_null(0).cast(pl.Float64)
        if "offset_bytes" in requests.columns
        else pl.lit(0.0)
    )
    head = requests.select(
        "media_type",
        (start_address(requests.columns, avg) + into + pl.col("size_bytes")).alias("head"),
    )
    ends = head["head"].cast(pl.Float64).fill_null(float("nan")).to_numpy()
    media = head["media_type"]
    out = np.zeros(requests.height)
    for name in media.unique().to_list():
        rows = np.flatnonzero((media == name).to_numpy())
        out[rows] = rewind_s(params[str(name)], ends[rows])
    return out


def _geometry_positioning(
    requests: pl.DataFrame, timing: pl.DataFrame, params: Mapping[str, ModelParams]
) -> pl.DataFrame:
    """The same timing with each positioning priced by the one price of a move (moves.move_s)
    from where the tape's previous request in submission order left the head, and from the
    load point. Media types without a geometry keep the model's."""
    avg = pl.col("size_bytes").cast(pl.Float64).mean().over("volume")
    if "avg_object_bytes" in requests.columns:
        avg = pl.coalesce(pl.col("avg_object_bytes"), avg)
    address = start_address(requests.columns, avg)
    where = requests.select(
        "media_type",
        address.alias("start"),
        (address + pl.col("size_bytes")).shift(1).over("volume").alias("prev_end"),
        (pl.col("position") - pl.col("position").shift(1).over("volume")).alias("gap"),
    )
    cont = timing["cont_pos_s"].to_numpy().copy()
    fresh = timing["fresh_pos_s"].to_numpy().copy()
    media = where["media_type"].to_numpy()
    start = where["start"].to_numpy()
    prev_end = where["prev_end"].fill_null(float("nan")).to_numpy()
    for name in set(media.tolist()):
        shape = GEOMETRIES.get(str(name))
        if shape is None:
            continue
        rows = media == name
        gap = where["gap"].cast(pl.Float64).fill_null(float("nan")).to_numpy()[rows]
        cont[rows] = move_s(params[str(name)], prev_end[rows], start[rows], gap)
        fresh[rows] = move_s(params[str(name)], np.full(int(rows.sum()), np.nan), start[rows])
    return timing.with_columns(
        (pl.col("cont_s") - pl.col("cont_pos_s") + cont).alias("cont_s"),
        (pl.col("fresh_s") - pl.col("fresh_pos_s") + fresh).alias("fresh_s"),
        pl.Series("cont_pos_s", cont),
        pl.Series("fresh_pos_s", fresh),
    )


class _Run:
    """One replay: tapes, drives, the front end's window and the event heap."""

    def __init__(
        self,
        requests: pl.DataFrame,
        timing: pl.DataFrame,
        drives: Mapping[str, int],
        reader_types: Mapping[str, list[str]],
        params: Mapping[str, ModelParams],
        options: DirectSubmission,
        window: int,
    ) -> None:
        self.n = requests.height
        self.window = window
        self.options = options
        self.fids = requests["fid"]  # kept as given: integer codes or file ids
        self.sizes = requests["size_bytes"].to_list()
        volumes = requests["volume"].cast(pl.String)
        self.tape_names: list[str] = volumes.unique(maintain_order=True).to_list()
        tape_no = {v: i for i, v in enumerate(self.tape_names)}
        self.tape_of = [tape_no[v] for v in volumes.to_list()]
        media_of_tape: dict[int, str] = {}
        for t, m in zip(self.tape_of, requests["media_type"].to_list(), strict=True):
            media_of_tape.setdefault(t, m)
        self.media = [media_of_tape[t] for t in range(len(self.tape_names))]
        if "submit_s" in requests.columns:
            # The front end passes requests on in order: none enters before an earlier one.
            submit = requests["submit_s"].fill_null(0.0).cast(pl.Float64).cum_max()
            self.submit = submit.to_list()
        else:
            self.submit = [0.0] * self.n
        self.fresh_pos = timing["fresh_pos_s"].to_list()
        self.fresh = timing["fresh_s"].to_list()
        self.cont_pos = timing["cont_pos_s"].to_list()
        self.cont = timing["cont_s"].to_list()
        self.rewind_after = timing["rewind_s"].to_list()
        self.mount_s = {m: p.mount_s for m, p in params.items()}
        self.rewind_s = {m: p.rewind_s for m, p in params.items()}
        self.unload_s = {m: p.unload_s for m, p in params.items()}

        names = drive_names(drives)
        self.drive_name = [name for name, _ in names]
        self.drive_kind = [kind for _, kind in names]
        order = {kind: i for i, kind in enumerate(dict.fromkeys(self.drive_kind))}
        # Media -> drive numbers that read it, oldest generation first (drive_names' order), so
        # that newer drives stay free for the media only they read.
        self.readers = {
            m: sorted(
                (k for k, kind in enumerate(self.drive_kind) if kind in kinds),
                key=lambda k: (order[self.drive_kind[k]], k),
            )
            for m, kinds in reader_types.items()
        }
        n_drives = len(names)
        self.state = [_EMPTY] * n_drives
        self.holds = [-1] * n_drives  # tape on the drive (or being mounted / unloaded)
        self.idle_since = [0.0] * n_drives
        self.version = [0] * n_drives  # invalidates an idle timer once the drive moves on
        self.first_read = [False] * n_drives
        self.last_read = [-1] * n_drives  # the request read last on the drive's mount
        self.mount_no = [0] * n_drives
        self.next_tape = [-1] * n_drives  # the tape to mount once an unload ends
        self.action = [_MOUNT] * n_drives  # what a busy drive is doing
        self.where = [_SHELF] * len(self.tape_names)
        self.queue: list[deque[int]] = [deque() for _ in self.tape_names]
        self.waiting: dict[str, list[tuple[int, int]]] = {m: [] for m in self.readers}
        self.events: list[tuple[float, int, int, int, int]] = []
        self.seq = 0
        self.next_request = 0
        self.outstanding = 0
        self.completed = 0
        self.mounts = 0
        self.arrive = [0.0] * self.n
        self.read_drive = [0] * self.n
        self.read_mount = [0] * self.n
        self.read_start = [0.0] * self.n
        self.read_end = [0.0] * self.n
        self.timeline: list[tuple[int, int, str, float, float]] = []

    # -- the event heap -------------------------------------------------------------------
    def push(self, at: float, kind: int, who: int, version: int = 0) -> None:
        self.seq += 1
        heapq.heappush(self.events, (at, kind, self.seq, who, version))

    def serve(self) -> DirectResult:
        self.admit(0.0)
        while self.events:
            now, kind, _, who, version = heapq.heappop(self.events)
            if kind == _ARRIVE:
                self.arrival(who, now)
            elif kind == _DONE:
                self.drive_done(who, now)
            elif version == self.version[who] and self.state[who] == _IDLE:
                self.unload(who, now)  # the retention ran out
        return self.result()

    # -- the front end --------------------------------------------------------------------
    def admit(self, now: float) -> None:
        """Let requests through while the window has room, in submission order."""
        while self.next_request < self.n and self.outstanding < self.window:
            r = self.next_request
            self.next_request += 1
            self.outstanding += 1
            if self.submit[r] <= now:
                self.arrival(r, now)
            else:
                self.push(self.submit[r], _ARRIVE, r)

    def arrival(self, r: int, now: float) -> None:
        """Request r reaches the tape system: it joins its tape's queue."""
        self.arrive[r] = now
        tape = self.tape_of[r]
        self.queue[tape].append(r)
        k = self.where[tape]
        if k >= 0:
            if self.state[k] == _IDLE:  # the tape is still mounted: read on at once
                self.version[k] += 1
                self.read_next(k, now)
        elif k == _SHELF and len(self.queue[tape]) == 1:
            heapq.heappush(self.waiting[self.media[tape]], (r, tape))
            self.dispatch(now)
        # _UNLOADING: the tape goes back to waiting once it is out of the drive.

    # -- drives ---------------------------------------------------------------------------
    def dispatch(self, now: float) -> None:
        """Give free drives the tapes of the oldest waiting requests they can read: first
        drives that hold nothing, then (if allowed) drives that hold an idle tape."""
        while True:
            heads = sorted((q[0], m) for m, q in self.waiting.items() if q)
            placed = False
            for _, m in heads:
                k = self.free_drive(m)
                if k is None:
                    continue
                _, tape = heapq.heappop(self.waiting[m])
                self.take(k, tape, now)
                placed = True
                break
            if not placed:
                return

    def free_drive(self, media: str) -> int | None:
        idle_best: int | None = None
        for k in self.readers[media]:
            if self.state[k] == _EMPTY:
                return k
            idle = self.state[k] == _IDLE and self.options.preempt_idle
            if idle and (idle_best is None or self.idle_since[k] < self.idle_since[idle_best]):
                idle_best = k
        return idle_best

    def take(self, k: int, tape: int, now: float) -> None:
        """Drive k takes `tape`: mount it, after unloading the idle tape it holds, if any."""
        self.where[tape] = k
        if self.state[k] == _IDLE:
            self.next_tape[k] = tape
            self.unload(k, now)
        else:
            self.mount(k, tape, now)

    def mount(self, k: int, tape: int, now: float) -> None:
        self.state[k] = _BUSY
        self.action[k] = _MOUNT
        self.holds[k] = tape
        self.mounts += 1
        self.mount_no[k] = self.mounts
        self.first_read[k] = True
        self.last_read[k] = -1
        end = now + self.mount_s[self.media[tape]]
        self.timeline.append((k, tape, "mount", now, end))
        self.push(end, _DONE, k)

    def unload(self, k: int, now: float) -> None:
        """Rewind and unload the tape on drive k (its queue is empty)."""
        tape = self.holds[k]
        self.version[k] += 1
        self.state[k] = _BUSY
        self.action[k] = _UNLOAD
        self.where[tape] = _UNLOADING
        m = self.media[tape]
        # From where the mount's last read left the head; a mount that read nothing (none
        # does: a tape is mounted for a queued request) would keep the media's average.
        last = self.last_read[k]
        rewound = now + (self.rewind_after[last] if last >= 0 else self.rewind_s[m])
        end = rewound + self.unload_s[m]
        self.timeline.append((k, tape, "rewind", now, rewound))
        self.timeline.append((k, tape, "dismount", rewound, end))
        self.push(end, _DONE, k)

    def drive_done(self, k: int, now: float) -> None:
        """A mount, a read or an unload on drive k has ended."""
        action = self.action[k]
        if action == _UNLOAD:
            self.unloaded(k, now)
            return
        if action == _READ:
            self.completed += 1
            self.outstanding -= 1
            self.admit(now)  # its place in the window goes to the next request
            if self.completed == self.n:
                self.finish(k, now)
                return
        self.read_next(k, now)

    def unloaded(self, k: int, now: float) -> None:
        """Drive k is empty again: the tape that left waits again if requests came for it
        while it was unloading; the drive mounts the tape it was taken for, if any."""
        tape = self.holds[k]
        self.holds[k] = -1
        self.where[tape] = _SHELF
        if self.queue[tape]:
            heapq.heappush(self.waiting[self.media[tape]], (self.queue[tape][0], tape))
        wanted = self.next_tape[k]
        self.next_tape[k] = -1
        if wanted >= 0:
            self.mount(k, wanted, now)
        else:
            self.state[k] = _EMPTY
        self.dispatch(now)

    def read_next(self, k: int, now: float) -> None:
        """Drive k is ready: read the oldest queued request of its tape, or go idle."""
        tape = self.holds[k]
        queue = self.queue[tape]
        if not queue:
            self.go_idle(k, now)
            return
        r = queue.popleft()
        if self.first_read[k]:
            positioning, duration = self.fresh_pos[r], self.fresh[r]
            self.first_read[k] = False
        else:
            positioning, duration = self.cont_pos[r], self.cont[r]
        self.state[k] = _BUSY
        self.action[k] = _READ
        located = now + positioning
        end = now + duration
        if positioning > 0:
            self.timeline.append((k, tape, "position", now, located))
        self.timeline.append((k, tape, "read", located, end))
        self.last_read[k] = r
        self.read_drive[r] = k
        self.read_mount[r] = self.mount_no[k]
        self.read_start[r] = now
        self.read_end[r] = end
        self.push(end, _DONE, k)

    def go_idle(self, k: int, now: float) -> None:
        self.state[k] = _IDLE
        self.idle_since[k] = now
        self.version[k] += 1
        self.dispatch(now)  # a waiting tape may take this drive at once
        if self.state[k] != _IDLE:
            return
        if self.options.idle_dismount_s <= 0:
            self.unload(k, now)
        else:
            self.push(now + self.options.idle_dismount_s, _IDLE_END, k, self.version[k])

    def finish(self, k: int, now: float) -> None:
        """The last request is read: every tape still held is rewound and unloaded from the
        moment its drive fell idle, as a plan's mounts are, so that makespans compare (a tape
        kept for the retention time would only delay the end of the recall on paper)."""
        self.unload(k, now)
        for d, state in enumerate(self.state):
            if state == _IDLE:
                self.unload(d, self.idle_since[d])

    # -- the outcome ----------------------------------------------------------------------
    def result(self) -> DirectResult:
        timeline = pl.DataFrame(
            [
                (self.drive_name[k], self.tape_names[t], event, start, end)
                for k, t, event, start, end in self.timeline
            ],
            schema=TIMELINE_SCHEMA,
            orient="row",
        ).sort("drive", "start_s", maintain_order=True)
        reads = pl.DataFrame(
            {
                "fid": self.fids,
                "volume": [self.tape_names[t] for t in self.tape_of],
                "drive": [self.drive_name[k] for k in self.read_drive],
                "mount": self.read_mount,
                "arrive_s": self.arrive,
                "start_s": self.read_start,
                "end_s": self.read_end,
            },
        )
        makespan = max(end for *_, end in self.timeline) if self.timeline else 0.0
        # A copy on several cartridges is one request per cartridge, but one file.
        files = int(self.fids.n_unique())
        return DirectResult(
            makespan, self.mounts, files, int(sum(self.sizes)), timeline, reads, self.window
        )
