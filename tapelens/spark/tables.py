"""The canonical tables as Delta Lake tables: their columns, derived from the one definition of
the canonical schema (tapelens.ingest.canonical), and `create_tables`, the Spark counterpart of
`tapelens db migrate`.

A table's columns are the PostgreSQL table's, by name and type (a test holds them to the
migrated database): the columns every reader produces (canonical.SCHEMAS) and those the
loader fills (the load's run, when a copy was last seen or retired). Spark adds one column of
its own to the tables with a volume, `volume_bucket`, a hash of the volume that partitions them,
so that the marts' per-tape work (gaps along a tape, tape objects, occupancy) runs in parallel,
one task per bucket, and a newer dump rewrites only the files of the buckets it changes.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl
from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F

from tapelens.ingest import canonical
from tapelens.media import MEDIA_TYPES

DATABASE = "tapelens"
BUCKETS = 16  # partitions by volume: a few per core of a small cluster, few files per bucket
BUCKET = "volume_bucket"


def bucket_of(volume: Column) -> Column:
    """The partition of a volume: its 64-bit xxhash modulo BUCKETS (a null volume, a transfer
    whose log names none, has a bucket too: the hash's seed)."""
    return F.pmod(F.xxhash64(volume), F.lit(BUCKETS)).cast("int")


def bucket_sql(volume: str = "volume") -> str:
    """bucket_of as Spark SQL, for the marts and for queries that prune partitions."""
    return f"cast(pmod(xxhash64({volume}), {BUCKETS}) as int)"


def sql_literal(value: str) -> str:
    """A Spark SQL string literal."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def spark_type(dtype: pl.DataType) -> str:
    """The Spark SQL type of a canonical Polars dtype (times are UTC instants: TIMESTAMP)."""
    if dtype == pl.String():
        return "STRING"
    if dtype == pl.Int64():
        return "BIGINT"
    if dtype == pl.Int32():
        return "INT"
    if dtype == pl.Float64():
        return "DOUBLE"
    if isinstance(dtype, pl.Datetime):
        return "TIMESTAMP"
    raise ValueError(f"no Spark type for {dtype}")


@dataclass(frozen=True)
class Table:
    """One canonical table on Spark: its columns in order and whether it is bucketed."""

    name: str
    columns: tuple[tuple[str, str], ...]  # (name, Spark SQL type)
    bucketed: bool = False
    comment: str = ""

    @property
    def qualified(self) -> str:
        return f"{DATABASE}.{self.name}"

    @property
    def names(self) -> list[str]:
        return [c for c, _ in self.columns]

    def ddl(self, location: str | None = None) -> str:
        """CREATE TABLE IF NOT EXISTS ... USING DELTA, partitioned by bucket when bucketed."""
        cols = ",\n    ".join(f"{name} {kind}" for name, kind in self.columns)
        parts = f"\nPARTITIONED BY ({BUCKET})" if self.bucketed else ""
        where = f"\nLOCATION '{location}'" if location else ""
        note = f"\nCOMMENT '{self.comment}'" if self.comment else ""
        return (
            f"CREATE TABLE IF NOT EXISTS {self.qualified} (\n    {cols}\n) USING DELTA"
            f"{parts}{where}{note}"
        )


def _canonical(kind: str) -> list[tuple[str, str]]:
    return [(name, spark_type(dtype)) for name, dtype in canonical.SCHEMAS[kind].items()]


# The columns the loader fills, per table, as the migrations add them (ingest/schema/).
_LOADED_BY = [("ingest_run_id", "BIGINT")]
_CATALOG_EXTRA = [
    ("ingest_run_id", "BIGINT"),
    ("last_seen_at", "TIMESTAMP"),
    ("removed_at", "TIMESTAMP"),
    ("removed_run_id", "BIGINT"),
    ("row_digest", "BIGINT"),
    ("line_digest", "BIGINT"),
]
_BUCKET = [(BUCKET, "INT")]

TABLES: dict[str, Table] = {
    t.name: t
    for t in (
        Table(
            "tape_files",
            (*_canonical("catalog"), *_CATALOG_EXTRA, *_BUCKET),
            bucketed=True,
            comment="One copy of one file on one tape",
        ),
        Table(
            "transfers",
            (*_canonical("transfers"), *_LOADED_BY, *_BUCKET),
            bucketed=True,
            comment="One file moved to or from tape",
        ),
        Table(
            "mounts",
            (*_canonical("mounts"), *_LOADED_BY, *_BUCKET),
            bucketed=True,
            comment="One cartridge mount",
        ),
        Table(
            "tapes",
            (
                *_canonical("tapes"),
                ("updated_at", "TIMESTAMP"),
                ("updated_run_id", "BIGINT"),
            ),
        ),
        Table(
            "mount_pieces",
            (
                ("source", "STRING"),
                ("volume", "STRING"),
                ("kind", "STRING"),
                ("at", "TIMESTAMP"),
                ("drive", "STRING"),
                ("ingest_run_id", "BIGINT"),
            ),
            comment="A piece of a mount (a request, a dismount) waiting for the rest of it",
        ),
        Table("write_hints", (*_canonical("hints"), *_LOADED_BY)),
        Table(
            "ingest_runs",
            (
                ("run_id", "BIGINT"),
                ("kind", "STRING"),
                ("format", "STRING"),
                ("source", "STRING"),
                ("path", "STRING"),
                ("sha256", "STRING"),
                ("started_at", "TIMESTAMP"),
                ("finished_at", "TIMESTAMP"),
                ("rows", "BIGINT"),
                ("rejects", "BIGINT"),
                ("status", "STRING"),
                ("message", "STRING"),
                ("volumes", "ARRAY<STRING>"),
                # Spark only: the load's process, and each table's version before it wrote
                # (JSON), so that the next load can roll back a load that was killed.
                ("host", "STRING"),
                ("pid", "BIGINT"),
                ("versions_before", "STRING"),
            ),
            comment="One input file loaded, or failed; running until its load commits",
        ),
        Table(
            "ingest_rejects",
            (("run_id", "BIGINT"), ("line_no", "BIGINT"), ("raw", "STRING"), ("reason", "STRING")),
            comment="Lines refused by a lenient load, with their reasons",
        ),
        Table(
            "media_types",
            (
                ("media_type", "STRING"),
                ("family", "STRING"),
                ("generation", "INT"),
                ("barcode_suffix", "STRING"),
                ("native_rate_mb_s", "DOUBLE"),
                ("capacity_bytes", "BIGINT"),
                ("robot_s", "DOUBLE"),
                ("load_s", "DOUBLE"),
                ("locate_avg_s", "DOUBLE"),
                ("rewind_avg_s", "DOUBLE"),
                ("unload_s", "DOUBLE"),
                ("readable_by", "ARRAY<STRING>"),
                ("writable_by", "ARRAY<STRING>"),
                ("source", "STRING"),
            ),
            comment="The media catalog, from tapelens/media.py",
        ),
        Table(
            "drives",
            (
                ("drive", "STRING"),
                ("drive_type", "STRING"),
                ("library", "STRING"),
                ("state", "STRING"),
            ),
        ),
    )
}

# Columns Spark adds that the PostgreSQL tables do not have.
SPARK_ONLY: dict[str, tuple[str, ...]] = {
    "tape_files": (BUCKET,),
    "transfers": (BUCKET,),
    "mounts": (BUCKET,),
    "ingest_runs": ("host", "pid", "versions_before"),
}


def create_tables(spark: SparkSession) -> list[str]:
    """Create the database and every canonical table that is missing, and seed the media
    catalog; return the tables created. Running it again changes nothing."""
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {DATABASE}")
    existing = {row.tableName for row in spark.sql(f"SHOW TABLES IN {DATABASE}").collect()}
    created = []
    for table in TABLES.values():
        if table.name in existing:
            continue
        spark.sql(table.ddl())
        created.append(table.name)
    if "media_types" in created:
        _seed_media(spark)
    return created


def _seed_media(spark: SparkSession) -> None:
    names = TABLES["media_types"].names
    rows = [
        (
            m.media_type,
            m.family,
            m.generation,
            m.barcode_suffix,
            float(m.native_rate_mb_s),
            m.capacity_bytes,
            float(m.robot_s),
            float(m.load_s),
            float(m.locate_avg_s),
            float(m.rewind_avg_s),
            float(m.unload_s),
            list(m.readable_by),
            list(m.writable_by),
            m.source,
        )
        for m in MEDIA_TYPES
    ]
    schema = ", ".join(f"{n} {t}" for n, t in TABLES["media_types"].columns)
    spark.createDataFrame(rows, schema=schema).select(*names).write.format("delta").mode(
        "append"
    ).saveAsTable(TABLES["media_types"].qualified)


def table_versions(spark: SparkSession, names: list[str]) -> dict[str, int]:
    """Each table's current Delta version (its latest commit)."""
    out = {}
    for name in names:
        row = spark.sql(f"DESCRIBE HISTORY {TABLES[name].qualified} LIMIT 1").collect()
        out[name] = int(row[0]["version"]) if row else -1
    return out
