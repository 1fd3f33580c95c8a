"""`tapelens plan recall` and `tapelens plan compare`: recall plans, and how they went."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from pathlib import Path

import click
import polars as pl

from tapelens.analysis.recall.baselines.direct import DirectSubmission
from tapelens.analysis.recall.datasets.stored import read_placement_costs
from tapelens.analysis.recall.engine import OBJECTIVES
from tapelens.analysis.recall.exports import export as plan_export
from tapelens.analysis.recall.plan.planner import (
    PlanOptions,
    RecallPlan,
    whole_datasets,
    with_placement_costs,
)
from tapelens.analysis.recall.plan.policy_comparison import compare_policies, default_policies
from tapelens.analysis.recall.plan.summary import summary_text
from tapelens.analysis.recall.requests.lists import read_requests
from tapelens.analysis.recall.schedule.policies import (
    DEFAULT_POLICY,
    POLICIES,
    Sharing,
    parse_group_weights,
)
from tapelens.analysis.recall.store.catalog import plan_from_database, planning_inputs
from tapelens.analysis.recall.store.saved_plans import compare_plan, save_plan
from tapelens.cli.common import (
    App,
    drives_option,
    drives_or_inventory,
    export_dir_option,
    need_export_dir,
    order_option,
    pass_app,
    refuse_left_out,
    say_left_out,
)
from tapelens.cli.groups import BY_NAME
from tapelens.cli.output import (
    BY_SUFFIX,
    emit,
    emit_summary,
    format_option,
    summary_format_option,
)
from tapelens.cli.progress import EVERY_S, Progress
from tapelens.db import connection
from tapelens.errors import InputError
from tapelens.spark.settings import current_engine, engine_options

plan = BY_NAME["plan"]


POLICY_HELP = (
    "Which waiting tape a free drive takes: fifo, the tape of the earliest request;"
    " by-demand, the tape with the most requested bytes; time-slider, the tape of the oldest"
    " request (higher priority first), with every other request on it; equal, the requester"
    " with the fewest drives busy for it; group, likewise between groups; weighted, groups in"
    " proportion to --group-weights."
)


@plan.command("recall")
@click.argument("requests", type=click.Path(dir_okay=False, allow_dash=True))
@drives_option()
@click.option(
    "--policy",
    type=click.Choice(POLICIES),
    default=DEFAULT_POLICY,
    show_default=True,
    help=POLICY_HELP,
)
@click.option(
    "--max-drives-per-group", type=click.IntRange(min=1), help="Drives one group may hold."
)
@click.option(
    "--requester-limit", type=click.IntRange(min=1), help="Files one requester may have in flight."
)
@click.option(
    "--group-weights",
    metavar="G=W,...",
    help="Each group's share of the drives, for --policy weighted (required there).",
)
@click.option(
    "--objective",
    type=click.Choice(OBJECTIVES),
    default="makespan",
    show_default=True,
    help="When files have several copies: finish soonest (drives that would idle read other"
    " copies), or spend the least drive time (fewest, shortest mounts).",
)
@order_option
@click.option(
    "--fifo-window",
    type=click.IntRange(min=1),
    help="Requests the front end lets through at once in the FIFO baseline (default: the whole"
    " list, as hsi or a bulk stage request sends it).",
)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="The plan as CSV.")
@click.option(
    "--summary",
    "summary_file",
    type=click.Path(dir_okay=False),
    help="Summary JSON (- for stdout).",
)
@click.option(
    "--export",
    "formats",
    multiple=True,
    type=click.Choice(plan_export.EXPORT_FORMATS),
    help="Export format (repeatable).",
)
@export_dir_option
@click.option("--save", "save_name", metavar="NAME", help="Store the plan in the database.")
@engine_options
@pass_app
def recall(
    app: App,
    requests: str,
    drives_spec: str | None,
    policy: str,
    max_drives_per_group: int | None,
    requester_limit: int | None,
    group_weights: str | None,
    objective: str,
    read_order: str,
    fifo_window: int | None,
    output: str | None,
    summary_file: str | None,
    formats: tuple[str, ...],
    export_dir: str | None,
    save_name: str | None,
) -> None:
    """Plan the recall of the files or datasets listed in REQUESTS.

    REQUESTS is a CSV file with a header naming path, file_id or dataset (and optionally
    requester, group, priority, submitted_at), or plain text with one path a line. The plan
    mounts every tape once, reads it in position order (or, with --order rao, in the order
    its serpentine geometry makes fastest), and is compared with direct FIFO submission and
    with newest-copy selection. The exports list each tape's files in the plan's read order.

    \b
    Example:
        tapelens plan recall campaign.csv --drives LTO8:6,LTO7:4 -o plan.csv \\
            --summary plan.json --export dsmc --export-dir staging/
    """
    need_export_dir(formats, export_dir)
    _csv_only(output, "the plan", "--export json --export-dir DIR")
    sharing = Sharing(
        policy=policy,
        max_drives_per_group=max_drives_per_group,
        requester_limit=requester_limit,
        group_weights=parse_group_weights(group_weights) if group_weights else (),
    )
    asked = read_requests(requests)
    options = partial(
        _options,
        sharing=sharing,
        objective=objective,
        read_order=read_order,
        fifo_window=fifo_window,
    )
    if current_engine().spark:
        if save_name:
            raise InputError(
                "--save: saved plans are kept in PostgreSQL, beside the transfers `plan compare`"
                " reads; plan on the postgres engine to save one"
            )
        result = _plan_on_spark(app, asked, drives_spec, options)
    else:
        result = _plan_on_postgres(app, asked, drives_spec, options, save_name)
    _write_plan(result, output, summary_file, formats, export_dir)


def _options(
    drives: dict[str, int],
    sharing: Sharing,
    objective: str,
    read_order: str,
    fifo_window: int | None,
) -> PlanOptions:
    return PlanOptions(
        drives=tuple(drives.items()),
        sharing=sharing,
        objective=objective,
        order=read_order,
        direct=DirectSubmission(window=fifo_window),
    )


def _say(line: str) -> None:
    click.echo(f"tapelens: {line}", err=True)


def _plan_on_spark(
    app: App,
    asked: pl.DataFrame,
    drives_spec: str | None,
    options: Callable[[dict[str, int]], PlanOptions],
) -> RecallPlan:
    """The plan read from the Spark tables (analysis.recall.store.on_spark): the same planner
    on the same copies as on PostgreSQL."""
    from tapelens.analysis.recall.store import on_spark
    from tapelens.spark.session import spark_session

    engine = current_engine()
    spark = spark_session(engine.spark_master, engine.warehouse(app.home))
    drives = on_spark.drives_or_inventory(spark, drives_spec)
    with _Steps("reading the requested files' copies from the Spark tables") as steps:
        result, _ = on_spark.plan_from_spark(
            spark, asked, options(drives), note=_say, progress=steps
        )
    whole = whole_datasets(asked)
    if whole:
        result = with_placement_costs(result, on_spark.read_placement_costs(spark, whole))
    return result


def _plan_on_postgres(
    app: App,
    asked: pl.DataFrame,
    drives_spec: str | None,
    options: Callable[[dict[str, int]], PlanOptions],
    save_name: str | None,
) -> RecallPlan:
    with connection(app.dsn(), autocommit=True) as conn:
        drives = drives_or_inventory(conn, drives_spec)
        with _Steps("reading the requested files' copies from the catalog") as steps:
            result, params = plan_from_database(
                conn, asked, options(drives), note=_say, progress=steps
            )
        # The placement cost of each whole dataset asked for, as every command quotes it.
        whole = whole_datasets(asked)
        if whole:
            result = with_placement_costs(result, read_placement_costs(conn, whole))
        if save_name:
            replaced = save_plan(conn, save_name, result, params)
            click.echo(f"{'replaced' if replaced else 'saved'} plan {save_name!r}", err=True)
    return result


def _write_plan(
    result: RecallPlan,
    output: str | None,
    summary_file: str | None,
    formats: tuple[str, ...],
    export_dir: str | None,
) -> None:
    """The plan's CSV, summary and exports, and its summary on stdout."""
    if result.summary["files"] == 0:
        raise InputError(plan_export.nothing_to_recall(result))
    to_stdout = summary_file == "-"
    written = plan_export.write_outputs(
        result,
        output=Path(output) if output else None,
        summary=Path(summary_file) if summary_file and not to_stdout else None,
        formats=formats,
        export_dir=Path(export_dir) if export_dir else None,
    )
    for path in written:
        click.echo(f"wrote {path}", err=True)
    say_left_out(result.not_found, result.unavailable, written, "-o FILE")
    if to_stdout:
        click.echo(json.dumps(result.summary, indent=2))
    else:
        click.echo(summary_text(result.summary), nl=False)


