"""Query results as typed Polars frames: the one way tapelens reads rows out of the database.

`read_frame` goes through ADBC (Arrow, columnar) on a DSN of its own; `copy_frame` runs a query
through COPY ... TO STDOUT on a connection or cursor already open (temporary tables of the same
transaction stay visible), far faster than fetching rows. Times leave the database as epoch
seconds (`extract(epoch from ...)`) and become UTC datetimes here, in `epoch_utc`.

`FrameReader` is the engine-aware way an analysis reads: on PostgreSQL `read_frame`, on Spark
Spark SQL run by the session (tapelens.spark.read), each with its `Dialect`, the few forms the
two engines' SQL spells differently.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, cast

import polars as pl
import psycopg
from psycopg import sql
from psycopg.types.string import StrDumper

from tapelens.db import unavailable
from tapelens.errors import DatabaseError, InputError
from tapelens.handoff import DONE, Handoff

UTC = pl.Datetime("us", "UTC")


@contextmanager
def _arrow_cursor(dsn: str, query: str, params: Sequence[Any] = ()) -> Iterator[Any]:
    """An ADBC cursor that has run `query`: its rows come back as Arrow; connection and query
    failures become one-line errors (the DSN shown without its password)."""
    import adbc_driver_manager
    import adbc_driver_postgresql.dbapi as adbc

    try:
        conn = adbc.connect(dsn)
    except adbc_driver_manager.Error as exc:
        raise unavailable(dsn, exc) from None
    try:
        with conn.cursor() as cur:
            cur.execute(query, parameters=tuple(params) or None)
            yield cur
    except adbc_driver_manager.Error as exc:
        raise DatabaseError(one_line(exc)) from None
    finally:
        conn.close()


def read_frame(dsn: str, query: str, params: Sequence[Any] = ()) -> pl.DataFrame:
    """Run `query` ($1, $2 ... placeholders) and return its rows as a frame."""
    with _arrow_cursor(dsn, query, params) as cur:
        table = cur.fetch_arrow_table()
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    return frame


def read_batches(dsn: str, query: str) -> Iterator[pl.DataFrame]:
    """Run `query` and hand its rows out in Arrow record batches, each as a frame: a caller
    that keeps only a few columns of each never holds the whole result."""
    with _arrow_cursor(dsn, query) as cur:
        for batch in cur.fetch_record_batch():
            frame = pl.from_arrow(batch)
            assert isinstance(frame, pl.DataFrame)
            yield frame


def read_batches_together(dsn: str, queries: Sequence[str]) -> Iterator[pl.DataFrame]:
    """The rows of several queries, each run on a connection of its own at the same time, in
    record batches as they arrive (in no set order): a scan split in parts (a hypertable's
    chunks, say) is read by as many server processes, where one query is read by one."""
    if len(queries) <= 1:
        for query in queries:
            yield from read_batches(dsn, query)
        return
    arrived = Handoff(2 * len(queries))

    def run(query: str) -> None:
        try:
            for frame in read_batches(dsn, query):
                if not arrived.put(frame):
                    return
            arrived.put(DONE)
        except BaseException as exc:  # noqa: BLE001 - raised in the reading thread
            arrived.put(exc)

    readers = [
        threading.Thread(target=run, args=(q,), name=f"tapelens-read-{i}", daemon=True)
        for i, q in enumerate(queries)
    ]
    for item in arrived.drain(readers, ends=len(readers)):
        yield cast(pl.DataFrame, item)


def copy_frame(
    conn: psycopg.Connection | psycopg.Cursor,
    query: sql.Composable,
    schema: dict[str, Any] | None = None,
    *,
    epoch: Sequence[str] = (),
) -> pl.DataFrame:
    """Rows of `query` through COPY (CSV), typed by `schema` (inferred as text when None); the
    `epoch` columns arrive as epoch seconds and come back as UTC datetimes."""
    buffer = io.BytesIO()
    statement = sql.SQL("copy ({}) to stdout with (format csv, header true)").format(query)
    try:
        if isinstance(conn, psycopg.Cursor):
            _copy_into(conn, statement, buffer)
        else:
            with conn.cursor() as cur:
                _copy_into(cur, statement, buffer)
    except psycopg.Error as exc:
        raise DatabaseError(one_line(exc)) from None
    buffer.seek(0)
    reading = dict(schema or {})
    for column in epoch:
        reading[column] = pl.Float64()
    if schema is None:
        frame = pl.read_csv(buffer, infer_schema=False, schema_overrides=reading)
    else:
        frame = pl.read_csv(buffer, schema=reading)
    present = [c for c in epoch if c in frame.columns]
    return frame.with_columns(epoch_utc(pl.col(c)).alias(c) for c in present)


def _copy_into(cur: psycopg.Cursor, statement: sql.Composed, buffer: io.BytesIO) -> None:
    with cur.copy(statement) as copy:
        for chunk in copy:
            buffer.write(chunk)


def epoch_utc(seconds: pl.Expr) -> pl.Expr:
    """Epoch seconds (as PostgreSQL's extract(epoch ...) gives them) to UTC datetimes, to the
    microsecond the database keeps."""
    return (seconds.cast(pl.Float64) * 1e6).round().cast(pl.Int64).cast(UTC)


def one_line(exc: Exception) -> str:
    """A database error as one line, in the server's words."""
    text = " ".join(str(exc).split())
    # The driver prefixes its own codes; keep the server's words.
    return text.split("ERROR: ", 1)[-1]


def sorted_and_cut(
    frame: pl.DataFrame, sort: str | None, descending: bool, limit: int | None
) -> pl.DataFrame:
    """The rows sorted by `sort` (nulls last, ties in their order), then the first `limit`.

    An unknown column is an InputError naming the columns there are."""
    if sort is not None:
        if sort not in frame.columns:
            raise InputError(
                f"--sort {sort}: no such column (expected one of {', '.join(frame.columns)})"
            )
        frame = frame.sort(sort, descending=descending, nulls_last=True, maintain_order=True)
    return frame.head(limit) if limit is not None else frame


@dataclass(frozen=True)
class Dialect:
    """The few forms the SQL of the analyses spells differently on PostgreSQL and on Spark.

    Everything else in those queries is SQL both engines run as written (`::bigint`, `power`,
    `greatest`, `nullif`, `percentile_cont ... within group`, `nulls first`)."""

    name: str
    float8: str  # the 64-bit float type a `::` cast names: float8 on PostgreSQL, double on Spark
    _month: str  # an instant's month as 'YYYY-MM', in UTC; {0} is the expression
    _date_month: str  # a date's month as 'YYYY-MM'
    _join: str  # an array's elements joined by a separator; {0} the array, {1} the separator
    _unnest: str  # one row per element of an array, in a select list; {0} the array
    _param: str  # the n-th bound parameter's marker; {0} is n, counted from 1

    def month(self, instant: str) -> str:
        return self._month.format(instant)

    def date_month(self, date: str) -> str:
        return self._date_month.format(date)

    def join(self, array: str, separator: str) -> str:
        return self._join.format(array, separator)

    def unnest(self, array: str) -> str:
        return self._unnest.format(array)

    def param(self, n: int) -> str:
        return self._param.format(n)


POSTGRES = Dialect(
    "postgres",
    "float8",
    "to_char({0} at time zone 'UTC', 'YYYY-MM')",
    "to_char({0}, 'YYYY-MM')",
    "array_to_string({0}, '{1}')",
    "unnest({0})",
    "${0}",
)
# Spark's sessions run in UTC (tapelens.spark.session), so date_format prints an instant's
# month in UTC. Parameters are named markers, bound by name.
SPARK = Dialect(
    "spark",
    "double",
    "date_format({0}, 'yyyy-MM')",
    "date_format({0}, 'yyyy-MM')",
    "array_join({0}, '{1}')",
    "explode({0})",
    ":p{0}",
)


@dataclass(frozen=True)
class FrameReader:
    """Where an analysis reads its frames: the engine's dialect and a function that runs one
    query (with its parameters, marked as the dialect marks them) and returns its rows."""

    dialect: Dialect
    run: Callable[[str, Sequence[Any]], pl.DataFrame]

    def __call__(self, query: str, params: Sequence[Any] = ()) -> pl.DataFrame:
        return self.run(query, params)


def connection_reader(conn: psycopg.Connection) -> FrameReader:
    """Frames read on an open PostgreSQL connection (PostgreSQL's own $1 markers, each query in
    a savepoint of its own so that a refused one leaves the connection usable)."""

    def run(query: str, params: Sequence[Any]) -> pl.DataFrame:
        try:
            with conn.transaction(), psycopg.RawCursor(conn) as cur:
                # Strings as text (not untyped): a list is then a text[] that unnest() takes.
                cur.adapters.register_dumper(str, StrDumper)
                cur.execute(query, list(params))
                names = [c.name for c in cur.description or ()]
                rows = cur.fetchall()
        except psycopg.Error as exc:
            raise DatabaseError(one_line(exc)) from None
        # Instants as the engines' readers give them: UTC, to the microsecond.
        columns = {name: [row[i] for row in rows] for i, name in enumerate(names)}
        frame = pl.DataFrame(columns, strict=False)
        times = [n for n, t in frame.schema.items() if isinstance(t, pl.Datetime)]
        return frame.with_columns(pl.col(n).dt.convert_time_zone("UTC") for n in times)

    return FrameReader(POSTGRES, run)


def missing_relation(message: str) -> bool:
    """Whether a read failed because a table or view is not there, in either engine's words."""
    return "does not exist" in message or "TABLE_OR_VIEW_NOT_FOUND" in message


def postgres_reader(dsn: str) -> FrameReader:
    """Frames from the PostgreSQL database of `dsn`, through read_frame."""
    return FrameReader(POSTGRES, lambda query, params: read_frame(dsn, query, params))
