"""The first load of a catalog source: straight into the table, its indexes built afterwards."""

from __future__ import annotations

import psycopg
from psycopg import sql

from tapelens.ingest.load.context import Progress
from tapelens.ingest.load.copy_text import ident

# Bytes of input per catalog row, at the least (an HPSS `ls -P` line is about 230 bytes, a CTA or
# TSM one about 200): a file's size over this bounds the rows it can hold from above.
MIN_BYTES_PER_ROW = 100


def bulk_worthwhile(conn: psycopg.Connection, total_bytes: int) -> bool:
    """Whether to load without the table's indexes and build them afterwards, as PostgreSQL's
    manual advises for bulk loads ("Populating a Database": a new index is built faster over the
    whole table than grown row by row). It pays when the file may hold more rows than the
    table has: always on a first load. Counting stops at that many rows, so a large table
    costs no full count."""
    bound = max(total_bytes // MIN_BYTES_PER_ROW, 1)
    row = conn.execute(
        "select count(*) from (select 1 from tapelens.tape_files limit %s) as t", [bound]
    ).fetchone()
    return row is not None and int(row[0]) < bound


# The catalog's index of the copies whose file id is not their path (migration 013).
FILE_ID_INDEX = "tape_files_file_id"


def drop_indexes(cur: psycopg.Cursor, keep: set[str]) -> list[tuple[str, str]]:
    """Drop the catalog table's indexes but `keep` (inside the load's transaction); their
    definitions."""
    indexes = cur.execute(
        "select indexname, indexdef from pg_indexes"
        " where schemaname = 'tapelens' and tablename = 'tape_files' and indexname <> all(%s)"
        " order by indexname",
        [sorted(keep)],
    ).fetchall()
    for name, _ in indexes:
        cur.execute(sql.SQL("drop index {}").format(ident("tapelens", name)))
    return [(str(n), str(d)) for n, d in indexes]


def build_indexes(
    cur: psycopg.Cursor, indexes: list[tuple[str, str]], progress: Progress | None, rows: int
) -> None:
    """Build the dropped indexes again, each over the whole table in one sort."""
    for i, (name, definition) in enumerate(indexes, start=1):
        if progress:
            progress(0, None, rows, f"index {i} of {len(indexes)} ({name})")
        cur.execute(definition)  # pg_indexes' own CREATE INDEX text for this table


def source_is_empty(conn: psycopg.Connection, source: str) -> bool:
    row = conn.execute(
        "select not exists (select 1 from tapelens.tape_files where source = %s)", [source]
    ).fetchone()
    return bool(row and row[0])
