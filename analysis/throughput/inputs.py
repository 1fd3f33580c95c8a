"""Database reads the throughput model needs: observed reads, mounts, live copies, drives.

The observed reads come from tapelens_marts.fct_transfer_rates (built by dbt), read
defensively: the columns the mart has are mapped to the calibration's names, those it lacks are
left out for the pure code to derive or estimate. Every read that knows its volume and position
gets its byte address on the tape from the catalog (start_bytes). Large results travel through
COPY ... TO STDOUT, far faster than row fetches.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import polars as pl
import psycopg
from psycopg import sql

from tapelens.catalog import file_identity
from tapelens.dbt_runs import MARTS_SCHEMA
from tapelens.errors import DatabaseError
from tapelens.frames import copy_frame, one_line
from tapelens.media import fill_media_from_labels

READS_RELATION = (MARTS_SCHEMA, "fct_transfer_rates")
UTC = pl.Datetime("us", "UTC")

# Canonical name -> names the mart may use for it, in order of preference.
READ_COLUMNS: dict[str, tuple[str, ...]] = {
    "started_at": ("started_at",),
    "size_bytes": ("size_bytes",),
    "duration_s": ("duration_s",),
    "media_type": ("media_type",),
    "volume": ("volume",),
    "position": ("position",),
    "offset_bytes": ("offset_bytes",),
    "gap": ("read_posdiff", "gap", "posdiff"),
    "gap_bytes": ("gap_bytes", "read_gap_bytes", "skipped_bytes"),
    "locate_s": ("locate_s",),
    "session_id": ("session_id", "mount_id"),
}
REQUIRED_READ_COLUMNS = ("started_at", "size_bytes", "duration_s")
_TIMES = {"started_at", "requested_at", "mounted_at", "dismounted_at", "data_from", "data_until"}


def read_columns(conn: psycopg.Connection) -> dict[str, str]:
    """Canonical read column -> the mart's column, for the columns the mart has."""
    schema, table = READS_RELATION
    have = {
        r[0]
        for r in fetch(
            conn,
            "select column_name from information_schema.columns"
            " where table_schema = %s and table_name = %s",
            [schema, table],
        )
    }
    if not have:
        raise DatabaseError(
            f"{schema}.{table} does not exist: build the models first (tapelens marts build)"
        )
    found = {}
    for name, aliases in READ_COLUMNS.items():
        match = next((a for a in aliases if a in have), None)
        if match:
            found[name] = match
    missing = [c for c in REQUIRED_READ_COLUMNS if c not in found]
    if "media_type" not in found and "volume" not in found:
        missing.append("media_type or volume")
    if missing:
        raise DatabaseError(f"{schema}.{table} lacks column(s) {', '.join(missing)}")
    return found


def _reads_query(
    cols: dict[str, str], since: datetime | None, until: datetime | None
) -> sql.Composable:
    schema, table = READS_RELATION
    items: list[sql.Composable] = []
    for name, src in cols.items():
        column = sql.SQL("r.{}").format(sql.Identifier(src))
        items.append(sql.SQL("{} as {}").format(_epoch(column, name), sql.Identifier(name)))
    joins: sql.Composable = sql.SQL("")
    if "media_type" not in cols:
        items.append(sql.SQL("coalesce(t.media_type, 'unknown') as media_type"))
        joins += sql.SQL(" left join tapelens.tapes as t on t.volume = r.{}").format(
            sql.Identifier(cols["volume"])
        )
    if "volume" in cols and "position" in cols:
        offset = (
            sql.SQL("coalesce(r.{}, 0)").format(sql.Identifier(cols["offset_bytes"]))
            if "offset_bytes" in cols
            else sql.SQL("0")
        )
        items.append(sql.SQL("a.object_start + {} as start_bytes").format(offset))
        joins += sql.SQL(
            " left join addressed as a on a.volume = r.{} and a.position = r.{}"
        ).format(sql.Identifier(cols["volume"]), sql.Identifier(cols["position"]))
    where: list[sql.Composable] = [sql.SQL("r.{} > 0").format(sql.Identifier(cols["duration_s"]))]
    started = sql.Identifier(cols["started_at"])
    if since is not None:
        where.append(sql.SQL("r.{} >= {}").format(started, sql.Literal(since)))
    if until is not None:
        where.append(sql.SQL("r.{} < {}").format(started, sql.Literal(until)))
    body = sql.SQL("select {} from {}.{} as r{} where {}").format(
        sql.SQL(", ").join(items),
        sql.Identifier(schema),
        sql.Identifier(table),
        joins,
        sql.SQL(" and ").join(where),
    )
    if "volume" in cols and "position" in cols:
        volumes = sql.SQL("select distinct {} from {}.{}").format(
            sql.Identifier(cols["volume"]), sql.Identifier(schema), sql.Identifier(table)
        )
        return sql.SQL("with {} {}").format(_addressed(volumes), body)
    return body


