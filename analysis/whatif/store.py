"""The recorded write stream and the actual placement, read from the catalog.

The write stream is each file's first live copy: when it was written (`written_at`), its size,
dataset, pool (experiment) and path. What `written_at` means depends on the catalog: for HPSS it
is the create time, when the file reached the disk cache, which is what a replay wants; for TSM,
CTA and Enstore it is when the copy was written to tape, so the replay sees the arrivals shifted
by the site's own migration delay. The media in use over time is read from the same copies.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import numpy as np
import polars as pl
import psycopg
from psycopg import sql

from tapelens.analysis.recall.store.addresses import catalog_objects_sql, tape_objects_sql
from tapelens.analysis.throughput import store as params_store
from tapelens.analysis.throughput.model import ModelParams
from tapelens.analysis.whatif.replay import Progress, WhatIfParams, arrival_note, compare
from tapelens.analysis.whatif.stats import RecallSetup, file_gaps
from tapelens.errors import InputError
from tapelens.frames import POSTGRES, Dialect, FrameReader, copy_frame
from tapelens.media import BY_NAME as MEDIA
from tapelens.media import fill_media_from_labels

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

UTC_US = pl.Datetime("us", "UTC")
DEFAULT_MEDIA = "LTO-8"

COPY_SCHEMA: dict[str, pl.DataType] = {
    "file_id": pl.String(),
    "path": pl.String(),
    "dataset": pl.String(),
    "dataset_type": pl.String(),
    "experiment": pl.String(),
    "size_bytes": pl.Int64(),
    "volume": pl.String(),
    "position": pl.Int64(),
    "offset_bytes": pl.Int64(),
    "aggregate_id": pl.String(),
    "copy_no": pl.Int32(),
    "written_at": pl.Float64(),
    "start_bytes": pl.Int64(),
    "media_type": pl.String(),
}

# Live copies on tapes not emptied by a repack, with the byte address of their tape object
# (the marts' own definition, macros/tape_objects.sql: the sizes of the objects before it on the
# tape, removed copies included, for their bytes stay on the tape until it is repacked). SQL
# both engines run; {written_at} is how the instant leaves the database. A copy's file id is
# its stored one, null where none is stored: the path stands for it then (catalog.
# file_identity), filled in after the read (with_file_ids) so that a catalog of paths alone
# does not send every path twice.
_COPIES = """
with addressed as ({objects})
select f.file_id, f.path, f.dataset, f.dataset_type, f.experiment,
       f.size_bytes, f.volume,
       f.position, f.offset_bytes, f.aggregate_id, f.copy_no,
       {written_at} as written_at,
       cast(a.object_start + coalesce(f.offset_bytes, 0) as bigint) as start_bytes,
       coalesce(t.media_type, 'unknown') as media_type
