"""The canonical schema as Polars dtypes: what every parser produces and the loader COPYs.

Columns the database fills itself (ingest_run_id, last_seen_at, removed_at, updated_at) are not
listed. Times are UTC.
"""

from __future__ import annotations

import polars as pl

UTC_TIME = pl.Datetime("us", "UTC")

TAPE_FILES: dict[str, pl.DataType] = {
    "source": pl.String(),
    "copy_id": pl.String(),
    "file_id": pl.String(),
    "path": pl.String(),
    "dataset": pl.String(),
    "dataset_type": pl.String(),
    "experiment": pl.String(),
    "size_bytes": pl.Int64(),
    "volume": pl.String(),
    "position": pl.Int64(),
    "offset_bytes": pl.Int64(),
    "aggregate_id": pl.String(),
    "copy_no": pl.Int32(),
    "written_at": UTC_TIME,
    "checksum": pl.String(),
    # Half a unit of the last printed digit when the dump gives sizes rounded (CTA's text
    # table: 5.2G); null when size_bytes is exact.
    "size_bound_bytes": pl.Int64(),
    # The other cartridges, in order and comma-separated, of a copy that needs several (striped,
    # or continuing on the next); the row stands on the first. Null for a copy on one cartridge.
    "other_volumes": pl.String(),
}

TRANSFERS: dict[str, pl.DataType] = {
    "source": pl.String(),
    "direction": pl.String(),
    "volume": pl.String(),
    "drive": pl.String(),
    "host": pl.String(),
    "file_id": pl.String(),
    "path": pl.String(),
    "position": pl.Int64(),
    "size_bytes": pl.Int64(),
    "started_at": UTC_TIME,
    "duration_s": pl.Float64(),
    "queued_s": pl.Float64(),
    "locate_s": pl.Float64(),
    "status": pl.String(),
    "error": pl.String(),
    "requester": pl.String(),
}

MOUNTS: dict[str, pl.DataType] = {
    "source": pl.String(),
    "volume": pl.String(),
    "drive": pl.String(),
    "requested_at": UTC_TIME,
    "mounted_at": UTC_TIME,
    "dismounted_at": UTC_TIME,
    "purpose": pl.String(),
    "status": pl.String(),
}

TAPES: dict[str, pl.DataType] = {
    "volume": pl.String(),
    "barcode": pl.String(),
    "media_type": pl.String(),
    "library": pl.String(),
    "pool": pl.String(),
    "capacity_bytes": pl.Int64(),
    "state": pl.String(),
    "media_from": pl.String(),
    "state_raw": pl.String(),  # the inventory's own words for the state
}

# A written file's collocation hints (WLCG archive metadata): ingest/formats/wlcg_hints.py.
WRITE_HINTS: dict[str, pl.DataType] = {
    "source": pl.String(),
    "file_key": pl.String(),
    "path": pl.String(),
    "written_at": UTC_TIME,
    "size_bytes": pl.Int64(),
    "experiment": pl.String(),
    "activity": pl.String(),
    **{f"level_{n}": pl.String() for n in range(5)},
    **{f"length_{n}": pl.Int64() for n in range(5)},
    **{f"size_{n}": pl.Int64() for n in range(5)},
    "schema_version": pl.Int32(),
    "status": pl.String(),
    "reason": pl.String(),
    "raw_metadata": pl.String(),
    "levels_digest": pl.String(),
}

SCHEMAS: dict[str, dict[str, pl.DataType]] = {
    "catalog": TAPE_FILES,
    "transfers": TRANSFERS,
    "mounts": MOUNTS,
    "tapes": TAPES,
    "hints": WRITE_HINTS,
}
TABLES = {
    "catalog": "tape_files",
    "transfers": "transfers",
    "mounts": "mounts",
    "tapes": "tapes",
    "hints": "write_hints",
}

# Columns a parser must fill (never null); the rest may be null.
REQUIRED: dict[str, tuple[str, ...]] = {
    "catalog": (
        "source",
        "copy_id",
        "file_id",
        "path",
        "size_bytes",
        "volume",
        "position",
        "copy_no",
        "written_at",
    ),
    "transfers": ("source", "direction", "started_at", "status"),
    "mounts": ("source", "volume", "mounted_at", "purpose", "status"),
    "tapes": ("volume", "media_type", "state", "media_from"),
    "hints": ("source", "file_key", "written_at", "status", "levels_digest"),
}


def empty(kind: str) -> pl.DataFrame:
    return pl.DataFrame(schema=SCHEMAS[kind])


def conform(kind: str, frame: pl.DataFrame) -> pl.DataFrame:
    """Select the canonical columns in order, adding missing ones as nulls and casting types."""
    schema = SCHEMAS[kind]
    cols = [
        (pl.col(name) if name in frame.columns else pl.lit(None)).cast(dtype).alias(name)
        for name, dtype in schema.items()
    ]
    return frame.select(cols)


def conform_with_lines(kind: str, frame: pl.DataFrame) -> pl.DataFrame:
    """conform, keeping the rows' input line numbers (column line_no) when the frame has them:
    the loader refuses a row the database would refuse as that line."""
    out = conform(kind, frame)
    return out.with_columns(frame["line_no"]) if "line_no" in frame.columns else out
