"""`tapelens demo`: a synthetic site end to end, as a site would run tapelens."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import click
import polars as pl

from tapelens.cli.common import App, engine_reader, pass_app
from tapelens.cli.groups import BY_NAME
from tapelens.dbt_runs import MARTS_SCHEMA
from tapelens.frames import read_frame
from tapelens.spark.settings import EngineSettings, current_engine, engine_options

demo = BY_NAME["demo"]


# The demo site carries the anomalies the repack advisor looks for, and plans on a small
# library of three LTO generations.
DEMO_SCATTERED = 8
DEMO_OUTAGES = 2
DEMO_DRIVES = "LTO9:2,LTO8:2,LTO7:2"
# What the demo does on the postgres engine only: these commands read PostgreSQL's tables.
NOT_ON_SPARK = ("throughput calibrate",)


def _step(title: str, args: list[str]) -> None:
    """Run one tapelens command exactly as a user would type it."""
    from tapelens.cli import cli

    click.echo(f"\n== {title}: tapelens {' '.join(args)}", err=True)
    cli.main(args=args, prog_name="tapelens", standalone_mode=False)


@demo.command("run")
@click.option("--files", type=int, default=50_000, show_default=True, help="Files in the site.")
@click.option("--seed", type=int, default=7, show_default=True)
@click.option("--profile", default="bnl", show_default=True, help="bnl | gridka | cern | fnal")
@click.option("--out", type=click.Path(file_okay=False), help="Site folder (default: HOME/demo).")
@engine_options
@pass_app
def run(app: App, files: int, seed: int, profile: str, out: str | None) -> None:
    """Generate a synthetic site, ingest it, build the models, report, calibrate, plan a
    recall, rank repack candidates, propose a duplicate clean-up and replay the writes.

    With --engine spark the site is loaded and its marts built on Spark, then reported on,
    planned, predicted, ranked for repack, cleaned up and replayed there, its aggregate marts
    copied for the dashboards; calibration runs on the postgres engine only, and the demo says
    so.

    Safe to run again: the same seed writes the same files, and loading them again is a no-op.

    \b
    Example:
        tapelens demo run --files 50000
        tapelens demo run --files 2000 --engine spark
    """
    site = Path(out) if out else app.home / "demo" / f"{profile}-{files}-{seed}"
    engine = current_engine()
    if engine.spark:
        _generate(site, ["--home", str(app.home)], files, seed, profile)
        _run_on_spark(app, engine, site)
        return
    dsn = app.dsn(create=True)
    # Each step is a new command line: it is given the home (or the database) this one uses.
    common = ["--home", str(app.home)] if app.embedded else ["--dsn", dsn]
    _generate(site, common, files, seed, profile)
    _run_on_postgres(dsn, common, site)


def _generate(site: Path, common: list[str], files: int, seed: int, profile: str) -> None:
    """The synthetic site's files, with the anomalies and hints the later steps look for."""
    _step(
        "generate",
        [
            *common,
            "demo",
            "generate",
            str(site),
            "--files",
            str(files),
            "--seed",
            str(seed),
            "--profile",
            profile,
            "--scattered-datasets",
            str(DEMO_SCATTERED),
            "--ack-outages",
            str(DEMO_OUTAGES),
            "--hints",
        ],
    )


def _most_scattered(site: Path, read: Callable[[str], pl.DataFrame]) -> Path:
    """A request file of the three datasets on the most tapes, for the recall plan."""
    scattered = read(
        f"select dataset from {MARTS_SCHEMA}.dim_datasets order by tapes_used desc, dataset limit 3"
    )
    requests = site / "recall-requests.csv"
    requests.write_text("dataset\n" + "".join(f"{d}\n" for d in scattered["dataset"]))
    return requests


def _run_on_spark(app: App, engine: EngineSettings, site: Path) -> None:
    """The demo's steps that run on Spark, each with the engine's options as a user types them.
    The marts build copies its aggregate marts into the database the dashboards read (the
    embedded server, made here, or the given one)."""
    home = ["--home", str(app.home)]
    dsn = app.dsn(create=True)
    flags = ["--engine", "spark", "--spark-master", engine.spark_master]
    flags += ["--spark-warehouse", engine.warehouse(app.home)]
    _step("ingest", [*home, "ingest", "manifest", str(site / "manifest.json"), *flags])
    published = home if app.embedded else [*home, "--dsn", dsn]
    _step("marts", [*published, "marts", "build", *flags])
    _step("gap report", [*home, "report", "gaps", "--by", "type", *flags])
    _step("top duplicates", [*home, "report", "duplicates", "--limit", "5", *flags])
    requests = _most_scattered(site, engine_reader(engine, app.home, app.dsn))
    _step(
        "recall plan",
        [*home, "plan", "recall", str(requests), "--drives", DEMO_DRIVES, *flags]
        + ["-o", str(site / "recall-plan.csv"), "--summary", "-"],
    )
    _step("dataset predictions", [*home, "predict", "datasets", "--limit", "5", *flags])
    _repack(home, site, flags)
    _cleanup_and_whatif(home, site, flags)
    click.echo(
        f"\n== on the postgres engine only: {', '.join(NOT_ON_SPARK)}"
        " (run `tapelens demo run` without --engine spark for them)",
        err=True,
    )


def _run_on_postgres(dsn: str, common: list[str], site: Path) -> None:
    """Every step of the demo on the embedded TimescaleDB (or the given database)."""
    _step("ingest", [*common, "ingest", "manifest", str(site / "manifest.json")])
    _step("marts", [*common, "marts", "build"])
    _step("gap report", [*common, "report", "gaps", "--by", "type"])
    _step("top duplicates", [*common, "report", "duplicates", "--limit", "5"])
    fit = ["throughput", "calibrate", "--min-reads", "50", "--min-mounts", "5"]
    _step("calibrate", [*common, *fit])
    _step("parameters", [*common, "throughput", "show"])
    _step("validation", [*common, "throughput", "validate"])
    requests = _most_scattered(site, lambda query: read_frame(dsn, query))
    _step(
        "recall plan",
        [
            *common,
            "plan",
            "recall",
            str(requests),
            "--drives",
            DEMO_DRIVES,
            "-o",
            str(site / "recall-plan.csv"),
            "--summary",
            "-",
            "--save",
            "demo",
        ],
    )
    _repack(common, site)
    _cleanup_and_whatif(common, site)


def _repack(common: list[str], site: Path, flags: Sequence[str] = ()) -> None:
    """The repack candidates, their volumes and their plot, on the engine `flags` name."""
    _step(
        "repack candidates",
        [*common, "plan", "repack", "--limit", "10", "--drives", DEMO_DRIVES]
        + ["--export", "volumes", "--export-dir", str(site)]
        + ["--plot", str(site / "repack-gain-cost.png"), *flags],
    )


def _cleanup_and_whatif(common: list[str], site: Path, flags: Sequence[str] = ()) -> None:
    """The duplicate clean-up and the placement what-if, on the engine `flags` name."""
    _step(
        "duplicate clean-up",
        [*common, "plan", "dedup", "--by", "dataset", "-o", str(site / "dedup-datasets.csv")]
        + ["--format", "csv", "--drives", DEMO_DRIVES, *flags],
    )
    _step(
        "placement what-if",
        [*common, "whatif", "placement", "--switch-at", "2020-10-01", "--split-at", "2020-10-01"]
        + ["--sort-window", "90d", "--batch-bytes", "4TB", "--write-drives", "6"]
        + ["--plot", str(site / "whatif-gaps.png"), "--no-recall", *flags],
    )
