"""`tapelens dashboards serve | deploy | export | stop | publish`: Superset dashboards over the
marts."""

from __future__ import annotations

import os
import time
from pathlib import Path

import click

from tapelens.cli.common import App, pass_app
from tapelens.cli.groups import BY_NAME
from tapelens.dashboards.ops import deploy, export, serve
from tapelens.dashboards.superset.install import (
    ADMIN_USER,
    ASSETS_DIR,
    DashboardsError,
    SupersetHome,
    admin_password,
)
from tapelens.dashboards.superset.server import running, stop
from tapelens.errors import ConfigError, InputError
from tapelens.spark.settings import EngineSettings, current_engine, engine_options

dashboards = BY_NAME["dashboards"]
PASSWORD_ENV = "TAPELENS_SUPERSET_PASSWORD"


def _say(message: str) -> None:
    click.echo(f"tapelens: {message}", err=True)


def _password_from(var: str) -> str | None:
    return os.environ.get(var) or None


@dashboards.command("serve")
@click.option(
    "--port", type=click.IntRange(1, 65535), help="Port on 127.0.0.1 (default: a free one)."
)
@click.option(
    "--no-wait",
    is_flag=True,
    help="Leave Superset running in the background and return (stop it with `dashboards stop`).",
)
@pass_app
def serve_cmd(app: App, port: int | None, no_wait: bool) -> None:
    """Serve the dashboards with a local Superset on 127.0.0.1.

    The first run builds Superset's virtualenv under $TAPELENS_HOME/superset (a few minutes) and
    creates the admin user with a generated password, shown once (or the password in
    TAPELENS_SUPERSET_PASSWORD). Superset reads the database through a read-only role.

    \b
    Example:
        tapelens dashboards serve --no-wait
    """
    home = SupersetHome.under(app.home)
    served = serve(home, app.dsn(), port=port, admin_pw=_password_from(PASSWORD_ENV), progress=_say)
    click.echo(served.url)
    if served.generated_password:
        _say(f"login: {served.user}  password: {served.generated_password}  (shown once)")
    else:
        _say(f"login: {served.user} (password in {home.admin_password_path})")
    if served.generated_viewer_password:
        _say(
            f"read-only login: {served.viewer}  password: {served.generated_viewer_password}"
            "  (shown once)"
        )
    else:
        _say(f"read-only login: {served.viewer} (password in {home.viewer_password_path})")
    if no_wait:
        return
    _say("serving; press Ctrl-C to stop")
    try:
        while running(home) is not None:
            time.sleep(1.0)
        raise DashboardsError(f"Superset stopped (log: {home.log_path})")
    except KeyboardInterrupt:
        stop(home)
        _say("stopped")


@dashboards.command("deploy")
@click.option("--url", required=True, help="Base URL of the Superset to import into.")
@click.option("--user", default=ADMIN_USER, show_default=True, help="Superset user to log in as.")
@click.option(
    "--password-env",
    default=PASSWORD_ENV,
    show_default=True,
    metavar="VAR",
    help="Environment variable holding that user's password.",
)
@click.option(
    "--db-host",
    metavar="HOST",
    help="Host name that Superset should use for the database (default: the DSN's).",
)
@pass_app
def deploy_cmd(app: App, url: str, user: str, password_env: str, db_host: str | None) -> None:
    """Import the dashboards into an existing Superset over its REST API.

    The database entry connects as the read-only role tapelens_reader, created (or updated) in
    the tapelens database first.

    \b
    Example:
        TAPELENS_SUPERSET_PASSWORD=... tapelens dashboards deploy --url https://superset.example.org
    """
    password = _password_from(password_env)
    if password is None:
        raise ConfigError("Superset password", f"environment variable {password_env}", "not set")
    reader = deploy(url, user, password, app.dsn(), SupersetHome.under(app.home), db_host=db_host)
    _say(f"dashboards imported into {url} (database as {reader.user}@{reader.host}:{reader.port})")


@dashboards.command("export")
@click.option("--url", help="Superset to read from (default: the one `dashboards serve` runs).")
@click.option("--user", default=ADMIN_USER, show_default=True, help="Superset user to log in as.")
@click.option(
    "--password-env",
    default=PASSWORD_ENV,
    show_default=True,
    metavar="VAR",
    help="Environment variable holding that user's password (default for the local Superset: "
    "the password it keeps).",
)
@click.option(
    "-o",
    "--output",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=ASSETS_DIR,
    show_default=True,
    help="Folder to write the YAML into.",
)
@pass_app
def export_cmd(app: App, url: str | None, user: str, password_env: str, out_dir: Path) -> None:
    """Write the dashboards as they are now in Superset back to YAML (stable order, no secret).

    \b
    Example:
        tapelens dashboards export -o dashboards/
    """
    home = SupersetHome.under(app.home)
    password = _password_from(password_env)
    if url is None:
        local = running(home)
        if local is None:
            raise DashboardsError("no local Superset runs; give --url or run: dashboards serve")
        url = local.url
        password = password or admin_password(home)
    if password is None:
        raise ConfigError("Superset password", f"environment variable {password_env}", "not set")
    written = export(url, user, password, out_dir)
    _say(f"{len(written)} files written under {out_dir}")


@dashboards.command("stop")
@pass_app
def stop_cmd(app: App) -> None:
    """Stop the Superset that `dashboards serve` started.

    \b
    Example:
        tapelens dashboards stop
    """
    if stop(SupersetHome.under(app.home)):
        _say("Superset stopped")
    else:
        _say("Superset was not running")


@dashboards.command("publish")
@engine_options
@pass_app
def publish_cmd(app: App) -> None:
    """Copy a Spark build's aggregate marts into the database the dashboards read.

    `marts build --engine spark` does it at the end of every build; this runs it alone (after
    a build with --no-publish, or into another database with --dsn). The copy replaces the
    previous one in one transaction; the catalog stays on Spark.

    \b
    Example:
        tapelens dashboards publish --engine spark
    """
    engine = current_engine()
    if not engine.spark:
        raise InputError(
            "dashboards publish copies a Spark build: give --engine spark (on the postgres"
            " engine the dashboards read the marts where dbt builds them)"
        )
    publish_spark_build(app, engine)


def publish_spark_build(app: App, engine: EngineSettings) -> None:
    """The Spark warehouse's aggregate marts copied into the dashboards' database (the
    --dsn/TAPELENS_DSN database, else the embedded server), progress on stderr."""
    from tapelens.db import redact
    from tapelens.spark.publish import publish
    from tapelens.spark.session import spark_session

    dsn = app.dsn()
    warehouse = str(engine.warehouse(app.home))
    _say(f"publishing the Spark marts of {warehouse} for the dashboards into {redact(dsn)}")
    spark = spark_session(engine.spark_master, warehouse)
    done = publish(spark, dsn, warehouse, progress=lambda line: _say(f"  {line}"))
    built = done.built_at.isoformat(timespec="seconds") if done.built_at else "unknown"
    _say(
        f"published: {len(done.copied)} tables, {done.rows:,} rows, built on Spark at {built}"
        f"  seconds: {done.seconds:.1f}"
    )
