"""The marts the dashboards added, checked by hand against the raw tables of the dashboard site:
tape occupancy's live flag and reclaimable bytes, capacity per pool."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from tapelens.dbt_runs import build
from tests.fixtures.dashboard_site import insert_site
from tests.fixtures.marts import reset

pytestmark = pytest.mark.slow

MARTS = "tapelens_marts"


@pytest.fixture(scope="module")
def marts(models_dsn: str, dbt_home: Path) -> str:
    reset(models_dsn)
    with psycopg.connect(models_dsn) as conn:
        insert_site(conn)
    # data tests included: the new marts' tests in _marts.yml run too
    build(models_dsn, exclude=["resource_type:unit_test"], log_dir=dbt_home / "dbt")
    return models_dsn


def _one(dsn: str, query: str) -> tuple[object, ...]:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(query).fetchone()
    assert row is not None
    return tuple(row)


def test_occupancy_knows_live_tapes_and_reclaimable_bytes(marts: str) -> None:
    with psycopg.connect(marts) as conn:
        got = dict(
            conn.execute(
                f"select volume, (is_live_tape, removed_bytes, reclaimable_bytes)::text"
                f" from {MARTS}.fct_tape_occupancy"
            ).fetchall()
        )
        removed = dict(
            conn.execute(
                "select volume, sum(size_bytes) from tapelens.tape_files"
                " where removed_at is not null group by volume"
            ).fetchall()
        )
        duplicates = dict(
            conn.execute(
                "select volume, sum(size_bytes) from ("
                "  select volume, size_bytes, row_number() over (partition by file_id"
                "    order by written_at, copy_no) as rank"
                "  from tapelens.tape_files where removed_at is null) c"
                " where rank > 1 group by volume"
            ).fetchall()
        )
        states = dict(conn.execute("select volume, state from tapelens.tapes").fetchall())
    assert removed and duplicates
    for volume, state in states.items():
        live = state not in ("repacked", "destroyed", "exported")
        gone = 0 if state in ("repacked", "destroyed") else int(removed.get(volume, 0))
        reclaimable = gone + int(duplicates.get(volume, 0)) if state in ("full", "readonly") else 0
        assert got[volume] == f"({'t' if live else 'f'},{gone},{reclaimable})", volume


def test_pool_capacity_sums_the_tapes(marts: str) -> None:
    scratch = _one(
        marts,
        f"select sum(scratch_tapes), sum(scratch_bytes) from {MARTS}.fct_pool_capacity"
        " where pool = 'scratch'",
    )
    capacity = _one(
        marts,
        "select count(*), sum(coalesce(t.capacity_bytes, m.capacity_bytes)) from tapelens.tapes t"
        " join tapelens.media_types m using (media_type) where t.state = 'empty'",
    )
    assert scratch == capacity
    assert capacity[0] == 2
    totals = _one(
        marts,
        f"select sum(tapes), sum(reclaimable_bytes) from {MARTS}.fct_pool_capacity",
    )
    occupancy = _one(
        marts, f"select count(*), sum(reclaimable_bytes) from {MARTS}.fct_tape_occupancy"
    )
    assert totals == occupancy
    live = _one(
        marts,
        f"select sum(live_bytes) from {MARTS}.fct_pool_capacity where state = 'exported'",
    )
    assert live == (0,)
