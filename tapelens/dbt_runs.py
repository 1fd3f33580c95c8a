"""Build the dbt project (dbt_project.yml, models/) in-process against a tapelens database.

dbt reads its connection from profiles.yml, which takes every value from environment
variables: `build` resolves the DSN (defaults, ~/.pgpass) with a real connection, sets those
variables for the duration of the run only, and gives the password to dbt through a
DBT_ENV_SECRET_ variable, which dbt scrubs from its logs. dbt's own output goes to a log file;
failures come back as one ModelBuildError naming the failing models and tests.

Given a SparkWarehouse, `build` builds the same project with dbt-spark on the process's Spark
session (profiles.yml's target `spark`): the canonical tables are the warehouse's Delta tables.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from tapelens.db import connection, redact
from tapelens.errors import ConfigError, DatabaseError, TapelensError

# The dbt project: dbt_project.yml and profiles.yml at the repository's root, models in models/
# (staging, intermediate, marts), macros in macros/, data tests in data-tests/.
PROJECT_DIR = Path(__file__).resolve().parent.parent
MARTS_SCHEMA = "tapelens_marts"
# dbt runs this many models at once; the database does the work, two suit a small server.
DBT_THREADS = 2
# Memory for each sort and hash of a build session. The big marts sort the copies by tape and
# by dataset; with PostgreSQL's default (4 MB) each window spills to disk in many runs. Two
# threads with a few sorts each stay well within a server's memory at this size.
DBT_WORK_MEM = "256MB"
# The canonical tables the models read (models/staging/_sources.yml).
SOURCE_TABLES = ("tape_files", "transfers", "mounts", "tapes", "media_types", "drives")
# A source table is analysed before a build when it has no statistics or when more than this
# share of its rows changed since its last analysis (autovacuum's own default threshold, which
# it acts on only in its next round, after the build may already have run).
STALE_SHARE = 0.1
# Failure messages name at most this many failing nodes; the log file has the rest.
MAX_NAMED_FAILURES = 5

_PASSWORD_VAR = "DBT_ENV_SECRET_TAPELENS_PASSWORD"
_ENV_VARS = (
    "TAPELENS_DBT_HOST",
    "TAPELENS_DBT_PORT",
    "TAPELENS_DBT_USER",
    "TAPELENS_DBT_DBNAME",
    "TAPELENS_DBT_SSLMODE",
    "TAPELENS_DBT_THREADS",
    "PGOPTIONS",
    _PASSWORD_VAR,
)
_TEST_TYPES = {"test", "unit_test"}
# profiles.yml's targets: the database of the DSN, or the process's Spark session.
POSTGRES_TARGET = "default"
SPARK_TARGET = "spark"
# The unit tests' fixtures are written in PostgreSQL's SQL (arrays, casts); they pin the gap
# and duplicate conventions there, and a Spark build is held to a PostgreSQL one row for row.
SPARK_EXCLUDES = ("resource_type:unit_test",)


class ModelBuildError(TapelensError):
    """A model, data test or unit test failed, or dbt could not start."""

    def __init__(self, message: str, log_path: Path) -> None:
        self.log_path = log_path
        super().__init__(f"{message} (dbt log: {log_path})")


@dataclass(frozen=True)
class BuildSummary:
    """What one `dbt build` did."""

    models_built: int
    tests_passed: int
    tests_failed: int
    skipped: int
    seconds: float
    log_path: Path
    failures: tuple[str, ...] = field(default=())


def default_log_dir() -> Path:
    """Outside the source tree: dbt's target/ and logs/ under the system temp directory."""
    return Path(tempfile.gettempdir()) / f"tapelens-dbt-{os.getuid()}"


