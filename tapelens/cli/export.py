"""`tapelens export`: what a staging system reads about the site's tapes."""

from __future__ import annotations

import json
from pathlib import Path

import click
import polars as pl
import psycopg

from tapelens.analysis.recall import store as plan_store
from tapelens.analysis.recall.requests import read_requests
from tapelens.analysis.recall.tapeinfo import (
    FORMATS,
    endit_hints,
    parse_path_map,
    tapeinfo,
    write_tapeinfo,
)
from tapelens.cli.common import App, F, pass_app
from tapelens.db import connection
from tapelens.errors import InputError


def requests_option(fn: F) -> F:
    """--requests FILE: only the files of a request list."""
    return click.option(
        "--requests",
        "requests_file",
        type=click.Path(dir_okay=False, allow_dash=True),
        help="Only the files of this request list (default: every live file).",
    )(fn)


def _recallable(conn: psycopg.Connection, requests_file: str | None) -> pl.DataFrame:
    """The copies an export speaks of; none is an error."""
    asked = read_requests(requests_file) if requests_file else None
    copies = plan_store.recallable_copies(conn, asked)
    if copies.height == 0:
        raise InputError("no live file on a tape that can be read now: nothing to export")
    return copies


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
@click.option(
    "--path-map",
    "path_map",
    multiple=True,
    metavar="FROM=TO",
    help="Rewrite a path prefix to the path dCache is asked for (repeatable; first match wins).",
)
@pass_app
def dcache_tapeinfo(
    app: App,
    output_dir: str,
    fmt: str,
    requests_file: str | None,
    path_map: tuple[str, ...],
) -> None:
    """dCache's tape information files for its bring-online clustering: tapes.json and
    tapefiles.json (or tapes.txt and tapefiles.txt with --format csv). Each file is on the tape
    of the copy the tape system recalls (the newest live copy on a tape that can be read now);
    sizes in kB of 1,000 bytes, rounded up; a tape is filled with every copy it holds.

    \b
    Example:
        tapelens export dcache-tapeinfo -o tapeinfo/ --path-map /hpss/atlas=/pnfs/example.org/atlas
    """
    mapping = parse_path_map(path_map)
    with connection(app.dsn()) as conn:
        copies = _recallable(conn, requests_file)
        tapes = plan_store.tape_fill(conn)
    info, files = tapeinfo(copies, tapes, mapping)
    for path in write_tapeinfo(info, files, Path(output_dir), fmt):
        click.echo(f"wrote {path}", err=True)
    click.echo(f"{files.height:,} files on {info.height:,} tapes", err=True)


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
    "--full-names",
    is_flag=True,
    help="Key files by their whole path (default: the name without directories, as ENDIT"
    " archives files under their dCache id).",
)
@pass_app
def endit(app: App, output: str, requests_file: str | None, full_names: bool) -> None:
    """ENDIT's tape hint file, which lets its retriever read from several tapes at once: per
    file its volume (volid), its place on the volume counted from 0 in tape order (order) and
    its size in bytes, for the copy a tape system recalls. Written aside and renamed, so
    ENDIT never reads half a file.

    \b
    Example:
        tapelens export endit-hints -o /var/spool/endit/tapehints/NODE.json
    """
    with connection(app.dsn()) as conn:
        copies = _recallable(conn, requests_file)
    hints = endit_hints(copies, full_names)
    target = Path(output)
    aside = target.with_name(f".{target.name}.partial")
    aside.write_text(json.dumps(hints) + "\n")
    aside.replace(target)
    volumes = len({h["volid"] for h in hints.values()})
    click.echo(f"wrote {target}: {len(hints):,} files on {volumes:,} volumes", err=True)
