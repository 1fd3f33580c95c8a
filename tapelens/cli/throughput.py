"""`tapelens model`: calibrate the throughput model, show its parameters, validate it."""

from __future__ import annotations

from datetime import UTC, datetime

import click
import polars as pl

from tapelens.analysis.throughput import store
from tapelens.analysis.throughput.calibrate import (
    DEFAULT_MIN_MOUNTS,
    DEFAULT_MIN_READS,
    prepare_reads,
)
from tapelens.analysis.throughput.model import ModelParams, predict_reads
from tapelens.analysis.throughput.moves import TERM_FACTORS
from tapelens.analysis.throughput.validate import DEFAULT_HOLDOUT, fit_figure, validate
from tapelens.cli.common import App, pass_app
from tapelens.cli.groups import BY_NAME
from tapelens.cli.marts import store_placement_costs
from tapelens.cli.output import emit, format_option
from tapelens.db import connection
from tapelens.errors import TapelensError

throughput = BY_NAME["throughput"]
TIME_FORMATS = ["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S"]
PLOT_SAMPLE_READS = 50_000  # reads drawn in --plot (a sample keeps the figure readable)


def _utc(value: datetime | None) -> datetime | None:
    return value.replace(tzinfo=UTC) if value is not None and value.tzinfo is None else value


def params_table(rows: dict[str, tuple[ModelParams, str]]) -> pl.DataFrame:
    """One row per media type: the parameters that matter most, and their source."""
    return pl.DataFrame(
        [
            {
                "media_type": name,
                "source": source,
                "rate_mb_s": p.rate_mb_s,
                "overhead_s": p.overhead_s,
                "read_through_max_gap": p.read_through_max_gap,
                "locate_base_s": p.locate_base_s,
                "locate_s_per_tb": p.locate_slope_s * 1e12 / p.capacity_bytes,
                "locate_max_s": p.locate_max_s,
                "first_locate_base_s": p.first_locate_base_s,
                "first_locate_s_per_tb": p.first_locate_slope_s * 1e12 / p.capacity_bytes,
                "mount_s": p.mount_s,
                "dismount_s": p.dismount_s,
                # The one price of a move: the tape geometry's locate terms times these
                # factors, all of it times the scale (analysis/throughput/moves.py).
                "locate_scale": p.locate_scale,
                "locate_terms": " ".join(f"{getattr(p, f):.2f}" for f in TERM_FACTORS),
            }
            for name, (p, source) in rows.items()
        ]
    )


@throughput.command("calibrate")
@click.option("--media", multiple=True, metavar="TYPE", help="Only this media type (repeatable).")
@click.option("--since", type=click.DateTime(TIME_FORMATS), help="Reads from this time (UTC).")
@click.option("--until", type=click.DateTime(TIME_FORMATS), help="Reads before this time (UTC).")
@click.option(
    "--min-reads",
    type=click.IntRange(0),
    default=DEFAULT_MIN_READS,
    show_default=True,
    help="Fewer reads than this do not replace the parameters in use.",
)
@click.option(
    "--min-mounts",
    type=click.IntRange(0),
    default=DEFAULT_MIN_MOUNTS,
    show_default=True,
    help="Fewer mounts than this do not replace the parameters in use.",
)
@click.option("--force", is_flag=True, help="Store fits even on too little data.")
@pass_app
def calibrate_cmd(
    app: App,
    media: tuple[str, ...],
    since: datetime | None,
    until: datetime | None,
    min_reads: int,
    min_mounts: int,
    force: bool,
) -> None:
    """Fit the throughput model per media type to the site's reads and mounts, and store it.

    Reads come from tapelens_marts.fct_transfer_rates (run `tapelens marts build` first),
    mounts from tapelens.mounts. A fit on fewer than --min-reads reads or --min-mounts mounts
    keeps the parameters in use, saying why.

    \b
    Example:
        tapelens throughput calibrate --since 2024-01-01 --media LTO-8
    """
    with connection(app.dsn(), autocommit=True) as conn:
        done = store.calibrate_and_store(
            conn,
            media=media,
            since=_utc(since),
            until=_utc(until),
            min_reads=min_reads,
            min_mounts=min_mounts,
            force=force,
        )
    if done.unknown_media_reads:
        click.echo(
            f"{done.unknown_media_reads} reads left out: their tapes' media type is unknown"
            " (load a tape inventory: tapelens ingest tapes)",
            err=True,
        )
    outcomes = done.outcomes
    for outcome in outcomes:
        if outcome.message:
            click.echo(f"tapelens: {outcome.message}", err=True)
        for note in outcome.fit.notes if outcome.stored else ():
            click.echo(f"{outcome.fit.media_type}: {note}", err=True)
    stored = [o for o in outcomes if o.stored]
    if stored:
        rows = {
            o.fit.media_type: (
                o.fit.params,
                f"fit {o.fit_id}: n={o.fit.n_reads} r2={_num(o.fit.r2)} "
                f"median_err={_num(o.fit.median_abs_pct_error)}%",
            )
            for o in stored
        }
        emit(params_table(rows), "table", None)
        store_placement_costs(app.dsn())  # a new price: the placement costs follow it
    else:
        raise TapelensError("no parameters stored: every fit rests on too little data")


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


