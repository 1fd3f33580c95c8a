"""The typed results of a simulator run, built once the event loop is done: the summary, one
row per event record, one row per requested file (analysis/sim/events.py holds the state)."""

from __future__ import annotations

import numpy as np
import polars as pl

from tapelens.analysis.sim.config import (
    EVENT_NAMES,
    EVENTS_SCHEMA,
    EventKind,
    SimResult,
    SimSummary,
)
from tapelens.analysis.sim.state import SimState
from tapelens.analysis.throughput.model import MB

BUSY_KINDS = (EventKind.MOUNT, EventKind.READ, EventKind.UNMOUNT, EventKind.FAILED_READ)


def build_result(s: SimState) -> SimResult:
    """The summary, the events frame and the per-request frame of a finished run."""
    p = s.p
    names = [d.name for d in s.library.drives]
    table = np.array(s.tally.records, dtype=np.float64).reshape(-1, 6)
    kind, start, end, drive, req = (table[:, i] for i in (0, 1, 2, 3, 5))
    done = np.array(s.req.done_s)
    makespan = float(max(s.tally.last_s, np.nanmax(done, initial=0.0)))
    ok = ~np.isnan(done)
    sizes = np.array(p.size, dtype=np.int64)
    busy = np.isin(kind, BUSY_KINDS) & (drive >= 0)
    busy_s = np.bincount(drive[busy].astype(np.int64), end[busy] - start[busy], len(names))
    requester = np.array(p.requester, dtype=np.int64)
    last_done = {
        p.requesters[q]: float(np.max(done[ok & (requester == q)]))
        for q in range(len(p.requesters))
        if (ok & (requester == q)).any()
    }
    reads = np.isin(kind, (EventKind.READ, EventKind.FAILED_READ))
    summary = SimSummary(
        scheduler=s.sched,
        policy=s.policy,
        window=s.front.window,
        files=s.n,
        bytes=int(sizes.sum()),
        files_delivered=int(ok.sum()),
        makespan_s=makespan,
        rate_mb_s=float(sizes[ok].sum()) / MB / makespan if makespan > 0 else 0.0,
        mounts=s.tally.mounts,
        reads=int(reads.sum()),
        retries=s.tally.retries,
        failed_reads=int((kind == EventKind.FAILED_READ).sum()),
        purged=s.tally.purged,
        drive_busy_share={
            n: float(b / makespan) if makespan > 0 else 0.0
            for n, b in zip(names, busy_s, strict=True)
        },
        requester_done_s=last_done,
        events=len(s.tally.records),
        steps=s.tally.steps,
    )
    attempts = np.bincount(req[reads].astype(np.int64), minlength=s.n)
    read_start = np.full(s.n, np.nan)
    good = kind == EventKind.READ
    read_start[req[good].astype(np.int64)] = start[good]  # the last good read of each
    return SimResult(summary, _events(s, table, names), _requests(s, attempts, read_start))


def _events(s: SimState, table: np.ndarray, drive_names: list[str]) -> pl.DataFrame:
    p = s.p
    columns = ["k", "start_s", "end_s", "d", "t", "r"]
    raw = pl.DataFrame({c: table[:, i] for i, c in enumerate(columns)}).with_columns(
        pl.col("k", "d", "t", "r").cast(pl.Int64)
    )

    def lookup(values: pl.Series, index: str) -> pl.Expr:
        idx = pl.when(pl.col(index) >= 0).then(pl.col(index)).cast(pl.UInt32)
        return pl.lit(values).gather(idx)

    per_request = pl.Series([p.requesters[q] for q in p.requester], dtype=pl.String)
    frame = raw.select(
        lookup(pl.Series(EVENT_NAMES), "k").alias("kind"),
        "start_s",
        "end_s",
        lookup(pl.Series(drive_names, dtype=pl.String), "d").alias("drive"),
        lookup(pl.Series(p.volumes, dtype=pl.String), "t").alias("volume"),
        lookup(p.frame["path"], "r").alias("path"),
        lookup(per_request, "r").alias("requester"),
        lookup(pl.Series(p.size, dtype=pl.Int64), "r").alias("size_bytes"),
    )
    return frame.cast(pl.Schema(EVENTS_SCHEMA))


def _requests(s: SimState, attempts: np.ndarray, read_start: np.ndarray) -> pl.DataFrame:
    wanted = ("path", "volume", "position", "offset_bytes", "size_bytes", "requester")
    keep = [c for c in (*wanted, "submit_s") if c in s.p.frame.columns]
    return (
        s.p.frame.select(keep)
        .with_columns(
            pl.Series("admitted_s", s.req.admit_s, dtype=pl.Float64),
            pl.Series("read_start_s", read_start, dtype=pl.Float64),
            pl.Series("done_s", s.req.done_s, dtype=pl.Float64),
            pl.Series("attempts", attempts, dtype=pl.Int64),
        )
        .with_columns(pl.col("admitted_s", "read_start_s", "done_s").fill_nan(None))
    )
