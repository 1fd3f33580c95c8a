"""`tapelens drives`: the drive inventory every command that needs drives uses by default."""

from __future__ import annotations

import click

from tapelens.cli.common import App, pass_app
from tapelens.cli.output import emit, format_option
from tapelens.db import connection
from tapelens.errors import InputError
from tapelens.ingest.drives import drives_from_mounts, inventory, read_drives_csv, store_drives


@click.group(
    "drives",
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@format_option
@click.pass_context
def group(ctx: click.Context, fmt: str, output: str | None) -> None:
    """The drive inventory: list it (this command alone), load it from a CSV, or work it out
    from the mount logs. plan recall, plan policies, plan repack, plan dedup, predict and
    simulate use the online drives listed here when not given --drives.

    \b
    Example:
        tapelens drives load drives.csv
        tapelens drives
    """
    if ctx.invoked_subcommand is not None:
        return
    app = ctx.find_object(App)
    assert app is not None
    with connection(app.dsn()) as conn:
        listed = inventory(conn)
    if listed.height == 0:
        click.echo(
            "no drives listed: load them with `tapelens drives load FILE.csv` or work them out"
            " from the mount logs with `tapelens drives derive`",
            err=True,
        )
    emit(listed, fmt, output)


@group.command("load")
@click.argument("path", type=click.Path(dir_okay=False, allow_dash=True))
@pass_app
def load_cmd(app: App, path: str) -> None:
    """Add or update the drives a CSV lists (header: drive, drive_type, and optionally library
    and state online/offline); the others stay. Loading the same file again changes nothing.

    \b
    Example:
        tapelens drives load drives.csv
    """
    drives = read_drives_csv(path)
    with connection(app.dsn()) as conn:
        added, changed = store_drives(conn, drives)
    click.echo(f"{path}: {drives.height} drives, {added} added, {changed} changed", err=True)


@group.command("derive")
@click.option("--dry-run", is_flag=True, help="Print what would be stored, store nothing.")
@pass_app
def derive_cmd(app: App, dry_run: bool) -> None:
    """Work the drives out from the mount logs already loaded: each drive the mounts name, with
    the newest media generation that reads every media type mounted on it.

    \b
    Example:
        tapelens drives derive --dry-run
    """
    with connection(app.dsn()) as conn:
        drives = drives_from_mounts(conn)
        if drives.height == 0:
            raise InputError(
                "the mount logs name no drive on a tape of known media type: load mount logs"
                " (tapelens ingest mounts) and a tape inventory first"
            )
        if dry_run:
            emit(drives, "table", None)
            return
        added, changed = store_drives(conn, drives)
    click.echo(
        f"from the mounts: {drives.height} drives, {added} added, {changed} changed", err=True
    )