def _addressed(volumes: sql.Composable) -> sql.Composed:
    """CTEs `addressed` (volume, position, object_start): the byte address of every tape object
    of the given volumes, the sizes of the objects before it summed (removed copies included:
    their bytes stay on the tape until it is repacked)."""
    return sql.SQL(
        """objects as (
            select volume, position, sum(size_bytes)::numeric as object_bytes
            from tapelens.tape_files
            where volume in ({})
            group by volume, position
        ),
        addressed as (
            select volume, position,
                   coalesce(sum(object_bytes) over (
                       partition by volume order by position
                       rows between unbounded preceding and 1 preceding), 0)::bigint
                       as object_start
            from objects
        )"""
    ).format(volumes)


def _epoch(column: sql.Composable, name: str) -> sql.Composable:
    if name in _TIMES:
        return sql.SQL("extract(epoch from {})").format(column)
    return column


def read_observed_reads(
    conn: psycopg.Connection,
    since: datetime | None = None,
    until: datetime | None = None,
    media: Sequence[str] | None = None,
) -> pl.DataFrame:
    """Observed reads in the calibration's columns (see analysis/throughput/calibrate.py)."""
    cols = read_columns(conn)
    schema: dict[str, Any] = {
        "size_bytes": pl.Int64,
        "duration_s": pl.Float64,
        "media_type": pl.String,
        "volume": pl.String,
        "position": pl.Int64,
        "offset_bytes": pl.Int64,
        "gap": pl.Int64,
        "gap_bytes": pl.Int64,
        "locate_s": pl.Float64,
        "session_id": pl.String,
        "start_bytes": pl.Int64,
    }
    frame = fill_media_from_labels(_copy_frame(conn, _reads_query(cols, since, until), schema))
    if media:
        frame = frame.filter(pl.col("media_type").is_in(list(media)))
    return frame


def read_mounts(
    conn: psycopg.Connection, since: datetime | None = None, until: datetime | None = None
) -> pl.DataFrame:
    """Read (and unknown-purpose) mounts: volume, media_type, requested/mounted/dismounted."""
    where: list[sql.Composable] = [sql.SQL("m.purpose <> 'write'")]
    if since is not None:
        where.append(sql.SQL("m.mounted_at >= {}").format(sql.Literal(since)))
    if until is not None:
        where.append(sql.SQL("m.mounted_at < {}").format(sql.Literal(until)))
    query = sql.SQL(
        """select m.volume, coalesce(t.media_type, 'unknown') as media_type,
                  extract(epoch from m.requested_at) as requested_at,
                  extract(epoch from m.mounted_at) as mounted_at,
                  extract(epoch from m.dismounted_at) as dismounted_at
           from tapelens.mounts as m left join tapelens.tapes as t on t.volume = m.volume
           where {}"""
    ).format(sql.SQL(" and ").join(where))
    return fill_media_from_labels(
        _copy_frame(conn, query, {"volume": pl.String, "media_type": pl.String})
    )


