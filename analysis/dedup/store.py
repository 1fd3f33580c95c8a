"""Database side of the duplicate clean-up plan: the live copies of every dataset that holds a
file with more than one live copy.

All copies of those datasets, not only the duplicated files': whether a copy sits with its
dataset depends on where the dataset's other files are. On a catalog of millions of copies the
duplicated files are found first (one grouping pass over the live copies), then their datasets;
the copies themselves come through model_inputs.read_live_copies (COPY, byte addresses, media
type, tape state, checksum).
"""

from __future__ import annotations

import polars as pl
import psycopg
from psycopg import sql

from tapelens.analysis.throughput.inputs import fetch, read_live_copies
from tapelens.catalog import file_identity
from tapelens.errors import DatabaseError

UTC = pl.Datetime("us", "UTC")

# The grouping pass hashes every live copy's file_id: in memory, not spilled (this transaction).
WORK_MEM = "256MB"


def duplicated_datasets(
    conn: psycopg.Connection, dataset: str | None = None, dataset_type: str | None = None
) -> list[str]:
    """The datasets (of the chosen ones) holding a file with more than one live copy."""
    where: list[sql.Composable] = [sql.SQL("removed_at is null")]
    if dataset is not None:
        where.append(sql.SQL("dataset = {}").format(sql.Literal(dataset)))
    if dataset_type is not None:
        where.append(sql.SQL("dataset_type = {}").format(sql.Literal(dataset_type)))
    condition = sql.SQL(" and ").join(where)
    query = sql.SQL(
        """select distinct dataset from tapelens.tape_files
           where {condition} and {file} in (
               select {file} from tapelens.tape_files where {condition}
               group by 1 having count(*) > 1)
           order by dataset"""
    ).format(condition=condition, file=sql.SQL(file_identity()))
    try:
        with conn.transaction():
            conn.execute(sql.SQL("set local work_mem = {}").format(sql.Literal(WORK_MEM)))
            rows = fetch(conn, query)
    except psycopg.Error as exc:
        raise DatabaseError(" ".join(str(exc).split())) from None
    return [str(r[0]) for r in rows]


def read_dedup_copies(
    conn: psycopg.Connection, dataset: str | None = None, dataset_type: str | None = None
) -> pl.DataFrame:
    """Live copies of every chosen dataset that has a duplicated file, for analysis.dedup.plan:
    file_id, dataset, dataset_type, volume, position, offset_bytes, aggregate_id, size_bytes,
    copy_no, written_at (UTC), checksum, start_bytes, media_type, tape_state. Empty when no
    file has a second live copy."""
    datasets = duplicated_datasets(conn, dataset, dataset_type)
    if not datasets:
        return pl.DataFrame(schema=EMPTY_SCHEMA)
    copies = read_live_copies(conn, datasets=datasets)
    # read_live_copies takes the chosen datasets and any volume listed; none is listed here.
    return copies.filter(pl.col("dataset").is_in(datasets))


EMPTY_SCHEMA: dict[str, pl.DataType] = {
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
