"""What a build does around dbt: statistics of freshly loaded tables, unlogged derived tables,
the build sessions' memory."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from tapelens.dbt_runs import DBT_WORK_MEM, analyze_sources, build, profile_env, stale_sources
from tests.fixtures.marts import reset, rows

# The server publishes a session's table counters when the session ends, a moment later.
STATS_WAIT_S = 10.0


def _eventually(check: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + STATS_WAIT_S
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def _stale(dsn: str) -> list[str]:
    with psycopg.connect(dsn) as conn:
        return stale_sources(conn)


def test_tables_loaded_since_their_statistics_are_analysed(models_dsn: str) -> None:
    reset(models_dsn)
    with psycopg.connect(models_dsn, autocommit=True) as conn:
        conn.execute(
            "insert into tapelens.transfers (source, direction, path, started_at, status,"
            " ingest_run_id) select 'test', 'read', '/f' || i,"
            " timestamptz '2024-01-01' + i * interval '1 minute', 'ok', 1"
            " from generate_series(1, 500) as i"
        )
    assert _eventually(lambda: "transfers" in _stale(models_dsn))
    assert "transfers" in analyze_sources(models_dsn)
    assert _eventually(lambda: "transfers" not in _stale(models_dsn))


@pytest.mark.slow
def test_built_tables_are_unlogged(models_dsn: str, dbt_home: Path) -> None:
    reset(models_dsn)
    build(
        models_dsn,
        select=["+agg_gap_by_type_period"],
        exclude=["resource_type:test", "resource_type:unit_test"],
        log_dir=dbt_home / "dbt",
    )
    found = rows(
        models_dsn,
        "select n.nspname || '.' || c.relname as name, c.relpersistence as persistence"
        " from pg_class as c join pg_namespace as n on n.oid = c.relnamespace"
        " where n.nspname like 'tapelens\\_%' and c.relkind = 'r'",
    )
    built = {str(r["name"]): r["persistence"] for r in found}
    assert "tapelens_marts.agg_gap_by_type_period" in built
    assert "tapelens_marts.fct_file_gaps" in built
    assert set(built.values()) == {"u"}


def test_build_sessions_get_their_sort_memory(models_dsn: str) -> None:
    assert f"-c work_mem={DBT_WORK_MEM}" in profile_env(models_dsn)["PGOPTIONS"]
