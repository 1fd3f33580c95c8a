"""The schedule of chosen copies: each tape's reads timed, the tapes dispatched onto drives.

Each tape's forward pass is timed by the throughput model, then the tapes are dispatched onto
drives.

A tape is read in one pass in position order (aggregate members by offset, each aggregate one
tape object read once): `throughput.file_times` times every read from where it sits; a mount's
total is its last read's end plus rewind and unload. Pure: frames in, frames out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import polars as pl

from tapelens.analysis.recall.schedule.dispatch import dispatch
from tapelens.analysis.recall.schedule.policies import Sharing
from tapelens.analysis.recall.schedule.read_order import OrderCache, in_read_order
from tapelens.analysis.throughput.model import ModelParams, file_times, mount_rewinds, tape_times

# Per-file columns of a plan, in export order.
PLAN_COLUMNS = (
    "order",
    "drive",
    "volume",
    "position",
    "offset_bytes",
    "path",
    "file_id",
    "size_bytes",
    "start_s",
    "end_s",
    "requester",
    "kind",
)
# What the model needs of each chosen copy; the rest is joined back afterwards.
MODEL_COLUMNS = ("fid", "vid", "media_type", "position", "offset_bytes", "size_bytes")
OPTIONAL_MODEL_COLUMNS = ("aggregate_id", "avg_object_bytes", "start_bytes")


@dataclass(frozen=True)
class Schedule:
    """Chosen copies placed on drives: per file, per mount and per drive event."""

    files: pl.DataFrame  # PLAN_COLUMNS, the model's breakdown and the owner's rank columns
    tapes: pl.DataFrame  # per mount: breakdown, owner, drive, start_s, end_s, mount_order
    # drive, volume, event (mount | position | read | rewind | dismount), start_s, end_s
    timeline: pl.DataFrame

    @property
    def makespan_s(self) -> float:
        return float(self.tapes.select(pl.col("end_s").max()).item() or 0.0)

    @property
    def mounts(self) -> int:
        return self.tapes.height


def timed_tapes(
    chosen: pl.DataFrame,
    wanted: pl.DataFrame,
    params_by_media: Mapping[str, ModelParams],
    *,
    detail: bool = True,
    order: str = "position",
    orders: OrderCache | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per read and per mount times of `chosen` (one copy per file: fid, vid = integer tape
    code, volume, media_type, position, offset_bytes, size_bytes...), with each tape's owner
    from `wanted` (analysis.recall.requests), each tape read in `order` (read_order.ORDERS).
    Without `detail`, mounts carry totals only."""
    optional = [c for c in OPTIONAL_MODEL_COLUMNS if c in chosen.columns]
    owners = wanted.select("fid", "requester", "group", "rank", "fifo_rank")
    lean = _in_tape_order(
        chosen.select(*MODEL_COLUMNS, *optional)
        .with_row_index("chosen_row")  # where each read's other columns are in `chosen`
        .join(owners, on="fid")
    )
    lean = in_read_order(lean, order, params_by_media, cache=orders)
    timed = file_times(lean, params_by_media, key=("vid",))
    if detail:
        tapes = tape_times(lean, params_by_media, key=("vid",), per_file=timed)
    else:
        tapes = _tape_totals(timed, params_by_media)
    names = chosen.select("vid", "volume").unique("vid")
    return timed, tapes.join(names, on="vid").join(_owners(timed), on="vid")


def build_schedule(
    chosen: pl.DataFrame,
    wanted: pl.DataFrame,
    params_by_media: Mapping[str, ModelParams],
    drives: Mapping[str, int],
    sharing: Sharing,
    readers: Mapping[str, tuple[str, ...]],
    *,
    lean: bool = False,
    order: str = "position",
    orders: OrderCache | None = None,
) -> Schedule:
    """Time every tape's forward pass and dispatch the tapes: the plan, file by file. A `lean`
    schedule's files carry only the model's columns and `chosen_row` (a candidate weighed
    against others needs no more; with_copy_columns completes the one kept)."""
    timed, tapes = timed_tapes(chosen, wanted, params_by_media, order=order, orders=orders)
    placed = dispatch(tapes, drives, sharing, readers).sort("mount_order")
    files = (
        timed.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias("_seq"))
        .join(
            placed.select(
                "vid",
                "drive",
                "mount_order",
                pl.col("start_s").alias("_t0"),
                pl.int_range(pl.len(), dtype=pl.Int64).alias("_placed"),
            ),
            on="vid",
        )
        .with_columns(pl.col("start_s") + pl.col("_t0"), pl.col("end_s") + pl.col("_t0"))
        .sort(["_placed", "_seq"])
        .with_columns(pl.int_range(1, pl.len() + 1, dtype=pl.Int64).alias("order"))
        .drop("_t0", "_seq", "_placed")
    )
    schedule = Schedule(files, placed, _timeline(placed, files))
    return schedule if lean else with_copy_columns(schedule, chosen)


