"""`tapelens demo generate`: write a synthetic site (native catalogs, logs, ground truth)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import click

from tapelens.cli.groups import BY_NAME
from tapelens.cli.progress import Progress
from tapelens.world import PROFILES, GeneratedSite, generate, site_params

demo = BY_NAME["demo"]


class _Stages(Progress):
    """The generation's progress on stderr (tapelens.cli.progress): a line as each stage
    begins, and the stage's percentage every ten seconds while it runs long."""

    def __init__(self) -> None:
        super().__init__("demo generate")
        self.stage = ""

    def __call__(self, stage: str, done: int, total: int) -> None:
        if stage != self.stage:
            self.stage = stage
            self.say(stage)
        pct = int(100 * done / total) if total else 100
        self.doing = f"{stage}: {pct}%"
        self.tick()


@demo.command("generate")
@click.argument("out_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--files", type=click.IntRange(min=1), default=50_000, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--profile", type=click.Choice(PROFILES), default="bnl", show_default=True)
@click.option("--start", type=click.DateTime(["%Y-%m-%d"]), help="First day files arrive.")
@click.option("--end", type=click.DateTime(["%Y-%m-%d"]), help="Last day files arrive.")
@click.option("--gzip", "gz", is_flag=True, help="Compress the catalogs and logs (.gz).")
@click.option("--no-history", is_flag=True, help="Skip the recall campaigns and their logs.")
@click.option(
    "--scattered-datasets",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Datasets whose files trickle in over a year and end up scattered (truth: scattered).",
)
@click.option(
    "--ack-outages",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Front-end acknowledgement outages: files waiting or arriving then are written twice.",
)
@click.option(
    "--hints",
    is_flag=True,
    help="Also write the files' archive metadata (hints/) and recall whole hint groups.",
)
@click.option(
    "--ack-outage-hours",
    type=click.FloatRange(min=0, min_open=True),
    default=24.0,
    show_default=True,
    help="How long each acknowledgement outage lasts.",
)
@click.option(
    "--ack-outage-loss",
    type=click.FloatRange(min=0, max=1, min_open=True),
    default=1.0,
    show_default=True,
    help="Share of the waiting writes whose acknowledgement an outage loses (1: all of them).",
)
def generate_cmd(
    out_dir: Path,
    files: int,
    seed: int,
    profile: str,
    start: datetime | None,
    end: datetime | None,
    gz: bool,
    no_history: bool,
    scattered_datasets: int,
    ack_outages: int,
    hints: bool,
    ack_outage_hours: float,
    ack_outage_loss: float,
) -> None:
    """Generate a synthetic site in OUT_DIR: native catalogs and logs of the profile's
    mass-storage system, a tape inventory, the generic canonical CSV, ground truth (truth/)
    and manifest.json. The same seed and options give byte-identical files.

    \b
    Example:
        tapelens demo generate /tmp/site --files 200000 --seed 7
        tapelens demo generate /tmp/cta --profile cern --start 2019-01-01 --end 2024-12-31 --gzip
        tapelens demo generate /tmp/messy --scattered-datasets 10 --ack-outages 2
    """
    dates = {"start": start.date()} if start else {}
    if end:
        dates["end"] = end.date()
    params = site_params(
        profile,
        files=files,
        seed=seed,
        gzip=gz,
        history=not no_history,
        scattered_datasets=scattered_datasets,
        ack_outages=ack_outages,
        hints=hints,
        ack_outage_hours=ack_outage_hours,
        ack_outage_loss=ack_outage_loss,
        **dates,
    )
    click.echo(f"generating {files:,} files ({profile}, seed {seed}) in {out_dir}", err=True)
    site = generate(out_dir, params, _Stages())
    for line in summary(site):
        click.echo(line)


def summary(site: GeneratedSite) -> list[str]:
    """What the run wrote, in a few aligned lines."""
    gaps = {}
    for period in ("before", "after"):
        rows = [r for r in site.truth["gap_by_type_period"] if r["period"] == period and r["n"]]
        n = sum(r["n"] for r in rows)
        gaps[period] = (sum(r["mu"] * r["n"] for r in rows) / n if n else float("nan"), n)
    dup_pct = 100 * site.duplicated_files / max(site.files, 1)
    return [
        f"site        {site.out_dir} ({site.profile}, seed {site.seed})",
        f"files       {site.files:,} in {site.datasets:,} datasets",
        f"copies      {site.copies:,} on {site.tapes:,} tapes; "
        f"{site.duplicated_files:,} files duplicated ({dup_pct:.2f}%)",
        f"mean gap    before cutover {gaps['before'][0]:.2f} (n={gaps['before'][1]:,}), "
        f"after {gaps['after'][0]:.2f} (n={gaps['after'][1]:,})",
        f"logs        {'written' if site.history else 'not written (no operations history)'}",
        f"outputs     {len(site.outputs):,} files, manifest {site.manifest}",
        f"elapsed     {site.elapsed_s:.1f} s",
    ]
