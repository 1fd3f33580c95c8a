"""`tapelens plan dedup`: which copy of each duplicated file to keep, which to retire, and the
mounts a recall of each affected dataset saves."""

from __future__ import annotations

import click

from tapelens.analysis.dedup.plan import dedup_plan
from tapelens.analysis.dedup.store import read_dedup_copies
from tapelens.analysis.recall.drives import parse_drives
from tapelens.analysis.throughput import store
from tapelens.cli.common import (
    INVENTORY_DRIVES,
    App,
    dataset_type_option,
    drives_for,
    drives_option,
    pass_app,
)
from tapelens.cli.groups import BY_NAME
from tapelens.cli.output import emit, format_option
from tapelens.db import connection
from tapelens.errors import InputError

BY = ("copies", "datasets", "tapes")


@BY_NAME["plan"].command("dedup")
@click.option("--dataset", help="Only this dataset.")
@dataset_type_option
@drives_option(f"{INVENTORY_DRIVES}, else one of a type for each media")
@click.option(
    "--by",
    type=click.Choice(BY),
    default="copies",
    show_default=True,
    help="Print one row per copy, per affected dataset, or per tape.",
)
@format_option
@pass_app
def dedup(
    app: App,
    dataset: str | None,
    dataset_type: str | None,
    drives_spec: str | None,
    by: str,
    fmt: str,
    output: str | None,
) -> None:
    """Which copy of each duplicated file to keep and which to retire.

    tapelens never deletes anything: this is a list for the site to review. Keep the oldest copy
    that sits with its dataset (on a readable tape); verify the checksum of every copy marked
    verify_checksum BEFORE retiring any other copy of its file. Files whose copies' checksums
    differ are marked review and keep all their copies. --by datasets shows the mounts (and
    predicted seconds) a recall of each dataset saves once the retired copies are gone; --by
    tapes the copies retired per tape.

    \b
    Example:
        tapelens plan dedup --by datasets
        tapelens plan dedup --dataset-type RAW --format csv -o dedup.csv
    """
    if dataset and dataset_type:
        raise click.UsageError("give --dataset or --type, not both")
    with connection(app.dsn()) as conn:
        copies = read_dedup_copies(conn, dataset=dataset, dataset_type=dataset_type)
        params = {m: p for m, (p, _) in store.params_in_use(conn).items()}
        readers = store.readable_by(conn)
        drives = parse_drives(drives_spec) if drives_spec else store.read_drives(conn)
    if dataset and copies.height == 0:
        raise InputError(f"dataset {dataset!r} has no file with more than one live copy")
    if copies.height:
        drives = drives_for(drives, copies, readers)
    result = dedup_plan(copies, params, drives, readers)
    s = result.summary
    saved = s["mounts_saved"]
    change = f"save {saved}" if saved >= 0 else f"need {-saved} more"
    click.echo(
        f"{s['files_duplicated']} files duplicated: {s['copies_to_retire']} copies to retire"
        f" ({s['bytes_to_retire'] / 1e9:.1f} GB, {s['stray_copies']} stray),"
        f" {s['files_review']} files to review; recalls of the {s['datasets']} datasets {change}"
        f" mounts ({s['mounts_now']} -> {s['mounts_after']})",
        err=True,
    )
    frames = {"copies": result.copies, "datasets": result.datasets, "tapes": result.tapes}
    emit(frames[by], fmt, output)
