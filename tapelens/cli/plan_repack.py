"""`tapelens plan repack`: repack candidates ranked by what they would gain."""

from __future__ import annotations

from pathlib import Path

import click
import polars as pl

from tapelens.analysis.repack.advisor import KINDS, RepackOptions
from tapelens.analysis.repack.plot import plot_gain_cost
from tapelens.analysis.repack.store import advise_from
from tapelens.analysis.throughput.model import ModelParams
from tapelens.analysis.throughput.store import params_in_use, readable_by
from tapelens.cli.common import (
    App,
    aliased,
    drives_option,
    drives_or_inventory,
    engine_reader,
    export_dir_option,
    hidden_alias,
    need_export_dir,
    pass_app,
    refuse_left_out,
)
from tapelens.cli.groups import BY_NAME
from tapelens.cli.output import chosen_format, emit, format_option
from tapelens.db import connection
from tapelens.frames import FrameReader
from tapelens.spark.settings import current_engine, engine_options

plan = BY_NAME["plan"]


@plan.command("repack")
@hidden_alias("--top", "limit", type=click.IntRange(min=1))
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=20,
    show_default=True,
    callback=aliased("limit"),
    help="At most this many candidates.",
)
@click.option(
    "--kind",
    "kinds",
    multiple=True,
    type=click.Choice(KINDS),
    help="Only candidates of this kind (repeatable; default all five).",
)
@drives_option()
@click.option(
    "--recalls-per-year",
    type=click.FloatRange(min=0),
    default=1.0,
    show_default=True,
    help="How often each affected dataset is expected to be recalled.",
)
@click.option("--horizon-years", type=click.FloatRange(min=0), default=5.0, show_default=True)
@click.option(
    "--max-occupancy",
    type=click.FloatRange(0, 1),
    default=0.5,
    show_default=True,
    help="Filled tapes below this share of live data are low-occupancy candidates.",
)
@click.option(
    "--container-gb",
    type=click.FloatRange(min=0.1),
    default=10.0,
    show_default=True,
    help="Size of the containers small files are packed into.",
)
@click.option(
    "--export",
    "export",
    type=click.Choice(["volumes"]),
    help="Write the volumes of the top candidates, one a line, to repack.vids (CTA: repack"
    " add --vidfile).",
)
@export_dir_option
@click.option(
    "--export-file", hidden=True, type=click.Path(dir_okay=False), help="Former: the file itself."
)
@click.option("--plot", "plot_file", type=click.Path(dir_okay=False), help="Gain vs cost PNG.")
@format_option
@engine_options
@pass_app
def repack(
    app: App,
    limit: int,
    kinds: tuple[str, ...],
    drives_spec: str | None,
    recalls_per_year: float,
    horizon_years: float,
    max_occupancy: float,
    container_gb: float,
    export: str | None,
    export_dir: str | None,
    export_file: str | None,
    plot_file: str | None,
    fmt: str,
    output: str | None,
) -> None:
    """Rank repack candidates by their net gain over the horizon.

    Five kinds: scattered datasets (many more tapes than needed, high gaps, locates), tapes
    holding stray duplicate copies, low-occupancy tapes, datasets of small files outside
    aggregates, and collocation hint groups scattered over many more tapes than needed. For
    each: the predicted recall of the affected datasets now and after the repack (throughput
    model), the repack's cost in drive hours (read + write), tapes freed
    and consumed, the payback in recalls, and net_gain_h = recalls per year x horizon x drive
    hours saved per recall - cost. Needs the marts (`tapelens marts build`). With --engine
    spark it reads the Spark tables, with the same answers.

    \b
    Example:
        tapelens plan repack --limit 10 --drives LTO9:2,LTO8:4,LTO7:2 --recalls-per-year 2 \\
            --export volumes --export-dir repack/ --plot gain.png
    """
    need_export_dir(export, export_dir or export_file)
    if export_dir:
        Path(export_dir).mkdir(parents=True, exist_ok=True)
        export_file = str(Path(export_dir) / VOLUMES_FILE)
    read, drives, params, readers = _inputs(app, drives_spec)
    options = RepackOptions(
        drives=tuple(drives.items()),
        top=limit,
        kinds=kinds or KINDS,
        recalls_per_year=recalls_per_year,
        horizon_years=horizon_years,
        max_occupancy=max_occupancy,
        container_bytes=int(container_gb * 1e9),
    )
    advice = advise_from(
        read, options, params, readers, progress=lambda msg: click.echo(msg, err=True)
    )
    ranked = advice.top(limit)
    s = advice.summary
    click.echo(
        f"{s['candidates']} candidate(s) weighed; top {ranked.height}: "
        f"{s['worth_it']} pay back within the horizon, net gain {s['top_net_gain_h']:.1f} "
        f"drive-h for {s['top_repack_cost_h']:.1f} drive-h of repack, "
        f"{s['top_tapes_freed']:.0f} tape(s) freed",
        err=True,
    )
    if export and export_file:
        volumes = advice.volumes(limit)
        Path(export_file).write_text("".join(f"{v}\n" for v in volumes))
        click.echo(f"wrote {len(volumes)} volume(s) to {export_file}", err=True)
    if plot_file:
        plot_gain_cost(advice.candidates, Path(plot_file))
        click.echo(f"wrote {plot_file}", err=True)
    # Files on media no given drive reads are out of the recall figures: said, and listed
    # beside -o FILE (else in --export-dir), as plan recall lists them.
    beside = Path(output) if output else Path(export_dir) / "repack" if export_dir else None
    refuse_left_out(pl.DataFrame(), advice.unavailable, beside, "-o FILE")
    fmt = chosen_format(fmt, output)
    emit(_printable(ranked, fmt), fmt, output, keep=DECIDES)


Inputs = tuple[FrameReader, dict[str, int], dict[str, ModelParams], dict[str, tuple[str, ...]]]


def _inputs(app: App, drives_spec: str | None) -> Inputs:
    """The engine's reader, the drives, the model parameters and which drives read which
    media: from PostgreSQL, or from the Spark tables (analysis.recall.store.on_spark)."""
    engine = current_engine()
    if engine.spark:
        from tapelens.analysis.recall.store import on_spark
        from tapelens.spark.session import spark_session

        spark = spark_session(engine.spark_master, engine.warehouse(app.home))
        read = on_spark.committed_reader(spark)
        drives = on_spark.drives_or_inventory(spark, drives_spec)
        params, readers = on_spark.model_inputs(spark)
        return read, drives, params, readers
    with connection(app.dsn(), autocommit=True) as conn:
        drives = drives_or_inventory(conn, drives_spec)
        params = {m: p for m, (p, _) in params_in_use(conn).items()}
        readers = readable_by(conn)
    return engine_reader(engine, app.home, app.dsn), drives, params, readers


VOLUMES_FILE = "repack.vids"
# What a table shows, what decides first (the ranking, net_gain_h, and what it is made of);
# csv, json and parquet carry every column.
TABLE_COLUMNS = [
    "rank",
    "kind",
    "target",
    "net_gain_h",
    "saving_per_recall_drive_h",
    "repack_cost_h",
    "payback_recalls",
    "tapes_freed",
    "mounts_now",
    "mounts_after",
    "recall_now_h",
    "recall_after_h",
    "evidence",
]
DECIDES = ("kind", "target", "net_gain_h", "saving_per_recall_drive_h", "repack_cost_h")


def _printable(frame: pl.DataFrame, fmt: str) -> pl.DataFrame:
    if fmt == "table":
        return frame.select(TABLE_COLUMNS)
    if fmt == "csv":
        return frame.with_columns(pl.col("volumes").list.join(" "))
    return frame