@throughput.command("show")
@click.option("--media", multiple=True, metavar="TYPE", help="Only this media type (repeatable).")
@click.option(
    "--plot",
    type=click.Path(dir_okay=False),
    help="Draw observed vs predicted rate against gap and file size to FILE.png.",
)
@format_option
@pass_app
def show(app: App, media: tuple[str, ...], plot: str | None, fmt: str, output: str | None) -> None:
    """Print the parameters in use per media type (calibrated, else default) and their source.

    \b
    Example:
        tapelens throughput show --media LTO-8 --plot lto8-fit.png
    """
    with connection(app.dsn()) as conn:
        in_use = store.params_in_use(conn)
        if media:
            in_use = {k: v for k, v in in_use.items() if k in media}
        reads = mounts = None
        if plot:
            reads = store.read_observed_reads(conn, media=list(in_use))
            mounts = store.read_mounts(conn)
    emit(params_table(in_use), fmt, output)
    if plot and reads is not None and mounts is not None:
        prepared = prepare_reads(reads, mounts)
        if prepared.height > PLOT_SAMPLE_READS:
            prepared = prepared.sample(PLOT_SAMPLE_READS, seed=0)
        params = {k: p for k, (p, _) in in_use.items() if k in set(prepared["media_type"])}
        prepared = prepared.filter(pl.col("media_type").is_in(list(params)))
        if prepared.height == 0:
            raise TapelensError("--plot: no observed reads of these media types")
        figure = fit_figure(predict_reads(prepared, params), "observed vs predicted rate")
        figure.savefig(plot, dpi=120)
        click.echo(f"wrote {plot} ({prepared.height} reads)", err=True)


@throughput.command("validate")
@click.option(
    "--holdout",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=DEFAULT_HOLDOUT,
    show_default=True,
    help="Share of the newest reads held out.",
)
@click.option("--media", multiple=True, metavar="TYPE", help="Only this media type (repeatable).")
@click.option("--since", type=click.DateTime(TIME_FORMATS), help="Reads from this time (UTC).")
@format_option
@pass_app
def validate_cmd(
    app: App,
    holdout: float,
    media: tuple[str, ...],
    since: datetime | None,
    fmt: str,
    output: str | None,
) -> None:
    """Fit on all but the newest reads, predict those, print the rate error by gap class.

    Errors are |predicted - observed| / observed per-read rate, in percent, by media type and
    gap class (first | read_through | locate | all).

    \b
    Example:
        tapelens throughput validate --holdout 0.25
    """
    with connection(app.dsn()) as conn:
        reads = store.read_observed_reads(conn, since=_utc(since), media=media or None)
        mounts = store.read_mounts(conn, since=_utc(since))
        defaults = store.default_params(conn)
    result = validate(reads, mounts, defaults, holdout)
    click.echo(
        f"held out {result.test_reads} reads from {result.cutoff:%Y-%m-%d %H:%M} on; "
        f"fitted on {result.train_reads}",
        err=True,
    )
    for name, source in sorted(result.sources.items()):
        click.echo(f"{name}: {source}", err=True)
    emit(result.errors, fmt, output)
