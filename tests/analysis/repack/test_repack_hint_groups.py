"""The repack advisor's regroup-by-hint-group kind, on a small site worked out by hand.

The hints are as ATLAS sends them for RAW data (the ATLAS Rucio policy package's
ATLASArchiveMetadataPlugin.get_atlas_archive_metadata: "0" the data type, "1" the project,
"2" the stream, "3" the parent dataset), stored as json.dumps as fts-rest-flask stores
t_file.archive_metadata, loaded with `ingest hints --format csv`; the catalog and tapes from
CSV; the marts built by the real dbt project.
"""

from __future__ import annotations

import json

import psycopg
import pytest
from click.testing import CliRunner

from tapelens.analysis.repack.advisor import RepackOptions
from tapelens.analysis.repack.store import RepackAdvice, advise
from tapelens.cli import cli
from tapelens.dbt_runs import build
from tests.fixtures.csv_site import write_csv, write_tapes_and_catalog

pytestmark = pytest.mark.slow

GB4 = 4_000_000_000
RAW = ("RAW", "data24_13p6TeV", "physics_Main", "data24_13p6TeV.00480000.physics_Main.daq.RAW")
GROUP = " | ".join(RAW)  # fct_hinted_files' group_3: levels 0 to 3 joined
SMALL = ("RAW", "data24_13p6TeV", "physics_Late", "data24_13p6TeV.00480001.physics_Late.daq.RAW")
# path -> (volume, position). /atlas/raw480000: f1-f4 sent with hints, o1 and o2 written
# before hints existed (no record); five tapes for 24 GB. /atlas/raw480001: one tape, as
# needed. /atlas/old: no hinted file at all, so a scattered dataset, not a hint group.
CATALOG = {
    "/atlas/raw480000/f1": ("T10001L8", 1),
    "/atlas/raw480000/f2": ("T20002L8", 1),
    "/atlas/raw480000/f3": ("T30003L8", 1),
    "/atlas/raw480000/f4": ("T30003L8", 2),
    "/atlas/raw480000/o1": ("T40004L8", 1),
    "/atlas/raw480000/o2": ("T50005L8", 1),
    "/atlas/old/a1": ("T10001L8", 2),
    "/atlas/old/a2": ("T20002L8", 2),
    "/atlas/old/a3": ("T40004L8", 2),
    "/atlas/raw480001/g1": ("T60006L8", 1),
    "/atlas/raw480001/g2": ("T60006L8", 2),
}
HINTED = {"f1": RAW, "f2": RAW, "f3": RAW, "f4": RAW, "g1": SMALL, "g2": SMALL}


def doc(levels: tuple[str, ...]) -> str:
    return json.dumps(
        {
            "file_metadata": {"size": GB4, "md5": None, "adler32": "0a1b2c3d"},
            "additional_hints": {"activity": "T0 Export"},
            "schema_version": 1,
            "collocation_hints": {str(n): v for n, v in enumerate(levels)},
        }
    )


def invoke(dsn: str, *args: str) -> None:
    result = CliRunner().invoke(cli, ["--dsn", dsn, *args])
    assert result.exception is None, (args, result.output)


@pytest.fixture(scope="module")
def advised(module_dsn: str, tmp_path_factory: pytest.TempPathFactory) -> RepackAdvice:
    folder = tmp_path_factory.mktemp("hint-groups")
    tapes, catalog = write_tapes_and_catalog(folder, CATALOG, GB4, "2024-06-03T00:00:00Z")
    hints = write_csv(
        folder / "hints.csv",
        ["path", "written_at", "size", "vo", "archive_metadata"],
        [
            (
                f"/atlas/raw48000{0 if n[0] == 'f' else 1}/{n}",
                "2024-06-02T11:00:00Z",
                GB4,
                "atlas",
                doc(levels),
            )
            for n, levels in HINTED.items()
        ],  # fmt: skip
    )
    invoke(module_dsn, "ingest", "tapes", "--format", "csv", str(tapes))
    invoke(module_dsn, "ingest", "catalog", "--format", "csv", str(catalog))
    invoke(module_dsn, "ingest", "hints", "--format", "csv", str(hints))
    marts = ["+fct_hinted_files", "+fct_tape_occupancy", "+dim_datasets"]
    build(module_dsn, select=marts, exclude=["resource_type:test"], log_dir=folder / "dbt")
    options = RepackOptions(drives=(("LTO-8", 2),), kinds=("hint-group",))
    with psycopg.connect(module_dsn, autocommit=True) as conn:
        return advise(conn, options)


def test_the_scattered_group_is_the_one_candidate_with_the_files_written_before_hints(
    advised: RepackAdvice,
) -> None:
    ranked = advised.candidates
    # raw480001 sits on the one tape it needs; /atlas/old has no hinted file.
    assert ranked["target"].to_list() == [GROUP]
    row = ranked.row(0, named=True)
    assert row["kind"] == "hint-group"
    # f1-f4 by their hints, o1 and o2 by their dataset: six files on five tapes.
    assert (row["files"], row["bytes"]) == (6, 6 * GB4)
    assert row["evidence"] == (
        "5 tapes for 1 needed; 6 files from 1 datasets, 2 of them grouped by their dataset"
    )
    assert row["volumes"] == ["T10001L8", "T20002L8", "T30003L8", "T40004L8", "T50005L8"]


def test_regrouping_recalls_the_group_from_one_tape_and_frees_the_tapes_only_it_held(
    advised: RepackAdvice,
) -> None:
    row = advised.candidates.row(0, named=True)
    assert (row["mounts_now"], row["mounts_after"]) == (5, 1)
    assert row["recall_after_drive_h"] < row["recall_now_drive_h"]
    assert row["saving_per_recall_drive_h"] > 0
    # T30003L8 (f3, f4) and T50005L8 (o2) hold nothing else; T1, T2 and T4 keep /atlas/old.
    assert row["tapes_freed"] == 2.0
