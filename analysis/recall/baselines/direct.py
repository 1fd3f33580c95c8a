"""Direct submission: what a tape system does with files sent to it in request order, no planner.

HPSS, CTA and IBM Spectrum Protect (TSM) serve a stream of recall requests the same way
(docs/baselines.md):

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

That service discipline is the library simulator's `fifo` scheduler (analysis/sim/schedulers.py);
this module runs it, with robots enough that none waits for another and no faults, and reads the
baseline's figures, timeline and reads off the run. Every read and every rewind is priced by the
one price of a move, as a plan's are.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from tapelens.analysis.recall.baselines.newest import BaselineResult
from tapelens.analysis.recall.schedule.dispatch import drive_names, readers_of
from tapelens.analysis.sim.config import (
    HPSS_DISMOUNT_DELAY_S,
    TSM_MOUNT_RETENTION_S,
    EventKind,
    Library,
    SimConfig,
)
from tapelens.analysis.sim.events import bind, run
from tapelens.analysis.sim.inputs import Prepared, prepare
from tapelens.analysis.sim.state import SimState, new_state
from tapelens.analysis.throughput.model import MB, ModelParams
from tapelens.errors import InputError

# What a front end lets through at once has no published default: dCache hands restores to the
# tape system through a pool's restore queue whose concurrency each site sets (`rh set max
# active`, later the nearline provider's `c:gets`), and a request list given to hsi, pftp or an
# FTS bring-online job goes in one piece. The baseline therefore lets the whole list through at
# once (window None) unless told otherwise; the BNL bench shows how the figures move with it.

__all__ = [
    "HPSS_DISMOUNT_DELAY_S",
    "READS_SCHEMA",
    "TIMELINE_SCHEMA",
    "TSM_MOUNT_RETENTION_S",
    "DirectResult",
    "DirectSubmission",
    "serve_direct",
]

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
# Timeline events of one drive at one instant, in the order they happen.
_EVENTS = ("mount", "position", "read", "rewind", "dismount")
# Columns of a request the simulator reads; the rest stays behind.
_SIM_COLUMNS = ("offset_bytes", "start_bytes", "avg_object_bytes")


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
    locates: kept for callers that name how moves are priced ("model" or "geometry"); every
        move has one price (analysis/throughput/moves.py) whichever is named.
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
    # Older generations first (drive_names): among empty drives the fifo scheduler takes the
    # first, so newer drives stay free for the media only they read.
    names = drive_names(counts)
    submit = pl.lit(0.0)
    if "submit_s" in requests.columns:
        # The front end passes requests on in order: none enters before an earlier one.
        submit = pl.col("submit_s").fill_null(0.0).cast(pl.Float64).cum_max()
    frame = requests.select(
        pl.col("volume").cast(pl.String),
        "media_type",
        "position",
        "size_bytes",
        *[c for c in _SIM_COLUMNS if c in requests.columns],
        submit.alias("submit_s"),
    )
    prepared = prepare(frame, params_by_media, [name for name, _ in names])
    readable = [[kind in reader_types[p.media_type] for p in prepared.media] for _, kind in names]
    # Two robots a drive: a tape's return and the next tape's fetch never wait for a robot,
    # as a tape system's own queues do not.
    library = Library.from_names([name for name, _ in names], robots=2 * len(names))
    config = SimConfig(
        scheduler="fifo",
        window=options.window,
        idle_dismount_s=options.idle_dismount_s,
        preempt_idle=options.preempt_idle,
    )
    s = bind(new_state(prepared, library, readable, config, np.random.default_rng(0)))
    run(s)
    return _result(s, prepared, requests["fid"], window)


def _result(s: SimState, p: Prepared, fids: pl.Series, window: int) -> DirectResult:
    """The run's records as the baseline's timeline and reads, in submission (input) order."""
    names = [d.name for d in s.library.drives]
    records = pl.DataFrame(
        s.tally.records,
        schema={
            "kind": pl.Int64,
            "start_s": pl.Float64,
            "end_s": pl.Float64,
            "drive": pl.Int64,
            "tape": pl.Int64,
            "req": pl.Int64,
        },
        orient="row",
    )
    mounts = (
        records.filter(pl.col("kind") == int(EventKind.MOUNT))
        .sort("start_s", "drive")
        .with_columns(pl.int_range(1, pl.len() + 1, dtype=pl.Int64).alias("mount"))
    )
    reads = (
        records.filter(pl.col("kind") == int(EventKind.READ))
        .sort("start_s", "drive")
        .join_asof(
            mounts.select("drive", pl.col("start_s").alias("mounted_s"), "mount"),
            left_on="start_s",
            right_on="mounted_s",
            by="drive",
            strategy="backward",
            check_sortedness=False,  # sorted by start_s, hence within each drive
        )
        .sort("mount", "start_s")
    )
    req = reads["req"].to_numpy()
    prev = reads.select(pl.col("req").shift(1).over("mount").fill_null(-1))["req"].to_numpy()
    position = np.asarray(p.position)
    offset = np.asarray(p.offset)
    # The read's own work: streaming on inside the aggregate the previous read was in (as the
    # simulator's read timer reads on), else its overhead and streaming; the rest positioning.
    on = np.maximum(prev, 0)
    member = (prev >= 0) & (position[req] == position[on])
    member &= ~((offset[req] >= 0) & (offset[req] < offset[on]))
    work = np.where(member, np.asarray(p.stream_s)[req], np.asarray(p.body_s)[req])
    located = np.maximum(reads["end_s"].to_numpy() - work, reads["start_s"].to_numpy())
    reads = reads.with_columns(pl.Series("located_s", located))
    unload = np.asarray(s.unload_s)
    unmounts = records.filter(pl.col("kind") == int(EventKind.UNMOUNT))
    rewound = unmounts["end_s"].to_numpy() - unload[unmounts["tape"].to_numpy()]
    unmounts = unmounts.with_columns(pl.Series("rewound_s", rewound))
    volume = pl.Series(p.volumes)
    drive = pl.Series(names)
    parts = [
        mounts.select("drive", "tape", pl.lit("mount").alias("event"), "start_s", "end_s"),
        reads.filter(pl.col("located_s") > pl.col("start_s")).select(
            "drive", "tape", pl.lit("position").alias("event"), "start_s", "located_s"
        ),
        reads.select("drive", "tape", pl.lit("read").alias("event"), "located_s", "end_s"),
        unmounts.select("drive", "tape", pl.lit("rewind").alias("event"), "start_s", "rewound_s"),
        unmounts.select("drive", "tape", pl.lit("dismount").alias("event"), "rewound_s", "end_s"),
    ]
    events = pl.concat(
        [part.rename(dict(zip(part.columns, _COLUMNS, strict=True))) for part in parts]
    ).sort(
        "drive", "start_s", pl.col("event").replace_strict({e: i for i, e in enumerate(_EVENTS)})
    )
    timeline = pl.DataFrame(
        {
            "drive": drive.gather(events["drive"]),
            "volume": volume.gather(events["tape"]),
            "event": events["event"],
            "start_s": events["start_s"],
            "end_s": events["end_s"],
        },
        schema=TIMELINE_SCHEMA,
    )
    # Per request, in the order given: prepared ids run along the tapes, `_row` is the input's.
    row = p.frame["_row"].to_numpy()[req]
    n = len(p.tape)
    by_row = np.empty(n, dtype=np.int64)
    by_row[row] = np.arange(len(row))
    admitted = np.asarray(s.req.admit_s)
    ordered = reads[by_row]
    per_request = pl.DataFrame(
        {
            "fid": fids,
            "volume": volume.gather(ordered["tape"]),
            "drive": drive.gather(ordered["drive"]),
            "mount": ordered["mount"],
            "arrive_s": admitted[ordered["req"].to_numpy()],
            "start_s": ordered["start_s"],
            "end_s": ordered["end_s"],
        }
    )
    makespan = float(records["end_s"].to_numpy().max(initial=0.0))
    sizes = int(np.asarray(p.size, dtype=np.int64).sum())
    # A copy on several cartridges is one request per cartridge, but one file.
    return DirectResult(
        makespan, s.tally.mounts, int(fids.n_unique()), sizes, timeline, per_request, window
    )


_COLUMNS = ("drive", "tape", "event", "start_s", "end_s")
