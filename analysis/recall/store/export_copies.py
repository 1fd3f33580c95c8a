"""What the exports to staging systems read: live copies on readable tapes, each tape's fill."""

from __future__ import annotations

from typing import Any

import polars as pl
import psycopg
from psycopg import sql

from tapelens.analysis.recall.store.catalog import load_catalog
from tapelens.catalog import file_identity
from tapelens.errors import DatabaseError
from tapelens.frames import copy_frame, one_line
from tapelens.tape_states import NOT_RECALLABLE

_TAPE_FILL = """
select t.volume, coalesce(t.capacity_bytes, m.capacity_bytes)::bigint as capacity_bytes,
       coalesce(f.filled, 0)::bigint as filled_bytes
from tapelens.tapes t
left join tapelens.media_types m on m.media_type = t.media_type
left join (
    select volume, sum(size_bytes) as filled from tapelens.tape_files group by volume
) f on f.volume = t.volume
"""
_LIVE_COPIES = f"""
select {file_identity("f")} as file_id, f.path, f.size_bytes, f.volume, f.position,
       f.offset_bytes, extract(epoch from f.written_at) as written_at, f.copy_no
from tapelens.tape_files f left join tapelens.tapes t on t.volume = f.volume
where f.removed_at is null and coalesce(t.state, 'unknown') <> all({{}})
"""
_LIVE_SCHEMA: dict[str, Any] = {
    "file_id": pl.String,
    "path": pl.String,
    "size_bytes": pl.Int64,
    "volume": pl.String,
    "position": pl.Int64,
    "offset_bytes": pl.Int64,
    "written_at": pl.Float64,
    "copy_no": pl.Int32,
}


def recallable_copies(
    conn: psycopg.Connection, requests: pl.DataFrame | None = None
) -> pl.DataFrame:
    """The live copies on tapes that can be read now, of the requested files or of all: where
    dCache's tape info files and ENDIT's tape hints say each file is."""
    if requests is not None:
        copies = load_catalog(conn, requests)
        return copies.filter(~pl.col("tape_state").is_in(list(NOT_RECALLABLE)))
    # Every live copy, through COPY into Polars (a site holds millions).
    query = sql.SQL(_LIVE_COPIES).format(sql.Literal(list(NOT_RECALLABLE)))
    try:
        return copy_frame(conn, query, _LIVE_SCHEMA, epoch=("written_at",))
    except psycopg.Error as exc:
        raise DatabaseError(one_line(exc)) from None


def tape_fill(conn: psycopg.Connection) -> pl.DataFrame:
    """Every tape's capacity and fill: the bytes of every copy it holds, removed ones included
    until it is repacked."""
    try:
        rows = conn.execute(_TAPE_FILL).fetchall()
    except psycopg.Error as exc:
        raise DatabaseError(one_line(exc)) from None
    return pl.DataFrame(
        rows,
        schema={"volume": pl.String, "capacity_bytes": pl.Int64, "filled_bytes": pl.Int64},
        orient="row",
    )
