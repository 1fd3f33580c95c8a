"""`tapelens export`: what a staging system reads about the site's tapes."""

from __future__ import annotations

from pathlib import Path

import click
import polars as pl

from tapelens.analysis.recall.exports import tape_rest
from tapelens.analysis.recall.exports.tapeinfo import (
    DCACHE_ROOT,
    FORMATS,
    endit_hints,
    left_out_summary,
    parse_path_map,
    read_pnfsid_map,
    tapeinfo,
    write_endit_hints,
    write_left_out,
    write_tapeinfo,
)
from tapelens.analysis.recall.requests.lists import read_requests
from tapelens.analysis.recall.store.catalog import load_catalog
from tapelens.analysis.recall.store.export_copies import (
    recallable_copies,
    recallable_of,
    tape_fill,
)
from tapelens.analysis.sim.config import parse_duration
from tapelens.cli.common import App, F, engine_reader, engine_site, order_option, pass_app
from tapelens.cli.output import emit, format_option
from tapelens.db import connection
from tapelens.errors import InputError
from tapelens.frames import FrameReader
from tapelens.spark.settings import current_engine, engine_options


def requests_option(fn: F) -> F:
    """--requests FILE: only the files of a request list."""
    return click.option(
        "--requests",
        "requests_file",
        type=click.Path(dir_okay=False, allow_dash=True),
        help="Only the files of this request list (default: every live file).",
    )(fn)


def _recallable(app: App, read: FrameReader, requests_file: str | None) -> pl.DataFrame:
    """The copies an export speaks of, on the engine the command runs on; none is an error."""
    if requests_file is None:
        copies = recallable_copies(read)
    else:
        copies = recallable_of(_requested_catalog(app, read_requests(requests_file)))
    if copies.height == 0:
        raise InputError("no live file on a tape that can be read now: nothing to export")
    return copies


def _requested_catalog(app: App, asked: pl.DataFrame) -> pl.DataFrame:
    """The live copies of the requested files, as `plan recall` reads them on either engine."""
    engine = current_engine()
    if engine.spark:
        from tapelens.analysis.recall.store import on_spark
        from tapelens.spark.session import spark_session

        return on_spark.load_catalog(
            spark_session(engine.spark_master, engine.warehouse(app.home)), asked
        )
    with connection(app.dsn()) as conn:
        return load_catalog(conn, asked)


def path_map_option(fn: F) -> F:
    """--path-map FROM=TO: the tape system's path prefixes rewritten to dCache's."""
    return click.option(
        "--path-map",
        "path_map",
        multiple=True,
        metavar="FROM=TO",
        help="Rewrite a path prefix to the dCache path (repeatable; first match wins). A file"
        " no prefix matches is left out and listed.",
    )(fn)


def _report_left_out(left_out: pl.DataFrame, target: Path) -> None:
    """The files an export left out: counted by cause on stderr, listed in `target`."""
    written = write_left_out(left_out, target)
    if written is not None:
        click.echo(f"{left_out_summary(left_out)}: {written}", err=True)


@click.group("export", context_settings={"help_option_names": ["-h", "--help"]})
def group() -> None:
    """Files a staging system reads about the site's tapes."""


