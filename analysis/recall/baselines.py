"""What a recall costs the usual ways: newest copies, and direct first-come-first-served submission.

Tape clients recall the newest copy of a file (docs/domain.md, "Duplicate copies"). Newest copy:
those copies read with this planner's ordering; the difference to the plan is what the copy choice
gains.

Direct submission (what a staging system does without a planner): requests go to the tape system
in submission order; a request for a tape already mounted queues on its drive, any other takes
the drive that frees first, which unloads the tape it holds. A tape therefore stays mounted until
its drive is needed, and requests for it that arrive after that remount it. Files are read in
request order, so files of one tape asked for out of position order are located back and forth.
The caller passes the copies it means (the planner passes the newest).

Every time comes from the throughput model (`predict_reads`): each file is timed as reached from
the previous file of its tape in request order (what the drive has just read if the tape stayed
mounted) or, for the first file of a new mount, from the load point.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl

from tapelens.analysis.recall.dispatch import Sharing, dispatch, drive_names, readers_of
from tapelens.analysis.recall.schedule import Schedule, timed_tapes
from tapelens.analysis.throughput.model import MB, ModelParams, predict_reads


@dataclass(frozen=True)
class BaselineResult:
    makespan_s: float
    mounts: int
    files: int
    bytes: int

    @property
    def rate_mb_s(self) -> float:
        return self.bytes / MB / self.makespan_s if self.makespan_s > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "makespan_s": round(self.makespan_s, 3),
            "mounts": self.mounts,
            "files": self.files,
            "rate_mb_s": round(self.rate_mb_s, 3),
        }


def newest_copies(copies: pl.DataFrame, key: str | list[str] = "fid") -> pl.DataFrame:
    """The copy a tape client recalls: the newest of each file (the highest copy number among
    copies written at the same time). `key` names the file."""
    several = pl.struct(key).is_duplicated()
    multi = copies.filter(several)
    if multi.height == 0:
        return copies
    newest = multi.sort(
        ["written_at", "copy_no"], descending=True, nulls_last=True, maintain_order=True
    ).unique(key, keep="first", maintain_order=True)
    return pl.concat([copies.filter(~several), newest])


def newest_copy(
    newest: pl.DataFrame,
    planned: pl.DataFrame,
    plan: Schedule,
    wanted: pl.DataFrame,
    params_by_media: Mapping[str, ModelParams],
    drives: Mapping[str, int],
    sharing: Sharing,
    readers: Mapping[str, tuple[str, ...]],
) -> BaselineResult:
    """The newest copies read with the plan's ordering and sharing. Tapes whose set of reads
    is the same as in the plan (`planned` copies, `plan` schedule) keep the plan's timing."""
    moved = (
        newest.select("fid", "vid")
        .join(planned.select("fid", pl.col("vid").alias("was")), on="fid")
        .filter(pl.col("vid") != pl.col("was"))
    )
    touched = pl.concat([moved["vid"], moved["was"]]).unique().implode()
    _, changed = timed_tapes(
        newest.filter(pl.col("vid").is_in(touched)), wanted, params_by_media, detail=False
    )
    kept = plan.tapes.filter(~pl.col("vid").is_in(touched)).select(changed.columns)
    tapes = pl.concat([kept, changed.cast(kept.schema)]) if kept.height else changed
    placed = dispatch(tapes, drives, sharing, readers)
    end = float(placed.select(pl.col("end_s").max()).item() or 0.0)
    return BaselineResult(
        end, placed.height, int(placed["files"].sum()), int(placed["bytes"].sum())
    )


