"""The models benchmark's limit, bench/marts_by_hand.sql, builds the same rows as the full build:
a model whose result changes without the script (or the other way round) fails here, not only
in a benchmark run."""

from __future__ import annotations

import sys
from pathlib import Path

import psycopg
import pytest

from tapelens.dbt_runs import build
from tests.fixtures.marts import reset

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import bench_models  # noqa: E402

COPIES = 20_000
PER_VOLUME = 1_000


@pytest.mark.slow
def test_hand_written_marts_equal_the_full_build(models_dsn: str, dbt_home: Path) -> None:
    reset(models_dsn)
    bench_models.load_site(models_dsn, COPIES, PER_VOLUME)
    bench_models.add_logs(models_dsn)
    build(
        models_dsn,
        exclude=["resource_type:test", "resource_type:unit_test"],
        log_dir=dbt_home / "dbt",
    )
    try:
        bench_models.timed_hand(models_dsn, dbt_home)
        assert bench_models.compare_hand(models_dsn) == []
    finally:
        with psycopg.connect(models_dsn, autocommit=True) as conn:
            conn.execute(f"drop schema if exists {bench_models.HAND_SCHEMA} cascade")