def profile_env(dsn: str) -> dict[str, str]:
    """The variables profiles.yml reads, from a DSN resolved by a real connection
    (so libpq defaults, PG* variables and ~/.pgpass apply as they do for every other command)."""
    with connection(dsn) as conn:
        info = conn.info
        params = info.get_parameters()
        found = conn.execute("select to_regclass('tapelens.tape_files') is not null").fetchone()
        if not found or not found[0]:
            raise DatabaseError(
                f"the database at {redact(dsn)} has no tapelens schema; run: tapelens db migrate"
            )
        env = {
            "TAPELENS_DBT_HOST": info.host,
            "TAPELENS_DBT_PORT": str(info.port),
            "TAPELENS_DBT_USER": info.user,
            "TAPELENS_DBT_DBNAME": info.dbname,
            "TAPELENS_DBT_SSLMODE": params.get("sslmode", "prefer"),
            "TAPELENS_DBT_THREADS": str(DBT_THREADS),
            # libpq sends these settings when dbt's connections open (every thread's)
            "PGOPTIONS": " ".join(
                part
                for part in (os.environ.get("PGOPTIONS", ""), f"-c work_mem={DBT_WORK_MEM}")
                if part
            ),
        }
        password = info.password
    if password:
        env[_PASSWORD_VAR] = password
    return env


@contextmanager
def _environment(values: Mapping[str, str]) -> Iterator[None]:
    """Set dbt's profile variables for one run, then put back whatever was there."""
    saved = {name: os.environ.get(name) for name in _ENV_VARS}
    try:
        for name in _ENV_VARS:
            os.environ.pop(name, None)
        os.environ.update(values)
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def stale_sources(conn: psycopg.Connection[Any]) -> list[str]:
    """The canonical tables whose planner statistics are missing or stale, hypertable chunks
    counted with their table. A build right after a load would otherwise plan its joins on
    empty statistics: a first build on a new installation took 9x its second, its transfer
    marts running nested loops over tables the planner believed empty."""
    rows = conn.execute(
        """
        with tables as (
            select c.oid, c.relname as name
            from pg_class as c
            join pg_namespace as n on n.oid = c.relnamespace
            where n.nspname = 'tapelens' and c.relname = any(%s)
        ),
        parts as (
            select oid, name, oid as part from tables
            union all
            select tables.oid, tables.name, i.inhrelid
            from tables join pg_inherits as i on i.inhparent = tables.oid
        )
        select
            parts.name,
            coalesce(sum(s.n_mod_since_analyze), 0)::float8 as changed,
            coalesce(sum(s.n_live_tup), 0)::float8 as live,
            bool_or(
                s.last_analyze is null and s.last_autoanalyze is null
                and s.n_live_tup + s.n_mod_since_analyze > 0
            ) as never
        from parts
        join pg_stat_user_tables as s on s.relid = parts.part
        group by parts.name
        """,
        (list(SOURCE_TABLES),),
    ).fetchall()
    return sorted(
        name for name, changed, live, never in rows if never or changed > STALE_SHARE * live + 50
    )


def analyze_sources(dsn: str) -> list[str]:
    """ANALYZE the canonical tables whose statistics are missing or stale; their names."""
    with connection(dsn, autocommit=True) as conn:
        stale = stale_sources(conn)
        for name in stale:
            # a hypertable's ANALYZE covers its chunks; names come from SOURCE_TABLES only
            conn.execute(
                sql.SQL("analyze {}.{}").format(sql.Identifier("tapelens"), sql.Identifier(name))
            )
    return stale


def dbt_args(
    command: str,
    log_dir: Path,
    select: Sequence[str] | None = None,
    full_refresh: bool = False,
    vars: Mapping[str, Any] | None = None,
    exclude: Sequence[str] | None = None,
    target: str = POSTGRES_TARGET,
) -> list[str]:
    """The dbt command line: project and profile from PROJECT_DIR, output under log_dir, nothing
    on the console, no usage statistics sent."""
    args = [
        command,
        "--target",
        target,
        "--project-dir",
        str(PROJECT_DIR),
        "--profiles-dir",
        str(PROJECT_DIR),
        "--target-path",
        str(log_dir / "target"),
        "--log-path",
        str(log_dir),
        "--log-level",
        "none",
        "--log-level-file",
        "info",
        "--log-format-file",
        "text",
        "--no-use-colors",
        "--no-send-anonymous-usage-stats",
        "--no-version-check",
    ]
    if select:
        args += ["--select", *select]
    if exclude:
        args += ["--exclude", *exclude]
    if full_refresh:
        args.append("--full-refresh")
    if vars:
        args += ["--vars", json.dumps(dict(vars), default=str)]
    return args