def fifo_direct(
    files: pl.DataFrame,
    drives: Mapping[str, int],
    params_by_media: Mapping[str, ModelParams],
    readable_by: Mapping[str, tuple[str, ...]],
    order: str = "fifo_rank",
    tape: str = "volume",
) -> BaselineResult:
    """Makespan and mounts of direct FIFO submission of `files` (one copy per file: the `tape`
    column, media_type, position, size_bytes; optional avg_object_bytes and start_bytes, the
    copy's byte address, which gives the bytes skipped between reads), in `order`."""
    if files.height == 0:
        return BaselineResult(0.0, 0, 0, 0)
    ordered = files.sort(order)
    prev = pl.col("position").shift(1).over(tape)
    optional = [c for c in ("avg_object_bytes", "start_bytes") if c in files.columns]
    skipped = []
    if "start_bytes" in files.columns:
        # Bytes between the end of the previous read of the tape and this file (< 0: behind).
        prev_end = (pl.col("start_bytes") + pl.col("size_bytes")).shift(1).over(tape)
        skipped = [(pl.col("start_bytes") - prev_end).alias("gap_bytes")]
    reads = ordered.select(
        pl.col(tape).alias("volume"),
        "media_type",
        "size_bytes",
        "position",
        *optional,
        *skipped,
        (pl.col("position") - prev).alias("gap"),
    )
    going_on = predict_reads(reads, params_by_media)["predicted_duration_s"]
    run_start = pl.col("volume").ne_missing(pl.col("volume").shift(1))
    flags = reads.select(run_start.alias("start"))["start"]
    fresh = predict_reads(
        reads.filter(flags).with_columns(pl.lit(None, pl.Int64).alias("gap")), params_by_media
    )["predicted_duration_s"]
    runs = (
        reads.select("volume", "media_type")
        .with_columns(going_on.alias("cont_s"), flags.cum_sum().alias("run"))
        .group_by("run", maintain_order=True)
        .agg(
            pl.col("volume").first(),
            pl.col("media_type").first(),
            pl.col("cont_s").sum(),
            pl.col("cont_s").first().alias("first_cont_s"),
        )
        .with_columns((pl.col("cont_s") - pl.col("first_cont_s") + fresh).alias("fresh_s"))
    )
    makespan, mounts = _simulate(runs, drives, params_by_media, readable_by)
    return BaselineResult(makespan, mounts, files.height, int(files["size_bytes"].sum()))


def _simulate(
    runs: pl.DataFrame,
    drives: Mapping[str, int],
    params_by_media: Mapping[str, ModelParams],
    readable_by: Mapping[str, tuple[str, ...]],
) -> tuple[float, int]:
    """Walk the runs (consecutive requests for one tape) in order; return makespan and mounts."""
    counts = {d: n for d, n in drives.items() if n > 0}
    names = drive_names(counts)
    kinds = [kind for _, kind in names]
    readers = readers_of(runs["media_type"].unique().to_list(), counts, readable_by)
    free = [0.0] * len(names)
    version = [0] * len(names)
    heaps: dict[str, list[tuple[float, int, int]]] = {d: [] for d in counts}
    for k, kind in enumerate(kinds):
        heaps[kind].append((0.0, k, 0))
    holds: list[str | None] = [None] * len(names)
    holds_media: list[str | None] = [None] * len(names)
    mounted_on: dict[str, int] = {}
    mount_s = {m: p.mount_s for m, p in params_by_media.items()}
    dismount_s = {m: p.dismount_s for m, p in params_by_media.items()}
    mounts = 0
    columns = ("volume", "media_type", "cont_s", "fresh_s")
    for volume, media, cont_s, fresh_s in runs.select(columns).iter_rows():
        held = mounted_on.get(volume)
        if held is None:
            k = _first_free(heaps, readers[media], free, version)
            old, old_media = holds[k], holds_media[k]
            if old is not None and old_media is not None:
                del mounted_on[old]
                free[k] += dismount_s[old_media]
            free[k] += mount_s[media] + fresh_s
            holds[k], holds_media[k] = volume, media
            mounted_on[volume] = k
            mounts += 1
        else:
            k = held
            free[k] += cont_s
        version[k] += 1
        heapq.heappush(heaps[kinds[k]], (free[k], k, version[k]))
    ends = [
        f + (dismount_s[m] if m is not None else 0.0)
        for f, m in zip(free, holds_media, strict=True)
    ]
    return max(ends), mounts


def _first_free(
    heaps: dict[str, list[tuple[float, int, int]]],
    types: list[str],
    free: list[float],
    version: list[int],
) -> int:
    """The drive among `types` that frees first (lowest number among equals)."""
    best: tuple[float, int] | None = None
    for kind in types:
        heap = heaps[kind]
        while heap and heap[0][2] != version[heap[0][1]]:
            heapq.heappop(heap)  # an entry left behind by a later update of the drive
        if heap and (best is None or heap[0][:2] < best):
            best = heap[0][:2]
    assert best is not None
    return best[1]
