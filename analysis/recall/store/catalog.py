"""The catalog read of a recall plan: the live copies of every requested file.

With them, what a plan needs besides: the model parameters and the drive readers in use.

The requested paths, file ids and datasets go into a table of the catalog read's own (one COPY), the
live copies of every file they name are selected with one join in SQL, with each copy's byte
address on its tape (analysis.recall.store.addresses) and the tape's average object size, and come
back through COPY into Polars: never row by row.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from typing import Any

import polars as pl
import psycopg
from psycopg import sql

from tapelens.analysis.recall.plan.planner import PlanOptions, RecallPlan, plan_recall
from tapelens.analysis.recall.store.addresses import address_objects
from tapelens.analysis.recall.store.not_found import with_not_found_causes
from tapelens.analysis.throughput import store as params_store
from tapelens.analysis.throughput.model import ModelParams
from tapelens.catalog import file_identity
from tapelens.errors import DatabaseError
from tapelens.frames import copy_frame, one_line
from tapelens.media import fill_media_from_labels

CATALOG_SCHEMA: dict[str, Any] = {
    "file_id": pl.String,
    "path": pl.String,
    "dataset": pl.String,
    "size_bytes": pl.Int64,
    "volume": pl.String,
    "position": pl.Int64,
    "offset_bytes": pl.Int64,
    "aggregate_id": pl.String,
    "copy_no": pl.Int32,
    "written_at": pl.Float64,  # epoch seconds on the wire
    "start_bytes": pl.Int64,
    "avg_object_bytes": pl.Float64,
    "media_type": pl.String,
    "tape_state": pl.String,
    "other_volumes": pl.String,  # further cartridges a copy needs (comma-separated), or null
}

# Each step is a temporary table with fresh statistics, so that the planner of the next step
# knows its size (a million rows) and hashes rather than sorting text keys. The catalog is
# scanned once: the copies the requests name directly (by path or dataset) are kept whole, and
# only the other copies of their files (under another path, or named by file id) are looked up
# through the indexes, which usually find few or none. `{requests}` is the table of requests
# (_requests_table).
_COPY_COLUMNS = f"""f.source, f.copy_id, {file_identity("f")} as file_id, f.path, f.dataset,
    f.size_bytes, f.volume, f.position, f.offset_bytes, f.aggregate_id, f.copy_no, f.written_at,
    f.other_volumes"""
_HITS = {
    "path": f"""select {_COPY_COLUMNS} from tapelens.tape_files f
    join {{requests}} r on r.kind = 'path' and f.path = r.key where f.removed_at is null""",
    "dataset": f"""select {_COPY_COLUMNS} from tapelens.tape_files f
    join {{requests}} r on r.kind = 'dataset' and f.dataset = r.key where f.removed_at is null""",
}
_AFTER_HITS = (
    "analyze plan_hits",
    """create temporary table plan_files on commit drop as
    select file_id from plan_hits union select key from {requests} where kind = 'file_id'""",
    "analyze plan_files",
    # Files whose copies with file id = path the hits may lack: those not hit under that path.
    """create temporary table plan_lookup on commit drop as
    select file_id from plan_files
    except select path from plan_hits where file_id = path""",
    "analyze plan_lookup",
    # Sorted by tape and position: the byte addresses are then looked up in index order.
    f"""create temporary table plan_copies on commit drop as
    select * from (
        select * from plan_hits
        union all
        select {_COPY_COLUMNS} from tapelens.tape_files f join plan_files w on w.file_id = f.file_id
        where f.removed_at is null and f.file_id <> f.path and not exists (
            select 1 from plan_hits h
            where h.source = f.source and h.copy_id = f.copy_id and h.written_at = f.written_at)
        union all
        select {_COPY_COLUMNS} from tapelens.tape_files f join plan_lookup w on w.file_id = f.path
        where f.removed_at is null and (f.file_id is null or f.file_id = f.path)
    ) as copies order by volume, position""",
    "analyze plan_copies",
)


# Whether any live or removed copy has a file id other than its path: answered by the partial
# file_id index (migration 013), which holds only those, in a moment.
_SPLIT_COPIES = """select exists (
    select 1 from tapelens.tape_files where file_id <> path order by file_id limit 1)"""


def _requests_table(cur: psycopg.Cursor[Any]) -> sql.Composable:
    """A table for the requests, created in the catalog read's transaction, which drops it at
    its end.

    PostgreSQL never reads a temporary table in parallel workers, so a join with one scans the
    catalog in a single process. An unlogged table, which no other session sees before commit,
    lets the catalog scan and the join run on every core: half the time on two cores. Where the
    role may not create tables in the tapelens schema, the requests go into a temporary table.
    """
    name = f"plan_requests_{secrets.token_hex(6)}"
    try:
        with cur.connection.transaction():  # a savepoint: a refusal leaves the read's intact
            cur.execute(
                sql.SQL("create unlogged table {} (kind text, key text)").format(
                    sql.Identifier("tapelens", name)
                )
            )
        return sql.Identifier("tapelens", name)
    except psycopg.errors.InsufficientPrivilege:
        cur.execute("create temporary table plan_requests (kind text, key text) on commit drop")
        return sql.Identifier("plan_requests")


def _fill_copies(cur: psycopg.Cursor[Any], kinds: set[str], requests: sql.Composable) -> None:
    """plan_copies: every live copy of every file the requests (of these kinds) name."""
    hits = [_HITS[k] for k in ("path", "dataset") if k in kinds]
    if not hits:
        body = f"select {_COPY_COLUMNS} from tapelens.tape_files f where false"
    else:
        # A copy named both by its path and by its dataset is kept once.
        body = "\n    union\n    ".join(hits)
    cur.execute(_SPLIT_COPIES)
    row = cur.fetchone()
    if "file_id" not in kinds and not (row and row[0]):
        # Every copy's file id is its path (HPSS, for one): a file's copies all share the
        # path, so the hits are all its copies, sorted in the same statement.
        steps = [
            "create temporary table plan_copies on commit drop as\n"
            f"    select * from ({body}) as hits order by volume, position",
            "analyze plan_copies",
        ]
    else:
        steps = [f"create temporary table plan_hits on commit drop as\n    {body}", *_AFTER_HITS]
    for step in steps:
        cur.execute(sql.SQL(step).format(requests=requests))


_DROP_WORK_TABLES = (
    "drop table if exists plan_files, plan_lookup, plan_copies, plan_hits, plan_unaddressed,"
    " plan_objects"
)


def load_catalog(
    conn: psycopg.Connection,
    requests: pl.DataFrame,
    note: Callable[[str], None] | None = None,
) -> pl.DataFrame:
    """Live copies (analysis.recall.requests CATALOG_COLUMNS, plus start_bytes and avg_object_bytes)
    of every file the requests name, on any tape, with the tape's media type and state. `note`
    hears, in one line, when byte addresses had to be worked out from the catalog."""
    keys = requests.select("kind", "key").unique()
    try:
        with conn.transaction(), conn.cursor() as cur:
            # Sorts and hashes of a million rows: in memory, not spilled (this transaction only).
            cur.execute("set local work_mem = '256MB'")
            table = _requests_table(cur)
            fill = sql.SQL("copy {} (kind, key) from stdin (format csv)").format(table)
            with cur.copy(fill) as copy:
                copy.write(keys.write_csv(include_header=False, quote_style="always"))
            cur.execute(sql.SQL("analyze {}").format(table))
            _fill_copies(cur, set(keys["kind"].unique().to_list()), table)
            cur.execute(sql.SQL("drop table {}").format(table))
            query, addressing = address_objects(cur)
            frame = copy_frame(cur, query, CATALOG_SCHEMA, epoch=("written_at",))
            # Dropped here, not only at commit: a caller may read several catalogs in one
            # transaction (the build's pricing reads a batch of datasets at a time).
            cur.execute(_DROP_WORK_TABLES)
    except psycopg.Error as exc:
        raise DatabaseError(one_line(exc)) from None
    said = addressing.note()
    if note is not None and said is not None:
        note(said)
    return fill_media_from_labels(frame)


def load_datasets(
    conn: psycopg.Connection, dataset: str | None = None, dataset_type: str | None = None
) -> pl.DataFrame:
    """The live copies of whole datasets, as `plan recall` of those datasets would load them
    (load_catalog), with each dataset's type: what `predict datasets` reads."""
    where: list[sql.Composable] = [sql.SQL("removed_at is null")]
    if dataset is not None:
        where.append(sql.SQL("dataset = {}").format(sql.Literal(dataset)))
    if dataset_type is not None:
        where.append(sql.SQL("dataset_type = {}").format(sql.Literal(dataset_type)))
    query = sql.SQL(
        "select dataset, min(dataset_type) as dataset_type from tapelens.tape_files"
        " where {} group by dataset order by dataset"
    ).format(sql.SQL(" and ").join(where))
    try:
        rows = conn.execute(query).fetchall()
    except psycopg.Error as exc:
        raise DatabaseError(one_line(exc)) from None
    types = pl.DataFrame(
        rows, schema={"dataset": pl.String, "dataset_type": pl.String}, orient="row"
    )
    requests = types.select(pl.lit("dataset").alias("kind"), pl.col("dataset").alias("key"))
    return load_catalog(conn, requests).join(types, on="dataset", how="left")