def _scrub(text: str, secret: str | None) -> str:
    text = " ".join(str(text).split())
    return text.replace(secret, "***") if secret else text


@dataclass(frozen=True)
class NodeDone:
    """A model or test that has just finished, for progress on stderr."""

    name: str
    kind: str  # model, test, unit_test
    status: str  # success, pass, fail, error, skipped...
    seconds: float
    rows: int | None  # rows the statement wrote (a table or an incremental insert), if known
    done: int  # nodes finished so far
    total: int | None  # nodes this build runs, once dbt has said
    left_s: float | None  # estimated from the last build's times of the nodes still to run


# Each node's time in the last build, kept beside dbt's log: the next build's estimate of the
# time left (dbt itself does not know how long a model will take).
_TIMES_FILE = "node_seconds.json"


class _Tracker:
    """Turns dbt's NodeFinished events into NodeDone for a progress callback, and records
    every node's time for the next build's estimate."""

    def __init__(
        self, times_path: Path, selection: str, report: Callable[[NodeDone], None] | None
    ) -> None:
        self.times_path = times_path
        self.selection = selection  # the same selection runs the same nodes
        self.report = report
        self.started = time.monotonic()
        try:
            self.kept: dict[str, dict[str, float]] = json.loads(times_path.read_text())
            self.before = {k: float(v) for k, v in self.kept.get(selection, {}).items()}
        except (OSError, ValueError, AttributeError, TypeError):
            self.kept, self.before = {}, {}
        self.seconds: dict[str, float] = {}
        self.total: int | None = None

    def __call__(self, event: Any) -> None:
        # dbt calls this on its worker threads, where an exception fails the node: progress
        # is never worth a failed build.
        try:
            self._hear(event)
        except Exception:  # noqa: BLE001
            self.report = None

    def _hear(self, event: Any) -> None:
        if event.info.name == "LogStartLine":
            self.total = int(event.data.total) or self.total  # every node's start says it
            return
        if event.info.name != "NodeFinished":
            return
        node, result = event.data.node_info, event.data.run_result
        self.seconds[node.unique_id] = float(result.execution_time)
        if self.report is None:
            return
        rows = None
        response = result.adapter_response
        if response is not None and "rows_affected" in response:
            affected = int(response["rows_affected"])
            rows = affected if affected >= 0 else None  # -1 for a view
        known = [uid for uid in self.seconds if uid in self.before]
        left_s = None
        if known and self.before:
            # Scale the last build's remaining node times by how this build compares so far
            # (other load on the server, threads running side by side).
            pace = (time.monotonic() - self.started) / max(
                sum(self.before[uid] for uid in known), 1e-3
            )
            left_s = pace * sum(t for uid, t in self.before.items() if uid not in self.seconds)
        self.report(
            NodeDone(
                node.node_name,
                node.resource_type,
                str(result.status),
                float(result.execution_time),
                rows,
                len(self.seconds),
                self.total,
                left_s,
            )
        )

    def save(self) -> None:
        if not self.seconds:
            return
        # An estimate only: a build whose times cannot be kept has still succeeded.
        with contextlib.suppress(OSError):
            self.times_path.write_text(json.dumps({**self.kept, self.selection: self.seconds}))


def _summarise(result: Any, seconds: float, log_path: Path, secret: str | None) -> BuildSummary:
    models = passed = failed = skipped = 0
    failures: list[str] = []
    for node_result in getattr(result, "results", None) or []:
        node = node_result.node
        kind = str(node.resource_type)
        status = str(node_result.status)
        if status == "skipped":
            skipped += 1
        elif kind in _TEST_TYPES:
            if status in ("pass", "warn"):
                passed += 1
            else:
                failed += 1
                detail = node_result.message or status
                failures.append(f"{kind} {node.name}: {_scrub(detail, secret)}")
        elif status == "success":
            models += kind == "model"
        else:
            failures.append(f"{kind} {node.name}: {_scrub(node_result.message or status, secret)}")
    return BuildSummary(models, passed, failed, skipped, seconds, log_path, tuple(failures))


