"""The dashboards' copy of a Spark build: its aggregate marts, and the small slices of the
canonical tables the dashboard views read, copied into the PostgreSQL database Superset reads.

Superset keeps reading PostgreSQL (the views of dashboards/views/*.sql, their datasets and
charts are the same on either engine); after `marts build --engine spark` this module replaces
that database's copy in one transaction: the marts of one row per dataset, tape, pool, day,
month, bucket or hint group whole, and of the canonical tables only what the views show (tapes,
drives, mounts, failed transfers with the copies of their paths, the latest week's reads and
the reads that carry a queue time). The catalog and the per-copy and per-read marts stay on
Spark. Rows cross from Spark to the driver in Arrow and into PostgreSQL by COPY; a failure
anywhere rolls the transaction back, leaving the previous copy. Each copy is recorded in
`tapelens.dashboard_publications` (migration 027) with the Delta version and commit time of
every table it read, so that the dashboards can say which build they show.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import polars as pl
import psycopg
from psycopg import sql

from tapelens.db import connection, redact
from tapelens.dbt_runs import MARTS_SCHEMA
from tapelens.errors import DatabaseError
from tapelens.frames import missing_relation, one_line
from tapelens.ingest.load.copy_text import copy_text
from tapelens.spark.read import in_utc, spark_frame, spark_sql

CANONICAL_SCHEMA = "tapelens"
RECORD = "tapelens.dashboard_publications"

# The marts the dashboards read whose rows are per dataset, tape, pool, day, month or hint
# group: copied whole. fct_duplicate_copies is per file, but only per file with more than one
# live copy (lost-acknowledgement retries), a small share of the catalog. The gap histogram
# and the read rate charts read agg_gap_histogram, agg_read_rates_daily and
# agg_read_rates_by_gap, per day and bucket, in place of the copies and reads themselves.
AGGREGATE_MARTS = (
    "agg_gap_by_type_period",
    "agg_gap_histogram",
    "agg_read_rates_by_gap",
    "agg_read_rates_daily",
    "dim_datasets",
    "fct_dataset_placement_cost",
    "fct_dataset_tape_gaps",
    "fct_drive_usage",
    "fct_duplicate_copies",
    "fct_hint_coverage",
    "fct_hint_groups",
    "fct_hint_recall_groups",
    "fct_mounts_daily",
    "fct_pool_capacity",
    "fct_tape_occupancy",
)

# Marts with a row per copy or per read: they grow with the catalog and the history, and are
# not copied; no dashboard reads them (their charts read the aggregates above).
PER_ROW_MARTS = ("fct_file_gaps", "fct_transfer_rates")

# The rows of the canonical tables the views of dashboards/views/*.sql read, as Spark SQL:
# - tapes, drives: one row per cartridge and per drive (every view joins them);
# - mounts: one per mount (mount_events, the Drives and media dashboard's single mounts, and
#   the mount covering a failed read that names no drive);
# - transfers: failed ones (failed_transfers), reads that carry a queue time (recall_latency)
#   and the reads of the latest 7 days of the data (recent_reads, whose window is
#   recomputed here the way the view computes it, in UTC as the session runs);
# - tape_files: only the copies of the paths of failed transfers (failed_transfers takes the
#   newest copy of a path whose log names no volume).
_LATEST_WEEK = (
    "started_at >= (select date_trunc('DAY', max(started_at)) + interval 1 day - interval 7 days"
    " from tapelens.transfers where direction = 'read')"
)
CANONICAL_SLICES: dict[str, str] = {
    "tapes": "select * from tapelens.tapes",
    "drives": "select * from tapelens.drives",
    "mounts": "select * from tapelens.mounts",
    "transfers": (
        "select * from tapelens.transfers where status = 'failed'"
        " or (direction = 'read' and (queued_s >= 0 or " + _LATEST_WEEK + "))"
    ),
    "tape_files": (
        "select * from tapelens.tape_files where path in"
        " (select path from tapelens.transfers where status = 'failed' and path is not null)"
    ),
}
# Columns Spark adds to its tables (the partition hash of the volume, the load's process).
_SPARK_ONLY = ("volume_bucket",)


@dataclass(frozen=True)
class Copied:
    """One relation copied: its PostgreSQL name, rows, and the Delta version it was read at."""

    relation: str
    rows: int
    version: int | None
    committed_at: datetime | None


@dataclass(frozen=True)
class Publication:
    """What one publish copied, and the newest commit among the tables it read."""

    copied: tuple[Copied, ...]
    built_at: datetime | None
    seconds: float

    @property
    def rows(self) -> int:
        return sum(c.rows for c in self.copied)


class PublishError(DatabaseError):
    """The Spark build cannot be copied into the dashboards' database; the previous copy stays."""


