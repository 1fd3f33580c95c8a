"""The families advice and the database: what it reads (the written files' hint groups, the recall
campaigns of the history, the site's write stream and recall setup) and where it is kept (the
last advice of each pool, migration 026, which the Write placement dashboard shows)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import UTC, datetime

import polars as pl
import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from tapelens.analysis.families.advice import TABLE_SCHEMA, Advice, AdviceOptions, Progress, advise
from tapelens.analysis.families.export import named
from tapelens.analysis.recall.store.addresses import catalog_objects_sql
from tapelens.analysis.whatif.families import LEVELS
from tapelens.analysis.whatif.replay import WhatIfParams
from tapelens.analysis.whatif.store import (
    COPY_SCHEMA,
    UTC_US,
    copies_sql,
    media_schedule,
    read_copies,
    recall_setup,
    with_file_ids,
    write_stream,
)
from tapelens.dbt_runs import MARTS_SCHEMA
from tapelens.errors import DatabaseError, InputError
from tapelens.frames import FrameReader, copy_frame, one_line
from tapelens.media import fill_media_from_labels

# Reads of one requester belong to one campaign while each starts within this many seconds of
# the one before: the default of fct_hint_recall_groups (var recall_campaign_gap_s).
CAMPAIGN_GAP_S = 21_600

_GROUPS = sql.SQL(
    "select file_key as file_id, "
    + ", ".join(f"group_{k}" for k in range(LEVELS))
    + " from {}.fct_hinted_files where status = 'ok'"
)

_CAMPAIGNS = sql.SQL(
    """
with reads as (
    select coalesce(requester, 'unknown') as requester, started_at,
           coalesce(file_id, path) as file_id
    from tapelens.transfers
    where direction = 'read' and status = 'ok'
),
marked as (
    select requester, started_at, file_id,
           case when lag(started_at) over w is null
                  or started_at - lag(started_at) over w > {gap} * interval '1 second'
                then 1 else 0 end as starts
    from reads
    window w as (partition by requester order by started_at, file_id)
)
select distinct requester || ':' || sum(starts) over (
           partition by requester order by started_at, starts desc, file_id
           rows unbounded preceding) as campaign,
       file_id
from marked
"""
)


@dataclass(frozen=True)
class SiteAdviceOptions:
    """The catalog side of the advice: the write stream's window and migrations, the drives
    of the recalls (default: the site's)."""

    advice: AdviceOptions
    since_s: float | None = None
    until_s: float | None = None
    drives: dict[str, int] | None = None
    aggregate: bool | None = None


_GROUP_SCHEMA = {"file_id": pl.String()} | {f"group_{k}": pl.String() for k in range(LEVELS)}


def read_groups(conn: psycopg.Connection | None, read: FrameReader | None = None) -> pl.DataFrame:
    """Each written file's hint group at every level (the ok records of fct_hinted_files),
    through `read` (Arrow, columnar) when given, else through COPY on `conn`."""
    query = _GROUPS.format(sql.Identifier(MARTS_SCHEMA))
    try:
        if read is not None:
            return read(query.as_string(None)).cast(pl.Schema(_GROUP_SCHEMA))
        return copy_frame(_needed(conn), query, _GROUP_SCHEMA)
    except Exception as exc:  # the mart is missing: no hints loaded or marts not built
        if "fct_hinted_files" in str(exc):
            raise InputError(
                "no hint groups: load hints (tapelens ingest hints) and build the marts"
                " (tapelens marts build)"
            ) from None
        raise


def read_campaigns(
    conn: psycopg.Connection | None,
    gap_s: float = CAMPAIGN_GAP_S,
    read: FrameReader | None = None,
) -> pl.DataFrame:
    """The files each recall campaign of the history read: campaign, file_id; through `read`
    when given, else through COPY on `conn`."""
    query = _CAMPAIGNS.format(gap=sql.Literal(float(gap_s)))
    schema = {"campaign": pl.String(), "file_id": pl.String()}
    if read is not None:
        return read(query.as_string(None)).cast(pl.Schema(schema))
    return copy_frame(_needed(conn), query, schema)


def _needed(conn: psycopg.Connection | None) -> psycopg.Connection:
    if conn is None:
        raise TypeError("a connection or a frame reader is needed")
    return conn


def advise_from_catalog(
    conn: psycopg.Connection,
    params: WhatIfParams,
    options: SiteAdviceOptions,
    progress: Progress | None = None,
    read: FrameReader | None = None,
) -> Advice:
    """Advise tape families from the catalog, the hints and the history in the database.
    `read`: the database's frame reader (tapelens.frames.postgres_reader), through which the
    live copies and the hint groups, millions of rows on a large site, come as Arrow columns;
    without it they are read through COPY on `conn`."""
    say = progress or (lambda _m: None)
    say("reading the live copies, hint groups and recall campaigns")
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="tapelens-read") as reading:
        # Through a frame reader each read has a connection of its own: the hint groups and the
        # campaigns are read while the copies are, and the server scans them at the same time.
        later = None
        if read is not None:
            later = (
                reading.submit(read_groups, None, read),
                reading.submit(read_campaigns, None, CAMPAIGN_GAP_S, read),
            )
        copies = read_copies(conn) if read is None else _copies_from(read)
        stream = write_stream(copies)
        seconds = pl.col("arrived_at").dt.epoch("us").cast(pl.Float64) / 1e6
        if options.since_s is not None:
            stream = stream.filter(seconds >= options.since_s)
        if options.until_s is not None:
            stream = stream.filter(seconds < options.until_s)
        if stream.height == 0:
            raise InputError("no files were written in the chosen window")
        groups = read_groups(conn) if later is None else later[0].result()
        if groups.height == 0:
            raise InputError(
                "no written file has usable hints (tapelens report hints --by coverage)"
            )
        stream = stream.join(groups, on="file_id", how="left")
        if options.since_s is not None or options.until_s is not None:
            # Without a window every copy's file is in the stream, which the copies made: the
            # filter would copy 10,000,000 rows to keep them all.
            copies = copies.filter(pl.col("file_id").is_in(stream["file_id"].implode()))
        campaigns = read_campaigns(conn) if later is None else later[1].result()
    if campaigns.height == 0:
        raise InputError("no recalls in the history (tapelens ingest transfers) to price")
    aggregate = options.aggregate
    if aggregate is None:
        aggregate = bool(copies["aggregate_id"].is_not_null().any())
    params = replace(params, media=media_schedule(stream), aggregate=aggregate)
    present = set(copies["media_type"].unique().drop_nulls().to_list())
    recall = recall_setup(conn, options.drives, present | {m for m, _ in params.media})
    return advise(copies, stream, campaigns, recall, params, options.advice, say)


