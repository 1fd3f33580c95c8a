"""What every command shares: the resolved settings and the database they talk to."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
import polars as pl
import psycopg
from psycopg import sql

from tapelens.analysis.recall.schedule.read_order import ORDERS
from tapelens.db import connection
from tapelens.errors import InputError, ServerError
from tapelens.frames import FrameReader, postgres_reader, sorted_and_cut
from tapelens.ingest.migrations import applied_versions, available, migrate
from tapelens.media import BY_NAME as MEDIA
from tapelens.media import normalise_drive_type
from tapelens.server import Server, server_for, start
from tapelens.settings import default_home
from tapelens.spark.settings import EngineSettings, current_engine

if TYPE_CHECKING:
    from tapelens.analysis.whatif.store import SiteModel

F = TypeVar("F", bound=Callable[..., Any])


@dataclass
class App:
    dsn_option: str | None
    home: Path
    pg_bin: Path
    pg_user: str
    timescaledb_license: str = "apache"

    @classmethod
    def from_options(
        cls,
        dsn: str | None,
        home: str | None,
        pg_bin: str,
        pg_user: str,
        timescaledb_license: str = "apache",
    ) -> App:
        return cls(
            dsn_option=dsn or None,
            home=Path(home).expanduser() if home else default_home(),
            pg_bin=Path(pg_bin),
            pg_user=pg_user,
            timescaledb_license=timescaledb_license,
        )

    @property
    def embedded(self) -> bool:
        return self.dsn_option is None

    def server(self) -> Server:
        return server_for(self.home, self.pg_bin, self.pg_user, self.timescaledb_license)

    def dsn(self, create: bool = False) -> str:
        """The database every command uses: --dsn/TAPELENS_DSN, else the embedded server of
        the home directory, started (and migrated) when it is stopped. A home without a server
        is an error naming the command that makes one: a fresh, empty server started by a
        mistyped home would answer every question with nothing. `create`: the command makes
        one (`demo run`)."""
        if self.dsn_option:
            return self.dsn_option
        server = self.server()
        if not create and not server.initialised():
            raise ServerError(
                f"no tapelens server in {server.home}; start one with `tapelens db up`"
                " (or point tapelens at a database with --dsn or TAPELENS_DSN)"
            )
        if not server.running():
            click.echo(f"tapelens: starting the embedded server in {server.home}", err=True)
            dsn = start(server)
            with connection(dsn) as conn:
                migrate(conn, dsn)
            return dsn
        dsn = server.dsn()
        # A server left running by an older tapelens has an older schema: the embedded database
        # is tapelens's own, so it is brought up to date here as it is when it starts.
        with connection(dsn, autocommit=True) as conn:
            if applied_versions(conn) != {m.version for m in available()}:
                click.echo(f"tapelens: migrating the embedded server in {server.home}", err=True)
                migrate(conn, dsn)
        return dsn


pass_app = click.make_pass_decorator(App)


# One vocabulary: the same option name for the same thing in every command. A former spelling
# still works, hidden from --help, through an alias that hands its value to the option it names.
def _alias(target: str) -> Callable[[click.Context, click.Parameter, object], object]:
    def give(ctx: click.Context, param: click.Parameter, value: object) -> object:
        if value is not None:
            ctx.params[target] = value
        return value

    return give


def aliased(target: str) -> Callable[[click.Context, click.Parameter, object], object]:
    """The main option's callback: keep what an alias gave when the option itself was not."""

    def keep(ctx: click.Context, param: click.Parameter, value: object) -> object:
        given = ctx.get_parameter_source(param.name or target)
        if given is not click.core.ParameterSource.COMMANDLINE and ctx.params.get(target):
            return ctx.params[target]
        return value

    return keep


def hidden_alias(name: str, target: str, **kw: Any) -> Callable[[F], F]:
    """A former spelling of an option, still understood but not listed."""
    return click.option(
        name, f"{target}__alias", hidden=True, expose_value=False, callback=_alias(target), **kw
    )


