"""Byte addresses of the copies a catalog read found, on their tapes.

From the marts where the last build saw the tape as it is, summed from the catalog (by the marts'
own SQL) where it did not.

The addresses are looked up in the marts (plan_tape_objects) for the tapes the last build has seen
as they are; only the tapes of later catalog loads are summed from the catalog at plan time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jinja2
import psycopg
from psycopg import sql

from tapelens.dbt_runs import MARTS_SCHEMA, PROJECT_DIR
from tapelens.errors import DatabaseError
from tapelens.frames import FrameReader, connection_reader, missing_relation

# Byte addresses come from the marts (plan_tape_objects, by volume and position) for the volumes
# the last `marts build` has seen whole. A volume that a later catalog load may have changed, or
# one the marts lack, is "unaddressed": every object of that tape is summed in position order
# from the catalog, as the mart does it, and that address wins in the final query.
_UNADDRESSED = sql.SQL("""create temporary table plan_unaddressed on commit drop as
    select distinct c.volume from plan_copies c where {}""")
_UNADDRESSED_WHERE = sql.SQL(
    "c.volume = any({stale}) or not exists (select 1 from {layouts} l where l.volume = c.volume)"
)

# The byte addresses of volumes the marts do not cover are worked out as the mart does it, by
# the same SQL: the dbt macro that plan_tape_objects uses, rendered here.
_TAPE_OBJECTS_MACRO = PROJECT_DIR / "macros" / "tape_objects.sql"


def tape_objects_sql(copies: str, average: bool = False, spark: bool = False) -> str:
    """The SQL of a tape object's byte address (macros/tape_objects.sql) over `copies`,
    a relation or parenthesised subquery with volume, position and size_bytes; in Spark SQL
    with `spark`, as the macro renders on dbt's spark target."""
    template = jinja2.Environment(autoescape=False).from_string(_TAPE_OBJECTS_MACRO.read_text())
    target = {"target": {"type": "spark"}} if spark else {}
    module = template.make_module(target)
    return str(module.tape_objects(copies, average=average))  # type: ignore[attr-defined]


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

    from_marts: bool  # the marts hold addresses (plan_tape_objects was built)
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


def address_objects(cur: psycopg.Cursor[Any]) -> tuple[sql.Composable, Addressing]:
    """Sum the tapes of plan_copies the marts cannot address into plan_objects; return the
    query of the catalog rows, with the addresses from the marts wherever they hold."""
    # The rule read on the cursor's own connection, each query in a savepoint: a marts schema
    # that is not there leaves the caller's transaction (and its plan_copies) usable.
    from_marts, stale = stale_volumes(connection_reader(cur.connection))
    objects = sql.Identifier(MARTS_SCHEMA, "plan_tape_objects")
    layouts = sql.Identifier(MARTS_SCHEMA, "plan_tape_layouts")
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


def stale_volumes(read: FrameReader) -> tuple[bool, tuple[str, ...] | None]:
    """Whether the marts hold byte addresses, and the volumes catalog loads changed after the
    marts last saw them (None: a whole-catalog load did, so any volume may have changed), read
    through `read` on either engine: the one rule of every catalog read that takes the marts'
    addresses (the planners' on both engines, catalog_objects_sql)."""
    try:
        seen = read(
            "select coalesce(max(watermark_run_id), -1) as seen"
            f" from {MARTS_SCHEMA}.plan_tape_layouts"
            f" where exists (select 1 from {MARTS_SCHEMA}.plan_tape_objects)"
        )["seen"]
    except DatabaseError as exc:
        if missing_relation(str(exc)):
            return False, None
        raise
    # Loads commit one at a time and run ids grow in commit order, so every load up to the
    # newest watermark the build saw is in the addresses (macros/incremental_volumes.sql).
    after = int(seen[0]) if len(seen) else -1
    try:
        runs = read(
            "select volumes from tapelens.ingest_runs"
            f" where kind = 'catalog' and status = 'loaded' and run_id > {after}"
        )
    except DatabaseError as exc:
        # No table of load runs (a Spark warehouse whose tables were written other than by
        # `tapelens ingest`): no load came after the build.
        if missing_relation(str(exc)):
            return True, ()
        raise
    stale: set[str] = set()
    for volumes in runs["volumes"].to_list():
        if volumes is None:
            return True, None
        stale.update(volumes)
    return True, tuple(sorted(stale))


def catalog_objects_sql(read: FrameReader, on_tape: str = "tapelens.tape_files") -> str:
    """SQL of every tape object's byte address (volume, position, object_start) in `read`'s
    dialect: looked up in the marts (plan_tape_objects) for the volumes the last build saw as
    they are, summed from the catalog `on_tape` by the marts' own SQL for the others (every
    volume when the marts hold no addresses). A read of the whole catalog then sums only the
    tapes changed since the build, where summing every tape costs a sort of every copy."""
    spark = read.dialect.name == "spark"
    from_marts, stale = stale_volumes(read)
    if not from_marts or stale is None:
        everything = tape_objects_sql(on_tape, spark=spark)
        return (
            f"select volume, position, start_bytes as object_start from ({everything}) as objects"
        )
    changed = ", ".join("'" + v.replace("'", "''") + "'" for v in stale)
    where = f"f.volume not in (select volume from {MARTS_SCHEMA}.plan_tape_layouts)"
    if changed:
        where += f" or f.volume in ({changed})"
    summed = tape_objects_sql(
        f"(select o.volume, o.position, o.size_bytes from {on_tape} o"
        " where o.volume in (select volume from unaddressed)) as on_tape",
        spark=spark,
    )
    return f"""
with unaddressed as (select distinct f.volume from {on_tape} f where {where})
select volume, position, start_bytes as object_start from {MARTS_SCHEMA}.plan_tape_objects
where volume not in (select volume from unaddressed)
union all
select volume, position, start_bytes as object_start from ({summed}) as objects"""