from tapelens.tape_files as f
left join addressed as a on a.volume = f.volume and a.position = f.position
left join tapelens.tapes as t on t.volume = f.volume
where f.removed_at is null and coalesce(t.state, 'full') <> 'repacked'
"""
# The copies in one order, whatever order an engine gave them in (and sorted here, for
# PostgreSQL's ORDER BY follows the database's collation where Spark compares bytes): the
# replay's sums then add in the same order on either engine.
COPY_ORDER = ["volume", "position", "offset_bytes", "file_id", "copy_no"]


def copies_sql(
    dialect: Dialect, written_at: str = "f.written_at", objects: str | None = None
) -> str:
    """The query of every live copy (COPY_SCHEMA) in `dialect`'s SQL. `objects`: the query of
    the tape objects' byte addresses (volume, position, object_start; addresses.
    catalog_objects_sql), by default every tape of the catalog summed."""
    if objects is None:
        summed = tape_objects_sql("tapelens.tape_files", spark=dialect.name == "spark")
        objects = f"select volume, position, start_bytes as object_start from ({summed}) as o"
    return _COPIES.format(objects=objects, written_at=written_at)


def read_copies(conn: psycopg.Connection) -> pl.DataFrame:
    """Every live copy (COPY_SCHEMA; written_at as a UTC datetime), through COPY."""
    query = sql.SQL(copies_sql(POSTGRES, "extract(epoch from f.written_at)"))
    frame = copy_frame(conn, query, COPY_SCHEMA, epoch=("written_at",))
    return fill_media_from_labels(with_file_ids(frame))


def read_copies_from(read: FrameReader) -> pl.DataFrame:
    """Every live copy (COPY_SCHEMA; written_at as a UTC datetime), on either engine."""
    frame = read(copies_sql(read.dialect, objects=catalog_objects_sql(read)))
    typed = with_file_ids(frame.cast(pl.Schema({**COPY_SCHEMA, "written_at": UTC_US})))
    return fill_media_from_labels(typed.sort(COPY_ORDER))


def with_file_ids(copies: pl.DataFrame) -> pl.DataFrame:
    """The copies of copies_sql with each one's file id (catalog.file_identity): the stored
    id, else the path. Where no copy has a stored id (an HPSS catalog) the path column itself
    is the id: filling each null would copy every path, a gigabyte at 10,000,000 copies."""
    if copies["file_id"].null_count() == copies.height:
        return copies.with_columns(pl.col("path").alias("file_id"))
    return copies.with_columns(pl.col("file_id").fill_null(pl.col("path")))


def write_stream(copies: pl.DataFrame) -> pl.DataFrame:
    """One row per file: its first copy (earliest written_at, then lowest copy_no), as the
    replay's input: path, dataset, dataset_type, pool, size_bytes, arrived_at, media_type; in
    file id order."""
    columns = ["file_id", "path", "dataset", "dataset_type", "experiment", "size_bytes"]
    return copies.select(*columns, "written_at", "media_type")[first_copies(copies)].rename(
        {"experiment": "pool", "written_at": "arrived_at"}
    )


def first_copies(copies: pl.DataFrame) -> pl.Series:
    """The row of each file's first copy (earliest written_at, then lowest copy_no), in file
    id order. Most files have one copy: only the copies that share their id's hash with another
    are sorted by time, and the rest by the id alone: on 10,045,215 copies the stream took
    7.3 s this way and 10.0 s sorting every copy by id, time and copy number."""
    shared = copies["file_id"].hash().is_duplicated().to_numpy()
    keep = np.ones(copies.height, dtype=bool)
    if shared.any():
        rows = np.flatnonzero(shared)
        first = (
            copies.select("file_id", "written_at", "copy_no")[rows]
            .with_columns(pl.Series("_row", rows))
            .sort("file_id", "written_at", "copy_no")
            .unique("file_id", keep="first", maintain_order=True)["_row"]
            .to_numpy()
        )
        keep[rows] = False
        keep[first] = True
    # Each kept copy is of a file of its own, so the id alone orders them as a whole.
    order = copies.select(pl.arg_sort_by("file_id")).to_series().to_numpy()
    return pl.Series(order[keep[order]])


def media_schedule(stream: pl.DataFrame) -> tuple[tuple[str, float], ...]:
    """The media written over time, from where the files' first copies are: each media type
    takes over in the first month in which it holds most of the bytes first written that month,
    and an earlier type never comes back (copies a repack moved onto newer media stay a
    minority of their month). ((media type, from epoch s), ...); the site's types only."""
    known = stream.filter(pl.col("media_type").is_in(list(MEDIA)))
    if known.height == 0:
        return ((DEFAULT_MEDIA, 0.0),)
    month = pl.col("arrived_at").dt.truncate("1mo")
    majority = (
        known.group_by(month.alias("month"), "media_type")
        .agg(pl.col("size_bytes").sum().alias("bytes"))
        .sort("month", "bytes", "media_type", descending=[False, True, False])
        .unique("month", keep="first", maintain_order=True)
    )
    schedule: list[tuple[str, float]] = []
    seen: set[str] = set()
    for when, media in majority.select("month", "media_type").iter_rows():
        if media in seen:
            continue
        seen.add(media)
        start = 0.0 if not schedule else _epoch(when)
        schedule.append((media, start))
    return tuple(schedule)


def _epoch(when: datetime) -> float:
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


@dataclass(frozen=True)
class CatalogOptions:
    """What to replay from the catalog and how to report it (times in epoch s, UTC)."""

    since_s: float | None = None
    until_s: float | None = None
    dataset_types: tuple[str, ...] = ()
    split_at_s: float | None = None
    media: str | None = None  # every replayed tape of this media (default: as the site wrote)
    aggregate: bool | None = None  # default: when the catalog holds aggregates
    drives: Mapping[str, int] | None = None  # for the recall prediction (default: the site's)
    recall: bool = True


