"""How the planner reads a request's copies from the catalog: the requests sit in a table that
parallel workers may read (so the catalog scan runs on every core), which no plan leaves behind,
and a role that may not create tables in the tapelens schema still plans."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import polars as pl
import psycopg
import pytest
from psycopg import conninfo, sql

from tapelens.analysis.recall.store import catalog as plan_catalog
from tapelens.ingest.formats.base import ParseOptions
from tapelens.ingest.load import ingest_file
from tests.fixtures.fake_formats import FAKE_CATALOG

OPTS = ParseOptions(source="read")
PATHS = [f"/atlas/data/file{i:03d}" for i in range(40)]


@pytest.fixture
def loaded(dsn: str, tmp_path: Path) -> str:
    lines = [f"VA{i % 4:04d} {i // 4 + 1} {1000 + i} {p}\n" for i, p in enumerate(PATHS)]
    (tmp_path / "catalog.txt").write_text("".join(lines))
    ingest_file(dsn, FAKE_CATALOG, tmp_path / "catalog.txt", OPTS)
    return dsn


def requests_tables(dsn: str) -> list[str]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "select relname from pg_class c join pg_namespace n on n.oid = c.relnamespace"
            " where n.nspname = 'tapelens' and relname like 'plan\\_requests%'"
        ).fetchall()
    return [str(r[0]) for r in rows]


def plan_of(cur: psycopg.Cursor, table: sql.Composable) -> str:
    query = sql.SQL(plan_catalog._HITS["path"]).format(requests=table)
    rows = cur.execute(sql.SQL("explain ") + query).fetchall()
    return "\n".join(str(r[0]) for r in rows)


def test_the_catalog_join_may_run_in_parallel_workers(loaded: str) -> None:
    # force_parallel_mode puts a Gather over any plan that is safe to run in workers: the join
    # with the planner's requests table gets one, the same join with a temporary table cannot.
    with psycopg.connect(loaded) as conn, conn.transaction(), conn.cursor() as cur:
        table = plan_catalog._requests_table(cur)
        cur.execute(
            "select c.relpersistence, n.nspname from pg_class c"
            " join pg_namespace n on n.oid = c.relnamespace where c.oid = %s::regclass",
            [table.as_string(cur)],
        )
        assert cur.fetchone() == ("u", "tapelens")
        cur.execute("create temporary table plan_temp (kind text, key text)")
        cur.execute("set local force_parallel_mode = on")
        assert "Gather" in plan_of(cur, table)
        assert "Gather" not in plan_of(cur, sql.Identifier("plan_temp"))


def test_a_plan_finds_its_copies_and_leaves_no_requests_table(loaded: str) -> None:
    wanted = PATHS[::3] + ["/atlas/data/not-on-tape"]
    requests = pl.DataFrame({"kind": ["path"] * len(wanted), "key": wanted})
    with psycopg.connect(loaded, autocommit=True) as conn:
        found = plan_catalog.load_catalog(conn, requests)
    assert sorted(found["path"].to_list()) == sorted(PATHS[::3])
    assert requests_tables(loaded) == []
    # A load that fails part way takes its table with its transaction.
    with (
        psycopg.connect(loaded) as conn,
        pytest.raises(psycopg.errors.DivisionByZero),
        conn.transaction(),
        conn.cursor() as cur,
    ):
        plan_catalog._requests_table(cur)
        cur.execute("select 1 / 0")
    assert requests_tables(loaded) == []


@pytest.fixture
def reader(loaded: str) -> Iterator[str]:
    """A role that may read the catalog and make temporary tables, not create tables."""
    role = "reader_" + str(conninfo.conninfo_to_dict(loaded)["dbname"])
    ident = sql.Identifier(role)
    with psycopg.connect(loaded, autocommit=True) as conn:
        conn.execute(sql.SQL("create role {} login").format(ident))
        conn.execute(sql.SQL("grant usage on schema tapelens to {}").format(ident))
        conn.execute(sql.SQL("grant select on all tables in schema tapelens to {}").format(ident))
    params = conninfo.conninfo_to_dict(loaded)
    params["user"] = role
    try:
        yield conninfo.make_conninfo(**params)
    finally:
        with psycopg.connect(loaded, autocommit=True) as conn:
            conn.execute(sql.SQL("drop owned by {}").format(ident))
            conn.execute(sql.SQL("drop role {}").format(ident))


def test_a_role_that_may_not_create_tables_plans_through_a_temporary_one(reader: str) -> None:
    requests = pl.DataFrame({"kind": ["path", "path"], "key": [PATHS[0], PATHS[5]]})
    with psycopg.connect(reader, autocommit=True) as conn:
        found = plan_catalog.load_catalog(conn, requests)
    assert sorted(found["path"].to_list()) == [PATHS[0], PATHS[5]]
    assert requests_tables(reader) == []
