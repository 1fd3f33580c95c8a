"""Database side of the recall planner: the catalog a request list needs, saved plans, and the
comparison of a saved plan with the transfers that followed.

The requested paths, file ids and datasets go into a table of the catalog read's own (one COPY), the
live copies of every file they name are selected with one join in SQL, with each copy's byte
address on its tape and the tape's average object size, and come back through COPY into Polars:
never row by row.
The addresses are looked up in the marts (fct_tape_objects) for the tapes the last build has seen
as they are; only the tapes of later catalog loads are summed from the catalog at plan time.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import jinja2
import polars as pl
import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from tapelens.analysis.recall.planner import PlanOptions, RecallPlan, plan_recall
from tapelens.analysis.throughput import store as params_store
from tapelens.analysis.throughput.model import ModelParams
from tapelens.catalog import file_identity
from tapelens.dbt_runs import MARTS_SCHEMA, PROJECT_DIR
from tapelens.errors import DatabaseError, InputError
from tapelens.frames import copy_frame, one_line
from tapelens.media import fill_media_from_labels
from tapelens.tape_states import NOT_RECALLABLE

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


# Byte addresses come from the marts (fct_tape_objects, by volume and position) for the volumes
# the last `marts build` has seen whole. A volume that a later catalog load may have changed, or
# one the marts lack, is "unaddressed": every object of that tape is summed in position order
# from the catalog, as the mart does it, and that address wins in the final query.
_UNADDRESSED = sql.SQL("""create temporary table plan_unaddressed on commit drop as
    select distinct c.volume from plan_copies c where {}""")
_UNADDRESSED_WHERE = sql.SQL(
    "c.volume = any({stale}) or not exists (select 1 from {layouts} l where l.volume = c.volume)"
)

# The byte addresses of volumes the marts do not cover are worked out as the mart does it, by
# the same SQL: the dbt macro that fct_tape_objects uses, rendered here.
_TAPE_OBJECTS_MACRO = PROJECT_DIR / "macros" / "tape_objects.sql"


def tape_objects_sql(copies: str, average: bool = False) -> str:
    """The SQL of a tape object's byte address (models/macros/tape_objects.sql) over `copies`,
    a relation or parenthesised subquery with volume, position and size_bytes."""
    template = jinja2.Environment(autoescape=False).from_string(_TAPE_OBJECTS_MACRO.read_text())
    return str(template.module.tape_objects(copies, average=average))  # type: ignore[attr-defined]


_OBJECTS_FROM_CATALOG = (
    "analyze plan_unaddressed",
    # Removed copies keep their bytes on the tape until it is repacked (the macro's copies are
    # every copy of the volume).
    "create temporary table plan_objects on commit drop as"
    " select volume, position, start_bytes as object_start, avg_object_bytes from ("
    + tape_objects_sql(
        "(select o.volume, o.position, o.size_bytes from tapelens.tape_files o"
        " where o.volume in (select volume from plan_unaddressed)) as copies",
        average=True,
    )
    + ") as addressed",
    "analyze plan_objects",
)

_CATALOG_QUERY = sql.SQL("""
select c.file_id, c.path, c.dataset, c.size_bytes, c.volume, c.position, c.offset_bytes,
       c.aggregate_id, c.copy_no, extract(epoch from c.written_at) as written_at,
       ({start} + coalesce(c.offset_bytes, 0))::bigint as start_bytes,
       {average} as avg_object_bytes,
       coalesce(t.media_type, 'unknown') as media_type,
       coalesce(t.state, 'unknown') as tape_state, c.other_volumes
