"""`tapelens db`: the embedded server and the schema."""

from __future__ import annotations

import click

from tapelens.cli.common import App, pass_app
from tapelens.db import connection, redact
from tapelens.errors import ServerError
from tapelens.ingest.migrations import migrate
from tapelens.server import start, stop
from tapelens.status import status


@click.group()
def db() -> None:
    """The database: embedded server, migrations, status."""


@db.command()
@pass_app
def up(app: App) -> None:
    """Start the embedded TimescaleDB server, apply migrations, print its DSN.

    Running it again is a no-op that prints the same DSN.

    \b
    Example:
        export TAPELENS_DSN=$(tapelens db up)
    """
    if not app.embedded:
        raise ServerError("db up manages the embedded server; unset TAPELENS_DSN/--dsn to use it")
    dsn = start(app.server())
    with connection(dsn) as conn:
        for m in migrate(conn, dsn):
            click.echo(f"applied migration {m.version:03d}_{m.name}", err=True)
    click.echo(dsn)


@db.command()
@pass_app
def down(app: App) -> None:
    """Stop the embedded server (its data stays under the home directory).

    \b
    Example:
        tapelens db down
    """
    if not app.embedded:
        raise ServerError("db down manages the embedded server; unset TAPELENS_DSN/--dsn")
    stopped = stop(app.server())
    click.echo("stopped" if stopped else "not running", err=True)


@db.command()
@pass_app
def migrate_cmd(app: App) -> None:
    """Apply missing migrations to the database (any TimescaleDB 2.13+ server).

    \b
    Example:
        TAPELENS_DSN=postgresql://admin@db.example/tapelens tapelens db migrate
    """
    dsn = app.dsn()
    with connection(dsn) as conn:
        applied = migrate(conn, dsn)
    for m in applied:
        click.echo(f"applied migration {m.version:03d}_{m.name}", err=True)
    if not applied:
        click.echo("schema up to date", err=True)


migrate_cmd.name = "migrate"


@db.command("status")
@pass_app
def status_cmd(app: App) -> None:
    """Print server and TimescaleDB versions, schema version and canonical table row counts.

    \b
    Example:
        tapelens db status
    """
    if app.embedded and not app.server().running():
        raise ServerError(f"the embedded server in {app.home} is not running; run: tapelens db up")
    dsn = app.dsn()
    with connection(dsn) as conn:
        st = status(conn)
    click.echo(f"database     {redact(dsn)}")
    click.echo(f"server       PostgreSQL {st.server_version}")
    click.echo(f"timescaledb  {st.timescaledb_version or 'not installed'}")
    click.echo(f"schema       version {st.schema_version}")
    for table, count in st.row_counts.items():
        shown = "missing" if count is None else f"{count:,}"
        click.echo(f"  tapelens.{table:<16} {shown:>14}")


group = db
