"""Observed reads made ready for fitting: their mount, their gaps, their full duration.

Reads (media_type, size_bytes, duration_s, started_at; optionally volume, position, gap,
gap_bytes, start_bytes, session_id, locate_s) are matched to the mount they happened on; gaps
the logs do not give are derived from the previous read of the same session; the duration of
a mount's first read gains the wait after the mount when the log times the first locate outside
the transfer. Pure: frames in, frames out.
"""

from __future__ import annotations

import polars as pl

from tapelens.errors import InputError

# Timestamps in logs have whole-second resolution: a first read starting less than this after
# its mount is taken to start at the mount.
LEAD_MIN_S = 2.0

_MOUNT_COLUMNS = ["mount_no", "mounted_at", "dismounted_at", "requested_at"]


def attach_mounts(reads: pl.DataFrame, mounts: pl.DataFrame) -> pl.DataFrame:
    """Each read with the mount it happened on (same volume, mounted before it started, not yet
    dismounted): adds mount_no, mounted_at, dismounted_at, requested_at (null when none)."""
    base = reads.drop(_MOUNT_COLUMNS, strict=False)
    if "volume" not in reads.columns or "volume" not in mounts.columns or mounts.height == 0:
        return base.with_columns(
            pl.lit(None, pl.UInt32).alias("mount_no"),
            *[pl.lit(None, pl.Datetime("us", "UTC")).alias(c) for c in _MOUNT_COLUMNS[1:]],
        )
    m = mounts.select("volume", *_MOUNT_COLUMNS[1:]).with_row_index("mount_no")
    within = pl.col("dismounted_at").is_null() | (pl.col("started_at") <= pl.col("dismounted_at"))
    return (
        base.with_row_index("_row")
        .sort("started_at")
        .join_asof(
            m.sort("mounted_at"),
            left_on="started_at",
            right_on="mounted_at",
            by="volume",
            strategy="backward",
            check_sortedness=False,
        )
        .with_columns([pl.when(within).then(pl.col(c)).alias(c) for c in _MOUNT_COLUMNS])
        .sort("_row")
        .drop("_row")
    )


def derive_gaps(reads: pl.DataFrame) -> pl.DataFrame:
    """Fill `gap` (posdiff) and `gap_bytes` from the previous read of the same session (the
    mart's session_id, else the mount) where the reads do not give them. gap_bytes needs
    start_bytes, the read's byte address on the tape."""
    key = next((c for c in ("session_id", "mount_no") if c in reads.columns), None)
    frame = reads
    for column, dtype in (("gap", pl.Int64), ("gap_bytes", pl.Int64)):
        if column not in frame.columns:
            frame = frame.with_columns(pl.lit(None, dtype).alias(column))
    if key is None:
        return frame

    order = ["started_at", "position"] if "position" in frame.columns else ["started_at"]

    def prev(expr: pl.Expr) -> pl.Expr:
        # logs time reads to the second: reads of one second follow in position order
        return expr.shift(1).over(key, order_by=order)

    grouped = pl.col(key).is_not_null()
    if "position" in frame.columns:
        derived = pl.when(grouped).then(pl.col("position") - prev(pl.col("position")))
        frame = frame.with_columns(pl.coalesce(pl.col("gap"), derived).alias("gap"))
    if "start_bytes" in frame.columns:
        end = pl.col("start_bytes") + pl.col("size_bytes")
        derived = pl.when(grouped & pl.col("gap").is_not_null()).then(
            pl.col("start_bytes") - prev(end)
        )
        frame = frame.with_columns(pl.coalesce(pl.col("gap_bytes"), derived).alias("gap_bytes"))
    return frame


def prepare_reads(reads: pl.DataFrame, mounts: pl.DataFrame | None = None) -> pl.DataFrame:
    """Usable reads, with gaps, their mount and `observed_s`: the duration including the
    positioning before the read.

    For the first read of a mount the time between the mount and the read's start is added: logs
    that time the first locate outside the transfer show it there.
    """
    for column in ("media_type", "size_bytes", "duration_s", "started_at"):
        if column not in reads.columns:
            raise InputError(f"observed reads lack column {column}")
    frame = attach_mounts(reads, mounts) if mounts is not None else reads
    frame = derive_gaps(frame)
    lead = pl.lit(0.0)
    if "mounted_at" in frame.columns:
        after = (pl.col("started_at") - pl.col("mounted_at")).dt.total_microseconds() / 1e6
        lead = pl.when(after >= LEAD_MIN_S).then(after).otherwise(0.0).fill_null(0.0)
    usable = (pl.col("duration_s") > 0) & (pl.col("size_bytes") > 0)
    return frame.filter(usable & pl.col("media_type").is_not_null()).with_columns(
        (pl.col("duration_s") + pl.when(pl.col("gap").is_null()).then(lead).otherwise(0.0)).alias(
            "observed_s"
        )
    )