from plan_copies c
left join plan_objects a on a.volume = c.volume and a.position = c.position{marts}
left join tapelens.tapes t on t.volume = c.volume
""")
_FROM_MARTS = sql.SQL("""
left join {objects} o on o.volume = c.volume and o.position = c.position
left join {layouts} l on l.volume = c.volume""")


@dataclass(frozen=True)
class Addressing:
    """Where a catalog read took its byte addresses from."""

    from_marts: bool  # the marts hold addresses (fct_tape_objects was built)
    stale_volumes: tuple[str, ...] | None  # changed since the marts were built; None: any
    from_catalog: int  # volumes addressed from the catalog itself

    def note(self) -> str | None:
        """One line for the user when the plan paid for addressing tapes itself."""
        if self.from_catalog == 0:
            return None
        if not self.from_marts:
            why = "the marts are not built"
        else:
            why = "catalog loads after the last `tapelens marts build` may have changed them"
        return (
            f"byte addresses of {self.from_catalog:,} tape{'s' if self.from_catalog > 1 else ''}"
            f" summed from the catalog ({why});"
            " `tapelens marts build` makes the next plan read them ready-made"
        )


def _stale_volumes(cur: psycopg.Cursor[Any]) -> tuple[bool, tuple[str, ...] | None]:
    """Whether the marts hold byte addresses, and the volumes catalog loads changed after the
    marts last saw them (None: a whole-catalog load did, so any volume may have changed)."""
    cur.execute(
        sql.SQL("select to_regclass({}) is not null and to_regclass({}) is not null").format(
            sql.Literal(f"{MARTS_SCHEMA}.fct_tape_objects"),
            sql.Literal(f"{MARTS_SCHEMA}.fct_tape_layouts"),
        )
    )
    row = cur.fetchone()
    if not row or not row[0]:
        return False, None
    # Loads commit one at a time and run ids grow in commit order, so every load up to the
    # newest watermark the build saw is in the addresses (macros/incremental_volumes.sql).
    cur.execute(
        sql.SQL("select coalesce(max(watermark_run_id), -1) from {}").format(
            sql.Identifier(MARTS_SCHEMA, "fct_tape_layouts")
        )
    )
    seen = cur.fetchone()
    cur.execute(
        "select volumes from tapelens.ingest_runs"
        " where kind = 'catalog' and status = 'loaded' and run_id > %s",
        [seen[0] if seen else -1],
    )
    stale: set[str] = set()
    for (volumes,) in cur.fetchall():
        if volumes is None:
            return True, None
        stale.update(volumes)
    return True, tuple(sorted(stale))


def _address_objects(cur: psycopg.Cursor[Any]) -> tuple[sql.Composable, Addressing]:
    """Sum the tapes of plan_copies the marts cannot address into plan_objects; return the
    query of the catalog rows, with the addresses from the marts wherever they hold."""
    from_marts, stale = _stale_volumes(cur)
    objects = sql.Identifier(MARTS_SCHEMA, "fct_tape_objects")
    layouts = sql.Identifier(MARTS_SCHEMA, "fct_tape_layouts")
    use_marts = from_marts and stale is not None
    where: sql.Composable = sql.SQL("true")
    if use_marts:
        where = _UNADDRESSED_WHERE.format(
            stale=sql.Literal(list(stale or ())) + sql.SQL("::text[]"), layouts=layouts
        )
    cur.execute(_UNADDRESSED.format(where))
    for step in _OBJECTS_FROM_CATALOG:
        cur.execute(step)
    cur.execute("select count(*) from plan_unaddressed")
    row = cur.fetchone()
    addressing = Addressing(from_marts, stale, int(row[0]) if row else 0)
    if not use_marts:
        query = _CATALOG_QUERY.format(
            start=sql.SQL("a.object_start"),
            average=sql.SQL("a.avg_object_bytes"),
            marts=sql.SQL(""),
        )
    else:
        # An unaddressed volume's own sums (a) win over what the marts hold for it (o, l).
        query = _CATALOG_QUERY.format(
            start=sql.SQL("coalesce(a.object_start, o.start_bytes)"),
            average=sql.SQL("coalesce(a.avg_object_bytes, l.avg_object_bytes)"),
            marts=_FROM_MARTS.format(objects=objects, layouts=layouts),
        )
    return query, addressing


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
            query, addressing = _address_objects(cur)
            frame = copy_frame(cur, query, CATALOG_SCHEMA, epoch=("written_at",))
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


# What a request of each kind names, in a catalog row.
_NAMED_BY = {
    "path": sql.SQL("f.path"),
    "file_id": sql.SQL(file_identity("f")),
    "dataset": sql.SQL("f.dataset"),
}


def with_not_found_causes(conn: psycopg.Connection, plan: RecallPlan) -> RecallPlan:
    """The plan with a `cause` for each request the live catalog does not know: removed from
    the catalog (with the date of the newest removal), or never in it."""
    missing = plan.not_found
    if missing.height == 0:
        return plan
    removed: list[tuple[str, str, Any]] = []
    try:
        for kind in ("path", "file_id", "dataset"):
            keys = missing.filter(pl.col("kind") == kind)["key"].unique().to_list()
            if not keys:
                continue
            query = sql.SQL(
                "select k.key, max(f.removed_at) from unnest(%s::text[]) as k(key)"
                " join tapelens.tape_files f on {} = k.key"
                " where f.removed_at is not null group by k.key"
            ).format(_NAMED_BY[kind])
            removed += [(kind, key, at) for key, at in conn.execute(query, [keys]).fetchall()]
    except psycopg.Error as exc:
        raise DatabaseError(one_line(exc)) from None
    when = pl.DataFrame(
        [(kind, key, f"removed from the catalog ({at:%Y-%m-%d})") for kind, key, at in removed],
        schema={"kind": pl.String, "key": pl.String, "cause": pl.String},
        orient="row",
    )
    caused = missing.join(when, on=["kind", "key"], how="left").with_columns(
        pl.col("cause").fill_null("not in the catalog")
    )
    resolution = replace(plan.resolution, not_found=caused)
    return replace(plan, resolution=resolution)


_TAPE_FILL = """
select t.volume, coalesce(t.capacity_bytes, m.capacity_bytes)::bigint as capacity_bytes,
       coalesce(f.filled, 0)::bigint as filled_bytes