def datasets_in_batches(conn: psycopg.Connection, copies_per_batch: int) -> Iterator[pl.DataFrame]:
    """load_datasets of every dataset, a batch of whole datasets of about `copies_per_batch`
    live copies at a time (a dataset larger than that alone): a caller that works dataset by
    dataset holds one batch. One batch when the site fits in one: load_datasets' rows; else
    each batch's rows of its own datasets (a copy of one of their files filed under another
    dataset comes with that dataset's batch)."""
    try:
        rows = conn.execute(
            "select dataset, min(dataset_type) as dataset_type, count(*) as copies"
            " from tapelens.tape_files where removed_at is null group by dataset order by dataset"
        ).fetchall()
    except psycopg.Error as exc:
        raise DatabaseError(one_line(exc)) from None
    types = pl.DataFrame(
        rows,
        schema={"dataset": pl.String, "dataset_type": pl.String, "copies": pl.Int64},
        orient="row",
    )
    batch = (types["copies"].cum_sum() - types["copies"]) // max(copies_per_batch, 1)
    parts = types.with_columns(batch.alias("_batch")).partition_by("_batch", maintain_order=True)
    for part in parts:
        requests = part.select(pl.lit("dataset").alias("kind"), pl.col("dataset").alias("key"))
        found = load_catalog(conn, requests).join(
            part.select("dataset", "dataset_type"), on="dataset", how="left"
        )
        yield found if len(parts) == 1 else found.filter(pl.col("dataset").is_in(part["dataset"]))