@group.command("dcache-tapeinfo")
@click.option(
    "-o",
    "--output-dir",
    required=True,
    type=click.Path(file_okay=False),
    help="Where the two files go (dCache reads /etc/dcache/tapeinfo).",
)
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="json", show_default=True)
@requests_option
@path_map_option
@click.option(
    "--dcache-root",
    default=DCACHE_ROOT,
    show_default=True,
    help="Where dCache's namespace starts: a path outside it is left out and listed.",
)
@engine_options
@pass_app
def dcache_tapeinfo(
    app: App,
    output_dir: str,
    fmt: str,
    requests_file: str | None,
    path_map: tuple[str, ...],
    dcache_root: str,
) -> None:
    """dCache's tape information files for its bring-online clustering: tapes.json and
    tapefiles.json (or tapes.txt and tapefiles.txt with --format csv). dCache looks a file up
    by the path of the SRM request (/pnfs/<domain>/...), so --path-map rewrites the tape
    system's paths to those; files no prefix matches, or outside --dcache-root, are left out,
    counted on stderr and listed in left-out.csv next to the files. Each file is on the tape of
    the copy the tape system recalls; sizes in kB of 1,000 bytes, rounded up; a tape is filled
    with every copy it holds.

    \b
    Example:
        tapelens export dcache-tapeinfo -o tapeinfo/ --path-map /hpss/atlas=/pnfs/example.org/atlas
    """
    mapping = parse_path_map(path_map)
    read = engine_reader(current_engine(), app.home, app.dsn)
    copies = _recallable(app, read, requests_file)
    tapes = tape_fill(read)
    info, files, left_out = tapeinfo(copies, tapes, mapping, dcache_root)
    directory = Path(output_dir)
    for path in write_tapeinfo(info, files, directory, fmt):
        click.echo(f"wrote {path}", err=True)
    click.echo(f"{files.height:,} files on {info.height:,} tapes", err=True)
    _report_left_out(left_out, directory / "left-out.csv")


@group.command("endit-hints")
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(dir_okay=False),
    help="The hint file (ENDIT's retriever_hintfile).",
)
@requests_option
@click.option(
    "--pnfsid-map",
    "pnfsid_map",
    type=click.Path(dir_okay=False, exists=True),
    help="CSV naming each file's dCache pnfsid (columns path and pnfsid or ipnfsid, e.g."
    " `psql --csv` of Chimera); without it the catalog's file names must be pnfsids, as in a"
    " Spectrum Protect catalog of what ENDIT archived.",
)
@path_map_option
@click.option(
    "--strict",
    is_flag=True,
    help="Stop at the first bad line of --pnfsid-map (default: refuse it alone and list it).",
)
@order_option
@engine_options
@pass_app
def endit(
    app: App,
    output: str,
    requests_file: str | None,
    pnfsid_map: str | None,
    path_map: tuple[str, ...],
    strict: bool,
    read_order: str,
) -> None:
    """ENDIT's tape hint file, which lets its retriever read from several tapes at once: per
    dCache pnfsid (the name ENDIT's retriever looks a request up by) the volume (volid), the
    file's place on the volume counted from 0 in tape order (order) and its size in bytes, for
    the copy a tape system recalls. The pnfsid is the catalog's file name (what ENDIT archived)
    or the one --pnfsid-map lists for the file's dCache path (--path-map rewrites the catalog's
    paths to those); files without one are left out, counted on stderr and listed in
    NAME.left-out.csv beside the hint file, and none with one is refused; a bad line of the map
    is refused alone and listed in NAME.pnfsid-map-refused.csv. Written on one line,
    aside and renamed, so ENDIT never reads half a file. With --order rao (and --requests),
    order is the requested files' recommended access order on each volume.

    \b
    Example:
        tapelens export endit-hints -o /var/spool/endit/tapehints/NODE.json
        tapelens export endit-hints -o hints.json --pnfsid-map chimera.csv \\
            --path-map /hpss/atlas=/pnfs/example.org/data/atlas
    """
    if read_order != "position" and not requests_file:
        raise click.UsageError("--order rao orders the files of a request: give --requests FILE")
    if path_map and not pnfsid_map:
        raise click.UsageError("--path-map maps paths to a --pnfsid-map's: give --pnfsid-map FILE")
    mapping = parse_path_map(path_map)
    target = Path(output)
    pnfsids = None
    if pnfsid_map:
        pnfsids, refused = read_pnfsid_map(Path(pnfsid_map), strict)
        listed = target.with_name(f"{target.stem}.pnfsid-map-refused.csv")
        if write_left_out(refused, listed, "line") is not None:
            line, _, reason = refused.row(0)
            click.echo(
                f"{refused.height:,} lines of {pnfsid_map} refused (first {pnfsid_map}:{line}:"
                f" {reason}): {listed}",
                err=True,
            )
    read, model, _ = engine_site(app)
    copies = _recallable(app, read, requests_file)
    hints, left_out = endit_hints(copies, read_order, dict(model.params), pnfsids, mapping)
    write_endit_hints(hints, target)
    volumes = hints["volid"].n_unique()
    click.echo(f"wrote {target}: {hints.height:,} files on {volumes:,} volumes", err=True)
    _report_left_out(left_out, target.with_name(f"{target.stem}.left-out.csv"))


