"""What `tapelens db status` reports: versions, schema version, canonical table row counts."""

from __future__ import annotations

from dataclasses import dataclass, field

import psycopg
from psycopg import sql

from tapelens.columnstore import compressed_chunks
from tapelens.db import timescaledb_edition, timescaledb_version
from tapelens.ingest.migrations import schema_version

CANONICAL_TABLES = (
    "media_types",
    "drives",
    "tapes",
    "tape_files",
    "transfers",
    "mounts",
    "write_hints",
    "ingest_runs",
    "ingest_rejects",
)


@dataclass(frozen=True)
class Status:
    server_version: str
    timescaledb_version: str | None
    schema_version: int
    timescaledb_edition: str | None  # 'apache' or 'timescale' (community), as the server says
    row_counts: dict[str, int | None] = field(default_factory=dict)  # None: table missing
    # Per hypertable with compressed chunks: (compressed chunks, all chunks).
    compressed_chunks: dict[str, tuple[int, int]] = field(default_factory=dict)


def status(conn: psycopg.Connection) -> Status:
    server = conn.execute("show server_version").fetchone()
    counts: dict[str, int | None] = {}
    for table in CANONICAL_TABLES:
        exists = conn.execute("select to_regclass(%s)", [f"tapelens.{table}"]).fetchone()
        if not exists or exists[0] is None:
            counts[table] = None
            continue
        query = sql.SQL("select count(*) from {}.{}").format(
            sql.Identifier("tapelens"), sql.Identifier(table)
        )
        row = conn.execute(query).fetchone()
        counts[table] = int(row[0]) if row else 0
    return Status(
        server_version=str(server[0]) if server else "?",
        timescaledb_version=timescaledb_version(conn),
        schema_version=schema_version(conn),
        timescaledb_edition=timescaledb_edition(conn),
        row_counts=counts,
        compressed_chunks=compressed_chunks(conn),
    )


@dataclass(frozen=True)
class SparkStatus:
    """What `tapelens db status` says of the Spark engine: where it runs and what it holds."""

    master: str
    warehouse: str
    spark_version: str
    delta_package: str
    row_counts: dict[str, int | None] = field(default_factory=dict)  # None: table missing
    rolled_back: list[int] = field(default_factory=list)  # killed loads rolled back now


def spark_status(master: str, warehouse: str) -> SparkStatus:
    """The Spark engine's status: its master, its warehouse, the canonical tables' row counts
    (of committed loads only: a load killed before its last commit is rolled back first)."""
    from tapelens.spark.load import roll_back_killed
    from tapelens.spark.session import delta_package, spark_session, stop_session
    from tapelens.spark.tables import DATABASE, TABLES

    spark = spark_session(master, warehouse)
    try:
        databases = {row[0] for row in spark.sql("SHOW DATABASES").collect()}
        existing = (
            {row.tableName for row in spark.sql(f"SHOW TABLES IN {DATABASE}").collect()}
            if DATABASE in databases
            else set()
        )
        rolled = roll_back_killed(spark) if "ingest_runs" in existing else []
        counts: dict[str, int | None] = {}
        for table in CANONICAL_TABLES:
            if table not in TABLES or table not in existing:
                counts[table] = None
                continue
            counts[table] = int(spark.table(TABLES[table].qualified).count())
        return SparkStatus(
            master=master,
            warehouse=warehouse,
            spark_version=spark.version,
            delta_package=delta_package(),
            row_counts=counts,
            rolled_back=rolled,
        )
    finally:
        stop_session()