from tapelens.tapes t
left join tapelens.media_types m on m.media_type = t.media_type
left join (
    select volume, sum(size_bytes) as filled from tapelens.tape_files group by volume
) f on f.volume = t.volume
"""
_LIVE_COPIES = f"""
select {file_identity("f")} as file_id, f.path, f.size_bytes, f.volume, f.position,
       f.offset_bytes, extract(epoch from f.written_at) as written_at, f.copy_no
from tapelens.tape_files f left join tapelens.tapes t on t.volume = f.volume
where f.removed_at is null and coalesce(t.state, 'unknown') <> all({{}})
"""
_LIVE_SCHEMA: dict[str, Any] = {
    "file_id": pl.String,
    "path": pl.String,
    "size_bytes": pl.Int64,
    "volume": pl.String,
    "position": pl.Int64,
    "offset_bytes": pl.Int64,
    "written_at": pl.Float64,
    "copy_no": pl.Int32,
}


def recallable_copies(
    conn: psycopg.Connection, requests: pl.DataFrame | None = None
) -> pl.DataFrame:
    """The live copies on tapes that can be read now, of the requested files or of all: where
    dCache's tape info files and ENDIT's tape hints say each file is."""
    if requests is not None:
        copies = load_catalog(conn, requests)
        return copies.filter(~pl.col("tape_state").is_in(list(NOT_RECALLABLE)))
    # Every live copy, through COPY into Polars (a site holds millions).
    query = sql.SQL(_LIVE_COPIES).format(sql.Literal(list(NOT_RECALLABLE)))
    try:
        return copy_frame(conn, query, _LIVE_SCHEMA, epoch=("written_at",))
    except psycopg.Error as exc:
        raise DatabaseError(one_line(exc)) from None


def tape_fill(conn: psycopg.Connection) -> pl.DataFrame:
    """Every tape's capacity and fill: the bytes of every copy it holds, removed ones included
    until it is repacked."""
    try:
        rows = conn.execute(_TAPE_FILL).fetchall()
    except psycopg.Error as exc:
        raise DatabaseError(one_line(exc)) from None
    return pl.DataFrame(
        rows,
        schema={"volume": pl.String, "capacity_bytes": pl.Int64, "filled_bytes": pl.Int64},
        orient="row",
    )


def save_plan(
    conn: psycopg.Connection,
    name: str,
    plan: RecallPlan,
    params_by_media: dict[str, ModelParams],
) -> bool:
    """Store the plan under `name`, replacing a plan of that name; True when one was replaced.
    Commits: a saved plan stays saved whatever the caller does next."""
    rows = plan.files.select(
        pl.col("order").alias("read_order"),
        "mount_order",
        "drive",
        "volume",
        "position",
        "offset_bytes",
        "path",
        "file_id",
        "size_bytes",
        "requester",
        pl.col("start_s").alias("predicted_start_s"),
        pl.col("end_s").alias("predicted_end_s"),
    )
    used = set(plan.files["media_type"].unique().to_list()) if plan.files.height else set()
    params = {
        **plan.options.as_dict(),
        "model": {m: p.to_dict() for m, p in params_by_media.items() if m in used},
    }
    columns = sql.SQL(", ").join(sql.Identifier(c) for c in rows.columns)
    try:
        with conn.transaction(), conn.cursor() as cur:
            cur.execute("delete from tapelens.recall_plans where name = %s", [name])
            replaced = cur.rowcount > 0
            cur.execute(
                "insert into tapelens.recall_plans (name, summary, params) values (%s, %s, %s)",
                [name, Jsonb(plan.summary), Jsonb(params)],
            )
            statement = sql.SQL(
                "copy tapelens.recall_plan_files (plan_name, {}) from stdin (format csv)"
            ).format(columns)
            with cur.copy(statement) as copy:
                copy.write(
                    rows.with_columns(pl.lit(name).alias("_plan"))
                    .select("_plan", *rows.columns)
                    .write_csv(include_header=False)
                )
        conn.commit()
    except psycopg.Error as exc:
        raise DatabaseError(one_line(exc)) from None
    return replaced


PLAN_FILES_SCHEMA: dict[str, Any] = {
    "read_order": pl.Int64,
    "drive": pl.String,
    "volume": pl.String,
    "path": pl.String,
    "file_id": pl.String,
    "size_bytes": pl.Int64,
    "predicted_start_s": pl.Float64,
    "predicted_end_s": pl.Float64,
    "actual_volume": pl.String,
    "actual_drive": pl.String,
    "actual_started_at": pl.Float64,
    "actual_duration_s": pl.Float64,
}

# The first read of each planned file is the view tapelens.recall_plan_reads (migration 023),
# which the dashboards' plan views read too.
_COMPARE_QUERY = """
select p.read_order, p.drive, p.volume, p.path, p.file_id, p.size_bytes, p.predicted_start_s,
       p.predicted_end_s, r.volume as actual_volume, r.drive as actual_drive,
       extract(epoch from r.started_at) as actual_started_at, r.duration_s as actual_duration_s