class AliasedChoice(click.Choice):
    """A choice whose former values (`datasets` for `dataset`) are still understood, shown
    only in their one spelling."""

    def __init__(self, choices: Sequence[str], former: Mapping[str, str]) -> None:
        super().__init__(list(choices))
        self.former = dict(former)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        return super().convert(self.former.get(value, value), param, ctx)


def dataset_type_option(fn: F) -> F:
    """--dataset-type TYPE (formerly --type)."""
    fn = hidden_alias("--type", "dataset_type")(fn)
    return click.option(
        "--dataset-type",
        "dataset_type",
        callback=aliased("dataset_type"),
        help="Only datasets of this type (AOD, RAW, ...).",
    )(fn)


def assume_media_option(fn: F) -> F:
    """--assume-media TYPE (formerly --media in simulate): the media of tapes the catalog does
    not know, checked against the media catalog."""
    fn = click.option(
        "--media",
        "assume_media__alias",
        hidden=True,
        expose_value=False,
        callback=lambda ctx, p, v: _alias("assume_media")(ctx, p, _media_name(v)),
    )(fn)
    return click.option(
        "--assume-media",
        "assume_media",
        metavar="TYPE",
        callback=lambda ctx, p, v: aliased("assume_media")(ctx, p, _media_name(v)),
        help="Media type of tapes whose type the catalog does not know (default: leave their"
        " files out).",
    )(fn)


def _media_name(value: object) -> str | None:
    """'lto8', 'LTO-8' -> 'LTO-8'; a name the media catalog does not know is an error."""
    if value is None:
        return None
    name = normalise_drive_type(str(value))
    if name not in MEDIA:
        raise click.BadParameter(
            f"unknown media type {value!r} (known: {', '.join(sorted(MEDIA))})"
        )
    return name


def drives_or_inventory(conn: psycopg.Connection, spec: str | None) -> dict[str, int]:
    """The drives every command that plans or predicts reads uses, from the PostgreSQL tables
    (analysis.recall.schedule.drives.site_drives: the rule both engines follow)."""
    from tapelens.analysis.recall.schedule.drives import site_drives
    from tapelens.analysis.throughput.inputs import read_drives

    def media_types() -> list[str]:
        query = "select distinct media_type from tapelens.tapes where media_type is not null"
        return [str(row[0]) for row in conn.execute(query).fetchall()]

    return site_drives(
        spec, lambda: read_drives(conn), media_types, lambda note: click.echo(note, err=True)
    )


INVENTORY_DRIVES = (
    "the online drives of `tapelens drives`, else one drive for each media type of the site"
)

# Times an option takes (--since, --until, --switch-at ...), the same in every command.
TIME_FORMATS = ["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S"]


def closest_first(value: str, known: Sequence[str]) -> list[str]:
    """`known` with the names closest to `value` first (a misspelling's likely meaning), then
    the others in their order."""
    close = difflib.get_close_matches(value, known, n=5, cutoff=0.5)
    lowered = [k for k in known if k.lower() == value.lower() and k not in close]
    first = lowered + close
    return first + [k for k in known if k not in first]


def nothing_matches(option: str, value: str, known: Sequence[str], shown: int = 12) -> InputError:
    """The error of a filter that matches nothing: what exists, the closest names first."""
    if not known:
        return InputError(f"{option} {value!r} matches nothing: the catalog is empty")
    names = closest_first(value, known)
    more = f", ... ({len(names) - shown} more)" if len(names) > shown else ""
    return InputError(
        f"{option} {value!r} matches nothing (known: {', '.join(names[:shown])}{more})"
    )


def _known_names_query(column: str) -> str:
    """The live catalog's distinct datasets or dataset types, SQL both engines run."""
    if column not in ("dataset", "dataset_type"):
        raise ValueError(column)
    return (
        f"select distinct {column} from tapelens.tape_files where removed_at is null"
        f" and {column} is not null order by 1"
    )


