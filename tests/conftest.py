"""Test fixtures: a real TimescaleDB for the whole session, a fresh database per test.

The server is TAPELENS_TEST_DSN when set (it needs CREATEDB), otherwise the embedded server started
in a temporary home. Each test gets its own database cloned from a migrated template, so tests
never see each other's rows.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest
from psycopg import conninfo, sql

import tests.props  # noqa: F401 - loads the hypothesis profile before any test module
from tapelens.ingest.migrations import migrate
from tapelens.server import Server, server_for, start, stop

TEMPLATE = "tapelens_test_template"
PG_BIN = Path(os.environ.get("TAPELENS_PG_BIN", "/usr/lib/postgresql/15/bin"))
PG_USER = os.environ.get("TAPELENS_PG_USER", "postgres")


def with_dbname(dsn: str, dbname: str) -> str:
    params = conninfo.conninfo_to_dict(dsn)
    params["dbname"] = dbname
    return conninfo.make_conninfo(**params)


@pytest.fixture(scope="session")
def embedded_server() -> Iterator[Server | None]:
    if os.environ.get("TAPELENS_TEST_DSN"):
        yield None
        return
    with temporary_server("tapelens-test-") as server:
        yield server


@contextmanager
def temporary_server(prefix: str, timescaledb_license: str = "apache") -> Iterator[Server]:
    """An embedded server in a home of its own, removed afterwards."""
    # Not under pytest's basetemp: pytest prunes old basetemp folders, which would pull the data
    # directory from under a server still used by a concurrent session.
    home = Path(tempfile.mkdtemp(prefix=prefix))
    server = server_for(home, PG_BIN, PG_USER, timescaledb_license)
    try:
        start(server)
        yield server
    finally:
        stop(server)
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def server_dsn(embedded_server: Server | None) -> str:
    """A DSN for the server's maintenance database (any database will do for CREATE DATABASE)."""
    if embedded_server is None:
        return os.environ["TAPELENS_TEST_DSN"]
    return embedded_server.dsn()


@pytest.fixture(scope="session")
def template_dsn(server_dsn: str) -> str:
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        exists = conn.execute("select 1 from pg_database where datname = %s", [TEMPLATE]).fetchone()
        if exists:  # left by an earlier run on the same server
            conn.execute(
                sql.SQL("alter database {} with allow_connections true").format(
                    sql.Identifier(TEMPLATE)
                )
            )
            _end_sessions(conn, TEMPLATE)
        conn.execute(sql.SQL("drop database if exists {}").format(sql.Identifier(TEMPLATE)))
        conn.execute(sql.SQL("create database {}").format(sql.Identifier(TEMPLATE)))
    dsn = with_dbname(server_dsn, TEMPLATE)
    with psycopg.connect(dsn) as conn:
        migrate(conn, dsn)
    # TimescaleDB's per-database scheduler keeps a connection to every database that has the
    # extension, and CREATE DATABASE ... TEMPLATE needs the template to have none: close the
    # template to new connections and end the scheduler's.
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(
            sql.SQL("alter database {} with allow_connections false").format(
                sql.Identifier(TEMPLATE)
            )
        )
        _end_sessions(conn, TEMPLATE)
    return dsn


def _end_sessions(conn: psycopg.Connection, dbname: str) -> None:
    conn.execute(
        "select pg_terminate_backend(pid) from pg_stat_activity"
        " where datname = %s and pid <> pg_backend_pid()",
        [dbname],
    )


def _clone_template(conn: psycopg.Connection, name: str) -> None:
    stmt = sql.SQL("create database {} template {}").format(
        sql.Identifier(name), sql.Identifier(TEMPLATE)
    )
    for attempt in range(20):
        try:
            conn.execute(stmt)
            return
        except psycopg.errors.ObjectInUse:
            if attempt == 19:
                raise
            _end_sessions(conn, TEMPLATE)
            time.sleep(0.1)


def _fresh_database(server_dsn: str) -> Iterator[str]:
    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        _clone_template(conn, name)
    yield with_dbname(server_dsn, name)
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(
            sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name))
        )


@pytest.fixture
def dsn(server_dsn: str, template_dsn: str) -> Iterator[str]:
    """A freshly migrated database of its own for one test."""
    yield from _fresh_database(server_dsn)


@pytest.fixture(scope="module")
def module_dsn(server_dsn: str, template_dsn: str) -> Iterator[str]:
    """A freshly migrated database shared by the tests of one module (for a loaded site that
    is expensive to build; the tests must not depend on each other's changes)."""
    yield from _fresh_database(server_dsn)


@pytest.fixture
def empty_dsn(server_dsn: str) -> Iterator[str]:
    """A database with nothing in it (not even the extension)."""
    name = f"e_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
    yield with_dbname(server_dsn, name)
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(
            sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name))
        )