def with_copy_columns(
    schedule: Schedule, chosen: pl.DataFrame, row: str = "chosen_row"
) -> Schedule:
    """The schedule with the columns of `chosen` its files lack, each file's taken from the row
    of `chosen` its `row` column names (dropped then); PLAN_COLUMNS first."""
    files = schedule.files
    # Gathered by row rather than joined (a million rows).
    extra = chosen.select([c for c in chosen.columns if c not in files.columns])
    files = pl.concat([files.drop(row), extra[files[row]]], how="horizontal")
    first = [c for c in PLAN_COLUMNS if c in files.columns]
    files = files.select(*first, *[c for c in files.columns if c not in first])
    return Schedule(files, schedule.tapes, schedule.timeline)


def _in_tape_order(files: pl.DataFrame) -> pl.DataFrame:
    """Sorted by tape, position and offset: the read order the model expects (sorting a single
    combined integer key first keeps this fast for a million files)."""
    if files.height == 0:
        return files
    low, high, tapes = files.select(
        pl.col("position").min().alias("low"),
        pl.col("position").max().alias("high"),
        pl.col("vid").max().alias("tapes"),
    ).row(0)
    span = int(high) + 1
    if low >= 0 and (int(tapes) + 1) * span < 2**62:
        files = files.sort(pl.col("vid") * span + pl.col("position"))
        if files["offset_bytes"].null_count() == files.height:
            return files
    return files.sort(["vid", "position", "offset_bytes"], nulls_last=False, maintain_order=True)


def _tape_totals(timed: pl.DataFrame, params: Mapping[str, ModelParams]) -> pl.DataFrame:
    """Per mount, its total time: the model's end of the last read plus the rewind from where
    that read ends (model.mount_rewinds) and the unload."""
    unload = {m: p.unload_s for m, p in params.items()}
    return (
        timed.group_by("vid")
        .agg(
            pl.col("media_type").first(),
            pl.len().alias("files"),
            pl.col("size_bytes").sum().alias("bytes"),
            pl.col("end_s").max().alias("_last_end_s"),
        )
        .join(mount_rewinds(timed, params, ("vid",)), on="vid", how="left")
        .select(
            "vid",
            "media_type",
            "files",
            "bytes",
            (
                pl.col("_last_end_s")
                + pl.col("rewind_s")
                + pl.col("media_type").replace_strict(unload, return_dtype=pl.Float64)
            ).alias("total_s"),
        )
    )


def _owners(timed: pl.DataFrame) -> pl.DataFrame:
    """Per tape: its oldest request's requester and group, its ranks, and its demand."""
    oldest = pl.col("rank").arg_min()
    return timed.group_by("vid").agg(
        pl.col("requester").get(oldest),
        pl.col("group").get(oldest),
        pl.col("rank").min(),
        pl.col("fifo_rank").min(),
        pl.col("size_bytes").sum().alias("demand_bytes"),
        (pl.col("requester") == pl.col("requester").get(oldest)).sum().alias("owner_files"),
    )


def _timeline(tapes: pl.DataFrame, files: pl.DataFrame) -> pl.DataFrame:
    """Per drive, each mount as its events: mount (robot and load), position (the locate to the
    first wanted file), read (from there to the end of the last read, locates between files
    included), rewind and dismount (unload and robot)."""
    reads = files.group_by("vid").agg(
        pl.col("positioning_s").sort_by("start_s").first().alias("_first_locate_s"),
        pl.col("end_s").max().alias("_last_end_s"),
    )
    t = tapes.join(reads, on="vid", how="left")
    mounted = pl.col("start_s") + pl.col("mount_s")
    located = mounted + pl.col("_first_locate_s")
    rewound = pl.col("_last_end_s") + pl.col("rewind_s")
    events = [
        ("mount", pl.col("start_s"), mounted),
        ("position", mounted, located),
        ("read", located, pl.col("_last_end_s")),
        ("rewind", pl.col("_last_end_s"), rewound),
        ("dismount", rewound, pl.col("end_s")),
    ]
    parts = [
        t.select(
            "drive",
            "volume",
            pl.lit(name).alias("event"),
            start.alias("start_s"),
            end.alias("end_s"),
        )
        for name, start, end in events
    ]
    order = pl.col("event").replace_strict({name: i for i, (name, _, _) in enumerate(events)})
    return pl.concat(parts).sort(["drive", "start_s", order])
