"""Every report, in every grouping, prints the same CSV from the marts built on Spark as from
those built on PostgreSQL: byte for byte, through the command line.

The site is conftest's `both_engines`: one small synthetic site loaded and built on both.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from click.testing import CliRunner

from tapelens.analysis.reports.queries import GROUPINGS
from tapelens.cli import cli
from tapelens.errors import InputError
from tapelens.frames import read_frame
from tests.spark.conftest import MASTER, Built

pytest.importorskip("pyspark")
pytest.importorskip("delta")

pytestmark = pytest.mark.slow

CASES = [(report, by) for report, groupings in GROUPINGS.items() for by in groupings]


def report_csv(site: Built, engine: str, args: list[str]) -> str:
    """The CSV a report prints on one engine; the command must succeed."""
    if engine == "spark":
        where = ["--engine", "spark", "--spark-master", MASTER]
        where += ["--spark-warehouse", str(site.warehouse.path)]
    else:
        where = ["--engine", "postgres"]
    result = CliRunner().invoke(
        cli, ["--dsn", site.dsn, "report", *args, "--format", "csv", *where]
    )
    assert result.exit_code == 0, f"{engine}: {args}: {result.output}"
    return result.stdout


@pytest.mark.parametrize(("report", "by"), CASES, ids=[f"{r}-{b}" for r, b in CASES])
def test_report_is_the_same_on_both_engines(both_engines: Built, report: str, by: str) -> None:
    args = [report, "--by", by]
    on_postgres = report_csv(both_engines, "postgres", args)
    on_spark = report_csv(both_engines, "spark", args)
    assert on_postgres.count("\n") > 1, f"{args}: no rows on PostgreSQL, nothing compared"
    assert on_spark == on_postgres


def test_filters_bind_the_same_on_both_engines(both_engines: Built) -> None:
    """--since, --until and --dataset-type, bound as parameters on each engine."""
    span = read_frame(
        both_engines.dsn,
        "select min(written_at) as first, max(written_at) as last, min(dataset_type) as type"
        " from tapelens.tape_files where removed_at is null",
    ).row(0, named=True)
    first, last = span["first"], span["last"]
    middle = datetime.fromtimestamp((first.timestamp() + last.timestamp()) / 2, tz=UTC)
    since = ["--since", f"{first:%Y-%m-%d}", "--until", f"{middle:%Y-%m-%d}"]
    # The rates' window is the reads' (a transfer's start), not the writes'.
    reads = read_frame(
        both_engines.dsn,
        "select min(started_at) as first, max(started_at) as last"
        " from tapelens_marts.fct_transfer_rates",
    ).row(0, named=True)
    read_middle = datetime.fromtimestamp(
        (reads["first"].timestamp() + reads["last"].timestamp()) / 2, tz=UTC
    )
    read_since = ["--since", f"{reads['first']:%Y-%m-%d}", "--until", f"{read_middle:%Y-%m-%d}"]
    for args in (
        ["gaps", "--by", "period", *since, "--dataset-type", span["type"]],
        ["duplicates", "--by", "dataset", "--since", f"{middle:%Y-%m-%d}"],
        ["tapes", "--by", "dataset", "--dataset-type", span["type"], "--limit", "5"],
        ["rates", "--by", "type", *read_since],
    ):
        on_postgres = report_csv(both_engines, "postgres", args)
        assert on_postgres.count("\n") > 1, f"{args}: no rows on PostgreSQL, nothing compared"
        assert report_csv(both_engines, "spark", args) == on_postgres, args


def test_a_type_no_row_has_is_an_error_naming_the_types_on_spark(both_engines: Built) -> None:
    args = ["tapes", "--dataset-type", "NOSUCHTYPE", "--engine", "spark"]
    args += ["--spark-master", MASTER, "--spark-warehouse", str(both_engines.warehouse.path)]
    result = CliRunner().invoke(cli, ["--dsn", both_engines.dsn, "report", *args])
    # An expected failure: the console entry point prints it as one line (tapelens.cli.main).
    assert isinstance(result.exception, InputError), result.output
    message = str(result.exception)
    assert "NOSUCHTYPE" in message and "known:" in message, message
