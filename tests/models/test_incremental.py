"""Incremental builds recompute only the volumes a new catalog touched, and end where a full
refresh ends."""

from __future__ import annotations

from pathlib import Path

import psycopg

from tapelens.models import build
from tests.models import sample
from tests.models.conftest import reset, rows

KEYS = {
    "tapelens_marts.fct_file_gaps": "source, copy_id, written_at",
    "tapelens_marts.fct_dataset_tape_gaps": "dataset, volume",
    "tapelens_marts.agg_gap_by_type_period": "dataset_type, period_kind, period",
    "tapelens_marts.dim_datasets": "dataset",
    "tapelens_marts.fct_duplicate_copies": "source, file_id",
    "tapelens_marts.fct_tape_occupancy": "volume",
    "tapelens_intermediate.int_copies__duplicated": "source, copy_id, written_at",
}
# The marts built from the catalog and the inventory, and what they read (the transfer and
# mount marts do not depend on it); models only, test_marts runs the data and unit tests.
GAP_MARTS = ["+" + table.split(".")[1] for table in KEYS]
MODELS_ONLY = ["resource_type:test", "resource_type:unit_test"]

# A second catalog: a new volume V4 with dataset D and a second copy of B3.
D = "/atlas/data21/HITS/ds.D"
NEW_COPIES = [
    ("D1.HITS.root", D, "HITS", 10, "V4", 1, None, 1, "2022-01-01 00:00:00", False),
    ("D2.HITS.root", D, "HITS", 10, "V4", 4, None, 1, "2022-01-02 00:00:00", False),
    ("B3.RAW.data", sample.B, "RAW", 500, "V4", 7, None, 2, "2022-02-01 00:00:00", False),
]


def watermarks(dsn: str, table: str) -> dict[str, object]:
    found = rows(
        dsn, f"select volume, max(watermark_run_id) as w from tapelens_marts.{table} group by volume"
    )
    return {r["volume"]: r["w"] for r in found}


def snapshot(dsn: str) -> dict[str, list[dict[str, object]]]:
    """Every row of the marts a catalog change reaches, bookkeeping columns left out."""
    taken = {}
    for table, key in KEYS.items():
        found = rows(dsn, f"select * from {table} order by {key}")
        taken[table] = [{k: v for k, v in r.items() if k != "watermark_run_id"} for r in found]
    return taken


def test_incremental_build_equals_full_refresh(models_dsn: str, dbt_home: Path) -> None:
    log_dir = dbt_home / "dbt"
    reset(models_dsn)
    with psycopg.connect(models_dsn) as conn:
        sample.insert_sample(conn)
    first = build(models_dsn, select=GAP_MARTS, exclude=MODELS_ONLY, log_dir=log_dir)
    assert (first.models_built, first.tests_passed) == (12, 0)
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
        "select prev_position, posdiff, gap_class from tapelens_marts.fct_file_gaps "
        f"where path = '{sample.A}/A8.AOD.root'",
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
