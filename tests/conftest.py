"""Test fixtures: a real TimescaleDB for the whole session, a fresh database per test.

The server is TAPELENS_TEST_DSN when set (it needs CREATEDB), otherwise the embedded server started
in a temporary home. Each test gets its own database cloned from a migrated template, so tests
never see each other's rows.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import conninfo, sql

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
def embedded_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server | None]:
    if os.environ.get("TAPELENS_TEST_DSN"):
        yield None
        return
    server = server_for(tmp_path_factory.mktemp("home"), PG_BIN, PG_USER)
    start(server)
    yield server
    stop(server)


@pytest.fixture(scope="session")
def server_dsn(embedded_server: Server | None) -> str:
    """A DSN for the server's maintenance database (any database will do for CREATE DATABASE)."""
    if embedded_server is None:
        return os.environ["TAPELENS_TEST_DSN"]
    return embedded_server.dsn()


@pytest.fixture(scope="session")
def template_dsn(server_dsn: str) -> str:
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("drop database if exists {}").format(sql.Identifier(TEMPLATE)))
        conn.execute(sql.SQL("create database {}").format(sql.Identifier(TEMPLATE)))
    dsn = with_dbname(server_dsn, TEMPLATE)
    with psycopg.connect(dsn) as conn:
        migrate(conn, dsn)
    return dsn


@pytest.fixture
def dsn(server_dsn: str, template_dsn: str) -> Iterator[str]:
    """A freshly migrated database of its own for one test."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(
            sql.SQL("create database {} template {}").format(
                sql.Identifier(name), sql.Identifier(TEMPLATE)
            )
        )
    yield with_dbname(server_dsn, name)
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(
            sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name))
        )


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