@dataclass(frozen=True)
class SparkWarehouse:
    """Where a build on Spark works: the Spark master and the warehouse (a local folder or any
    path Spark reaches; tapelens.spark.session)."""

    master: str
    path: str | Path


def build(
    dsn: str | SparkWarehouse,
    select: list[str] | None = None,
    full_refresh: bool = False,
    vars: dict[str, Any] | None = None,
    log_dir: Path | None = None,
    exclude: list[str] | None = None,
    progress: Callable[[NodeDone], None] | None = None,
) -> BuildSummary:
    """Run `dbt build` (models, then their data and unit tests) against the database.

    select/exclude take dbt selectors (exclude=["resource_type:test",
    "resource_type:unit_test"] builds the models alone). Raises ModelBuildError naming the
    failing models and tests; dbt's log is in log_dir. `progress` hears of each node as it
    finishes (from dbt's threads).

    Given a SparkWarehouse instead of a DSN, the same project is built with dbt-spark on the
    Spark session of its master and warehouse: the canonical tables are the warehouse's Delta
    tables, the marts are written beside them as Delta tables, and the unit tests are left out
    (SPARK_EXCLUDES). dbt-spark's session method takes the process's session (Spark's
    getOrCreate), so the one started here, with Delta Lake and the warehouse's catalog, is the
    one dbt works in.
    """
    if not (PROJECT_DIR / "dbt_project.yml").is_file():
        raise ConfigError("dbt project", str(PROJECT_DIR), "dbt_project.yml not found")
    if isinstance(dsn, SparkWarehouse):
        # Imported here: pyspark is the optional spark dependency, and a JVM takes seconds.
        from tapelens.spark.session import spark_session

        spark_session(dsn.master, dsn.path)
        target, env = SPARK_TARGET, {"TAPELENS_DBT_THREADS": str(DBT_THREADS)}
        exclude = [*(exclude or []), *SPARK_EXCLUDES]
    else:
        target, env = POSTGRES_TARGET, profile_env(dsn)
        analyze_sources(dsn)
    return _run_build(target, env, log_dir, select, full_refresh, vars, exclude, progress)


def _run_build(
    target: str,
    env: Mapping[str, str],
    log_dir: Path | None,
    select: list[str] | None,
    full_refresh: bool,
    vars: dict[str, Any] | None,
    exclude: list[str] | None,
    progress: Callable[[NodeDone], None] | None,
) -> BuildSummary:
    """`dbt build` on `target` with profiles.yml's variables `env` set for the run."""
    log_dir = (log_dir or default_log_dir()).expanduser().resolve()
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / "dbt.log"
    secret = env.get(_PASSWORD_VAR)
    # Imported here: loading dbt takes seconds, which other commands should not pay.
    from dbt.cli.main import dbtRunner

    selection = json.dumps([sorted(select or []), sorted(exclude or []), full_refresh])
    if target != POSTGRES_TARGET:
        selection = f"{target}:{selection}"  # another engine's times are no estimate
    tracker = _Tracker(log_dir / _TIMES_FILE, selection, progress)
    started = time.monotonic()
    with _environment(env):
        outcome = dbtRunner(callbacks=[tracker]).invoke(
            dbt_args("build", log_dir, select, full_refresh, vars, exclude, target)
        )
    seconds = time.monotonic() - started
    tracker.save()
    if outcome.exception is not None:
        raise ModelBuildError(
            f"dbt could not run: {_scrub(str(outcome.exception), secret)}", log_path
        )
    summary = _summarise(outcome.result, seconds, log_path, secret)
    if summary.failures or not outcome.success:
        named = "; ".join(summary.failures[:MAX_NAMED_FAILURES]) or "dbt reported failure"
        more = len(summary.failures) - MAX_NAMED_FAILURES
        if more > 0:
            named += f"; and {more} more"
        raise ModelBuildError(
            f"marts build failed ({summary.models_built} models built, "
            f"{summary.tests_passed} tests passed, {summary.tests_failed} failed): {named}",
            log_path,
        )
    return summary