@group.command("tape-rest")
@click.argument("folder", type=click.Path(file_okay=False, exists=True))
@click.option(
    "--submit",
    "url",
    metavar="URL",
    help="Submit the batches to this Tape REST API: the site (https://host:port, found through"
    " /.well-known/wlcg-tape-rest-api) or its endpoint (https://host:port/api/v1). Without it,"
    " the batches and what is recorded of an earlier submission are shown, nothing is sent.",
)
@click.option(
    "--in-flight",
    type=click.IntRange(min=1),
    help="Batches outstanding at once (default: the plan's drives, one mount each).",
)
@click.option(
    "--no-wait",
    is_flag=True,
    help="Submit what --in-flight allows, poll once and return; run again to go on.",
)
@click.option("--poll", "poll", default="60s", show_default=True, help="Time between polls.")
@click.option("--timeout", "timeout", help="Give up following after this long (e.g. 12h).")
@click.option(
    "--disk-lifetime",
    metavar="ISO8601",
    help="How long staged files stay on disk, e.g. P1D (the API's diskLifetime).",
)
@click.option(
    "--ca-path",
    type=click.Path(file_okay=False, exists=True),
    help="Folder of CA certificates (e.g. /etc/grid-security/certificates).",
)
@click.option("--cancel", is_flag=True, help="Cancel the submitted batches not yet done.")
@format_option
def tape_rest_submit(
    folder: str,
    url: str | None,
    in_flight: int | None,
    no_wait: bool,
    poll: str,
    timeout: str | None,
    disk_lifetime: str | None,
    ca_path: str | None,
    cancel: bool,
    fmt: str,
    output: str | None,
) -> None:
    """Submit a recall plan's Tape REST stage requests (the folder `plan recall --export
    tape-rest --export-dir FOLDER` wrote) and follow them until staged. Batches go in plan
    order, at most --in-flight outstanding, so the tape system sees the plan's mounts in the
    plan's order. The bearer token is read from BEARER_TOKEN (or the file BEARER_TOKEN_FILE
    names) and never printed. What was submitted is kept in FOLDER/submission.json: running the
    command again follows those requests instead of making them twice. Prints one row per
    batch; files the server failed go to FOLDER/failed.csv with its reason.

    \b
    Example:
        tapelens plan recall campaign.csv --export tape-rest --export-dir stage/
        BEARER_TOKEN=... tapelens export tape-rest stage/tape-rest --submit https://tape.example.org:8443
    """
    where = Path(folder)
    batches = tape_rest.read_batches(where)
    if url is None:
        if cancel:
            raise click.UsageError("--cancel needs --submit URL (the endpoint to cancel at)")
        emit(tape_rest.table(tape_rest.load_state(where, batches)), fmt, output)
        return
    client = tape_rest.Client(url, tape_rest.bearer_token(), ca_path)
    endpoint = client.discover()
    click.echo(f"endpoint {endpoint.uri} {endpoint.sitename}".rstrip(), err=True)
    submission = tape_rest.load_state(where, batches, endpoint.uri)
    if cancel:
        done = tape_rest.cancel(client, endpoint, batches, submission)
        click.echo(f"cancelled {done} outstanding batches", err=True)
        return
    drives = len({b.drive for b in batches})
    try:
        submission = tape_rest.submit(
            client,
            endpoint,
            batches,
            submission,
            in_flight=in_flight or drives,
            wait=not no_wait,
            poll_s=parse_duration(poll, "--poll"),
            timeout_s=parse_duration(timeout, "--timeout") if timeout else None,
            disk_lifetime=disk_lifetime,
            save=lambda state: tape_rest.save_state(where, state),
            progress=lambda line: click.echo(line, err=True),
        )
    finally:
        failed = tape_rest.failures(submission)
        if failed.height:
            failed.write_csv(where / "failed.csv")
            click.echo(f"{failed.height:,} files failed: {where / 'failed.csv'}", err=True)
    emit(tape_rest.table(submission), fmt, output)