def _window(frame: pl.DataFrame, column: str, options: CatalogOptions) -> pl.DataFrame:
    seconds = pl.col(column).dt.epoch("us").cast(pl.Float64) / 1e6
    if options.since_s is not None:
        frame = frame.filter(seconds >= options.since_s)
    if options.until_s is not None:
        frame = frame.filter(seconds < options.until_s)
    return frame


@dataclass(frozen=True)
class SiteModel:
    """What the site's recalls are predicted with: the model parameters per media type, the
    drive types that read each, and the drives online per type."""

    params: Mapping[str, ModelParams]
    readers: Mapping[str, tuple[str, ...]]
    online: Mapping[str, int]


def site_model(conn: psycopg.Connection) -> SiteModel:
    """The site's model on PostgreSQL: the calibrated parameters where a fit is current (else
    the media catalog's), the media catalog's readers and the inventory's online drives."""
    return SiteModel(
        {m: p for m, (p, _) in params_store.params_in_use(conn).items()},
        params_store.readable_by(conn),
        params_store.read_drives(conn),
    )


def site_model_on_spark(spark: SparkSession) -> SiteModel:
    """The site's model on the Spark tables: the media catalog's parameters and readers
    (fits are stored on PostgreSQL, where `throughput calibrate` runs) and the online drives
    of tapelens.drives."""
    from tapelens.analysis.recall.store.on_spark import model_inputs
    from tapelens.spark.read import spark_frame

    params, readers = model_inputs(spark)
    online = spark_frame(
        spark,
        "select drive_type, count(*) as drives from tapelens.drives where state = 'online'"
        " group by drive_type order by drive_type",
    )
    return SiteModel(params, readers, {str(t): int(n) for t, n in online.iter_rows()})


def _recall_setup(model: SiteModel, options: CatalogOptions, media: set[str]) -> RecallSetup:
    drives = dict(options.drives) if options.drives else dict(model.online)
    if not drives:
        for name in sorted(media):
            for drive_type in model.readers.get(name, ())[:1]:
                drives[drive_type] = 1
    return RecallSetup(drives, dict(model.params), dict(model.readers))


def recall_setup(
    conn: psycopg.Connection, drives: Mapping[str, int] | None, media: set[str]
) -> RecallSetup:
    """What the recall engine needs for the site: its calibrated parameters, which drives read
    which media, and `drives` (default: the site's online drives, else one per media type)."""
    return _recall_setup(site_model(conn), CatalogOptions(drives=drives), media)


def whatif_from_catalog(
    read: FrameReader,
    model: SiteModel,
    policies: Sequence[str],
    params: WhatIfParams,
    options: CatalogOptions,
    progress: Progress | None = None,
) -> pl.DataFrame:
    """Replay the catalog's write stream under each policy and compare with the actual
    placement (analysis/whatif/replay.py compare), from the catalog `read` reads (on either
    engine) and the site's `model` (site_model). The actual copies are those written in the
    window; their gaps are measured against every live copy on their tapes."""
    say = progress or (lambda _message: None)
    say("reading the live copies")
    copies = read_copies_from(read)
    stream = _window(write_stream(copies), "arrived_at", options)
    if stream.height == 0:
        raise InputError("no files were written in the chosen window")
    schedule = ((options.media, 0.0),) if options.media else media_schedule(stream)
    aggregate = options.aggregate
    if aggregate is None:
        aggregate = bool(copies["aggregate_id"].is_not_null().any())
    say(
        f"{stream.height} files; media {', '.join(m for m, _ in schedule)}; "
        f"aggregates {'on' if aggregate else 'off'}"
    )
    params = replace(params, media=schedule, aggregate=aggregate)
    note = arrival_note(stream, replace(params, policy="sorted-by-directory"))
    if note is not None and "sorted-by-directory" in policies:
        say(f"note: {note}")
    recall = None
    if options.recall:
        present = set(copies["media_type"].unique().drop_nulls().to_list())
        recall = _recall_setup(model, options, present | {m for m, _ in schedule})
    actual = file_gaps(copies)
    actual = _window(actual, "written_at", options)
    return compare(
        stream,
        policies,
        params,
        actual,
        split_at_s=options.split_at_s,
        recall=recall,
        dataset_types=options.dataset_types or None,
        progress=say,
    )