def known_names(conn: psycopg.Connection, column: str) -> list[str]:
    """The datasets or dataset types of the live catalog (column 'dataset' or 'dataset_type'),
    for the error of a filter that matched nothing."""
    rows = conn.execute(sql.SQL(_known_names_query(column))).fetchall()
    return [str(row[0]) for row in rows]


def known_names_in(read: FrameReader, column: str) -> list[str]:
    """known_names on either engine, through its frame reader."""
    return [str(value) for value in read(_known_names_query(column))[column]]


def limit_options(fn: F) -> F:
    """--sort COLUMN [--desc] and --limit N, as every command that prints a ranking takes them."""
    fn = click.option("--limit", type=click.IntRange(min=1), help="At most this many rows.")(fn)
    fn = click.option("--desc", is_flag=True, help="With --sort: largest first.")(fn)
    return click.option("--sort", "sort", metavar="COLUMN", help="Sort the rows by this column.")(
        fn
    )


def sort_and_limit(
    frame: pl.DataFrame, sort: str | None, descending: bool, limit: int | None
) -> pl.DataFrame:
    """The rows sorted by `sort` (an unknown column is an error naming the columns), then cut."""
    if descending and sort is None:
        raise click.UsageError("--desc needs --sort COLUMN")
    return sorted_and_cut(frame, sort, descending, limit)


def written_between_options(fn: F) -> F:
    """--since/--until: the files written in a time window, as every command over the write
    stream takes them."""
    fn = click.option(
        "--until", type=click.DateTime(TIME_FORMATS), help="Files written before (UTC)."
    )(fn)
    return click.option(
        "--since", type=click.DateTime(TIME_FORMATS), help="Files written from (UTC)."
    )(fn)


def write_stream_options(fn: F) -> F:
    """--sort-window, --batch-bytes and --write-drives: how the site migrates its disk cache to
    tape, as every replay of the write stream takes them."""
    # Here, not at the top: the replay's imports are heavy and most commands never replay.
    from tapelens.analysis.whatif.replay import DEFAULT_WRITE_DRIVES

    fn = click.option(
        "--write-drives",
        type=click.IntRange(1),
        default=DEFAULT_WRITE_DRIVES,
        show_default=True,
        help="Write drives, shared out over the pools (experiments) by their bytes.",
    )(fn)
    fn = click.option(
        "--batch-bytes", metavar="SIZE", help="Also migrate when the cache holds SIZE."
    )(fn)
    return click.option(
        "--sort-window",
        default="24h",
        show_default=True,
        metavar="DURATION",
        help="A migration once the oldest waiting file has waited this long: 30m, 24h, 7d.",
    )(fn)


def export_dir_option(fn: F) -> F:
    """--export-dir DIR: where a plan's --export files go, in every command that exports."""
    return click.option(
        "--export-dir", type=click.Path(file_okay=False), help="Where --export writes."
    )(fn)


def need_export_dir(exports: object, export_dir: str | None) -> None:
    """--export without --export-dir is a usage error, the same in every command."""
    if exports and not export_dir:
        raise click.UsageError("--export needs --export-dir DIR")


def order_option(fn: F) -> F:
    """--order position|rao: how the reads on a mounted tape are ordered and timed."""
    return click.option(
        "--order",
        "read_order",
        type=click.Choice(ORDERS),
        default="position",
        show_default=True,
        help="Reads on a tape: position = one forward pass in position order, gaps priced by"
        " the throughput model; rao = recommended access order from the tape's serpentine"
        " geometry (wraps, bands, where each file sits), each move priced by that geometry"
        " (docs/geometry.md).",
    )(fn)


def drives_option(default: str = INVENTORY_DRIVES) -> Callable[[F], F]:
    """--drives SPEC (drives_spec), the same in every command that plans or predicts reads."""
    return click.option(
        "--drives",
        "drives_spec",
        metavar="SPEC",
        help=f"Drives per type, e.g. LTO8:6,LTO7:4 (default: {default}).",
    )


LISTED = 5  # left-out entries named on stderr when no file lists them


