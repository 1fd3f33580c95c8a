"""The tapelens command line: a thin shell over the library.

Each command parses its options, calls one library function and prints. Data goes to stdout,
progress and messages to stderr; expected failures become one line and a non-zero exit status.
"""

from __future__ import annotations

import importlib
import sys

import click
import psycopg

from tapelens import __version__
from tapelens.cli import groups
from tapelens.cli.common import App, pass_app
from tapelens.db import connection
from tapelens.errors import TapelensError
from tapelens.ingest.migrations import available, schema_version
from tapelens.server import LICENSES
from tapelens.settings import BY_NAME

# Which modules of this package provide the commands of each top-level name. They are imported
# only when that command runs, so `tapelens ingest` does not pay for scipy, matplotlib or dbt.
# A module either adds commands to a group of tapelens.cli.groups or exposes its own top-level
# command as `group`. tests/tapelens/test_cli_modules.py keeps this table complete.
MODULES: dict[str, tuple[str, ...]] = {
    "db": ("db",),
    "ingest": ("ingest",),
    "marts": ("marts",),
    "report": ("report",),
    "throughput": ("throughput",),
    "predict": ("predict",),
    "plan": ("plan", "plan_repack", "plan_dedup", "plan_families"),
    "simulate": ("simulate",),
    "whatif": ("whatif",),
    "drives": ("drives",),
    "export": ("export",),
    "dashboards": ("dashboards",),
    "demo": ("demo", "synth"),
}
HELPERS = ("common", "groups", "output", "progress")  # shared by the command modules, no commands
# Former names, still understood but no longer listed: `models` and `model` read too much alike.
ALIASES = {"models": "marts", "model": "throughput"}


class LazyGroup(click.Group):
    """The root group: loads a command's modules the first time the command is looked up."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(MODULES) | set(self.commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        cmd_name = ALIASES.get(cmd_name, cmd_name)
        for name in MODULES.get(cmd_name, ()):
            module = importlib.import_module(f"{__name__}.{name}")
            top = getattr(module, "group", None)
            if isinstance(top, click.Command) and top.name not in self.commands:
                self.add_command(top)
        return self.commands.get(cmd_name)


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option("--dsn", envvar=BY_NAME["dsn"].envvar, metavar="DSN", help=BY_NAME["dsn"].help)
@click.option(
    "--home",
    envvar=BY_NAME["home"].envvar,
    type=click.Path(file_okay=False),
    help=BY_NAME["home"].help,
)
@click.option(
    "--pg-bin",
    envvar=BY_NAME["pg_bin"].envvar,
    default="/usr/lib/postgresql/15/bin",
    show_default=True,
    help=BY_NAME["pg_bin"].help,
)
@click.option(
    "--pg-user",
    envvar=BY_NAME["pg_user"].envvar,
    default="postgres",
    show_default=True,
    help=BY_NAME["pg_user"].help,
)
@click.option(
    "--timescaledb-license",
    envvar=BY_NAME["timescaledb_license"].envvar,
    type=click.Choice(LICENSES),
    default="apache",
    show_default=True,
    help=BY_NAME["timescaledb_license"].help,
)
@click.version_option(__version__, prog_name="tapelens")
@click.pass_context
def cli(
    ctx: click.Context,
    dsn: str | None,
    home: str | None,
    pg_bin: str,
    pg_user: str,
    timescaledb_license: str,
) -> None:
    """Tape placement analytics: gaps, duplicate copies, recall plans.

    \b
    Example:
        tapelens db up
        tapelens ingest catalog --format hpss-lsp ls-P.txt
    """
    ctx.obj = _APP.app = App.from_options(
        dsn=dsn,
        home=home,
        pg_bin=pg_bin,
        pg_user=pg_user,
        timescaledb_license=timescaledb_license,
    )


class _Invocation:
    """The App of the running command, kept for the one-line message of a failure that ends it."""

    app: App | None = None

    @property
    def dsn(self) -> str | None:
        return self.app.dsn_option if self.app else None


_APP = _Invocation()
_MISSING_OBJECT = (
    psycopg.errors.UndefinedTable,
    psycopg.errors.UndefinedColumn,
    psycopg.errors.UndefinedFunction,
)


def _register() -> None:
    for group in groups.GROUPS:
        cli.add_command(group)


_register()


def _schema_behind(exc: BaseException) -> str:
    """Why a table, column or function is missing, when the reason is an older schema: a
    database migrated by an earlier tapelens lacks what this one reads."""
    # Library code turns a database error into a DatabaseError `from None`: the original stays
    # the exception's context.
    cause: BaseException | None = exc
    while cause is not None and not isinstance(cause, _MISSING_OBJECT):
        cause = cause.__cause__ or cause.__context__
    if cause is None or _APP.dsn is None:
        return ""
    try:
        with connection(_APP.dsn) as conn:
            have = schema_version(conn)
    except (psycopg.Error, TapelensError):
        return ""
    need = available()[-1].version
    if have >= need:
        return ""
    return (
        f" (the database's schema is at version {have}, this tapelens needs {need}:"
        " run `tapelens db migrate`)"
    )


def main(argv: list[str] | None = None) -> None:
    """Console entry point: expected failures print one line, never a traceback."""
    try:
        cli.main(args=argv, prog_name="tapelens", standalone_mode=False)
    except TapelensError as exc:
        click.echo(f"tapelens: error: {exc}{_schema_behind(exc)}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("tapelens: aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("tapelens: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    except OSError as exc:
        # A path the user gave that cannot be read or written (-o, --plot, an input): one line.
        where = f"{exc.filename}: " if exc.filename else ""
        click.echo(f"tapelens: error: {where}{exc.strerror or exc}", err=True)
        sys.exit(3)
    except psycopg.Error as exc:
        # The server went away or refused mid-command; its message never carries a password.
        message = " ".join(str(exc).split()) or type(exc).__name__
        why = _schema_behind(exc)
        click.echo(f"tapelens: error: the database refused: {message}{why}", err=True)
        sys.exit(4)
    sys.exit(0)


__all__ = ["App", "cli", "main", "pass_app"]
