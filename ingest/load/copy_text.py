"""Rows in COPY's text format, and the search for the rows the server refuses.

Values the database would refuse are checked before the COPY (ingest/checks.py) and refused with
their line; a row the server still refuses is found by bisection and refused alone, and the rest
loads.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

import polars as pl
import psycopg
from psycopg import sql

from tapelens.errors import ParseError
from tapelens.ingest.checks import render
from tapelens.ingest.formats.base import (
    LINE_NO,
    Reject,
)

if TYPE_CHECKING:
    from tapelens.ingest.load.rejects import Rejects


# COPY's text format: tab-separated, \N for NULL, backslash escapes. The server reads it a
# fifth faster than CSV (no quoting to undo), and Polars writes it as fast.
_ESCAPED = r"[\\\t\n\r]"


_ESCAPES = (("\\", "\\\\"), ("\t", "\\t"), ("\n", "\\n"), ("\r", "\\r"))


def copy_text(frame: pl.DataFrame) -> memoryview:
    """The rows in COPY's text format (written into one buffer, not copied again)."""
    texts = [c for c, t in frame.schema.items() if t == pl.String]
    if texts and frame.select(pl.any_horizontal(pl.col(texts).str.contains(_ESCAPED)).any()).item():
        escaped = [pl.col(c) for c in texts]
        for plain, escape in _ESCAPES:  # the backslash first, so escapes are not escaped again
            escaped = [e.str.replace_all(plain, escape, literal=True) for e in escaped]
        frame = frame.with_columns(escaped)
    out = io.BytesIO()
    frame.write_csv(
        out, include_header=False, separator="\t", quote_style="never", null_value="\\N"
    )
    return out.getbuffer()


def ident(*parts: str) -> sql.Composable:
    return sql.Identifier(*parts)


def column_list(names: list[str]) -> sql.Composable:
    return sql.SQL(", ").join(sql.Identifier(c) for c in names)


def copy_rows(
    cur: psycopg.Cursor,
    stmt: sql.Composed,
    frame: pl.DataFrame,
    rejects: Rejects,
    strict: bool,
    shown: str,
) -> int:
    """COPY the rows the server takes; refuse each one it does not (found by bisection)."""
    cur.execute("savepoint load_rows")
    try:
        with cur.copy(stmt) as copy:
            copy.write(copy_text(frame.drop(LINE_NO)))
    except psycopg.Error as exc:
        cur.execute("rollback to savepoint load_rows")
        if frame.height > 1:
            half = frame.height // 2
            return copy_rows(cur, stmt, frame[:half], rejects, strict, shown) + copy_rows(
                cur, stmt, frame[half:], rejects, strict, shown
            )
        row = frame.row(0, named=True)
        line = int(row[LINE_NO] or 0)
        reason = "refused by the database: " + str(exc).split("\n")[0].strip()
        if strict:
            raise ParseError(shown, line, reason) from None
        rejects.add([Reject(line, render(row), reason)])
        return 0
    cur.execute("release savepoint load_rows")
    return frame.height
