"""Incremental builds recompute only the volumes a new catalog touched, and end where a full
refresh ends."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from tapelens.dbt_runs import build
from tests.fixtures import tiny_site as sample
from tests.fixtures.marts import GAP_MARTS, MODELS_ONLY, reset, rows, snapshot, watermarks

# A second catalog: a new volume V4 with dataset D and a second copy of B3.
D = "/atlas/data21/HITS/ds.D"
NEW_COPIES = [
    ("D1.HITS.root", D, "HITS", 10, "V4", 1, None, 1, "2022-01-01 00:00:00", False),
    ("D2.HITS.root", D, "HITS", 10, "V4", 4, None, 1, "2022-01-02 00:00:00", False),
    ("B3.RAW.data", sample.B, "RAW", 500, "V4", 7, None, 2, "2022-02-01 00:00:00", False),
]


@pytest.mark.slow
def test_incremental_build_equals_full_refresh(models_dsn: str, dbt_home: Path) -> None:
    log_dir = dbt_home / "dbt"
    reset(models_dsn)
    with psycopg.connect(models_dsn) as conn:
        sample.insert_sample(conn)
    first = build(models_dsn, select=GAP_MARTS, exclude=MODELS_ONLY, log_dir=log_dir)
    assert (first.models_built, first.tests_passed) == (14, 0)
    before = watermarks(models_dsn, "fct_file_gaps")
    assert set(before) == {"V1", "V2", "V5"}

    # Another catalog: new copies on V4; A7 on V1 no longer listed; and the inventory now
    # says V2 is repacked, so its rows must go as a full refresh would drop them.
    with psycopg.connect(models_dsn) as conn:
        sample.insert_copies(conn, NEW_COPIES, run_id=7)
        conn.execute(
            "update tapelens.tape_files set removed_at = now(), removed_run_id = 7"
            " where path like %s",
            (f"{sample.A}/A7.%",),
        )
        conn.execute(
            "update tapelens.tapes set state = 'repacked', updated_at = now(), updated_run_id = 7"
            " where volume = 'V2'"
        )
    build(models_dsn, select=GAP_MARTS, exclude=MODELS_ONLY, log_dir=log_dir)
    after = watermarks(models_dsn, "fct_file_gaps")
    assert set(after) == {"V1", "V4", "V5"}
    # V5 was not touched: its rows are the first build's; V1 was recomputed
    assert after["V5"] == before["V5"]
    assert after["V1"] > before["V1"]
    assert watermarks(models_dsn, "fct_dataset_tape_gaps")["V5"] == before["V5"]
    (a8,) = rows(
        models_dsn,
        "select prev_position, posdiff, gap_class from tapelens_marts.fct_file_gaps"
        " join tapelens.tape_files using (source, copy_id, written_at)"
        f" where path = '{sample.A}/A8.AOD.root'",
    )
    assert (a8["prev_position"], a8["posdiff"], a8["gap_class"]) == (7, 199, "locate")
    incremental = snapshot(models_dsn)
    # V1 without A7; V4: D1, D2 and B3's new copy; V5
    assert len(incremental["tapelens_marts.fct_file_gaps"]) == 12 + 3 + 1
    # A2's second copy went with V2; B3 now has a second copy on V4
    duplicated = {r["file_id"] for r in incremental["tapelens_marts.fct_duplicate_copies"]}
    assert duplicated == {f"{sample.B}/B1.RAW.data", f"{sample.B}/B3.RAW.data"}

    build(models_dsn, select=GAP_MARTS, exclude=MODELS_ONLY, full_refresh=True, log_dir=log_dir)
    assert snapshot(models_dsn) == incremental
