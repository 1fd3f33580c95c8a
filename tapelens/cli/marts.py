"""`tapelens marts build`: the dbt marts (gaps, duplicates, occupancy, rates)."""

from __future__ import annotations

import time
from typing import Any

import click
import yaml

from tapelens.cli.common import App, pass_app
from tapelens.cli.groups import BY_NAME
from tapelens.cli.progress import Progress
from tapelens.db import connection
from tapelens.dbt_runs import MARTS_SCHEMA, BuildSummary, NodeDone, SparkWarehouse, build
from tapelens.spark.settings import EngineSettings, current_engine, engine_options

marts = BY_NAME["marts"]


class _BuildProgress(Progress):
    """The build's progress on stderr (tapelens.cli.progress): a line per finished model with
    rows, rows/s, nodes done and the time left as the last build of the same selection
    suggests, a line per test that fails or runs long, and while one model runs long, a line
    every ten seconds saying how far the build is."""

    def __init__(self) -> None:
        super().__init__("marts build", "building the first models")

    def __call__(self, node: NodeDone) -> None:
        ok = node.status in ("success", "pass")
        of = f" of {node.total}" if node.total else ""
        self.doing = f"building; {node.done}{of} nodes done"
        if node.kind != "model" and ok and node.seconds < self.quiet_s:
            return
        what = f"{node.name} {node.status}"
        if node.rows is not None and node.kind == "model":
            what += f", {node.rows:,} rows in {node.seconds:.1f} s"
            if node.seconds >= 1:
                what += f" ({node.rows / node.seconds:,.0f} rows/s)"
        else:
            what += f" in {node.seconds:.1f} s"
        left = ""
        if node.left_s is not None and node.left_s >= 1:
            left = f", about {int(node.left_s // 60)}:{int(node.left_s % 60):02d} left"
        self.say(f"{what}; {node.done}{of} nodes{left}")


def _parse_vars(pairs: tuple[str, ...]) -> dict[str, Any]:
    """key=value pairs; values are read as YAML scalars, so numbers stay numbers."""
    parsed: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"expected key=value, got {pair!r}", param_hint="--var")
        parsed[key.strip()] = yaml.safe_load(value) if value.strip() else ""
    return parsed


@marts.command("build")
@click.option(
    "--select",
    "-s",
    "select",
    multiple=True,
    metavar="SELECTOR",
    help="dbt node selection (repeatable), e.g. fct_file_gaps+ or resource_type:model.",
)
@click.option(
    "--exclude",
    "exclude",
    multiple=True,
    metavar="SELECTOR",
    help="dbt nodes to leave out (repeatable), e.g. resource_type:test.",
)
@click.option("--full-refresh", is_flag=True, help="Rebuild incremental marts from scratch.")
@click.option(
    "--no-publish",
    is_flag=True,
    help="With --engine spark: leave the dashboards' database as it is (publish later with "
    "`dashboards publish --engine spark`).",
)
@click.option(
    "--var",
    "var_pairs",
    multiple=True,
    metavar="KEY=VALUE",
    help="dbt var (repeatable): cutover_date, small_file_bytes, main_tapes_share, "
    "read_session_gap_s.",
)
@engine_options
@pass_app
def build_cmd(
    app: App,
    select: tuple[str, ...],
    exclude: tuple[str, ...],
    full_refresh: bool,
    no_publish: bool,
    var_pairs: tuple[str, ...],
) -> None:
    """Build the marts in schema tapelens_marts and run their tests.

    Incremental marts recompute only the volumes changed since the last build. dbt's log goes
    to dbt/dbt.log under the home directory (dbt-spark/dbt.log with --engine spark, which
    builds the same marts as Delta tables of the Spark warehouse; its unit tests are left out,
    and its aggregate marts are then copied into the database the dashboards read, unless
    --no-publish or no database is configured).

    \b
    Example:
        tapelens marts build --var cutover_date=2020-10-01
        tapelens marts build --engine spark --spark-warehouse /data/tapelens
    """
    engine = current_engine()
    options: dict[str, Any] = {
        "select": list(select) or None,
        "full_refresh": full_refresh,
        "vars": _parse_vars(var_pairs) or None,
        "exclude": list(exclude) or None,
    }
    where = f" on Spark ({engine.warehouse(app.home)})" if engine.spark else ""
    click.echo(f"tapelens: building the dbt models into {MARTS_SCHEMA}{where}", err=True)
    if engine.spark:
        warehouse = SparkWarehouse(engine.spark_master, engine.warehouse(app.home))
        with _BuildProgress() as progress:
            summary = build(warehouse, log_dir=app.home / "dbt-spark", progress=progress, **options)
        _say_built(summary)
        store_placement_costs_on_spark(warehouse)
        if not no_publish:
            _publish_for_dashboards(app, engine)
        return
    dsn = app.dsn()
    with _BuildProgress() as progress:
        summary = build(dsn, log_dir=app.home / "dbt", progress=progress, **options)
    _say_built(summary)
    store_placement_costs(dsn)


def _publish_for_dashboards(app: App, engine: EngineSettings) -> None:
    """The build's aggregate marts copied for the dashboards, where a database is configured:
    --dsn/TAPELENS_DSN, or an embedded server made by `db up` (none is made here)."""
    from tapelens.cli.dashboards import publish_spark_build

    if app.embedded and not app.server().initialised():
        click.echo(
            f"tapelens: no database for the dashboards (no --dsn, no server in {app.home});"
            " the marts stay on Spark alone: `tapelens db up`, then"
            " `tapelens dashboards publish --engine spark`",
            err=True,
        )
        return
    publish_spark_build(app, engine)


def _say_built(summary: BuildSummary) -> None:
    click.echo(
        f"models built: {summary.models_built}  tests passed: {summary.tests_passed}  "
        f"tests failed: {summary.tests_failed}  seconds: {summary.seconds:.1f}",
        err=True,
    )


def store_placement_costs(dsn: str) -> None:
    """Price every dataset's placement by the recall engine and store the figures the reports,
    dashboards, plans and the repack advisor quote (analysis/recall/datasets/stored.py)."""
    from tapelens.analysis.recall.datasets.stored import write_placement_costs

    started = time.monotonic()
    with connection(dsn) as conn:
        costs = write_placement_costs(conn)
    _say_priced(None if costs is None else costs.datasets.height, started)


def store_placement_costs_on_spark(warehouse: SparkWarehouse) -> None:
    """The placement costs priced from the Spark tables and stored beside the Spark marts
    (analysis/recall/store/on_spark.py), as store_placement_costs does on PostgreSQL."""
    from tapelens.analysis.recall.store.on_spark import write_placement_costs
    from tapelens.spark.session import spark_session

    started = time.monotonic()
    priced = write_placement_costs(spark_session(warehouse.master, warehouse.path))
    _say_priced(priced, started)


def _say_priced(datasets: int | None, started: float) -> None:
    if datasets is None:  # a selection that built no mart
        return
    click.echo(
        f"placement costs: {datasets:,} datasets priced  seconds: {time.monotonic() - started:.1f}",
        err=True,
    )
