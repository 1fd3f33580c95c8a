"""The hint marts on a small site whose figures are worked out by hand below: a catalog loaded
from CSV, hints loaded as CMS sends them (Rucio's CMS policy package, dmwm/CMSRucio
src/policy/CMSRucioPolicy/algorithms/tape_colocation.py: levels 0-3, level 3's length and size
announced in additional_hints; stored as json.dumps, as fts-rest-flask stores
t_file.archive_metadata), built with the real dbt project, and read by `report hints`."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner

from tapelens.cli import cli
from tapelens.dbt_runs import build
from tests.fixtures.csv_site import write_csv, write_tapes_and_catalog
from tests.fixtures.marts import reset, rows

pytestmark = pytest.mark.slow

PARKING = ("parking", "RAW", "Run2024C", "/ParkingVBF5/Run2024C-v1/RAW")
HIRAW = ("hiraw", "RAW", "HIRun2024B", "/HIPhysicsRawPrime5/HIRun2024B-v1/RAW")
GB4 = 4_000_000_000
# path -> (volume, position): the parking files f1-f4 on T1 with another file (x1) and a
# heavy-ion file (h1) between them and f4 far away; f5 and two heavy-ion files on T2.
CATALOG = {
    "/cms/park/f1": ("T10001L8", 1),
    "/cms/park/f2": ("T10001L8", 2),
    "/cms/other/x1": ("T10001L8", 3),
    "/cms/park/f3": ("T10001L8", 4),
    "/cms/hi/h1": ("T10001L8", 5),
    "/cms/park/f4": ("T10001L8", 150),
    "/cms/park/f5": ("T20002L8", 1),
    "/cms/hi/h2": ("T20002L8", 2),
    "/cms/hi/h3": ("T20002L8", 3),
}


# (requester, started_at, path): cms-reco reads three parking files and a heavy-ion one one
# morning, and the next day (more than six hours later) two heavy-ion files and x1, whose hints
# are empty; a file read twice counts once.
RECALLS = [
    ("cms-reco", "2024-08-01T10:00:00Z", "/cms/park/f1"),
    ("cms-reco", "2024-08-01T10:05:00Z", "/cms/park/f2"),
    ("cms-reco", "2024-08-01T10:07:00Z", "/cms/hi/h1"),
    ("cms-reco", "2024-08-01T12:00:00Z", "/cms/park/f3"),
    ("cms-reco", "2024-08-01T12:01:00Z", "/cms/park/f3"),
    ("cms-reco", "2024-08-02T09:00:00Z", "/cms/hi/h2"),
    ("cms-reco", "2024-08-02T09:02:00Z", "/cms/hi/h3"),
    ("cms-reco", "2024-08-02T09:03:00Z", "/cms/other/x1"),
]
# A failed read recalled nothing.
FAILED_READ = ("2024-08-01T10:06:00Z", "/cms/park/f5", "failed", "cms-reco")


def doc(levels: tuple[str, ...] | None, length: int = 1520, size: int = 4_100_000_000_000) -> str:
    if levels is None:
        return json.dumps({"collocation_hints": {}})
    hints = {str(n): v for n, v in enumerate(levels)}
    extra = {"activity": "T0 Tape", "3": {"length": length, "size": size}}
    return json.dumps({"collocation_hints": hints, "additional_hints": extra, "schema_version": 1})


def hint_records() -> list[tuple[str, str, str, str]]:
    """(path, written_at, activity, archive_metadata)."""
    june = "2024-06-02T11:{:02d}:00Z"
    out = [(f"/cms/park/f{n}", june.format(n), "T0 Tape", doc(PARKING)) for n in range(1, 7)]
    out += [(f"/cms/hi/h{n}", june.format(10 + n), "T0 Tape", doc(HIRAW, 880, 3 * 10**12))
            for n in range(1, 4)]  # fmt: skip
    out.append(("/cms/other/x1", june.format(20), "T0 Tape", doc(None)))
    # f7 recorded twice with different level 3: contradictory, in no group
    out.append(("/cms/park/f7", june.format(21), "T0 Tape", doc(PARKING)))
    other = (*PARKING[:3], "/ParkingVBF5/Run2024C-PromptReco-v1/RAW")
    out.append(("/cms/park/f7", june.format(22), "T0 Tape", doc(other)))
    out.append(("/cms/mc/m1", "2024-07-01T08:00:00Z", "Production Output", ""))
    out.append(("/cms/mc/m2", "2024-07-01T08:01:00Z", "Production Output", "{'0': 'mc'}"))
    return out


def invoke(dsn: str, *args: str) -> str:
    result = CliRunner().invoke(cli, ["--dsn", dsn, *args])
    assert result.exception is None, (args, result.exception)
    return result.stdout


@pytest.fixture(scope="module")
def site(
    models_dsn: str, dbt_home: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    reset(models_dsn)
    with psycopg.connect(models_dsn, autocommit=True) as conn:
        conn.execute("truncate tapelens.write_hints")
    folder = tmp_path_factory.mktemp("hints-site")
    tapes, catalog = write_tapes_and_catalog(folder, CATALOG, GB4, "2024-06-03T00:00:00Z")
    hints = write_csv(
        folder / "hints.csv",
        ["path", "written_at", "activity", "size", "vo", "archive_metadata"],
        [(p, t, a, GB4, "cms", m) for p, t, a, m in hint_records()],
    )
    invoke(models_dsn, "ingest", "tapes", "--format", "csv", str(tapes))
    invoke(models_dsn, "ingest", "catalog", "--format", "csv", str(catalog))
    invoke(models_dsn, "ingest", "hints", "--format", "csv", str(hints))
    reads = write_csv(
        folder / "reads.csv",
        ["direction", "started_at", "path", "status", "requester"],
        [("read", t, p, "ok", r) for r, t, p in RECALLS] + [("read", *FAILED_READ)],
    )
    invoke(models_dsn, "ingest", "transfers", "--format", "csv", str(reads))
    marts = ["+fct_hint_groups", "+fct_hint_coverage", "+fct_hint_recall_groups"]
    build(models_dsn, select=marts, log_dir=dbt_home / "dbt")
    yield models_dsn
    with psycopg.connect(models_dsn, autocommit=True) as conn:
        conn.execute("truncate tapelens.write_hints")


def test_coverage_counts_each_file_once_with_empty_and_bad_hints_apart(site: str) -> None:
    found = rows(
        site,
        "select experiment, activity, month::text as month, files, hinted_files, empty_files,"
        " absent_files, unreadable_files, contradictory_files, size_bytes, hinted_bytes,"
        " hinted_share, files_on_tape from tapelens_marts.fct_hint_coverage order by month",
    )
    june = {
        "experiment": "cms",
        "activity": "T0 Tape",
        "month": "2024-06-01",
        # f1-f7, h1-h3, x1; f7's two records are one file
        "files": 11,
        "hinted_files": 9,
        "empty_files": 1,
        "absent_files": 0,
        "unreadable_files": 0,
        "contradictory_files": 1,
        "size_bytes": 11 * GB4,
        "hinted_bytes": 9 * GB4,
        "hinted_share": 9 / 11,
        # f6 and f7 are not in the catalog
        "files_on_tape": 9,
    }
    july = {
        "experiment": "cms",
        "activity": "Production Output",
        "month": "2024-07-01",
        "files": 2,
        "hinted_files": 0,
        "empty_files": 0,
        "absent_files": 1,
        "unreadable_files": 1,
        "contradictory_files": 0,
        "size_bytes": 2 * GB4,
        "hinted_bytes": 0,
        "hinted_share": 0.0,
        "files_on_tape": 0,
    }
    assert found == [june, july]


def test_a_group_shows_its_tapes_gaps_and_interleaving_against_what_was_announced(
    site: str,
) -> None:
    found = rows(
        site,
        "select files, size_bytes, announced_files, announced_bytes, files_on_tape,"
        " tapes_used, tapes_needed, n_counted_gaps, mean_gap, sigma_gap, n_locates,"
        " span_positions, held_positions, interleaved_share"
        f" from tapelens_marts.fct_hint_groups where level = 3 and level_3 = '{PARKING[3]}'",
    )
    # f1-f6 (f6 not on tape); on T1 at 1, 2, 4, 150: gaps 1 and 2 counted, 146 a locate;
    # on T2 f5 alone. Spans: 150 positions on T1 of which 4 the group's, 1 of 1 on T2.
    assert found == [
        {
            "files": 6,
            "size_bytes": 6 * GB4,
            "announced_files": 1520,
            "announced_bytes": 4_100_000_000_000,
            "files_on_tape": 5,
            "tapes_used": 2,
            "tapes_needed": 1,
            "n_counted_gaps": 2,
            "mean_gap": 1.5,
            "sigma_gap": pytest.approx(math.sqrt(0.5)),
            "n_locates": 1,
            "span_positions": 151,
            "held_positions": 5,
            "interleaved_share": pytest.approx(146 / 151),
        }
    ]


def test_groups_nest_from_broad_to_narrow(site: str) -> None:
    found = rows(
        site,
        "select level, hint_group, files, tapes_used, n_counted_gaps, mean_gap,"
        " interleaved_share from tapelens_marts.fct_hint_groups"
        " where level_0 = 'hiraw' order by level",
    )
    groups = [" | ".join(HIRAW[: n + 1]) for n in range(4)]
    # h1 alone on T1; h2, h3 adjacent on T2: one gap of 1, nothing in between.
    assert found == [
        {
            "level": n,
            "hint_group": groups[n],
            "files": 3,
            "tapes_used": 2,
            "n_counted_gaps": 1,
            "mean_gap": 1.0,
            "interleaved_share": 0.0,
        }
        for n in range(4)
    ]


def test_report_hints_by_level_pools_the_groups(site: str) -> None:
    out = invoke(site, "report", "hints", "--by", "level", "--format", "csv")
    lines = list(csv.DictReader(io.StringIO(out)))
    assert [r["level"] for r in lines] == ["0", "1", "2", "3"]
    # Each level has the parking and the heavy-ion group: 3 gaps (1, 2, 1), 1 locate, spans
    # 151 + 3 positions of which 5 + 3 held.
    for r in lines:
        assert (r["groups"], r["files"], r["tapes_used"], r["locates"]) == ("2", "9", "4", "1")
        assert float(r["mean_gap"]) == pytest.approx(4 / 3)
        assert float(r["interleaved_share"]) == pytest.approx(146 / 154)


def test_report_hints_coverage_and_groups_print(site: str, tmp_path: Path) -> None:
    coverage = invoke(site, "report", "hints", "--format", "csv")
    assert coverage.splitlines()[0].startswith("experiment,activity,month,files,hinted_files")
    assert len(coverage.splitlines()) == 3
    plot = tmp_path / "groups.png"
    invoke(site, "report", "hints", "--by", "groups", "--plot", str(plot), "--min-files", "4")
    assert plot.read_bytes().startswith(b"\x89PNG")
    result = CliRunner().invoke(cli, ["--dsn", site, "report", "hints", "--dataset-type", "RAW"])
    assert "report hints has no dataset type" in str(result.exception)


def test_each_recall_campaign_shows_how_much_one_group_of_each_level_holds(site: str) -> None:
    found = rows(
        site,
        "select campaign_start::text as start, level, files_recalled, hinted_files, groups,"
        " top_group, top_group_files, top_group_share"
        " from tapelens_marts.fct_hint_recall_groups order by campaign_start, level",
    )
    first = [
        {
            "start": "2024-08-01 10:00:00+00",
            "level": n,
            "files_recalled": 4,
            "hinted_files": 4,
            "groups": 2,
            "top_group": " | ".join(PARKING[: n + 1]),
            "top_group_files": 3,
            "top_group_share": 0.75,
        }
        for n in range(4)
    ]
    second = [
        {
            "start": "2024-08-02 09:00:00+00",
            "level": n,
            "files_recalled": 3,
            "hinted_files": 2,
            "groups": 1,
            "top_group": " | ".join(HIRAW[: n + 1]),
            "top_group_files": 2,
            "top_group_share": 1.0,
        }
        for n in range(4)
    ]
    assert found == first + second


def test_report_hints_by_recall_pools_the_campaigns_per_level(site: str) -> None:
    out = invoke(site, "report", "hints", "--by", "recall", "--format", "csv")
    lines = list(csv.DictReader(io.StringIO(out)))
    assert [(r["level"], r["campaigns"], r["hinted_files"]) for r in lines] == [
        (str(n), "2", "6") for n in range(4)
    ]
    # (3 + 2) of the 6 hinted files recalled sit in their campaign's largest group
    assert [float(r["top_group_share"]) for r in lines] == [pytest.approx(5 / 6)] * 4
