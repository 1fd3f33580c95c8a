"""Columnstore compression of the cold history: the transfers and mounts no new log reaches.

TimescaleDB's community edition can rewrite a hypertable's chunk into column batches of up to
1,000 rows, each column compressed on its own (delta and run-length codes for times and numbers,
dictionaries for repeated text). The transfer and mount history is what that suits: written once
by a log load, then read whole by the marts, and by time range by everything else. A compressed
chunk keeps accepting the rows of a late or rotated log (TimescaleDB decompresses the batches an
insert or update touches), so loads stay correct; they are only slower there.

The catalog (`tape_files`) is left as rows on purpose: every newer dump updates copies in place,
by tuple id, and plans look copies up by path through an index, neither of which a compressed
chunk offers. Its size with compression is measured by bench/bench_columnstore.py.

The Apache-2 edition of TimescaleDB (the one Debian builds) has none of this: on it `compress`
raises DatabaseError saying so, and changes nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

import psycopg
from psycopg import sql

from tapelens.db import timescaledb_edition
from tapelens.errors import DatabaseError

SCHEMA = "tapelens"


@dataclass(frozen=True)
class Layout:
    """How one history hypertable is laid out in column batches."""

    table: str
    # Rows of one batch share these values: few distinct ones, so batches stay full.
    segment_by: tuple[str, ...]
    # Within a segment, rows in this order: times in order compress to small deltas, and each
    # batch's time range lets a query by time skip the batches outside it.
    order_by: str


LAYOUTS: tuple[Layout, ...] = (
    Layout("transfers", ("source", "direction"), "started_at"),
    Layout("mounts", ("source",), "mounted_at"),
)


@dataclass(frozen=True)
class Compressed:
    """What one `compress` did to one hypertable; sizes are the whole hypertable's."""

    table: str
    compressed_now: int  # chunks compressed (or compressed again after a late load) by this call
    compressed_before: int  # chunks compressed and complete before
    left_as_rows: int  # chunks newer than the cut, kept as rows
    bytes_before: int
    bytes_after: int
    policy_after: timedelta | None  # the background policy's age, when one was set


def compressed_chunks(conn: psycopg.Connection) -> dict[str, tuple[int, int]]:
    """Per tapelens hypertable with compressed chunks: (compressed chunks, all chunks). Any
    edition answers (the Apache-2 one has none)."""
    rows = conn.execute(
        "select hypertable_name, count(*) filter (where is_compressed), count(*)"
        " from timescaledb_information.chunks where hypertable_schema = %s"
        " group by 1 having count(*) filter (where is_compressed) > 0",
        [SCHEMA],
    ).fetchall()
    return {str(name): (int(done), int(total)) for name, done, total in rows}


def require_community_edition(conn: psycopg.Connection) -> None:
    """Raise DatabaseError unless the server can compress chunks."""
    edition = timescaledb_edition(conn)
    if edition is None:
        raise DatabaseError("TimescaleDB is not loaded on this server; run: tapelens db migrate")
    if edition != "timescale":
        raise DatabaseError(
            "columnstore compression needs TimescaleDB's community edition, and this server runs"
            " the Apache-2 edition (timescaledb.license = apache); on the embedded server install"
            " the community edition's module, set TAPELENS_TIMESCALEDB_LICENSE=timescale and"
            " start it again (db down, db up)"
        )


def compress(
    conn: psycopg.Connection,
    older_than: timedelta,
    policy: bool = False,
    progress: Callable[[str], None] | None = None,
) -> list[Compressed]:
    """Compress every chunk of the history hypertables whose whole time range is older than
    `older_than`; with `policy`, also leave TimescaleDB a background job that does the same for
    each chunk as it ages. Chunks compressed before are left alone, so running it again only
    compresses what has aged since. Each chunk is compressed and committed on its own.
    """
    require_community_edition(conn)
    return [_compress_table(conn, layout, older_than, policy, progress) for layout in LAYOUTS]