def publish(
    spark: Any,
    dsn: str,
    warehouse: str,
    progress: Callable[[str], None] = lambda line: None,
) -> Publication:
    """Replace the dashboards' copy in the database at `dsn` with the Spark warehouse's
    aggregate marts and canonical slices, in one transaction; record it in RECORD."""
    started = time.monotonic()
    copied: list[Copied] = []
    shown = redact(dsn)
    with connection(dsn) as conn:
        _refuse_a_postgres_catalog(conn, shown)
        try:
            with conn.transaction():
                for name in AGGREGATE_MARTS:
                    copied.append(_copy_mart(spark, conn, name, warehouse, progress))
                for table, query in CANONICAL_SLICES.items():
                    copied.append(_copy_slice(spark, conn, table, query, warehouse, progress))
                built_at = max((c.committed_at for c in copied if c.committed_at), default=None)
                _record(conn, warehouse, built_at, copied)
        except psycopg.Error as exc:
            raise PublishError(
                f"cannot publish the Spark marts into {shown}: {one_line(exc)}"
                " (the previous copy is unchanged)"
            ) from None
    seconds = time.monotonic() - started
    return Publication(tuple(copied), built_at, seconds)


def _refuse_a_postgres_catalog(conn: psycopg.Connection, shown: str) -> None:
    """A database whose catalog was loaded on PostgreSQL is not a copy: publishing would
    replace its own tables."""
    loaded = conn.execute(f"select exists (select 1 from {CANONICAL_SCHEMA}.ingest_runs)")
    row = loaded.fetchone()
    if row is not None and row[0]:
        raise PublishError(
            f"the database at {shown} holds a catalog loaded on PostgreSQL; publish the Spark"
            " marts into a database of their own (--dsn)"
        )
    conn.commit()


def _read(
    spark: Any, relation: str, query: str, warehouse: str
) -> tuple[pl.DataFrame, int | None, datetime | None]:
    """The rows of `query` over `relation` on Spark, with the relation's Delta version and
    commit time; a missing table names the command that builds it."""
    try:
        version, committed_at = _version(spark, relation)
        frame = spark_frame(spark, query)
    except DatabaseError as exc:
        if missing_relation(str(exc)):
            raise PublishError(
                f"cannot publish: {relation} is not in the Spark warehouse at {warehouse};"
                " run: tapelens marts build --engine spark (the previous copy is unchanged)"
            ) from None
        raise PublishError(
            f"cannot publish: reading {relation} on Spark: {exc} (the previous copy is unchanged)"
        ) from None
    return frame.drop([c for c in _SPARK_ONLY if c in frame.columns]), version, committed_at


def _version(spark: Any, relation: str) -> tuple[int | None, datetime | None]:
    """The Delta version and commit time of `relation` as read now."""
    # Only the two columns: the history's others (maps of the operation's parameters and
    # metrics) need not cross to the driver.
    last = spark_sql(spark, f"describe history {relation} limit 1").select("version", "timestamp")
    history = in_utc(_from_arrow(last.toArrow()))
    if history.height == 0:
        return None, None
    return int(history["version"][0]), history["timestamp"][0]


def _from_arrow(table: Any) -> pl.DataFrame:
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    return frame


def _copy_mart(
    spark: Any,
    conn: psycopg.Connection,
    name: str,
    warehouse: str,
    progress: Callable[[str], None],
) -> Copied:
    """A mart read whole from Spark, its PostgreSQL table made again with the same columns."""
    relation = f"{MARTS_SCHEMA}.{name}"
    frame, version, committed_at = _read(spark, relation, f"select * from {relation}", warehouse)
    table = sql.Identifier(MARTS_SCHEMA, name)
    columns = sql.SQL(", ").join(
        sql.SQL("{} {}").format(sql.Identifier(c), sql.SQL(_pg_type(t)))
        for c, t in frame.schema.items()
    )
    conn.execute(sql.SQL("create schema if not exists {}").format(sql.Identifier(MARTS_SCHEMA)))
    conn.execute(sql.SQL("drop table if exists {}").format(table))
    conn.execute(sql.SQL("create table {} ({})").format(table, columns))
    _copy_in(conn, table, frame)
    conn.execute(sql.SQL("analyze {}").format(table))
    progress(f"{relation}: {frame.height:,} rows")
    return Copied(relation, frame.height, version, committed_at)


