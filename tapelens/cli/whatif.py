"""`tapelens whatif placement`: replay the recorded write stream under other write policies."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import click

from tapelens.analysis.recall.schedule.drives import parse_drives
from tapelens.analysis.reports.queries import rounded
from tapelens.analysis.sim.simulator import parse_duration
from tapelens.analysis.whatif.replay import POLICIES, WhatIfParams
from tapelens.analysis.whatif.store import (
    CatalogOptions,
    whatif_from_catalog,
)
from tapelens.cli.common import (
    TIME_FORMATS,
    App,
    aliased,
    dataset_type_option,
    drives_option,
    engine_site,
    hidden_alias,
    known_names_in,
    nothing_matches,
    pass_app,
    write_stream_options,
    written_between_options,
)
from tapelens.cli.output import emit, format_option
from tapelens.errors import InputError
from tapelens.ingest.formats.fields import parse_size
from tapelens.spark.settings import engine_options

# What a what-if table is about: the mean gap, tapes per dataset and the recall rate each
# placement gives, never left out of a table fitted to a terminal.
DECIDES = ("mean_gap", "tapes_per_dataset_mean", "recall_rate_mb_s")
WHATIF_DIGITS = 12
DECIMAL_UNITS = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12, "PB": 10**15}

group = click.Group(
    "whatif",
    help="What-if questions answered on the recorded catalog, before anything is changed.",
)


def _epoch(value: datetime | None) -> float | None:
    if value is None:
        return None
    return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()


def _bytes(text: str | None, what: str) -> int | None:
    if text is None:
        return None
    value = parse_size(text, DECIMAL_UNITS)
    if value is None or value <= 0:
        raise InputError(f"{what}: expected a size like 4TB or 500GB, got {text!r}")
    return value


@group.command("placement")
@click.option(
    "--policy",
    "policies",
    type=click.Choice(POLICIES),
    multiple=True,
    help="Write policy to replay; repeat to compare several (default: all three).",
)
@write_stream_options
@click.option(
    "--switch-at",
    type=click.DateTime(TIME_FORMATS),
    help="Migrations before this day write FIFO, the policy from it on.",
)
@click.option("--split-at", type=click.DateTime(TIME_FORMATS), help="Report before/after.")
@written_between_options
@dataset_type_option
@click.option(
    "--write-media",
    "media",
    metavar="TYPE",
    callback=aliased("media"),
    help="Media type of every replayed tape (default: as the site wrote).",
)
@hidden_alias("--media", "media")
@click.option("--aggregate/--no-aggregate", default=None, help="Pack small files (default: auto).")
@drives_option(
    "the online drives of `tapelens drives`, else one for each media type of the replayed tapes"
)
@click.option("--no-recall", is_flag=True, help="Skip the predicted recall rates (faster).")
@click.option("--plot", type=click.Path(dir_okay=False, path_type=Path), help="Bar chart PNG.")
@format_option
@engine_options
@pass_app
def placement(
    app: App,
    policies: tuple[str, ...],
    sort_window: str,
    batch_bytes: str | None,
    write_drives: int,
    switch_at: datetime | None,
    split_at: datetime | None,
    since: datetime | None,
    until: datetime | None,
    dataset_type: str | None,
    media: str | None,
    aggregate: bool | None,
    drives_spec: str | None,
    no_recall: bool,
    plot: Path | None,
    fmt: str,
    output: str | None,
) -> None:
    """Replay the recorded write stream under each policy and compare mean gap, tapes per
    dataset and predicted recall rate per dataset type with the actual placement (the row
    'actual'): would sorted writes, or collocation, have helped, and by how much.

    The stream is each file's first copy at its written_at. For HPSS that is the create time,
    when the file reached the disk cache; for TSM, CTA and Enstore it is when the copy was
    written to tape, so the replayed arrivals lag by the site's own migration delay. A
    migration runs when the oldest waiting file has waited the sort window (or the cache holds
    --batch-bytes); fifo writes it in arrival order, sorted-by-directory by directory and file
    name, collocate writes each dataset whole once complete. Collocate ignores --switch-at.
    Give the site's own migration policy: a sort groups only the files that wait together, so
    with a window far shorter than the datasets' arrival the sorted replay nears FIFO.

    \b
    Example:
        tapelens whatif placement --policy fifo --policy sorted-by-directory --sort-window 24h \\
            --write-drives 6 --split-at 2020-10-01 --plot gaps.png
    """
    params = WhatIfParams(
        window_s=parse_duration(sort_window, "--sort-window"),
        batch_bytes=_bytes(batch_bytes, "--batch-bytes"),
        write_drives=write_drives,
        switch_at_s=_epoch(switch_at),
    )
    options = CatalogOptions(
        since_s=_epoch(since),
        until_s=_epoch(until),
        dataset_types=(dataset_type,) if dataset_type else (),
        split_at_s=_epoch(split_at),
        media=media,
        aggregate=aggregate,
        drives=parse_drives(drives_spec) if drives_spec else None,
        recall=not no_recall,
    )

    def say(message: str) -> None:
        click.echo(f"  {message}", err=True)

    read, model, _ = engine_site(app)
    if dataset_type and dataset_type not in (known := known_names_in(read, "dataset_type")):
        raise nothing_matches("--dataset-type", dataset_type, known)
    # To 12 significant digits: the replay's sums of epoch seconds, added in another order from
    # either engine's rows, differ in their last bits, never in a printed figure.
    table = rounded(
        whatif_from_catalog(read, model, policies or POLICIES, params, options, say), WHATIF_DIGITS
    )
    emit(table, fmt, output, keep=[c for c in DECIDES if c in table.columns])
    if plot is not None:
        from tapelens.analysis.whatif.plot import plot_mean_gap

        plot_mean_gap(table, plot)
        click.echo(f"wrote {plot}", err=True)
