"""`tapelens plan dedup`: which copy of each duplicated file to keep, which to retire, and the
mounts a recall of each affected dataset saves."""

from __future__ import annotations

import click

from tapelens.analysis.dedup.plan import dedup_plan
from tapelens.analysis.dedup.store import read_dedup_copies
from tapelens.analysis.reports.queries import rounded
from tapelens.cli.common import (
    INVENTORY_DRIVES,
    AliasedChoice,
    App,
    dataset_type_option,
    drives_option,
    engine_site,
    known_names_in,
    limit_options,
    nothing_matches,
    pass_app,
    sort_and_limit,
)
from tapelens.cli.groups import BY_NAME
from tapelens.cli.output import emit, format_option
from tapelens.errors import InputError
from tapelens.spark.settings import engine_options

# One row per copy, dataset or tape: the words `report --by` uses; the plurals of before still
# work.
BY = ("copy", "dataset", "tape")
FORMER_BY = {"copies": "copy", "datasets": "dataset", "tapes": "tape"}
# What decides each table, never left out of a fitted one.
DECIDES = {
    "copy": ("action", "reason"),
    "dataset": ("mounts_saved", "recall_saved_s"),
    "tape": ("copies_to_retire", "bytes_to_retire"),
}


@BY_NAME["plan"].command("dedup")
@click.option("--dataset", help="Only this dataset.")
@dataset_type_option
@drives_option(INVENTORY_DRIVES)
@click.option(
    "--by",
    type=AliasedChoice(BY, FORMER_BY),
    default="copy",
    show_default=True,
    help="Print one row per copy, per affected dataset, or per tape.",
)
@limit_options
@format_option
@engine_options
@pass_app
def dedup(
    app: App,
    dataset: str | None,
    dataset_type: str | None,
    drives_spec: str | None,
    by: str,
    sort: str | None,
    desc: bool,
    limit: int | None,
    fmt: str,
    output: str | None,
) -> None:
    """Which copy of each duplicated file to keep and which to retire.

    tapelens never deletes anything: this is a list for the site to review. Keep the oldest copy
    that sits with its dataset (on a readable tape); verify the checksum of every copy marked
    verify_checksum BEFORE retiring any other copy of its file. Files whose copies' checksums
    differ are marked review and keep all their copies. --by dataset shows the mounts (and
    predicted seconds) a recall of each dataset saves once the retired copies are gone; --by
    tape the copies retired per tape.

    \b
    Example:
        tapelens plan dedup --by dataset --sort mounts_saved --desc --limit 10
        tapelens plan dedup --dataset-type RAW --format csv -o dedup.csv
    """
    if dataset and dataset_type:
        raise click.UsageError("give --dataset or --dataset-type, not both")
    read, model, drives = engine_site(app, drives_spec, plan=True)
    copies = read_dedup_copies(read, dataset=dataset, dataset_type=dataset_type)
    if copies.height == 0 and (dataset or dataset_type):
        option, value = ("--dataset", dataset) if dataset else ("--dataset-type", dataset_type)
        known = known_names_in(read, "dataset" if dataset else "dataset_type")
        if value not in known:
            raise nothing_matches(option, str(value), known)
        raise InputError(f"{option} {value!r}: no file with more than one live copy")
    result = dedup_plan(copies, model.params, drives, model.readers)
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
    frames = {"copy": result.copies, "dataset": result.datasets, "tape": result.tapes}
    # Rounded as the reports are: either engine gives the same figures.
    frame = sort_and_limit(rounded(frames[by]), sort, desc, limit)
    keep = [c for c in (*DECIDES[by], sort) if c and c in frame.columns]
    emit(frame, fmt, output, keep=keep)
