"""Every report, grouped every way, as a table, CSV and chart, on marts built from a small
site with reads: none fails, and the rate-by-gap report bins its gaps in order."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner

from tapelens.analysis.recall.datasets.stored import write_placement_costs
from tapelens.analysis.reports.queries import COUNT_COLUMN, GAP_BINS, GROUPINGS
from tapelens.cli import cli
from tapelens.dbt_runs import build
from tapelens.errors import DatabaseError, InputError
from tests.fixtures.dashboard_site import insert_site
from tests.fixtures.marts import MODELS_ONLY, reset

# The module builds the dbt project on its site first: a long build, left to `make test`.
pytestmark = pytest.mark.slow

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def marts(models_dsn: str, dbt_home: Path) -> str:
    reset(models_dsn)
    with psycopg.connect(models_dsn) as conn:
        insert_site(conn)
    build(models_dsn, exclude=MODELS_ONLY, log_dir=dbt_home / "dbt")
    with psycopg.connect(models_dsn) as conn:
        write_placement_costs(conn)  # what `marts build` does after dbt
    return models_dsn


def report(dsn: str, *args: str) -> str:
    result = CliRunner().invoke(cli, ["--dsn", dsn, "report", *args])
    assert result.exception is None, (args, result.exception)
    return result.stdout


@pytest.mark.slow
@pytest.mark.parametrize("name,by", [(name, by) for name, ways in GROUPINGS.items() for by in ways])
def test_every_report_prints_and_draws(marts: str, name: str, by: str, tmp_path: Path) -> None:
    plot = tmp_path / f"{name}-{by}.png"
    table = report(marts, name, "--by", by, "--plot", str(plot))
    assert table.strip(), (name, by)
    assert plot.read_bytes()[:8] == PNG
    rows = list(csv.DictReader(io.StringIO(report(marts, name, "--by", by, "--format", "csv"))))
    assert rows, (name, by)


def test_rates_by_gap_are_binned_in_gap_order(marts: str) -> None:
    rows = list(
        csv.DictReader(io.StringIO(report(marts, "rates", "--by", "gap", "--format", "csv")))
    )
    order = ["first", "backward", "same object"] + [name for _, name in GAP_BINS]
    gaps = [r["gap"] for r in rows]
    assert len(gaps) <= len(order) and set(gaps) <= set(order)
    assert gaps == sorted(gaps, key=order.index)
    assert "1" in gaps
    for r in rows:
        assert (
            float(r["p25_rate_mb_s"]) <= float(r["median_rate_mb_s"]) <= float(r["p75_rate_mb_s"])
        )


def test_a_database_without_marts_says_to_build_them(dsn: str) -> None:
    result = CliRunner().invoke(cli, ["--dsn", dsn, "report", "gaps"])
    assert isinstance(result.exception, DatabaseError)
    assert str(result.exception) == (
        "the marts are not built in this database: run `tapelens marts build`"
    )


def test_min_files_sort_and_limit_apply_in_that_order(marts: str) -> None:
    every = list(
        csv.DictReader(io.StringIO(report(marts, "tapes", "--by", "dataset", "--format", "csv")))
    )
    floor = sorted(int(r["live_files"]) for r in every)[len(every) // 2]
    picked = list(
        csv.DictReader(
            io.StringIO(
                report(
                    marts,
                    "tapes",
                    "--by",
                    "dataset",
                    "--format",
                    "csv",
                    "--min-files",
                    str(floor),
                    "--sort",
                    "mean_gap",
                    "--desc",
                    "--limit",
                    "3",
                )
            )
        )
    )
    kept = [r for r in every if int(r["live_files"]) >= floor]
    best = sorted(kept, key=lambda r: -float(r["mean_gap"] or "-inf"))[:3]
    assert [r["dataset"] for r in picked] == [r["dataset"] for r in best]
    assert all(int(r["live_files"]) >= floor for r in picked)


@pytest.mark.slow
def test_every_grouping_names_its_count_and_sorting_by_a_wrong_column_is_refused(
    marts: str,
) -> None:
    for name, ways in GROUPINGS.items():
        for by in ways:
            out = report(marts, name, "--by", by, "--format", "csv", "--min-n", "1")
            assert COUNT_COLUMN[(name, by)] in out.splitlines()[0].split(",")
    result = CliRunner().invoke(cli, ["--dsn", marts, "report", "tapes", "--sort", "nope"])
    assert isinstance(result.exception, InputError)
    assert "no such column" in str(result.exception) and "mean_gap" in str(result.exception)


def test_columns_pick_and_order_in_every_format_and_wide_shows_all(marts: str) -> None:
    csv_out = report(
        marts, "tapes", "--by", "dataset", "--format", "csv", "--columns", "live_files,dataset"
    )
    assert csv_out.splitlines()[0] == "live_files,dataset"
    narrow = report(marts, "tapes", "--by", "dataset")
    wide = report(marts, "tapes", "--by", "dataset", "--wide")
    assert all(len(line) <= 120 for line in narrow.splitlines())
    assert "dataset_type" not in narrow.splitlines()[0]
    assert wide.splitlines()[0].split()[-1] == "dataset_type"
    result = CliRunner().invoke(cli, ["--dsn", marts, "report", "tapes", "--columns", "nope"])
    assert result.exit_code != 0 and "--columns: no column nope" in result.output


def test_gaps_by_dataset_and_tape_rank_by_the_stored_placement_cost(marts: str) -> None:
    """The gap report quotes the placement cost the recall engine priced after the build
    (analysis/recall/datasets/stored.py), as the dashboards do: per dataset the stored figure,
    per tape the sum of its datasets' shares; copies counts live copies."""
    rows = list(
        csv.DictReader(io.StringIO(report(marts, "gaps", "--by", "dataset", "--format", "csv")))
    )
    cost = [float(r["placement_cost_s"]) for r in rows]
    assert cost == sorted(cost, reverse=True) and cost[0] > 0
    with psycopg.connect(marts) as conn:
        stored = dict(
            conn.execute(
                "select dataset, placement_cost_s from tapelens_marts.fct_dataset_placement_cost"
            ).fetchall()
        )
        copies = dict(
            conn.execute(
                "select dataset, count(*) from tapelens.tape_files where removed_at is null"
                " group by dataset"
            ).fetchall()
        )
        per_tape = dict(
            conn.execute(
                "select volume, sum(placement_cost_s)"
                " from tapelens_marts.fct_dataset_tape_placement_cost group by volume"
            ).fetchall()
        )
    for row in rows:
        assert float(row["placement_cost_s"]) == pytest.approx(stored[row["dataset"]])
        assert int(row["copies"]) <= copies[row["dataset"]]
    tapes = csv.DictReader(io.StringIO(report(marts, "gaps", "--by", "tape", "--format", "csv")))
    for row in tapes:
        assert float(row["placement_cost_s"]) == pytest.approx(per_tape.get(row["volume"], 0.0))


def test_counts_are_named_for_what_they_count(marts: str) -> None:
    """`report tapes --by dataset` counts each file once (live_files: its first live copy) and
    `report occupancy --by tape` counts every live copy on the volume (copies)."""
    tapes = csv.DictReader(
        io.StringIO(report(marts, "tapes", "--by", "dataset", "--format", "csv"))
    )
    occupancy = csv.DictReader(
        io.StringIO(report(marts, "occupancy", "--by", "tape", "--format", "csv"))
    )
    with psycopg.connect(marts) as conn:
        live_files = dict(
            conn.execute(
                "select dataset, count(distinct file_id) from tapelens.tape_files"
                " where removed_at is null group by dataset"
            ).fetchall()
        )
        copies = dict(
            conn.execute(
                "select volume, count(*) from tapelens.tape_files where removed_at is null"
                " group by volume"
            ).fetchall()
        )
    assert {r["dataset"]: int(r["live_files"]) for r in tapes} == live_files
    shown = {r["volume"]: int(r["copies"]) for r in occupancy}
    assert shown and all(shown[v] == copies.get(v, 0) for v in shown)
