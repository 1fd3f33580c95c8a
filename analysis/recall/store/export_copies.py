"""What the exports to staging systems read: live copies on readable tapes, each tape's fill.

SQL both engines run, read through tapelens.frames.FrameReader (PostgreSQL, or the Spark
tables), its rows sorted here (PostgreSQL's ORDER BY follows the database's collation, Spark
compares bytes); the requested files' copies come from the engine's catalog read of a recall
plan.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from tapelens.catalog import file_identity
from tapelens.frames import FrameReader
from tapelens.tape_states import NOT_RECALLABLE

_TAPE_FILL = """
select t.volume, cast(coalesce(t.capacity_bytes, m.capacity_bytes) as bigint) as capacity_bytes,
       cast(coalesce(f.filled, 0) as bigint) as filled_bytes
from tapelens.tapes t
left join tapelens.media_types m on m.media_type = t.media_type
left join (
    select volume, sum(size_bytes) as filled from tapelens.tape_files group by volume
) f on f.volume = t.volume
"""
# The states are tapelens's own words (tape_states), written into the SQL as literals.
_NOT_RECALLABLE = ", ".join(f"'{state}'" for state in NOT_RECALLABLE)
_LIVE_COPIES = f"""
select {file_identity("f")} as file_id, f.path, f.size_bytes, f.volume, f.position,
       f.offset_bytes, f.written_at, f.copy_no
from tapelens.tape_files f left join tapelens.tapes t on t.volume = f.volume
where f.removed_at is null and coalesce(t.state, 'unknown') not in ({_NOT_RECALLABLE})
"""
_LIVE_SCHEMA: dict[str, Any] = {
    "file_id": pl.String,
    "path": pl.String,
    "size_bytes": pl.Int64,
    "volume": pl.String,
    "position": pl.Int64,
    "offset_bytes": pl.Int64,
    "written_at": pl.Datetime("us", "UTC"),
    "copy_no": pl.Int32,
}
_FILL_SCHEMA: dict[str, Any] = {
    "volume": pl.String,
    "capacity_bytes": pl.Int64,
    "filled_bytes": pl.Int64,
}


def recallable_copies(read: FrameReader) -> pl.DataFrame:
    """Every live copy on a tape that can be read now: where dCache's tape info files and
    ENDIT's tape hints say each file is."""
    copies = read(_LIVE_COPIES).cast(pl.Schema(_LIVE_SCHEMA))
    return copies.sort(["volume", "position", "offset_bytes", "file_id", "copy_no"])


def recallable_of(catalog: pl.DataFrame) -> pl.DataFrame:
    """The copies of a recall plan's catalog read (the requested files') on a tape that can be
    read now."""
    return catalog.filter(~pl.col("tape_state").is_in(list(NOT_RECALLABLE)))


def tape_fill(read: FrameReader) -> pl.DataFrame:
    """Every tape's capacity and fill: the bytes of every copy it holds, removed ones included
    until it is repacked."""
    return read(_TAPE_FILL).cast(pl.Schema(_FILL_SCHEMA)).sort("volume")
