"""Catalog side of the duplicate clean-up plan: the live copies of every dataset that holds a
file with more than one live copy.

All copies of those datasets, not only the duplicated files': whether a copy sits with its
dataset depends on where the dataset's other files are. One query, in SQL both engines run
(read through tapelens.frames.FrameReader, on PostgreSQL or on the Spark tables): the duplicated
files are found first (one grouping pass over the chosen live copies), then their datasets, then
every live copy of those with its byte address on the tape (the marts' own definition,
macros/tape_objects.sql), its tape's media type and state, and its checksum.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from tapelens.analysis.recall.store.addresses import tape_objects_sql
from tapelens.catalog import file_identity
from tapelens.frames import FrameReader
from tapelens.media import fill_media_from_labels

UTC = pl.Datetime("us", "UTC")

SCHEMA: dict[str, pl.DataType] = {
    "source": pl.String(),
    "copy_id": pl.String(),
    "path": pl.String(),
    "dataset": pl.String(),
    "dataset_type": pl.String(),
    "file_id": pl.String(),
    "volume": pl.String(),
    "position": pl.Int64(),
    "offset_bytes": pl.Int64(),
    "aggregate_id": pl.String(),
    "size_bytes": pl.Int64(),
    "copy_no": pl.Int32(),
    "written_at": UTC,
    "checksum": pl.String(),
    "start_bytes": pl.Int64(),
    "media_type": pl.String(),
    "tape_state": pl.String(),
}


def live_copies_sql(read: FrameReader, wanted: str, before: str = "") -> str:
    """Every live copy `wanted` (SQL on tapelens.tape_files' columns) chooses, as SCHEMA, in
    `read`'s dialect, in no set order (its readers sort the rows); `before`: the common table
    expressions `wanted` reads, each followed by a comma. The repack advisor reads its
    candidates' copies by it."""
    objects = tape_objects_sql(
        "(select o.volume, o.position, o.size_bytes from tapelens.tape_files o"
        " where o.volume in (select volume from wanted)) as on_tape",
        spark=read.dialect.name == "spark",
    )
    return f"""
with {before}wanted as (
    select source, copy_id, path, dataset, dataset_type, {file_identity()} as file_id, volume,
           position, offset_bytes, aggregate_id, size_bytes, copy_no, written_at, checksum
    from tapelens.tape_files
    where removed_at is null and {wanted}
),
addressed as (select volume, position, start_bytes as object_start from ({objects}) as objects)
select w.source, w.copy_id, w.path, w.dataset, w.dataset_type, w.file_id, w.volume,
       w.position, w.offset_bytes, w.aggregate_id, w.size_bytes, w.copy_no, w.written_at,
       w.checksum, cast(a.object_start + coalesce(w.offset_bytes, 0) as bigint) as start_bytes,
       coalesce(t.media_type, 'unknown') as media_type,
       coalesce(t.state, 'unknown') as tape_state
from wanted w
left join addressed a on a.volume = w.volume and a.position = w.position
left join tapelens.tapes t on t.volume = w.volume"""


# The copies in one order, whatever order an engine gave them in (sorted here: PostgreSQL's
# ORDER BY follows the database's collation, Spark compares bytes).
COPY_ORDER = ["dataset", "file_id", "volume", "position", "copy_no", "source", "copy_id"]


def dedup_copies_sql(read: FrameReader, conditions: list[str]) -> str:
    """The query of read_dedup_copies, in `read`'s dialect, over the live copies `conditions`
    (SQL on tapelens.tape_files' columns) choose."""
    chosen = " and ".join(["removed_at is null", *conditions])
    duplicated = f"""chosen as (
    select {file_identity()} as file_id, dataset from tapelens.tape_files where {chosen}
),
duplicated as (
    select distinct dataset from chosen
    where file_id in (select file_id from chosen group by file_id having count(*) > 1)
),
"""
    return live_copies_sql(read, "dataset in (select dataset from duplicated)", duplicated)


def read_dedup_copies(
    read: FrameReader, dataset: str | None = None, dataset_type: str | None = None
) -> pl.DataFrame:
    """Live copies of every chosen dataset that has a duplicated file, for analysis.dedup.plan
    (SCHEMA: file_id, dataset, volume, position, byte address, media type, tape state, checksum
    ...; written_at in UTC), in a set order. Empty when no file has a second live copy."""
    conditions: list[str] = []
    params: list[Any] = []
    for column, value in (("dataset", dataset), ("dataset_type", dataset_type)):
        if value is not None:
            params.append(value)
            conditions.append(f"{column} = {read.dialect.param(len(params))}")
    frame = read(dedup_copies_sql(read, conditions), params)
    if frame.height == 0:
        return pl.DataFrame(schema=SCHEMA)
    typed = frame.cast(pl.Schema(SCHEMA))
    return fill_media_from_labels(typed.sort(COPY_ORDER))
