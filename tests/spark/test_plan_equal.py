"""`plan recall` and `predict datasets` give the same answers from the Spark tables as from
PostgreSQL: the same plan (its files in the same order, the same figures), the same summary and
the same predictions, through the command line.

The site is conftest's `both_engines`: one small synthetic site loaded and built on both.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tapelens.cli import cli
from tapelens.frames import read_frame
from tapelens.media import BY_NAME as MEDIA
from tests.spark.conftest import MASTER, Built

pytest.importorskip("pyspark")
pytest.importorskip("delta")

pytestmark = pytest.mark.slow


def on_engine(site: Built, engine: str) -> list[str]:
    if engine == "postgres":
        return ["--engine", "postgres"]
    return [
        "--engine",
        "spark",
        "--spark-master",
        MASTER,
        "--spark-warehouse",
        str(site.warehouse.path),
    ]


def run(site: Built, args: list[str]) -> str:
    result = CliRunner().invoke(cli, ["--dsn", site.dsn, *args])
    assert result.exit_code == 0, f"{args}: {result.output}"
    return result.stdout


def site_drives(site: Built) -> str:
    """One drive of the oldest generation that reads each media type of the site's tapes."""
    media = read_frame(
        site.dsn, "select distinct media_type from tapelens.tapes where media_type is not null"
    )["media_type"]
    drives = sorted({MEDIA[m].readable_by[0] for m in media if m in MEDIA})
    assert drives, "the site's tapes name no known media type"
    return ",".join(f"{d}:2" for d in drives)


def plans(site: Built, requests: Path, tmp_path: Path) -> dict[str, tuple[str, str, str]]:
    """Per engine: the plan CSV, its summary JSON and what it printed."""
    out = {}
    for engine in ("postgres", "spark"):
        plan, summary = tmp_path / f"{engine}.csv", tmp_path / f"{engine}.json"
        args = ["plan", "recall", str(requests), "--drives", site_drives(site)]
        printed = run(
            site, [*args, "-o", str(plan), "--summary", str(summary), *on_engine(site, engine)]
        )
        out[engine] = (plan.read_text(), summary.read_text(), printed)
    return out


def test_a_list_of_paths_is_planned_the_same(both_engines: Built, tmp_path: Path) -> None:
    """Every third live path of the site (on many tapes, with their other copies), and one
    path the catalog never held."""
    paths = read_frame(
        both_engines.dsn,
        "select distinct path from tapelens.tape_files where removed_at is null order by path",
    )["path"].gather_every(3)
    requests = tmp_path / "paths.txt"
    requests.write_text("\n".join([*paths, "/no/such/file"]) + "\n")
    got = plans(both_engines, requests, tmp_path)
    assert got["postgres"][0].count("\n") > 10, "the plan reads hardly any file"
    assert got["spark"] == got["postgres"]


def test_datasets_are_planned_the_same(both_engines: Built, tmp_path: Path) -> None:
    """Whole datasets, with their stored placement costs in the summary."""
    datasets = read_frame(
        both_engines.dsn,
        "select dataset from tapelens_marts.dim_datasets order by tapes_used desc, dataset limit 3",
    )["dataset"]
    requests = tmp_path / "datasets.csv"
    requests.write_text("dataset\n" + "\n".join(datasets) + "\n")
    got = plans(both_engines, requests, tmp_path)
    assert "placement" in got["postgres"][1]
    assert got["spark"] == got["postgres"]


def test_predict_datasets_is_the_same(both_engines: Built) -> None:
    args = ["predict", "datasets", "--drives", site_drives(both_engines), "--format", "csv"]
    on_postgres = run(both_engines, [*args, *on_engine(both_engines, "postgres")])
    assert on_postgres.count("\n") > 2
    assert run(both_engines, [*args, *on_engine(both_engines, "spark")]) == on_postgres