def _copy_slice(
    spark: Any,
    conn: psycopg.Connection,
    table: str,
    query: str,
    warehouse: str,
    progress: Callable[[str], None],
) -> Copied:
    """The rows of a canonical table the views read, in place of the previous copy's."""
    relation = f"{CANONICAL_SCHEMA}.{table}"
    frame, version, committed_at = _read(spark, relation, query, warehouse)
    kept = [
        str(r[0])
        for r in conn.execute(
            "select column_name from information_schema.columns"
            " where table_schema = %s and table_name = %s order by ordinal_position",
            [CANONICAL_SCHEMA, table],
        ).fetchall()
    ]
    frame = frame.select([c for c in kept if c in frame.columns])
    target = sql.Identifier(CANONICAL_SCHEMA, table)
    conn.execute(sql.SQL("delete from {}").format(target))
    _copy_in(conn, target, frame)
    progress(f"{relation}: {frame.height:,} rows the dashboard views read")
    return Copied(relation, frame.height, version, committed_at)


def _copy_in(conn: psycopg.Connection, table: sql.Composable, frame: pl.DataFrame) -> None:
    """The frame's rows into `table` by COPY, in its text format."""
    if frame.height == 0:
        return
    statement = sql.SQL("copy {} ({}) from stdin").format(
        table, sql.SQL(", ").join(sql.Identifier(c) for c in frame.columns)
    )
    with conn.cursor() as cur, cur.copy(statement) as copy:
        copy.write(copy_text(_as_text_ready(frame)))


def _as_text_ready(frame: pl.DataFrame) -> pl.DataFrame:
    """Instants in UTC ISO form with their offset, as COPY reads them whatever the server's
    time zone; lists as PostgreSQL array literals."""
    fixed: list[pl.Expr] = []
    for name, dtype in frame.schema.items():
        if isinstance(dtype, pl.Datetime):
            zoned = pl.col(name)
            if dtype.time_zone is None:
                zoned = zoned.dt.replace_time_zone("UTC")
            fixed.append(zoned.dt.convert_time_zone("UTC").dt.strftime("%Y-%m-%d %H:%M:%S%.6f+00"))
        elif isinstance(dtype, pl.List):
            fixed.append(
                pl.format("{{{}}}", pl.col(name).cast(pl.List(pl.String)).list.join(",")).alias(
                    name
                )
            )
    return frame.with_columns(fixed) if fixed else frame


def _pg_type(dtype: pl.DataType) -> str:
    """The PostgreSQL type of a column Spark handed over in Arrow."""
    if isinstance(dtype, pl.Decimal):
        return f"numeric({dtype.precision}, {dtype.scale})" if dtype.precision else "numeric"
    if isinstance(dtype, pl.Datetime):
        return "timestamptz" if dtype.time_zone else "timestamp"
    if isinstance(dtype, pl.List):
        return _pg_type(dtype.inner) + "[]"  # type: ignore[arg-type]
    for kind, name in _PG_TYPES:
        if dtype == kind:
            return name
    raise PublishError(f"cannot publish a column of type {dtype} into PostgreSQL")


_PG_TYPES: tuple[tuple[type[pl.DataType], str], ...] = (
    (pl.Int8, "smallint"),
    (pl.Int16, "smallint"),
    (pl.Int32, "integer"),
    (pl.Int64, "bigint"),
    (pl.Float32, "real"),
    (pl.Float64, "double precision"),
    (pl.Boolean, "boolean"),
    (pl.String, "text"),
    (pl.Date, "date"),
    (pl.Null, "text"),
)


def _record(
    conn: psycopg.Connection,
    warehouse: str,
    built_at: datetime | None,
    copied: list[Copied],
) -> None:
    tables = {
        c.relation: {
            "rows": c.rows,
            "delta_version": c.version,
            "committed_at": c.committed_at.isoformat() if c.committed_at else None,
        }
        for c in copied
    }
    conn.execute(
        f"insert into {RECORD} (warehouse, built_at, tables) values (%s, %s, %s)",
        [warehouse, built_at, json.dumps(tables, sort_keys=True)],
    )


def last_publication(conn: psycopg.Connection) -> tuple[datetime, datetime | None] | None:
    """When the dashboards' copy was last published, and the Spark build it came from (the
    newest commit among the tables it read); None when none was."""
    row = conn.execute(
        f"select published_at, built_at from {RECORD} order by publication_id desc limit 1"
    ).fetchone()
    return None if row is None else (row[0], row[1])
