"""`tapelens ingest`: catalogs, transfer logs, mount logs, tape inventories, write hints."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import click
import yaml
from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)
from rich.progress import Progress as RichProgress

from tapelens.cli.common import App, pass_app
from tapelens.cli.groups import BY_NAME
from tapelens.cli.progress import Progress, time_left
from tapelens.errors import ConfigError
from tapelens.ingest.datasets import DatasetRules
from tapelens.ingest.formats import Format, formats_of, lookup
from tapelens.ingest.formats.base import ParseOptions
from tapelens.ingest.formats.wlcg_hints_inputs import statuses as hint_statuses
from tapelens.ingest.load import IngestResult, ShrinkGuard, ingest_files
from tapelens.ingest.manifest import group_dumps, read_manifest
from tapelens.spark.settings import current_engine, engine_options

ingest = BY_NAME["ingest"]


class _LazyProgress(Progress):
    """A load's progress on stderr (tapelens.cli.progress), once it has run QUIET_S seconds: a
    bar on a terminal; otherwise (logs of batch jobs) a line every ten seconds with rows/s and
    the time left. Steps after the reading (building indexes) each get a line of their own."""

    def __init__(self, label: str) -> None:
        super().__init__(label)
        self.bar: RichProgress | None = None
        self.task: Any = None
        self.tty = sys.stderr.isatty()
        self.step = ""

    def __call__(self, done: int, total: int | None, rows: int, step: str = "") -> None:
        now = self.clock()
        if step:
            if step != self.step:
                self.close()
                self.say(f"{rows:,} rows read; building {step}", now)
            self.step = step
            return
        if not self.tty:
            self.doing = lambda: _rates(done, total, rows, now - self.started)
            self.tick(now)
            return
        if self.bar is None:
            if not self.past_quiet(now):
                return
            self.bar = RichProgress(
                TextColumn("{task.description}"),
                BarColumn(),
                DownloadColumn(),
                TransferSpeedColumn(),
                TextColumn("{task.fields[rows]:,} rows, {task.fields[rate]:,.0f} rows/s"),
                TimeRemainingColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            self.bar.start()
            self.task = self.bar.add_task(self.command, total=total, rows=0, rate=0.0)
        rate = rows / max(now - self.started, 1e-9)
        self.bar.update(self.task, completed=done, rows=rows, rate=rate)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


def _rates(done: int, total: int | None, rows: int, elapsed_s: float) -> str:
    """'386 of 462 MB, 1,676,774 rows, 129,000 rows/s, 38.2 MB/s, 0:02 left'."""
    elapsed_s = max(elapsed_s, 1e-9)
    mb_s = done / 1e6 / elapsed_s
    of = f" of {total / 1e6:,.0f}" if total else ""
    rows_s = rows / elapsed_s
    text = f"{done / 1e6:,.0f}{of} MB, {rows:,} rows, {rows_s:,.0f} rows/s, {mb_s:,.1f} MB/s"
    left = time_left(done, total or 0, elapsed_s)
    return f"{text}, {left}" if left else text


def _mapping_file(path: str) -> Any:
    """The YAML document a --mapping file holds; invalid YAML is a ConfigError naming it."""
    try:
        return yaml.safe_load(Path(path).read_text())
    except yaml.YAMLError as exc:
        raise ConfigError("--mapping", path, f"not valid YAML ({exc})") from None


def _report(result: IngestResult) -> None:
    if result.status == "unchanged":
        click.echo(f"{result.path}: unchanged (already loaded as run {result.run_id})", err=True)
        return
    parts = [f"{result.rows:,} rows loaded"]
    if result.skipped:
        parts.append(f"{result.skipped:,} lines skipped")
    if result.removed:
        parts.append(f"{result.removed:,} copies marked removed")
    click.echo(f"{result.path}: {', '.join(parts)} in {result.seconds:.1f} s", err=True)
    for note in result.notes:
        click.echo(f"{result.path}: {note}", err=True)
    if result.rejects:
        click.echo(result.rejects_summary, err=True)


def _run(
    app: App,
    fmt: Format,
    files: tuple[str, ...],
    source: str | None,
    rules: DatasetRules,
    partial: bool | None,
    guard: ShrinkGuard | None = None,
    **option_values: Any,
) -> None:
    extra = option_values.pop("extra", {}) or {}
    options = ParseOptions(source=source or fmt.source, extra=extra, **option_values)
    engine = current_engine()
    if engine.spark:
        from tapelens.spark.ingest import Load, ingest_on_spark

        load = Load(fmt, list(files), options, rules, partial, guard)
        _report_hints(ingest_on_spark(engine, app.home, [load], _report))
        return
    _load(app.dsn(), fmt, list(files), options, rules, partial, guard)


def _report_hints(counts: dict[str, int]) -> None:
    """The summary of a hints load: how many records stand in each status."""
    if counts:
        click.echo("hints: " + ", ".join(f"{n:,} {s}" for s, n in counts.items()), err=True)


def _load(
    dsn: str,
    fmt: Format,
    files: list[str | Path],
    options: ParseOptions,
    rules: DatasetRules,
    partial: bool | None,
    guard: ShrinkGuard | None,
) -> None:
    """Load files (one dump when they are a whole catalog's) and report each on stderr."""
    bars: list[_LazyProgress] = []

    def progress_for(name: str) -> _LazyProgress:
        for bar in bars:
            bar.close()
        bars.append(_LazyProgress(Path(name).name))
        return bars[-1]

    try:
        results = ingest_files(dsn, fmt, files, options, rules, progress_for, partial, guard)
    finally:
        for bar in bars:
            bar.close()
    for result in results:
        _report(result)


def _check_timezone(ctx: click.Context, param: click.Parameter, value: str) -> str:
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise click.BadParameter(
            f"{value!r} is not an IANA time zone (e.g. Europe/Zurich)"
        ) from None
    return value


def _common(kind: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    names = [f.name for f in formats_of(kind)]

    def decorate(fn: Callable[..., None]) -> Callable[..., None]:
        for option in reversed(
            [
                click.option(
                    "--format",
                    "fmt",
                    type=click.Choice(names),
                    required=len(names) > 1,
                    default=names[0] if len(names) == 1 else None,
                    help="Input format: "
                    + "; ".join(f"{f.name}: {f.help}" for f in formats_of(kind)),
                ),
                click.option(
                    "--strict",
                    is_flag=True,
                    help="Stop at the first bad line and load nothing of that file.",
                ),
                click.option(
                    "--source",
                    help="Name of the system the input comes from "
                    "(default: the format's, e.g. hpss).",
                ),
                click.option(
                    "--year",
                    type=int,
                    help="Year of logs whose lines carry none (CTA taped syslog lines, HPSS PVL,"
                    " dCache billing); wins over a date stamp in the file name.",
                ),
                click.option(
                    "--timezone",
                    default="UTC",
                    show_default=True,
                    callback=_check_timezone,
                    help="IANA time zone of local times the input prints without an offset "
                    "(e.g. CTA's text tables: Europe/Zurich).",
                ),
                engine_options,
                click.argument(
                    "files",
                    nargs=-1,
                    required=True,
                    type=click.Path(dir_okay=False, allow_dash=True),
                ),
            ]
        ):
            fn = option(fn)
        return fn

    return decorate


@ingest.command("catalog")
@_common("catalog")
@click.option("--dataset-rule", help="Regex with a named group (?P<dataset>...) applied to paths.")
@click.option("--type-rule", help="Regex with a named group (?P<type>...) applied to file names.")
@click.option("--experiment-rule", help="Regex with a named group (?P<experiment>...).")
@click.option(
    "--archives",
    type=click.Path(exists=True, dir_okay=False),
    help="tsm-contents: the `archives` table export (object write dates).",
)
@click.option("--volume", help="tsm-qcontent: the volume the listing is of.")
@click.option("--listed-at", help="tsm-qcontent: when the listing was taken (ISO time).")
@click.option("--columns", help="Column order of a dump without a header (comma separated).")
@click.option(
    "--mapping",
    type=click.Path(exists=True, dir_okay=False),
    help="csv: YAML mapping from the file's columns to canonical ones.",
)
@click.option(
    "--allow-shrink",
    is_flag=True,
    help="Accept a dump that retires many of the stored copies (the catalog really shrank).",
)
@click.option(
    "--max-retire",
    type=click.FloatRange(0, 100),
    default=10.0,
    show_default=True,
    help="Percent of a source's live copies a dump may retire without --allow-shrink.",
)
@click.option(
    "--partial/--complete",
    default=None,
    help="The file lists only some volumes (only copies on them can be marked removed) "
    "or the whole catalog (default: per format).",
)
@pass_app
def catalog(
    app: App,
    fmt: str,
    files: tuple[str, ...],
    strict: bool,
    source: str | None,
    year: int | None,
    timezone: str,
    dataset_rule: str | None,
    type_rule: str | None,
    experiment_rule: str | None,
    archives: str | None,
    volume: str | None,
    listed_at: str | None,
    columns: str | None,
    mapping: str | None,
    allow_shrink: bool,
    max_retire: float,
    partial: bool | None,
) -> None:
    """Load where every file copy sits on tape.

    Several files of a whole-catalog format are one dump (their union). A dump that would
    retire more than --max-retire percent of the stored live copies, or an empty one, is
    refused until --allow-shrink says the catalog really shrank.

    \b
    Example:
        tapelens ingest catalog --format hpss-lsp ls-P.txt.gz
        tapelens ingest catalog --format hpss-lsp ls-P.part1.gz ls-P.part2.gz
        tapelens ingest catalog --format tsm-contents --archives archives.csv contents.csv
    """
    extra: dict[str, Any] = {}
    if archives:
        extra["archives"] = archives
    if listed_at:
        extra["listed_at"] = listed_at
    mapping_doc = _mapping_file(mapping) if mapping else None
    rules = DatasetRules(dataset_rule, type_rule, experiment_rule)
    _run(
        app,
        lookup("catalog", fmt),
        files,
        source,
        rules,
        partial,
        ShrinkGuard(max_share=max_retire / 100, allow=allow_shrink),
        strict=strict,
        year=year,
        timezone=timezone,
        volume=volume,
        columns=tuple(columns.split(",")) if columns else None,
        mapping=mapping_doc,
        extra=extra,
    )


# Transfers, mounts and inventories take the same options and load the same way: one command
# each, made here, with its own help.
_PLAIN_KINDS = (
    (
        "transfers",
        """Load what was read from or written to tape (transfer logs).

    \b
    Example:
        tapelens ingest transfers --format dcache-billing --year 2021 billing-2021.11.02
    """,
    ),
    (
        "mounts",
        """Load cartridge mounts (PVL logs, CTA sessions, library exports).

    \b
    Example:
        tapelens ingest mounts --format hpss-pvl --year 2021 pvl.log
    """,
    ),
    (
        "tapes",
        """Load a tape inventory (volume, barcode, media_type, library, pool, capacity, state).

    \b
    Example:
        tapelens ingest tapes tapes.csv
    """,
    ),
)


def _plain_command(kind: str, help_text: str) -> None:
    @ingest.command(kind, help=help_text)
    @_common(kind)
    @pass_app
    def command(
        app: App,
        fmt: str,
        files: tuple[str, ...],
        strict: bool,
        source: str | None,
        year: int | None,
        timezone: str,
    ) -> None:
        _run(
            app,
            lookup(kind, fmt),
            files,
            source,
            DatasetRules(),
            None,
            strict=strict,
            year=year,
            timezone=timezone,
        )


for _kind, _help in _PLAIN_KINDS:
    _plain_command(_kind, _help)


def _path_map(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> Any:
    pairs = []
    for item in value:
        old, sep, new = item.partition("=")
        if not sep or not old.startswith("/") or not new:
            raise click.BadParameter(f"{item!r} is not FROM=TO (e.g. /pnfs/example.org/data=/hpss)")
        pairs.append((old, new))
    return tuple(pairs)


@ingest.command("hints")
@_common("hints")
@click.option(
    "--path-map",
    multiple=True,
    callback=_path_map,
    help="FROM=TO: rewrite a storage path prefix to the tape system's (repeatable).",
)
@click.option("--experiment-rule", help="Regex with a named group (?P<experiment>...).")
@click.option(
    "--mapping",
    type=click.Path(exists=True, dir_okay=False),
    help="YAML `columns:` site column name -> the name this format reads.",
)
@pass_app
def hints(
    app: App,
    fmt: str,
    files: tuple[str, ...],
    strict: bool,
    source: str | None,
    year: int | None,
    timezone: str,
    path_map: tuple[tuple[str, str], ...],
    experiment_rule: str | None,
    mapping: str | None,
) -> None:
    """Load written files' collocation hints (WLCG archive metadata).

    Each record says which groups a file was sent to tape with, from broad (level 0) to narrow
    (level 3). Records whose metadata is empty, cut short or unreadable are kept as files
    without hints and counted; files recorded with different hints are marked contradictory.

    \b
    Example:
        tapelens ingest hints --format fts-files --path-map /eos/cms=/cms t_file.tsv
        tapelens ingest hints --format kit kit-attributes.csv
    """
    columns = None
    if mapping:
        doc = _mapping_file(mapping)
        columns = doc.get("columns") if isinstance(doc, dict) else None
        if not isinstance(columns, dict):
            raise ConfigError("--mapping", mapping, "has no `columns:` mapping")
    DatasetRules(experiment=experiment_rule)  # a rule the regex engine cannot run stops here
    fmt_used = lookup("hints", fmt)
    extra = {"path_map": path_map, "experiment_rule": experiment_rule}
    options = ParseOptions(
        source=source or fmt_used.source,
        strict=strict,
        timezone=timezone,
        year=year,
        mapping=columns,
        extra=extra,
    )
    engine = current_engine()
    if engine.spark:
        from tapelens.spark.ingest import Load, ingest_on_spark

        load = Load(fmt_used, list(files), options, DatasetRules())
        _report_hints(ingest_on_spark(engine, app.home, [load], _report))
        return
    dsn = app.dsn()
    results = ingest_files(dsn, fmt_used, list(files), options, DatasetRules())
    for result in results:
        _report(result)
    loaded = [r.run_id for r in results if r.status == "loaded" and r.run_id is not None]
    if loaded:
        _report_hints(hint_statuses(dsn, loaded))


@ingest.command("manifest")
@click.argument("manifest", type=click.Path(exists=True, dir_okay=False))
@click.option("--strict", is_flag=True, help="Stop at the first bad line of any input.")
@click.option("--allow-shrink", is_flag=True, help="As for `ingest catalog`.")
@engine_options
@pass_app
def manifest(app: App, manifest: str, strict: bool, allow_shrink: bool) -> None:
    """Load every input a manifest.json lists (tapes, catalogs, mounts, transfers, in that order).

    Inputs of one whole-catalog format and source with the same options are one dump.

    \b
    Example:
        tapelens demo generate /tmp/site --files 50000 --seed 7
        tapelens ingest manifest /tmp/site/manifest.json
    """
    guard = ShrinkGuard(allow=allow_shrink)
    loads = []
    for group in group_dumps(read_manifest(Path(manifest))):
        item = group[0]
        opts = {**item.options, "strict": strict or item.options.get("strict", False)}
        options = ParseOptions(source=item.source or item.format.source, extra=item.extra, **opts)
        paths: list[str | Path] = [i.path for i in group]
        loads.append((item.format, paths, options))
    engine = current_engine()
    if engine.spark:
        from tapelens.spark.ingest import Load, ingest_on_spark

        spark_loads = [Load(f, p, o, DatasetRules(), None, guard) for f, p, o in loads]
        _report_hints(ingest_on_spark(engine, app.home, spark_loads, _report))
        return
    dsn = app.dsn()
    for fmt, paths, options in loads:
        _load(dsn, fmt, paths, options, DatasetRules(), None, guard)
