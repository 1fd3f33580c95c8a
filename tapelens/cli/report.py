"""`tapelens report`: gap, duplicate, tape, occupancy, rate and hint reports from the marts."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import click

from tapelens.analysis.reports.plots import plot_report
from tapelens.analysis.reports.queries import (
    COUNT_COLUMN,
    DECIDES,
    DEFAULT_BY,
    GROUPINGS,
    ReportFilter,
    arrange,
    report_query,
    rounded,
)
from tapelens.cli.common import (
    TIME_FORMATS,
    App,
    aliased,
    dataset_type_option,
    engine_reader,
    hidden_alias,
    known_names_in,
    nothing_matches,
    pass_app,
)
from tapelens.cli.groups import BY_NAME
from tapelens.cli.output import emit, format_option
from tapelens.errors import DatabaseError
from tapelens.frames import missing_relation
from tapelens.spark.settings import current_engine, engine_options

report = BY_NAME["report"]
EXAMPLES = {
    "gaps": "tapelens report gaps --by type --format csv",
    "duplicates": "tapelens report duplicates --format json -o duplicates.json",
    "tapes": "tapelens report tapes --by dataset --dataset-type AOD",
    "occupancy": "tapelens report occupancy --plot occupancy.png",
    "rates": "tapelens report rates --by gap --since 2024-01-01",
    "hints": "tapelens report hints --by level",
}
HELP = {
    "gaps": "Mean counted positional gap (mu, n, sigma, sem) by dataset type and period.",
    "duplicates": "Files with more than one live copy, their volumes and the mounts they cost.",
    "tapes": "Tapes per dataset: used, needed at capacity, main tapes, mean gap.",
    "occupancy": "Tape occupancy: live and duplicate bytes against capacity.",
    "rates": "Observed read rates by gap at read time, type, tape, month or file size.",
    "hints": "Collocation hints: coverage by experiment, activity and month; each group at each"
    " level; per level, tapes used against needed, mean gap and interleaving.",
}


def _make(name: str) -> None:
    @report.command(name, help=f"{HELP[name]}\n\n\b\nExample:\n    {EXAMPLES[name]}")
    @click.option(
        "--by",
        type=click.Choice(GROUPINGS[name]),
        default=DEFAULT_BY[name],
        show_default=True,
        help="Grouping of the figures.",
    )
    @click.option("--since", type=click.DateTime(TIME_FORMATS), help="From this time (UTC).")
    @click.option("--until", type=click.DateTime(TIME_FORMATS), help="Before this time (UTC).")
    @dataset_type_option
    @click.option("--limit", type=click.IntRange(min=1), help="At most this many rows.")
    @hidden_alias("--min-n", "min_files", type=click.IntRange(min=1))
    @click.option(
        "--min-files",
        "min_files",
        type=click.IntRange(min=1),
        callback=aliased("min_files"),
        help="Leave out groups resting on fewer samples: gap samples (n) for gaps, reads for"
        " rates, copies for a duplicated file, files otherwise.",
    )
    @click.option("--sort", "sort", metavar="COLUMN", help="Sort the rows by this column.")
    @click.option("--desc", is_flag=True, help="With --sort: largest first.")
    @click.option("--plot", type=click.Path(dir_okay=False), help="Also draw a chart to FILE.png.")
    @format_option
    @engine_options
    @pass_app
    def command(
        app: App,
        by: str,
        since: datetime | None,
        until: datetime | None,
        dataset_type: str | None,
        limit: int | None,
        min_files: int | None,
        sort: str | None,
        desc: bool,
        plot: str | None,
        fmt: str,
        output: str | None,
    ) -> None:
        if desc and sort is None:
            raise click.UsageError("--desc needs --sort COLUMN")
        # The database cuts to --limit unless the rows are filtered or sorted here first.
        arranged = min_files is not None or sort is not None
        cut = None if arranged else limit
        engine = current_engine()
        read = engine_reader(engine, app.home, app.dsn)
        chosen = ReportFilter(since, until, dataset_type, cut)
        query, params = report_query(name, by, chosen, read.dialect)
        try:
            frame = read(query, params)
        except DatabaseError as exc:
            if missing_relation(str(exc)):
                where = "on Spark" if engine.spark else "in this database"
                again = " --engine spark" if engine.spark else ""
                raise DatabaseError(
                    f"the marts are not built {where}: run `tapelens marts build{again}`"
                ) from None
            raise
        frame = rounded(frame)
        if frame.height == 0 and dataset_type:
            known = known_names_in(read, "dataset_type")
            if dataset_type.upper() not in known:
                raise nothing_matches("--dataset-type", dataset_type, known)
        if arranged:
            frame = arrange(
                frame, name, by, min_files=min_files, sort=sort, descending=desc, limit=limit
            )
        decides = (*DECIDES.get(name, ()), COUNT_COLUMN.get((name, by), ""), sort or "")
        emit(frame, fmt, output, keep=[c for c in decides if c in frame.columns])
        if plot:
            plot_report(name, by, frame, Path(plot))
            click.echo(f"wrote {plot}", err=True)


for _name in DEFAULT_BY:
    _make(_name)
