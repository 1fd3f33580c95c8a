"""Query results as typed Polars frames, through ADBC (Arrow, columnar: no row-by-row fetch)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from tapelens.db import redact
from tapelens.errors import DatabaseError, DatabaseUnavailable


def read_frame(dsn: str, query: str, params: Sequence[Any] = ()) -> pl.DataFrame:
    """Run `query` ($1, $2 ... placeholders) and return its rows as a frame."""
    import adbc_driver_manager
    import adbc_driver_postgresql.dbapi as adbc

    try:
        conn = adbc.connect(dsn)
    except adbc_driver_manager.Error as exc:
        raise DatabaseUnavailable(redact(dsn), _one_line(exc)) from None
    try:
        with conn.cursor() as cur:
            cur.execute(query, parameters=tuple(params) or None)
            table = cur.fetch_arrow_table()
    except adbc_driver_manager.Error as exc:
        raise DatabaseError(_one_line(exc)) from None
    finally:
        conn.close()
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    return frame


def _one_line(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    # The driver prefixes its own codes; keep the server's words.
    return text.split("ERROR: ", 1)[-1]