def read_live_files(
    conn: psycopg.Connection, dataset: str | None = None, dataset_type: str | None = None
) -> pl.DataFrame:
    """Live copies of the chosen datasets with their byte address on the tape (start_bytes) and
    the media type of their tape."""
    where: list[sql.Composable] = []
    if dataset is not None:
        where.append(sql.SQL("dataset = {}").format(sql.Literal(dataset)))
    if dataset_type is not None:
        where.append(sql.SQL("dataset_type = {}").format(sql.Literal(dataset_type)))
    return _live_copies(conn, where)


def read_live_copies(
    conn: psycopg.Connection,
    *,
    datasets: Sequence[str] = (),
    volumes: Sequence[str] = (),
) -> pl.DataFrame:
    """Live copies of the given datasets and on the given volumes (either), with byte address,
    media type, tape state and checksum: what repack and dedup decisions need."""
    wanted = sql.SQL("(dataset = any({}) or volume = any({}))").format(
        sql.Literal(list(datasets)), sql.Literal(list(volumes))
    )
    return _live_copies(conn, [wanted])


def _live_copies(conn: psycopg.Connection, where: list[sql.Composable]) -> pl.DataFrame:
    conditions = sql.SQL(" and ").join([sql.SQL("removed_at is null"), *where])
    query = sql.SQL(
        """with wanted as (
               select source, copy_id, path, dataset, dataset_type,
                      {} as file_id, volume, position,
                      offset_bytes, aggregate_id, size_bytes, copy_no, written_at, checksum
               from tapelens.tape_files where {}
           ), {}
           select w.source, w.copy_id, w.path, w.dataset, w.dataset_type, w.file_id, w.volume,
                  w.position, w.offset_bytes, w.aggregate_id, w.size_bytes, w.copy_no,
                  extract(epoch from w.written_at) as written_at, w.checksum,
                  a.object_start + coalesce(w.offset_bytes, 0) as start_bytes,
                  coalesce(t.media_type, 'unknown') as media_type,
                  coalesce(t.state, 'unknown') as tape_state
           from wanted as w
           left join addressed as a on a.volume = w.volume and a.position = w.position
           left join tapelens.tapes as t on t.volume = w.volume"""
    ).format(
        sql.SQL(file_identity()),
        conditions,
        _addressed(sql.SQL("select distinct volume from wanted")),
    )
    schema = {
        "source": pl.String,
        "copy_id": pl.String,
        "path": pl.String,
        "dataset": pl.String,
        "dataset_type": pl.String,
        "file_id": pl.String,
        "volume": pl.String,
        "position": pl.Int64,
        "offset_bytes": pl.Int64,
        "aggregate_id": pl.String,
        "size_bytes": pl.Int64,
        "copy_no": pl.Int32,
        "written_at": UTC,
        "checksum": pl.String,
        "start_bytes": pl.Int64,
        "media_type": pl.String,
        "tape_state": pl.String,
    }
    return fill_media_from_labels(_copy_frame(conn, query, schema))


def read_drives(conn: psycopg.Connection) -> dict[str, int]:
    """Online drives per drive type, from tapelens.drives (empty when the table is)."""
    rows = fetch(
        conn,
        "select drive_type, count(*) from tapelens.drives where state = 'online' group by 1",
    )
    return {str(r[0]): int(r[1]) for r in rows}


def _copy_frame(
    conn: psycopg.Connection, query: sql.Composable, schema: dict[str, Any]
) -> pl.DataFrame:
    """The query's rows (tapelens.frames.copy_frame); its time columns become UTC datetimes."""
    frame = copy_frame(conn, query, None, epoch=sorted(_TIMES | {"written_at"}))
    return frame.with_columns(
        pl.col(c).cast(t)
        for c, t in schema.items()
        if c in frame.columns and c not in _TIMES and c != "written_at"
    )


def fetch(conn: psycopg.Connection, query: Any, params: Any = None) -> list[tuple[Any, ...]]:
    try:
        return conn.execute(query, params).fetchall()
    except psycopg.Error as exc:
        raise DatabaseError(one_line(exc)) from None
