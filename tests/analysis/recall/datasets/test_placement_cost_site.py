"""One placement cost on a demo-sized synthetic site: `report gaps --by dataset`, the table the
dashboards' "Datasets ranked by placement cost" reads (through its dataset's metric), `predict
datasets` and `plan recall` of a whole dataset quote the same figure for every dataset; the drive
time it says is wasted never exceeds the drive time spent; and each command's file counts say
what they count (copies, live_files, readable_files) and agree with one another.

The site is the demo's (`tapelens demo run`: the BNL profile with scattered datasets and
acknowledgement outages that write duplicate copies), 2,000 files, loaded and built through the
command line on a real TimescaleDB with real dbt."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import psycopg
import pytest
import yaml
from click.testing import CliRunner
from polars.testing import assert_frame_equal

from tapelens.analysis.recall.datasets.stored import price_site
from tapelens.cli import cli
from tapelens.dashboards.superset.install import ASSETS_DIR
from tapelens.world import generate, site_params
from tests.fixtures.generated_site import load_site

pytestmark = pytest.mark.slow

DATASET_YAML = ASSETS_DIR / "datasets" / "tapelens" / "fct_dataset_placement_cost.yaml"
CHART_YAML = ASSETS_DIR / "charts" / "Datasets_ranked_by_placement_cost.yaml"


def run(dsn: str, home: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, ["--dsn", dsn, "--home", str(home), *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        args,
        result.stderr,
        result.exception,
    )
    assert result.exit_code == 0, (args, result.stderr)
    return result.stdout


def table(text: str) -> dict[str, dict[str, str]]:
    return {row["dataset"]: row for row in csv.DictReader(io.StringIO(text))}


@pytest.fixture(scope="module")
def site(module_dsn: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    root = tmp_path_factory.mktemp("placement-site")
    params = site_params(
        "bnl", files=2_000, seed=7, scattered_datasets=8, ack_outages=2, history=False
    )
    generate(root / "site", params)
    load_site(module_dsn, root / "site", {"tapes", "catalog"})
    home = root / "home"
    run(module_dsn, home, "marts", "build", "--exclude", "resource_type:test")
    return module_dsn, home


def dashboard_figures(dsn: str) -> dict[str, float]:
    """The chart's ranking metric per dataset, as Superset computes it from the dataset's
    metric expression over the table the dataset names."""
    dataset = yaml.safe_load(DATASET_YAML.read_text())
    chart = yaml.safe_load(CHART_YAML.read_text())
    metric = chart["params"]["timeseries_limit_metric"]
    (expression,) = [m["expression"] for m in dataset["metrics"] if m["metric_name"] == metric]
    query = (
        f"select dataset, {expression} from {dataset['schema']}.{dataset['table_name']}"
        " group by dataset"
    )
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(query).fetchall()  # type: ignore[arg-type]
    return {str(d): float(h) * 3600.0 for d, h in rows}


def test_every_command_quotes_one_placement_cost(site: tuple[str, Path], tmp_path: Path) -> None:
    dsn, home = site
    report = table(run(dsn, home, "report", "gaps", "--by", "dataset", "--format", "csv"))
    predicted = table(run(dsn, home, "predict", "datasets", "--format", "csv"))
    dashboard = dashboard_figures(dsn)
    assert set(report) == set(predicted) == set(dashboard)
    costs = {d: float(r["placement_cost_s"]) for d, r in report.items()}
    assert sum(c > 0 for c in costs.values()) >= len(costs) // 2  # scattered: most cost
    for dataset, cost in costs.items():
        assert float(predicted[dataset]["placement_cost_s"]) == pytest.approx(cost, abs=1e-6)
        assert dashboard[dataset] == pytest.approx(cost, abs=1e-6)
        # Wasted drive time is part of the drive time spent.
        assert 0.0 <= cost <= float(predicted[dataset]["drive_s"])
    # plan recall of the most costly dataset and of one with duplicate copies, each alone.
    duplicated = [
        d for d, r in report.items() if int(r["copies"]) > int(predicted[d]["live_files"])
    ]
    assert duplicated, "the acknowledgement outages wrote duplicate copies"
    for dataset in {max(costs, key=costs.__getitem__), duplicated[0]}:
        summary = plan(dsn, home, tmp_path, dataset)
        quoted = summary["placement"]["by_dataset"][dataset]
        assert quoted["placement_cost_s"] == pytest.approx(costs[dataset], abs=1e-3)
        assert quoted["placement_cost_s"] <= summary["drive_time_s"]
        busy = sum(d["busy_s"] for d in summary["drive_use"].values())
        assert summary["drive_time_s"] == pytest.approx(busy, abs=0.01)
        # Counted as named: the plan reads the readable files, predict counts them too.
        assert summary["files"] == int(predicted[dataset]["readable_files"])
        assert quoted["readable_files"] == summary["files"]
        assert quoted["live_files"] == int(predicted[dataset]["live_files"])


def test_file_counts_say_what_they_count(site: tuple[str, Path]) -> None:
    dsn, home = site
    report = table(run(dsn, home, "report", "gaps", "--by", "dataset", "--format", "csv"))
    predicted = table(run(dsn, home, "predict", "datasets", "--format", "csv"))
    assert "files" not in next(iter(report.values()))
    assert "files" not in next(iter(predicted.values()))
    with psycopg.connect(dsn) as conn:
        truth = {
            d: (int(copies), int(files))
            for d, copies, files in conn.execute(
                "select dataset, count(*), count(distinct coalesce(file_id, path))"
                " from tapelens.tape_files"
                " where removed_at is null group by dataset"
            ).fetchall()
        }
    for dataset, row in report.items():
        copies, files = truth[dataset]
        assert int(row["copies"]) == copies
        assert int(predicted[dataset]["live_files"]) == files
        assert int(predicted[dataset]["readable_files"]) <= files <= copies


def plan(dsn: str, home: Path, tmp_path: Path, dataset: str) -> dict[str, Any]:
    requests = tmp_path / "requests.csv"
    requests.write_text(f"dataset\n{dataset}\n")
    out = run(dsn, home, "plan", "recall", str(requests), "--summary", "-")
    summary: dict[str, Any] = json.loads(out)
    return summary


def test_a_site_priced_a_batch_of_datasets_at_a_time_is_priced_as_at_once(
    site: tuple[str, Path],
) -> None:
    """The build prices a large site a batch of whole datasets at a time (stored.price_site),
    to bound its memory: batches of about 300 copies give every dataset's and every tape's
    figures as the whole site priced at once (to 1e-9 relative: Polars sums a group's drive
    times in an order of its own, which moves the last digits)."""
    dsn, _ = site
    with psycopg.connect(dsn) as conn:
        whole = price_site(conn)
        in_batches = price_site(conn, batch_copies=300)
    assert whole.datasets.height > 10
    for got, want, key in (
        (in_batches.datasets, whole.datasets, ["dataset"]),
        (in_batches.tapes, whole.tapes, ["dataset", "volume"]),
    ):
        assert_frame_equal(got.sort(key), want.sort(key), check_exact=False, rel_tol=1e-9)