def _compress_table(
    conn: psycopg.Connection,
    layout: Layout,
    older_than: timedelta,
    policy: bool,
    progress: Callable[[str], None] | None,
) -> Compressed:
    name = f"{SCHEMA}.{layout.table}"
    before = _size(conn, name)
    _enable(conn, layout)
    cold = [
        str(r[0])
        for r in conn.execute(
            "select c::text from show_chunks(%s::regclass, older_than => %s) c order by 1",
            [name, older_than],
        ).fetchall()
    ]
    # Every chunk, and whether it is compressed and complete (nothing to do). A chunk a later
    # load wrote into holds those rows beside its batches (TimescaleDB marks it partial, status
    # bit 8, or unordered, bit 2) and is compressed again. Read from TimescaleDB's catalog: its
    # information views do not say.
    complete = {
        str(c): bool(ok)
        for c, ok in conn.execute(
            "select format('%%I.%%I', c.schema_name, c.table_name),"
            " c.status & 1 = 1 and c.status & (2 | 8) = 0"
            " from _timescaledb_catalog.chunk c"
            " join _timescaledb_catalog.hypertable h on h.id = c.hypertable_id"
            " where h.schema_name = %s and h.table_name = %s and not c.dropped",
            [SCHEMA, layout.table],
        ).fetchall()
    }
    todo = [c for c in cold if not complete.get(c, False)]
    # Each chunk's bytes, for the rate and the time left, and the planner's row estimate of it
    # (kept by ANALYZE and autovacuum; 0 before either has run), for the rows shown.
    sizes: dict[str, tuple[int, int]] = {
        str(c): (int(b), int(n))
        for c, b, n in conn.execute(
            "select c, pg_table_size(c::regclass), greatest(reltuples, 0)::bigint"
            " from unnest(%s::text[]) c join pg_class on pg_class.oid = c::regclass",
            [todo],
        ).fetchall()
    }
    conn.commit()
    work = _Work(sum(b for b, _ in sizes.values()))
    for done, chunk in enumerate(todo, 1):
        conn.execute("select compress_chunk(%s::regclass, if_not_compressed => true)", [chunk])
        conn.commit()
        work.add(*sizes.get(chunk, (0, 0)))
        if progress:
            progress(f"{layout.table}: {done}/{len(todo)} chunks compressed, {work}")
    policy_after: timedelta | None = None
    if policy:
        # Replaced rather than kept, so that a new --older-than takes effect.
        conn.execute("select remove_compression_policy(%s::regclass, if_exists => true)", [name])
        conn.execute(
            "select add_compression_policy(%s::regclass, compress_after => %s)",
            [name, older_than],
        )
        conn.commit()
        policy_after = older_than
    return Compressed(
        table=layout.table,
        compressed_now=len(todo),
        compressed_before=len(cold) - len(todo),
        left_as_rows=len(complete) - len(cold),
        bytes_before=before,
        bytes_after=_size(conn, name),
        policy_after=policy_after,
    )


class _Work:
    """How far a compression has gone: bytes and estimated rows done, the rate, the time left."""

    def __init__(self, total_bytes: int) -> None:
        self.total_bytes, self.bytes, self.rows = total_bytes, 0, 0
        self.started = time.monotonic()

    def add(self, size_bytes: int, rows: int) -> None:
        self.bytes += size_bytes
        self.rows += rows

    def __str__(self) -> str:
        elapsed = max(time.monotonic() - self.started, 1e-6)
        said = f"{self.bytes / 2**20:,.0f} of {self.total_bytes / 2**20:,.0f} MB"
        if self.rows:
            said += f", about {self.rows:,} rows, {self.rows / elapsed:,.0f} rows/s"
        left = max(self.total_bytes - self.bytes, 0) / max(self.bytes / elapsed, 1e-6)
        return f"{said}, {elapsed:.0f} s, ETA {left:.0f} s"


def _enable(conn: psycopg.Connection, layout: Layout) -> None:
    """Set the hypertable's column layout, unless it is set already (it cannot change while
    chunks are compressed)."""
    row = conn.execute(
        "select compression_enabled from timescaledb_information.hypertables"
        " where hypertable_schema = %s and hypertable_name = %s",
        [SCHEMA, layout.table],
    ).fetchone()
    if row is None:
        raise DatabaseError(
            f"{SCHEMA}.{layout.table} is not a hypertable; run: tapelens db migrate"
        )
    if row[0]:
        return
    conn.execute(
        sql.SQL(
            "alter table {} set (timescaledb.compress, timescaledb.compress_segmentby = {},"
            " timescaledb.compress_orderby = {})"
        ).format(
            sql.Identifier(SCHEMA, layout.table),
            sql.Literal(", ".join(layout.segment_by)),
            sql.Literal(layout.order_by),
        )
    )
    conn.commit()


def _size(conn: psycopg.Connection, name: str) -> int:
    row = conn.execute("select hypertable_size(%s::regclass)", [name]).fetchone()
    return int(row[0]) if row and row[0] is not None else 0
