"""`tapelens db`: the embedded server and the schema."""

from __future__ import annotations

from datetime import timedelta

import click

from tapelens.cli.common import App, pass_app
from tapelens.columnstore import compress
from tapelens.db import EDITIONS, connection, redact, timescaledb_edition
from tapelens.errors import ServerError
from tapelens.ingest.migrations import migrate
from tapelens.server import start, stop
from tapelens.spark.settings import current_engine, engine_options
from tapelens.status import spark_status, status

MB = 2**20


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
        running = timescaledb_edition(conn)
    if running != app.timescaledb_license:
        # A running server keeps the edition it started with.
        click.echo(
            f"the running server has TimescaleDB's {EDITIONS.get(running or '', running)};"
            f" TAPELENS_TIMESCALEDB_LICENSE={app.timescaledb_license} takes effect when it"
            " starts again (db down, then db up)",
            err=True,
        )
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
@engine_options
@pass_app
def migrate_cmd(app: App) -> None:
    """Apply missing migrations to the database (any TimescaleDB 2.13+ server); on the Spark
    engine, create the Delta tables that are missing.

    \b
    Example:
        TAPELENS_DSN=postgresql://admin@db.example/tapelens tapelens db migrate
        TAPELENS_ENGINE=spark TAPELENS_SPARK_WAREHOUSE=hdfs:///tapelens tapelens db migrate
    """
    engine = current_engine()
    if engine.spark:
        from tapelens.spark.session import spark_session, stop_session
        from tapelens.spark.tables import create_tables

        spark = spark_session(engine.spark_master, engine.warehouse(app.home))
        try:
            created = create_tables(spark)
        finally:
            stop_session()
        for name in created:
            click.echo(f"created table tapelens.{name}", err=True)
        if not created:
            click.echo("tables up to date", err=True)
        return
    dsn = app.dsn()
    with connection(dsn) as conn:
        applied = migrate(conn, dsn)
    for m in applied:
        click.echo(f"applied migration {m.version:03d}_{m.name}", err=True)
    if not applied:
        click.echo("schema up to date", err=True)


migrate_cmd.name = "migrate"


@db.command("status")
@engine_options
@pass_app
def status_cmd(app: App) -> None:
    """Print the engine, server and TimescaleDB versions, schema version and canonical table
    row counts; on the Spark engine, its master, where the tables are and their row counts.

    \b
    Example:
        tapelens db status
        TAPELENS_ENGINE=spark tapelens db status
    """
    engine = current_engine()
    if engine.spark:
        _spark_status(engine.spark_master, engine.warehouse(app.home))
        return
    if app.embedded and not app.server().running():
        raise ServerError(f"the embedded server in {app.home} is not running; run: tapelens db up")
    dsn = app.dsn()
    with connection(dsn) as conn:
        st = status(conn)
    click.echo("engine       postgres")
    click.echo(f"database     {redact(dsn)}")
    click.echo(f"server       PostgreSQL {st.server_version}")
    edition = EDITIONS.get(st.timescaledb_edition or "", "edition unknown")
    shown = f"{st.timescaledb_version} ({edition})" if st.timescaledb_version else "not installed"
    click.echo(f"timescaledb  {shown}")
    click.echo(f"schema       version {st.schema_version}")
    for table, count in st.row_counts.items():
        shown = "missing" if count is None else f"{count:,}"
        done, total = st.compressed_chunks.get(table, (0, 0))
        packed = f"  ({done} of {total} chunks compressed)" if done else ""
        click.echo(f"  tapelens.{table:<16} {shown:>14}{packed}")


def _spark_status(master: str, warehouse: str) -> None:
    st = spark_status(master, warehouse)
    click.echo("engine       spark")
    click.echo(f"master       {st.master}")
    click.echo(f"warehouse    {st.warehouse}")
    click.echo(f"spark        {st.spark_version}, Delta Lake {st.delta_package}")
    for run_id in st.rolled_back:
        click.echo(f"run {run_id} was killed before it committed: rolled back", err=True)
    for table, count in st.row_counts.items():
        shown = "missing" if count is None else f"{count:,}"
        click.echo(f"  tapelens.{table:<16} {shown:>14}")


@db.command("compress")
@click.option(
    "--older-than",
    type=click.IntRange(min=1),
    default=90,
    show_default=True,
    metavar="DAYS",
    help="Compress the chunks whose whole time range is older than this many days.",
)
@click.option(
    "--policy",
    is_flag=True,
    help="Also leave TimescaleDB a background job that compresses each chunk as it ages.",
)
@pass_app
def compress_cmd(app: App, older_than: int, policy: bool) -> None:
    """Compress the cold transfer and mount history into TimescaleDB's columnstore.

    Needs TimescaleDB's community edition (on the embedded server: its module installed and
    TAPELENS_TIMESCALEDB_LICENSE=timescale). Chunks compressed before are left alone; a late log
    still loads into a compressed chunk, more slowly. The catalog is not compressed: newer dumps
    update its rows in place. Prints, per table, the chunks and the bytes before and after.

    \b
    Example:
        tapelens db compress --older-than 90 --policy
    """
    with connection(app.dsn()) as conn:
        done = compress(
            conn,
            timedelta(days=older_than),
            policy=policy,
            progress=lambda said: click.echo(f"db compress: {said}", err=True),
        )
    click.echo(
        f"{'table':<10} {'compressed':>10} {'already':>8} {'as rows':>8}"
        f" {'MB before':>10} {'MB after':>10} {'ratio':>6}"
    )
    for c in done:
        ratio = f"{c.bytes_before / c.bytes_after:.1f}x" if c.bytes_after else "-"
        click.echo(
            f"{c.table:<10} {c.compressed_now:>10} {c.compressed_before:>8} {c.left_as_rows:>8}"
            f" {c.bytes_before / MB:>10,.1f} {c.bytes_after / MB:>10,.1f} {ratio:>6}"
        )
    for c in done:
        if c.policy_after is not None:
            days = c.policy_after.days
            click.echo(f"policy: {c.table} chunks compressed once older than {days} days", err=True)


group = db
