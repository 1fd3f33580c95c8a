"""`tapelens simulate`: run a plan or a request list through a simulated tape library."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import numpy as np

from tapelens.analysis.recall.schedule.policies import DEFAULT_POLICY
from tapelens.analysis.sim import io as sim_io
from tapelens.analysis.sim.simulator import (
    DEFAULT_CLIENT_DELAY_S,
    DEFAULT_ROBOTS,
    POLICIES,
    SCHEDULERS,
    Library,
    SimConfig,
    parse_duration,
    parse_fault,
    parse_retry,
    simulate,
)
from tapelens.analysis.throughput import store
from tapelens.cli.common import (
    App,
    assume_media_option,
    drives_or_inventory,
    order_option,
    pass_app,
    refuse_left_out,
)
from tapelens.cli.output import emit_summary, summary_format_option
from tapelens.db import connection
from tapelens.errors import InputError


# A plain command, not a group: a group would read everything after PLAN as a subcommand
# ("No such command '--summary'").
@click.command("simulate", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("plan", required=False, type=click.Path(dir_okay=False))
@click.option("--requests", "requests_file", type=click.Path(), help="A request list instead.")
@click.option("--scheduler", type=click.Choice(SCHEDULERS), help="Default: planned with a PLAN.")
@click.option(
    "--policy",
    type=click.Choice(POLICIES),
    default=DEFAULT_POLICY,
    show_default=True,
    help="Which waiting tape a free drive takes, as plan recall's --policy (the simulator"
    " models these three of its policies).",
)
@click.option(
    "--drives",
    "drives",
    metavar="SPEC",
    help="Drive types and counts, e.g. LTO8:6,LTO7:4 (default: the plan's; for --requests,"
    " the online drives of `tapelens drives`).",
)
@click.option("--robots", type=click.IntRange(1), default=DEFAULT_ROBOTS, show_default=True)
@click.option("--robot-s", type=float, help="Robot move time (default: the media type's).")
@click.option("--window", type=click.IntRange(1), help="Requests the scheduler sees at once.")
@click.option(
    "--idle-dismount",
    default="15m",
    show_default=True,
    help="fifo: how long an idle tape stays mounted (e.g. 15m, HPSS; 60m, TSM).",
)
@click.option(
    "--fault", "faults", multiple=True, help="drive:ID:START:DURATION or network:START:DURATION."
)
@click.option("--retry", default="cycle:4", show_default=True, help="immediate or cycle:HOURS.")
@click.option("--client-delay-s", type=float, default=DEFAULT_CLIENT_DELAY_S, show_default=True)
@click.option("--jitter", type=click.FloatRange(0), default=0.0, help="Spread of read times.")
@click.option("--seed", type=int, default=0, show_default=True)
@order_option
@assume_media_option
@click.option("--summary", "summary_file", type=click.Path(dir_okay=False), help="Summary JSON.")
@click.option("--events", "events_file", type=click.Path(dir_okay=False), help="Events Parquet.")
@click.option("--plot", "plot_file", type=click.Path(dir_okay=False), help="Occupancy PNG.")
@summary_format_option
@pass_app
def group(app: App, plan: str | None, requests_file: str | None, **opts: Any) -> None:
    """Simulate a recall: a PLAN (from `tapelens plan recall -o`) or --requests FILE.

    Prints the summary (makespan_s, mounts, rate_mb_s, drive use, retries): a table, or JSON
    with --format json (--summary FILE writes the JSON too).

    \b
    Example:
        tapelens simulate plan.csv --plot occupancy.png
        tapelens simulate plan.csv --format json
        tapelens simulate --requests files.txt --drives LTO8:4 --scheduler sorted \\
            --window 2000 --fault network:2h:3h --retry immediate
    """
    if (plan is None) == (requests_file is None):
        raise InputError("give either a PLAN or --requests FILE")
    scheduler = opts["scheduler"] or ("planned" if plan else "sorted")
    config = SimConfig(
        scheduler=scheduler,
        policy=opts["policy"],
        window=opts["window"],
        faults=tuple(parse_fault(f) for f in opts["faults"]),
        retry=parse_retry(opts["retry"], opts["client_delay_s"]),
        jitter=opts["jitter"],
        idle_dismount_s=parse_duration(opts["idle_dismount"], "--idle-dismount"),
        order=opts["read_order"],
    )
    with connection(app.dsn()) as conn:
        params = {m: p for m, (p, _) in store.params_in_use(conn).items()}
        # A plan names its drives; a request list takes --drives, else the inventory's.
        counts = (
            drives_or_inventory(conn, opts["drives"]) if opts["drives"] or plan is None else None
        )
        if plan is not None:
            source = sim_io.load_plan(conn, plan, opts["assume_media"])
        else:
            from tapelens.analysis.recall.engine import readable_media

            # Only copies on media the library's drives read: a file with none is left out
            # with its reason, as plan recall leaves it out.
            readable = readable_media(counts or {}, store.readable_by(conn))
            source = sim_io.load_requests(conn, str(requests_file), opts["assume_media"], readable)
    if counts is not None:
        library = Library.from_counts(counts, opts["robots"], opts["robot_s"])
    else:
        library = Library.from_names(list(source.drives), opts["robots"], opts["robot_s"])
    # What the request list names but the library cannot read is said, as plan recall says it,
    # its list beside --summary FILE.
    beside = Path(opts["summary_file"]) if opts["summary_file"] else None
    refuse_left_out(source.not_found, source.unavailable, beside, "--summary FILE")
    if source.requests.height == 0:
        raise InputError(
            "nothing to simulate: no requested file has a readable copy on these drives"
        )
    result = simulate(source.requests, library, params, config, np.random.default_rng(opts["seed"]))
    summary = sim_io.summary_dict(result, source)
    if opts["summary_file"]:
        sim_io.write_summary(opts["summary_file"], summary)
    if opts["events_file"]:
        sim_io.write_events(opts["events_file"], result)
    if opts["plot_file"]:
        sim_io.plot_occupancy(opts["plot_file"], result.events, f"{scheduler} ({config.policy})")
    emit_summary(summary, opts["fmt"])
