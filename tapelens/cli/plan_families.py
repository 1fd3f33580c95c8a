"""`tapelens plan families`: which hint level to collocate written files on, the tape families to
define within the tapes the site can keep open, and what they save."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import click
import polars as pl

from tapelens.analysis.families.advice import RECORDED, AdviceOptions, levels_of
from tapelens.analysis.families.export import SYSTEMS, write_exports
from tapelens.analysis.families.store import (
    SiteAdviceOptions,
    advise_from_catalog,
    store_advice,
)
from tapelens.analysis.sim.simulator import parse_duration
from tapelens.analysis.whatif.families import DEFAULT_MIN_FAMILY_BYTES
from tapelens.analysis.whatif.replay import WhatIfParams
from tapelens.cli.common import (
    App,
    drives_option,
    drives_or_inventory,
    export_dir_option,
    limit_options,
    need_export_dir,
    pass_app,
    sort_and_limit,
    write_stream_options,
    written_between_options,
)
from tapelens.cli.groups import BY_NAME
from tapelens.cli.output import emit, format_option
from tapelens.cli.whatif import _bytes, _epoch
from tapelens.db import connection
from tapelens.frames import postgres_reader

BY = ("placement", "family")
# What decides each table, never left out of a fitted one.
DECIDES = {
    "placement": ("placement", "advised", "recall_mounts", "recall_hours"),
    "family": ("family", "bytes"),
}


@BY_NAME["plan"].command("families")
@click.option(
    "--level",
    "levels",
    type=click.Choice(["0", "1", "2", "3", "4"]),
    multiple=True,
    help="A hint level to try; repeat for several (default: all five).",
)
@write_stream_options
@click.option(
    "--open-families",
    type=click.IntRange(1),
    help="Tapes the site keeps open for writing, shared out over the pools by their bytes"
    " (default: --write-drives).",
)
@click.option(
    "--min-family-bytes",
    metavar="SIZE",
    help=f"A smaller hint group is written with its parent's (default: "
    f"{DEFAULT_MIN_FAMILY_BYTES // 10**9} GB).",
)
@written_between_options
@drives_option()
@click.option(
    "--by",
    type=click.Choice(BY),
    default="placement",
    show_default=True,
    help="Print one row per pool and placement, or per advised family.",
)
@click.option(
    "--export",
    "exports",
    type=click.Choice(SYSTEMS),
    multiple=True,
    help="Write the advised families for a tape system (repeatable): Spectrum Protect"
    " collocation groups, cta-admin commands, HPSS file families, a dCache HSM mapping.",
)
@export_dir_option
@click.option(
    "--store/--no-store",
    default=True,
    show_default=True,
    help="Keep the advice in the database as each pool's last (the Write placement dashboard"
    " shows it), replacing the pool's previous one.",
)
@click.option(
    "--tsm-node",
    default="DCACHE",
    show_default=True,
    help="With --export tsm: the node whose file spaces the collocation groups take in.",
)
@limit_options
@format_option
@pass_app
def families(
    app: App,
    levels: tuple[str, ...],
    write_drives: int,
    open_families: int | None,
    min_family_bytes: str | None,
    sort_window: str,
    batch_bytes: str | None,
    since: datetime | None,
    until: datetime | None,
    drives_spec: str | None,
    by: str,
    exports: tuple[str, ...],
    export_dir: str | None,
    store: bool,
    tsm_node: str,
    sort: str | None,
    desc: bool,
    limit: int | None,
    fmt: str,
    output: str | None,
) -> None:
    """Advise tape families from the written files' collocation hints.

    For each hint level the recorded writes are replayed collocated by that level, with at most
    --open-families tapes open per pool (small groups written with their parent's), and every
    placement, the recorded one too, is priced the same way: tapes per dataset, mean gap, and
    the history's recall campaigns recalled from it by the recall engine (mounts, drive hours
    and elapsed hours). Per pool the advised level is the one with the fewest recall hours;
    write_mounts and partly_filled_tapes are what it costs. The advice is kept in the database
    as each pool's last (--no-store: printed only), for the Write placement dashboard. --export
    writes the advised families for Spectrum Protect, CTA, HPSS or dCache's HSM script. Needs
    hints (`ingest hints`), the marts and transfers with reads.

    \b
    Example:
        tapelens plan families --write-drives 6 --batch-bytes 4TB
        tapelens plan families --by family --level 3 --open-families 12 -o families.csv
        tapelens plan families --export cta --export tsm --export-dir families/
    """
    need_export_dir(exports, export_dir)
    params = WhatIfParams(
        window_s=parse_duration(sort_window, "--sort-window"),
        batch_bytes=_bytes(batch_bytes, "--batch-bytes"),
        write_drives=write_drives,
    )
    advice = AdviceOptions(
        open_families=open_families or write_drives,
        min_family_bytes=_bytes(min_family_bytes, "--min-family-bytes") or DEFAULT_MIN_FAMILY_BYTES,
        levels=levels_of(levels) if levels else AdviceOptions(1).levels,
    )

    def say(message: str) -> None:
        click.echo(f"  {message}", err=True)

    with connection(app.dsn()) as conn:
        drives = drives_or_inventory(conn, drives_spec)
        options = SiteAdviceOptions(advice, _epoch(since), _epoch(until), drives)
        result = advise_from_catalog(conn, params, options, say, postgres_reader(app.dsn()))
        if store:
            pools = store_advice(conn, result, params, options)
            click.echo(f"kept the advice of {len(pools)} pool(s): {', '.join(pools)}", err=True)
    for line in summary(result.table):
        click.echo(line, err=True)
    if exports and export_dir:
        for path in write_exports(result.families, exports, Path(export_dir), tsm_node):
            click.echo(f"wrote {path}", err=True)
    frame = result.table if by == "placement" else result.families
    frame = sort_and_limit(frame, sort, desc, limit)
    keep = [c for c in (*DECIDES[by], sort) if c and c in frame.columns]
    emit(frame, fmt, output, keep=keep)


def summary(table: pl.DataFrame) -> list[str]:
    """One line per pool: the advised level and what it saves against the recorded placement."""
    lines = []
    for row in table.filter(pl.col("advised")).iter_rows(named=True):
        now = table.filter((pl.col("pool") == row["pool"]) & (pl.col("placement") == RECORDED))
        if now.height == 0:
            continue
        was = now.row(0, named=True)
        if row["level"] is None:
            lines.append(
                f"{row['pool']}: keep the recorded placement (no hint level recalls the"
                f" history in fewer than its {was['recall_hours']:.1f} drive hours)"
            )
            continue
        lines.append(
            f"{row['pool']}: collocate by hint level {row['level']} ({row['families']} families,"
            f" {row['open_families']} open): recall mounts {was['recall_mounts']} ->"
            f" {row['recall_mounts']}, drive hours {was['recall_hours']:.1f} ->"
            f" {row['recall_hours']:.1f}, tapes per dataset {_num(was['tapes_per_dataset'])} ->"
            f" {_num(row['tapes_per_dataset'])}; costs {row['write_mounts']} write mounts,"
            f" {row['partly_filled_tapes']} tapes partly filled"
        )
    return lines


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"