def plan_from_database(
    conn: psycopg.Connection,
    requests: pl.DataFrame,
    options: PlanOptions,
    note: Callable[[str], None] | None = None,
    progress: Callable[[str], None] | None = None,
) -> tuple[RecallPlan, dict[str, ModelParams]]:
    """Plan `requests` against the catalog, with the model parameters in use (calibrated where
    a fit is stored, defaults elsewhere) and the site's media catalog. `note` hears when byte
    addresses had to be summed from the catalog; `progress`, each step as it ends."""
    catalog, params, readers = planning_inputs(conn, requests, note, progress)
    plan = plan_recall(requests, catalog, params, options, readers, progress)
    return with_not_found_causes(conn, plan), params


def planning_inputs(
    conn: psycopg.Connection,
    requests: pl.DataFrame,
    note: Callable[[str], None] | None = None,
    progress: Callable[[str], None] | None = None,
) -> tuple[pl.DataFrame, dict[str, ModelParams], dict[str, tuple[str, ...]]]:
    """What a plan of `requests` needs from the database: the catalog of their copies, the
    model parameters in use per media type (calibrated where a fit is stored, defaults
    elsewhere) and which drive types read each media type."""
    catalog = load_catalog(conn, requests, note)
    if progress is not None:
        progress(f"read {catalog.height:,} copies from the database")
    params = {m: p for m, (p, _) in params_store.params_in_use(conn).items()}
    return catalog, params, dict(params_store.readable_by(conn))
