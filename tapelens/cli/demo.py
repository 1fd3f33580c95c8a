"""`tapelens demo`: a synthetic site end to end, as a site would run tapelens."""

from __future__ import annotations

from pathlib import Path

import click

from tapelens.cli.common import App, pass_app
from tapelens.cli.groups import BY_NAME
from tapelens.dbt_runs import MARTS_SCHEMA
from tapelens.frames import read_frame

demo = BY_NAME["demo"]


# The demo site carries the anomalies the repack advisor looks for, and plans on a small
# library of three LTO generations.
DEMO_SCATTERED = 8
DEMO_OUTAGES = 2
DEMO_DRIVES = "LTO9:2,LTO8:2,LTO7:2"


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
@pass_app
def run(app: App, files: int, seed: int, profile: str, out: str | None) -> None:
    """Generate a synthetic site, ingest it, build the models, report, calibrate, plan a
    recall, rank repack candidates, propose a duplicate clean-up and replay the writes.

    Safe to run again: the same seed writes the same files, and loading them again is a no-op.

    \b
    Example:
        tapelens demo run --files 50000
    """
    dsn = app.dsn(create=True)
    site = Path(out) if out else app.home / "demo" / f"{profile}-{files}-{seed}"
    common = [] if app.embedded else ["--dsn", dsn]
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
    _step("ingest", [*common, "ingest", "manifest", str(site / "manifest.json")])
    _step("marts", [*common, "marts", "build"])
    _step("gap report", [*common, "report", "gaps", "--by", "type"])
    _step("top duplicates", [*common, "report", "duplicates", "--limit", "5"])
    fit = ["throughput", "calibrate", "--min-reads", "50", "--min-mounts", "5"]
    _step("calibrate", [*common, *fit])
    _step("parameters", [*common, "throughput", "show"])
    _step("validation", [*common, "throughput", "validate"])
    scattered = read_frame(
        dsn,
        f"select dataset from {MARTS_SCHEMA}.dim_datasets"
        " order by tapes_used desc, dataset limit 3",
    )
    requests = site / "recall-requests.csv"
    requests.write_text("dataset\n" + "".join(f"{d}\n" for d in scattered["dataset"]))
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
    _step(
        "repack candidates",
        [
            *common,
            "plan",
            "repack",
            "--limit",
            "10",
            "--drives",
            DEMO_DRIVES,
            "--export",
            "volumes",
            "--export-dir",
            str(site),
            "--plot",
            str(site / "repack-gain-cost.png"),
        ],
    )
    _step(
        "duplicate clean-up",
        [*common, "plan", "dedup", "--by", "dataset", "-o", str(site / "dedup-datasets.csv")]
        + ["--format", "csv", "--drives", DEMO_DRIVES],
    )
    _step(
        "placement what-if",
        [*common, "whatif", "placement", "--switch-at", "2020-10-01", "--split-at", "2020-10-01"]
        + ["--sort-window", "90d", "--batch-bytes", "4TB", "--write-drives", "6"]
        + ["--plot", str(site / "whatif-gaps.png"), "--no-recall"],
    )
