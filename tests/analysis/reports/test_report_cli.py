"""`tapelens report` as the other commands speak: a gap ranking filtered on the gap samples it
rests on, a --dataset-type that matches nothing named with the types there are, and the
ranking column kept in a table fitted to 80 columns (marts built from tests/fixtures/tiny_site)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner

from tapelens.analysis.recall.datasets.stored import write_placement_costs
from tapelens.cli import cli
from tapelens.dbt_runs import build
from tapelens.errors import InputError
from tests.fixtures import tiny_site
from tests.fixtures.marts import MODELS_ONLY

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def marts(module_dsn: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    with psycopg.connect(module_dsn) as conn:
        tiny_site.insert_sample(conn)
    build(module_dsn, exclude=MODELS_ONLY, log_dir=tmp_path_factory.mktemp("dbt"))
    with psycopg.connect(module_dsn) as conn:
        write_placement_costs(conn)  # what `marts build` does after dbt
    return module_dsn


def report(dsn: str, *args: str, env: dict[str, str] | None = None) -> str:
    result = CliRunner().invoke(cli, ["--dsn", dsn, "report", *args], env=env)
    assert result.exception is None, (args, result.output, result.exception)
    return result.stdout


def rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_a_gap_ranking_rests_on_its_gap_samples_not_its_files(marts: str) -> None:
    """Dataset C has two files, each first on its tape: no gap at all. Ranked by mean gap
    with --min-files 2 it is left out, though it has two files."""
    every = {
        r["dataset"]: r for r in rows(report(marts, "gaps", "--by", "dataset", "--format", "csv"))
    }
    c = every[tiny_site.C]
    assert int(c["copies"]) == 2 and int(c["n"]) == 0
    ranked = rows(
        report(
            marts, "gaps", "--by", "dataset", "--sort", "mu", "--desc", "--min-files", "2",
            "--format", "csv",
        )
    )  # fmt: skip
    assert tiny_site.C not in {r["dataset"] for r in ranked}
    assert ranked and all(int(r["n"]) >= 2 for r in ranked)
    assert tiny_site.A in {r["dataset"] for r in ranked}


def test_a_dataset_type_that_matches_nothing_names_the_types_there_are(marts: str) -> None:
    result = CliRunner().invoke(cli, ["--dsn", marts, "report", "tapes", "--dataset-type", "EVTN"])
    assert isinstance(result.exception, InputError)
    assert str(result.exception) == (
        "--dataset-type 'EVTN' matches nothing (known: EVNT, AOD, RAW)"
    )
    # A type that exists but has no row in a time window is no error: the window is empty.
    assert report(marts, "tapes", "--dataset-type", "aod", "--since", "2030-01-01").strip()


def test_at_80_columns_the_ranking_column_and_what_it_rests_on_stay(marts: str) -> None:
    text = report(marts, "gaps", "--by", "dataset", env={"COLUMNS": "80"})
    lines = text.splitlines()
    assert all(len(line) <= 80 for line in lines)
    header = lines[0].split()
    assert {"dataset", "placement_cost_s", "n", "mu"} <= set(header)
    shown = report(
        marts,
        "gaps",
        "--by",
        "dataset",
        "--columns",
        "dataset,locates,rate_factor,placement_cost_s,mu,sigma,n",
        env={"COLUMNS": "80"},
    )
    words = {w for block in shown.split("\n\n") for w in block.splitlines()[0].split()}
    assert words == {"dataset", "locates", "rate_factor", "placement_cost_s", "mu", "sigma", "n"}


def test_min_n_is_still_understood(marts: str, tmp_path: Path) -> None:
    old = report(marts, "gaps", "--by", "dataset", "--min-n", "2", "--format", "csv")
    new = report(marts, "gaps", "--by", "dataset", "--min-files", "2", "--format", "csv")
    assert old == new and old.count("\n") >= 2