def _copies_from(read: FrameReader) -> pl.DataFrame:
    """Every live copy (COPY_SCHEMA; written_at as a UTC datetime) through a frame reader, in
    the order they come: the advice depends on no order of the copies."""
    frame = read(copies_sql(read.dialect, objects=catalog_objects_sql(read))).cast(
        pl.Schema({**COPY_SCHEMA, "written_at": UTC_US})
    )
    return fill_media_from_labels(with_file_ids(frame))


# Where the advice is kept (migration 026): per pool the options of its last advice, its table
# and its families.
RUNS = sql.Identifier("tapelens", "family_advice_runs")
TABLE = sql.Identifier("tapelens", "family_advice")
FAMILIES = sql.Identifier("tapelens", "advised_families")
FAMILY_SCHEMA: dict[str, pl.DataType] = {
    "pool": pl.String(),
    "family": pl.String(),
    "name": pl.String(),
    "hint_level": pl.Int64(),
    "hint_group": pl.String(),
    "files": pl.Int64(),
    "bytes": pl.Int64(),
    "tapes": pl.Int64(),
}
_FAMILY_LEVEL = r"^(\d+): "


def store_advice(
    conn: psycopg.Connection, advice: Advice, params: WhatIfParams, options: SiteAdviceOptions
) -> list[str]:
    """Keep the advice as the last of its pools, in one transaction: the previous advice of
    these pools is replaced, other pools' is left alone. The pools stored. Commits."""
    pools = sorted(str(p) for p in advice.table["pool"].unique().to_list())
    run = (
        list(options.advice.levels),
        params.write_drives,
        options.advice.open_families,
        options.advice.min_family_bytes,
        params.window_s,
        params.batch_bytes,
        _moment(options.since_s),
        _moment(options.until_s),
        None if options.drives is None else Jsonb(dict(sorted(options.drives.items()))),
    )
    try:
        with conn.transaction(), conn.cursor() as cur:
            cur.execute(sql.SQL("delete from {} where pool = any(%s)").format(RUNS), [pools])
            cur.executemany(
                sql.SQL(
                    "insert into {} (pool, levels, write_drives, open_families,"
                    " min_family_bytes, sort_window_s, batch_bytes, written_since,"
                    " written_until, recall_drives)"
                    " values (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
                ).format(RUNS),
                [(pool, *run) for pool in pools],
            )
            # A few rows per pool and family: plain inserts, in one round trip (pipeline).
            for table, rows in (
                (TABLE, advice.table.select(list(TABLE_SCHEMA))),
                (FAMILIES, family_rows(advice.families)),
            ):
                insert = sql.SQL("insert into {} ({}) values ({})").format(
                    table,
                    sql.SQL(", ").join(map(sql.Identifier, rows.columns)),
                    sql.SQL(", ").join([sql.Placeholder()] * rows.width),
                )
                cur.executemany(insert, rows.rows())
        conn.commit()
    except psycopg.Error as exc:
        raise DatabaseError(one_line(exc)) from None
    return pools


def family_rows(families: pl.DataFrame) -> pl.DataFrame:
    """The advised families as they are kept: each with the name the exports give it, its own
    hint level and the hint values it takes in (a family may be of a broader level than its
    pool's advice, where a group was too small to fill tapes of its own)."""
    level = pl.col("family").str.extract(_FAMILY_LEVEL, 1).cast(pl.Int64)
    return named(families).select(
        "pool",
        "family",
        "name",
        level.alias("hint_level"),
        pl.when(level.is_not_null())
        .then(pl.col("family").str.replace(_FAMILY_LEVEL, ""))
        .alias("hint_group"),
        "files",
        "bytes",
        "tapes",
    )


def stored_advice(conn: psycopg.Connection) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The advice kept: its table (TABLE_SCHEMA) and its families (FAMILY_SCHEMA), every pool's
    last, in pool and placement (family) order."""
    table = copy_frame(conn, _select(TABLE, TABLE_SCHEMA, "pool, level nulls first"), TABLE_SCHEMA)
    families = copy_frame(conn, _select(FAMILIES, FAMILY_SCHEMA, "pool, family"), FAMILY_SCHEMA)
    return table, families


def _select(table: sql.Identifier, schema: dict[str, pl.DataType], order: str) -> sql.Composed:
    # COPY writes a boolean as t or f, which Polars does not read as one: as text, true or false.
    columns = [
        sql.SQL("{name}::text as {name}" if kind == pl.Boolean() else "{name}").format(
            name=sql.Identifier(name)
        )
        for name, kind in schema.items()
    ]
    return sql.SQL("select {} from {} order by {}").format(
        sql.SQL(", ").join(columns), table, sql.SQL(order)
    )


def _moment(seconds: float | None) -> datetime | None:
    return None if seconds is None else datetime.fromtimestamp(seconds, UTC)