def _csv_only(output: str | None, what: str, instead: str) -> None:
    """An -o that writes CSV only refuses a name whose extension says another format, rather
    than put CSV into a file called x.json."""
    suffix = Path(output).suffix.lower() if output else ""
    if suffix in BY_SUFFIX and BY_SUFFIX[suffix] != "csv":
        raise click.UsageError(
            f"-o {output}: {what} is written as CSV (give FILE.csv, or {instead})"
        )


class _Steps(Progress):
    """The plan's steps on stderr (tapelens.cli.progress): the catalog read first, which is one
    statement PostgreSQL reports no progress of, then planning, which every later step does."""

    def __init__(self, first: str, tick_s: float = EVERY_S) -> None:
        super().__init__("plan recall", first, every_s=tick_s)

    def __call__(self, line: str) -> None:
        self.doing = "planning"  # every step after the catalog read plans or compares
        self.say(line)


@plan.command("policies")
@click.argument("requests", type=click.Path(dir_okay=False, allow_dash=True))
@drives_option()
@click.option(
    "--policy",
    "policies",
    multiple=True,
    type=click.Choice(POLICIES),
    help="A policy to compare (repeatable; default: all, weighted only with --group-weights). "
    + POLICY_HELP,
)
@click.option(
    "--group-weights",
    metavar="G=W,...",
    help="Each group's share of the drives, for the weighted policy.",
)
@click.option(
    "--requesters",
    "by_requester",
    is_flag=True,
    help="One row per policy and requester (files, bytes, when the last is read) instead.",
)
@format_option
@pass_app
def policies_cmd(
    app: App,
    requests: str,
    drives_spec: str | None,
    policies: tuple[str, ...],
    group_weights: str | None,
    by_requester: bool,
    fmt: str,
    output: str | None,
) -> None:
    """Plan the same REQUESTS under several drive-sharing policies and compare them: makespan,
    mounts, when the first, median and last requester is served, and fairness (Jain's index
    over the requesters' throughputs: 1 when all are served at the same rate).

    \b
    Example:
        tapelens plan policies campaign.csv --drives LTO8:6,LTO7:4
        tapelens plan policies campaign.csv --drives LTO8:4 --policy fifo --policy equal \\
            --requesters --format csv
    """
    sharing = Sharing(group_weights=parse_group_weights(group_weights) if group_weights else ())
    chosen = policies or default_policies(sharing)
    for policy in chosen:
        Sharing(policy=policy, group_weights=sharing.group_weights)  # weighted needs weights
    asked = read_requests(requests)
    with connection(app.dsn(), autocommit=True) as conn:
        drives = drives_or_inventory(conn, drives_spec)
        options = PlanOptions(drives=tuple(drives.items()), sharing=sharing)
        catalog, params, readers = planning_inputs(
            conn, asked, note=lambda line: click.echo(f"tapelens: {line}", err=True)
        )
    compared = compare_policies(asked, catalog, params, options, chosen, readers)
    if compared.table["files_read"].sum() == 0:
        raise InputError("nothing to recall: no requested file has a readable copy on these drives")
    beside = Path(output) if output else None
    refuse_left_out(compared.not_found, compared.unavailable, beside, "-o FILE")
    frame = compared.served if by_requester else compared.table
    emit(frame, fmt, output, keep=("makespan_s", "mounts", "fairness", "files_read"))


@plan.command("compare")
@click.argument("name")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Per-file comparison CSV.")
@summary_format_option
@pass_app
def compare(app: App, name: str, output: str | None, fmt: str) -> None:
    """Compare a saved plan with what the transfers show since it was saved: a table of the
    figures, or JSON with --format json.

    \b
    Example:
        tapelens plan compare campaign-2024-06 -o compared.csv
        tapelens plan compare campaign-2024-06 --format json
    """
    _csv_only(output, "the per-file comparison", "--format json for the figures")
    with connection(app.dsn(), autocommit=True) as conn:
        result = compare_plan(conn, name)
    if output:
        result.files.write_csv(output)
        click.echo(f"wrote {output}", err=True)
    emit_summary({"plan": result.name, **result.summary}, fmt)