from tapelens.recall_plan_files p
left join tapelens.recall_plan_reads r on r.plan_name = p.plan_name and r.read_order = p.read_order
where p.plan_name = {name}
order by p.read_order
"""


@dataclass(frozen=True)
class PlanComparison:
    name: str
    summary: dict[str, Any]
    files: pl.DataFrame  # per planned file: predicted and actual start/end (seconds from start)


def compare_plan(conn: psycopg.Connection, name: str) -> PlanComparison:
    """Match a saved plan with the reads the transfers show since it was made."""
    try:
        row = conn.execute(
            "select summary from tapelens.recall_plans where name = %s", [name]
        ).fetchone()
        if row is None:
            known = [
                r[0] for r in conn.execute("select name from tapelens.recall_plans order by 1")
            ]
            hint = f" (saved plans: {', '.join(known[:10])})" if known else " (none saved yet)"
            raise InputError(f"no saved recall plan named {name!r}{hint}")
        (summary,) = row
        with conn.cursor() as cur:
            query = sql.SQL(_COMPARE_QUERY).format(name=sql.Literal(name))
            files = copy_frame(cur, query, PLAN_FILES_SCHEMA)
    except psycopg.Error as exc:
        raise DatabaseError(one_line(exc)) from None
    return PlanComparison(name, *compare_frames(files, summary))


def compare_frames(
    files: pl.DataFrame, plan_summary: dict[str, Any]
) -> tuple[dict[str, Any], pl.DataFrame]:
    """The comparison in figures, and per file predicted against actual times (pure).

    Actual times count from the first read seen; a read whose log names no volume counts as
    read from the planned one. Durations compare the model's per-file time (positioning
    included) with the logged transfer time.
    """
    first = files.select(pl.col("actual_started_at").min()).item()
    t0 = float(first) if first is not None else 0.0
    per_file = files.with_columns(
        (pl.col("actual_started_at") - t0).alias("actual_start_s"),
    ).with_columns(
        (pl.col("actual_start_s") + pl.col("actual_duration_s")).alias("actual_end_s"),
        (pl.col("predicted_end_s") - pl.col("predicted_start_s")).alias("predicted_duration_s"),
    )
    read = per_file.filter(pl.col("actual_started_at").is_not_null())
    figures = read.select(
        pl.col("actual_end_s").max().alias("makespan"),
        (
            (pl.col("actual_duration_s") - pl.col("predicted_duration_s")).abs()
            / pl.col("actual_duration_s")
        )
        .filter(pl.col("actual_duration_s") > 0)
        .median()
        .alias("error"),
        (pl.col("actual_volume").is_null() | (pl.col("actual_volume") == pl.col("volume")))
        .sum()
        .alias("on_plan"),
        pl.corr(pl.col("read_order").rank(), pl.col("actual_start_s").rank()).alias("corr"),
    ).row(0, named=True)
    makespan, error, corr = figures["makespan"], figures["error"], figures["corr"]
    summary = {
        "planned_files": files.height,
        "files_read": read.height,
        "files_not_read": files.height - read.height,
        "read_from_planned_volume": int(figures["on_plan"] or 0),
        "predicted_makespan_s": plan_summary.get("makespan_s"),
        "actual_makespan_s": round(makespan, 3) if makespan is not None else None,
        "median_abs_pct_error_duration": round(error * 100, 2) if error is not None else None,
        "order_rank_correlation": (
            round(corr, 4) if read.height > 2 and corr is not None and corr == corr else None
        ),
    }
    if makespan and plan_summary.get("makespan_s"):
        summary["actual_over_predicted"] = round(makespan / plan_summary["makespan_s"], 4)
    return summary, per_file


def summary_json(comparison: PlanComparison) -> str:
    return json.dumps({"plan": comparison.name, **comparison.summary}, indent=2)
