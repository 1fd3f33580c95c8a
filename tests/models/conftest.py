"""One database and one dbt target directory for all model tests.

Every dbt invocation costs seconds, and a new database name makes dbt parse the whole project
again: the model tests share one database (emptied by `reset` at the start of each module)
and one target directory, so only the first build parses from scratch.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import conninfo, sql

TEMPLATE_ATTEMPTS = 20


@pytest.fixture(scope="session")
def models_dsn(server_dsn: str, template_dsn: str) -> Iterator[str]:
    name = f"m_{uuid.uuid4().hex[:12]}"
    template = conninfo.conninfo_to_dict(template_dsn)["dbname"]
    create = sql.SQL("create database {} template {}").format(
        sql.Identifier(name), sql.Identifier(str(template))
    )
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        # TimescaleDB's background scheduler may hold a connection to the template for a moment.
        for attempt in range(TEMPLATE_ATTEMPTS):
            try:
                conn.execute(create)
                break
            except psycopg.errors.ObjectInUse:
                if attempt == TEMPLATE_ATTEMPTS - 1:
                    raise
                time.sleep(0.5)
    params = conninfo.conninfo_to_dict(server_dsn)
    params["dbname"] = name
    yield conninfo.make_conninfo(**params)
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(
            sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name))
        )


@pytest.fixture(scope="session")
def dbt_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home directory whose dbt/ holds the shared target and log (the CLI's layout)."""
    return tmp_path_factory.mktemp("models-home")
