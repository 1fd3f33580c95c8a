"""The marts read tape states as the planner does (tapelens/tape_states.py): a copy on a
tape in each state, built through dbt, with the dbt unit test of the states run alongside."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from tapelens.dbt_runs import build
from tapelens.tape_states import COPIES_GONE, NOT_RECALLABLE, OUT_OF_LIBRARY, STATES
from tests.fixtures.marts import reset, rows

pytestmark = pytest.mark.slow


def test_readable_live_and_in_library_follow_the_one_list(models_dsn: str, dbt_home: Path) -> None:
    reset(models_dsn)
    with psycopg.connect(models_dsn, autocommit=True) as conn:
        for number, state in enumerate(STATES):
            conn.execute(
                "insert into tapelens.tapes (volume, media_type, state) values (%s, 'LTO-8', %s)",
                [f"V{number:02d}", state],
            )
            conn.execute(
                "insert into tapelens.tape_files (source, copy_id, file_id, path, dataset,"
                " dataset_type, experiment, size_bytes, volume, position, written_at,"
                " ingest_run_id) values ('s', %s, %s, %s, 'D', 'RAW', 'exp', 1000, %s, 1,"
                " timestamptz '2022-01-01', 1)",
                [state, f"/d/{state}", f"/d/{state}", f"V{number:02d}"],
            )
    # The build runs int_copies__located's unit tests (of every state) too: a failing one
    # raises. The data tests are left out: some relate marts this selection does not build.
    summary = build(
        models_dsn,
        select=["+int_copies__located", "+fct_tape_occupancy"],
        exclude=["resource_type:test"],
        log_dir=dbt_home / "dbt",
    )
    assert summary.tests_failed == 0 and summary.tests_passed >= 1
    copies = rows(
        models_dsn,
        "select tape_state, is_readable, is_live from tapelens_intermediate.int_copies__located",
    )
    assert {row["tape_state"] for row in copies} == set(STATES)
    for row in copies:
        assert row["is_readable"] is (row["tape_state"] not in NOT_RECALLABLE), row
        assert row["is_live"] is (row["tape_state"] not in COPIES_GONE), row
    tapes = rows(models_dsn, "select state, is_live_tape from tapelens_marts.fct_tape_occupancy")
    assert {row["state"] for row in tapes} == set(STATES)
    for row in tapes:
        assert row["is_live_tape"] is (row["state"] not in OUT_OF_LIBRARY), row
