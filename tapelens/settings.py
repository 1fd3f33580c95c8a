"""Every setting tapelens reads, in one table that the README lists.

Only the CLI looks at the environment (through Click's envvar); library functions take values as
arguments. `python -m tapelens.settings` prints the table as Markdown for the README.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Setting:
    name: str
    envvar: str
    default: str
    help: str


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "dsn",
        "TAPELENS_DSN",
        "(embedded server)",
        "PostgreSQL/TimescaleDB connection string; when unset, the embedded server under the "
        "home directory is used.",
    ),
    Setting(
        "home",
        "TAPELENS_HOME",
        "~/.local/share/tapelens",
        "Where the embedded server keeps its data, socket, logs and credentials.",
    ),
    Setting(
        "pg_bin",
        "TAPELENS_PG_BIN",
        "/usr/lib/postgresql/15/bin",
        "Directory of the PostgreSQL 15 server programs (initdb, pg_ctl, postgres).",
    ),
    Setting(
        "pg_user",
        "TAPELENS_PG_USER",
        "postgres",
        "Unprivileged system user that runs the embedded server when tapelens runs as root.",
    ),
    Setting(
        "timescaledb_license",
        "TAPELENS_TIMESCALEDB_LICENSE",
        "apache",
        "TimescaleDB edition the embedded server runs: `apache`, or `timescale` (the community "
        "edition, for `db compress`; its module must be installed). Read when the server starts.",
    ),
    Setting(
        "engine",
        "TAPELENS_ENGINE",
        "postgres",
        "Where the canonical tables and the marts live: `postgres` (the embedded TimescaleDB, or "
        "the database of `dsn`) or `spark` (Delta Lake tables under `spark_warehouse`, worked on "
        "by Spark at `spark_master`; docs/scaling.md).",
    ),
    Setting(
        "spark_master",
        "TAPELENS_SPARK_MASTER",
        "local[*]",
        "With engine `spark`: the Spark master as Spark spells it (`local[*]`, "
        "`spark://host:7077`, `yarn`, `k8s://https://host:443`).",
    ),
    Setting(
        "spark_warehouse",
        "TAPELENS_SPARK_WAREHOUSE",
        "(home)/spark",
        "With engine `spark`: where the Delta tables and their catalog live, any path Spark "
        "reaches (a local folder, `hdfs://...`, `s3a://...`).",
    ),
    Setting(
        "superset_password",
        "TAPELENS_SUPERSET_PASSWORD",
        "(generated, shown once)",
        "Password of the Superset admin for `dashboards serve`, `deploy` and `export`.",
    ),
    Setting(
        "test_dsn",
        "TAPELENS_TEST_DSN",
        "(embedded server in a temporary home)",
        "Tests only: a server to run the test suite against (needs CREATEDB).",
    ),
)

BY_NAME = {s.name: s for s in SETTINGS}


def default_home() -> Path:
    return Path("~/.local/share/tapelens").expanduser()


ENGINES = ("postgres", "spark")


def markdown_table() -> str:
    rows = ["| setting | environment variable | default | meaning |", "|---|---|---|---|"]
    rows += [f"| {s.name} | `{s.envvar}` | `{s.default}` | {s.help} |" for s in SETTINGS]
    return "\n".join(rows)


if __name__ == "__main__":
    print(markdown_table())