def say_left_out(
    not_found: pl.DataFrame, unavailable: pl.DataFrame, written: list[Path], option: str
) -> None:
    """Count on stderr what a plan left out, by cause, and say where its list is: the file
    written beside the output, else the first few named here and the option that lists all."""
    for frame, what, cause in (
        (not_found, "request not found", "cause"),
        (unavailable, "file unavailable", "reason"),
    ):
        if frame.height == 0:
            continue
        if cause not in frame.columns:  # the catalog read names no cause: it is not there
            frame = frame.with_columns(pl.lit("not in the catalog").alias(cause))
        causes = frame.group_by(pl.col(cause).str.replace(r" \(.*\)$", "")).len()
        why = ", ".join(f"{c}: {n:,}" for c, n in causes.sort("len", descending=True).iter_rows())
        noun = (
            what
            if frame.height == 1
            else what.replace("request", "requests", 1).replace("file ", "files ", 1)
        )
        stem = "not_found" if cause == "cause" else "unavailable"
        listed = [p for p in written if p.name.endswith(f"{stem}.csv")]
        if listed:
            click.echo(f"tapelens: {frame.height:,} {noun} ({why}): {listed[0]}", err=True)
            continue
        click.echo(f"tapelens: {frame.height:,} {noun} ({why}):", err=True)
        for row in frame.head(LISTED).iter_rows(named=True):
            name = row.get("key") or row.get("path") or row.get("file_id")
            line = f"line {row['line_no']}: " if row.get("line_no") is not None else ""
            click.echo(f"  {line}{name} ({row.get(cause) or '?'})", err=True)
        if frame.height > LISTED:
            click.echo(
                f"  ... {frame.height - LISTED:,} more: {option} lists them all beside it", err=True
            )


def refuse_left_out(
    not_found: pl.DataFrame,
    unavailable: pl.DataFrame,
    beside: Path | None,
    option: str,
) -> list[Path]:
    """Nothing left out in silence: the requests not found and the files without a readable
    copy written beside `beside` (FILE.not_found.csv, FILE.unavailable.csv, as plan recall -o
    writes them), then counted on stderr by cause with where their list is (say_left_out)."""
    from tapelens.analysis.recall.exports.export import write_left_out

    written = []
    if beside is not None:
        written = write_left_out(not_found, unavailable, beside.parent, beside.stem)
    for path in written:
        click.echo(f"wrote {path}", err=True)
    say_left_out(not_found, unavailable, written, option)
    return written


def engine_reader(engine: EngineSettings, home: Path, dsn: Callable[[], str]) -> FrameReader:
    """The reader of the engine a command runs on: PostgreSQL's database (`dsn()`, asked only
    there), or Spark SQL on the tables of the Spark warehouse (tapelens.spark.read)."""
    if not engine.spark:
        return postgres_reader(dsn())
    from tapelens.spark.read import spark_reader

    return spark_reader(engine.spark_master, engine.warehouse(home))


def engine_site(
    app: App, drives_spec: str | None = None, *, plan: bool = False
) -> tuple[FrameReader, SiteModel, dict[str, int]]:
    """What an analysis of the site reads, on the engine the command runs on: the catalog's
    frame reader, the site's model (whatif.store.site_model) and, for a `plan`, its drives
    (--drives, else the inventory's, as each engine's drives_or_inventory gives them)."""
    engine = current_engine()
    read = engine_reader(engine, app.home, app.dsn)
    from tapelens.analysis.whatif.store import site_model, site_model_on_spark

    if engine.spark:
        from tapelens.analysis.recall.store import on_spark
        from tapelens.spark.session import spark_session

        spark = spark_session(engine.spark_master, engine.warehouse(app.home))
        drives = on_spark.drives_or_inventory(spark, drives_spec) if plan else {}
        return read, site_model_on_spark(spark), drives
    with connection(app.dsn()) as conn:
        drives = drives_or_inventory(conn, drives_spec) if plan else {}
        return read, site_model(conn), drives
