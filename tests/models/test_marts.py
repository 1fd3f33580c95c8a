"""One full build (models, data tests, unit tests) of the hand-made site in sample.py, and the
marts checked against figures worked out by hand."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import psycopg
import pytest

from tapelens.dbt_runs import BuildSummary, build
from tests.fixtures import tiny_site as sample
from tests.fixtures.marts import reset, rows

# The module builds the dbt project on its site first: a long build, left to `make test`.
pytestmark = pytest.mark.slow

MARTS = {
    "fct_file_gaps",
    "fct_dataset_tape_gaps",
    "agg_gap_by_type_period",
    "agg_gap_histogram",
    "agg_read_rates_daily",
    "agg_read_rates_by_gap",
    "dim_datasets",
    "fct_duplicate_copies",
    "fct_tape_occupancy",
    "plan_tape_objects",
    "plan_tape_layouts",
    "fct_transfer_rates",
    "fct_mounts_daily",
    "fct_drive_usage",
    "fct_pool_capacity",
    "fct_hinted_files",
    "fct_hint_coverage",
    "fct_hint_groups",
    "fct_hint_recall_groups",
}
# Marts kept as views: computed from another mart whenever they are read (none now).
VIEWS: set[str] = set()


@pytest.fixture(scope="module")
def built(models_dsn: str, dbt_home: Path) -> BuildSummary:
    reset(models_dsn)
    with psycopg.connect(models_dsn) as conn:
        sample.insert_sample(conn)
    return build(models_dsn, log_dir=dbt_home / "dbt")


def gaps(dsn: str, dataset: str, volume: str) -> list[tuple[object, ...]]:
    found = rows(
        dsn,
        f"""select position, offset_bytes, posdiff, gap_bytes, counted_gap_bytes, gap_class
            from tapelens_marts.fct_file_gaps
            where dataset = '{dataset}' and volume = '{volume}' order by file_rank""",
    )
    return [tuple(r.values()) for r in found]


def test_build_runs_models_and_tests(built: BuildSummary, models_dsn: str) -> None:
    # Every model of the project: staging, intermediate and marts.
    project = Path(__file__).resolve().parents[2] / "models"
    models = [p for d in ("staging", "intermediate", "marts") for p in (project / d).glob("*.sql")]
    assert built.models_built == len(models) >= 24
    assert built.tests_failed == 0
    # data tests on every key plus the unit tests pinning the gap conventions
    assert built.tests_passed >= 50
    assert built.log_path.is_file()
    tables = rows(
        models_dsn,
        "select table_name, table_type from information_schema.tables "
        "where table_schema = 'tapelens_marts'",
    )
    assert {r["table_name"] for r in tables} == MARTS
    assert {r["table_name"] for r in tables if r["table_type"] == "VIEW"} == VIEWS


def test_gap_conventions_on_a_tape(built: BuildSummary, models_dsn: str) -> None:
    assert gaps(models_dsn, sample.A, "V1") == [
        (1, None, None, None, 0, "first"),
        (2, None, 1, 0, 0, "counted"),
        (4, None, 2, 1000, 1000, "counted"),  # over B1
        (5, 50, 1, 0, 0, "aggregate_member"),
        (5, 110, 0, 0, 0, "aggregate_member"),
        (7, None, 2, 500, 500, "counted"),  # over B3, after the aggregate
        (107, None, 100, 1000 + 2 * sample.GB, 0, "locate"),  # over B1's copy and C1
        (206, None, 99, 0, 0, "counted"),
    ]
    # B: the aggregate (50 + 60 + 70 bytes) is one object; its first member carries the gap
    assert gaps(models_dsn, sample.B, "V1") == [
        (3, None, None, None, 0, "first"),
        (5, 0, 2, 300, 300, "aggregate_member"),
        (6, None, 1, 0, 0, "counted"),
        (8, None, 2, 400, 400, "counted"),  # B1's second copy, over A6
    ]


def test_removed_and_repacked_copies_left_out(built: BuildSummary, models_dsn: str) -> None:
    found = rows(
        models_dsn,
        "select f.path, g.volume from tapelens_marts.fct_file_gaps g"
        " join tapelens.tape_files f using (source, copy_id, written_at)",
    )
    assert len(found) == 15
    paths = {r["path"] for r in found}
    assert f"{sample.A}/A9.AOD.root" not in paths  # removed from the catalog
    assert f"{sample.A}/A10.AOD.root" not in paths  # on the repacked V3
    assert "V3" not in {r["volume"] for r in found}


def test_dataset_tape_statistics(built: BuildSummary, models_dsn: str) -> None:
    found = {
        (r["dataset"], r["volume"]): r
        for r in rows(models_dsn, "select * from tapelens_marts.fct_dataset_tape_gaps")
    }
    assert set(found) == {
        (sample.A, "V1"),
        (sample.A, "V2"),
        (sample.B, "V1"),
        (sample.C, "V1"),
        (sample.C, "V5"),
    }
    a = found[(sample.A, "V1")]
    assert (a["files"], a["n_counted_gaps"], a["n_locates"], a["n_aggregate_members"]) == (
        8,
        4,
        1,
        2,
    )
    assert a["mean_posdiff"] == pytest.approx(26.0, abs=1e-12)
    assert a["sigma_posdiff"] == pytest.approx(statistics.stdev([1, 2, 2, 99]), abs=1e-12)
    assert a["rate_factor"] == pytest.approx(2230 / (2230 + 1500), abs=1e-12)
    b = found[(sample.B, "V1")]
    assert (b["n_counted_gaps"], b["mean_posdiff"]) == (2, 1.5)
    assert b["sigma_posdiff"] == pytest.approx(statistics.stdev([1, 2]), abs=1e-12)
    lone = found[(sample.A, "V2")]
    assert (lone["files"], lone["n_first"], lone["n_counted_gaps"]) == (1, 1, 0)
    assert lone["mean_posdiff"] is None and lone["sigma_posdiff"] is None
    assert lone["rate_factor"] == 1.0


def test_gap_by_type_and_period(built: BuildSummary, models_dsn: str) -> None:
    found = {
        (r["dataset_type"], r["period_kind"], r["period"]): r
        for r in rows(models_dsn, "select * from tapelens_marts.agg_gap_by_type_period")
    }
    before = found[("AOD", "cutover", "before")]  # A2 (1), A3 (2): cutover 2020-10-01
    assert (before["n"], before["mu"], before["files"]) == (2, 1.5, 3)
    assert before["sigma"] == pytest.approx(statistics.stdev([1, 2]), abs=1e-12)
    assert before["sem"] == pytest.approx(statistics.stdev([1, 2]) / 2**0.5, abs=1e-12)
    after = found[("AOD", "cutover", "after")]  # A6 (2), A8 (99)
    assert (after["n"], after["mu"], after["n_locates"]) == (2, 50.5, 1)
    assert found[("AOD", "month", "2020-09")]["n"] == 2
    assert found[("AOD", "month", "2021-03")]["n"] == 2
    assert found[("AOD", "month", "2021-04")]["n"] == 0  # A2's second copy, first on V2
    assert found[("AOD", "month", "2021-04")]["mu"] is None
    assert found[("RAW", "cutover", "after")]["n_aggregate_members"] == 1


def test_datasets(built: BuildSummary, models_dsn: str) -> None:
    found = {r["dataset"]: r for r in rows(models_dsn, "select * from tapelens_marts.dim_datasets")}
    a = found[sample.A]
    assert (a["files"], a["copies"], a["duplicate_copies"], a["duplicated_files"]) == (8, 9, 1, 1)
    assert (a["size_bytes"], a["tapes_used"], a["main_tapes"], a["extra_mounts"]) == (
        2230,
        2,
        1,
        1,
    )
    assert (a["capacity_bytes"], a["tapes_needed"], a["small_file_share"]) == (12 * 10**12, 1, 1)
    assert a["mean_gap"] == pytest.approx(26.0)
    c = found[sample.C]
    # most of C's bytes sit on V5, whose inventory capacity wins over LTO-8's
    assert (c["capacity_bytes"], c["tapes_needed"], c["small_files"]) == (17 * 10**12, 1, 0)
    assert c["mean_gap"] is None


def test_duplicates(built: BuildSummary, models_dsn: str) -> None:
    found = {
        r["file_id"]: r
        for r in rows(models_dsn, "select * from tapelens_marts.fct_duplicate_copies")
    }
    assert set(found) == {f"{sample.A}/A2.AOD.root", f"{sample.B}/B1.RAW.data"}
    a2 = found[f"{sample.A}/A2.AOD.root"]
    assert (a2["copies"], a2["volumes"], a2["n_volumes"]) == (2, ["V1", "V2"], 2)
    assert (a2["first_volume"], a2["newest_volume"]) == ("V1", "V2")
    assert (a2["newest_off_main"], a2["extra_mounts"]) == (True, 1)
    b1 = found[f"{sample.B}/B1.RAW.data"]
    assert (b1["volumes"], b1["newest_off_main"], b1["extra_mounts"]) == (["V1"], False, 0)
    assert b1["first_written_at"] < b1["last_written_at"]


def test_tape_occupancy(built: BuildSummary, models_dsn: str) -> None:
    found = {
        r["volume"]: r for r in rows(models_dsn, "select * from tapelens_marts.fct_tape_occupancy")
    }
    assert set(found) == {"V1", "V2", "V3", "V5"}
    v1 = found["V1"]
    live = 100 + 200 + 1000 + 300 + 50 + 60 + 70 + 500 + 400 + 1000 + 2 * sample.GB + 500 + 600
    assert (v1["files"], v1["live_bytes"], v1["duplicate_bytes"], v1["n_datasets"]) == (
        13,
        live,
        1000,
        3,
    )
    assert v1["occupancy"] == pytest.approx(live / 12e12)
    assert v1["small_file_share"] == pytest.approx(12 / 13)
    assert (found["V3"]["state"], found["V3"]["files"], found["V3"]["live_bytes"]) == (
        "repacked",
        0,
        0,
    )
    assert found["V5"]["occupancy"] == pytest.approx(3 * sample.GB / 17e12)


def test_transfer_rates(built: BuildSummary, models_dsn: str) -> None:
    found = rows(
        models_dsn,
        """select volume, volume_from, position, size_bytes, session_kind, read_seq,
                  read_posdiff, read_gap_class, rate_mb_s
           from tapelens_marts.fct_transfer_rates order by started_at""",
    )
    assert [tuple(r.values())[:8] for r in found] == [
        ("V1", "transfer", 1, 100, "mount", 1, None, "first"),
        ("V1", "transfer", 2, 200, "mount", 2, 1, "counted"),
        ("V1", "transfer", 4, 300, "mount", 3, 2, "counted"),
        # billing read: volume, position and size from the catalog
        ("V1", "catalog", 7, 400, "mount", 4, 3, "counted"),
        ("V1", "transfer", 206, 600, "mount", 1, None, "first"),  # the second mount
        ("V2", "transfer", 1, 200, "window", 1, None, "first"),  # no mount record
    ]
    assert [r["rate_mb_s"] for r in found] == pytest.approx([1e-4] * 6)


def test_mounts_and_drive_usage(built: BuildSummary, models_dsn: str) -> None:
    (mounts,) = rows(models_dsn, "select * from tapelens_marts.fct_mounts_daily")
    assert (mounts["drive"], mounts["media_type"], mounts["mounts"]) == ("D1", "LTO-8", 2)
    assert (mounts["mounted_s"], mounts["mean_wait_s"]) == (5400.0, 120.0)
    usage = {
        r["drive"]: r for r in rows(models_dsn, "select * from tapelens_marts.fct_drive_usage")
    }
    assert (usage["D1"]["files_read"], usage["D1"]["read_bytes"]) == (5, 1600)
    assert usage["D1"]["busy_share"] == pytest.approx(5400 / 86400)
    assert (usage["unknown"]["files_read"], usage["unknown"]["mounts"]) == (1, 0)


def test_every_column_of_every_model_is_described(
    built: BuildSummary, models_dsn: str, dbt_home: Path
) -> None:
    """Every column a model builds (read from the database after the build) has a description
    in the yml beside the model, and every column the yml describes exists."""
    manifest = json.loads((dbt_home / "dbt" / "target" / "manifest.json").read_text())
    models = [n for n in manifest["nodes"].values() if n["resource_type"] == "model"]
    assert len(models) == built.models_built
    built_columns = {
        (r["table_schema"], r["table_name"], r["column_name"])
        for r in rows(
            models_dsn,
            "select table_schema, table_name, column_name from information_schema.columns "
            "where table_schema like 'tapelens\\_%' and table_schema <> 'tapelens'",
        )
    }
    undescribed, unknown = [], []
    for node in models:
        relation = (node["schema"], node["alias"])
        columns = {c for s, t, c in built_columns if (s, t) == relation}
        assert columns, f"{node['name']} was not built"
        described = {
            name for name, c in node["columns"].items() if c.get("description", "").strip()
        }
        undescribed += [f"{node['name']}.{c}" for c in sorted(columns - described)]
        unknown += [f"{node['name']}.{c}" for c in sorted(set(node["columns"]) - columns)]
    assert undescribed == [], f"{len(undescribed)} columns without a description: {undescribed}"
    assert unknown == [], "described in the yml but not built"
