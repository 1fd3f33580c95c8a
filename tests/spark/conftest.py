"""A synthetic site loaded and built on both engines, for the tests that compare them.

The site is generated, loaded into TimescaleDB and the dbt project built there; its canonical
tables are then copied into Delta tables of a Spark warehouse through Arrow (the PostgreSQL
tables as they are: the Spark loader of the canonical tables is another path into the same
tables, tested with it), and the same dbt project is built on them with dbt-spark.

`both_engines` is one small site for the whole test session, read but never changed by the
tests that use it; a test that changes its site builds its own with `build_on_both`. Spark
keeps one session per process and a local warehouse's metastore serves one process: the
tests that use a session run in this process, one warehouse after another.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from tapelens.cli.marts import store_placement_costs, store_placement_costs_on_spark
from tapelens.dbt_runs import SOURCE_TABLES, SparkWarehouse, build
from tapelens.frames import read_frame
from tapelens.world import generate, site_params
from tests.conftest import _fresh_database
from tests.fixtures.generated_site import load_site

MASTER = "local[2]"
MODELS_ONLY = ["resource_type:test", "resource_type:unit_test"]
# The canonical tables the models read: the sources of models/staging/_sources.yml.
CANONICAL = (*SOURCE_TABLES, "write_hints")
# A small site's tables are a few thousand rows: two shuffle partitions are plenty, and
# compiling each query's Java code (and Delta's statistics code for every file it writes)
# costs far more than running the query interpreted.
SMALL = {
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    "spark.databricks.delta.stats.collect": "false",
}
# The session-wide site: a few hundred files, with hint records, a lost-acknowledgement
# outage and a scattered dataset, so that every report and grouping has rows.
SESSION_FILES = 400
SESSION_SEED = 23


@dataclass(frozen=True)
class Built:
    """A site built on both engines."""

    dsn: str  # its PostgreSQL database
    warehouse: SparkWarehouse
    logs: Path  # dbt's logs, a folder per engine
    site: Path  # the generated site (its manifest and inputs)

    @property
    def spark(self) -> Any:
        """The process's Spark session on this site's warehouse: the one running, or a new one
        when a test in between worked on another warehouse (spark_session stops a session
        made for another)."""
        from tapelens.spark.session import spark_session

        return spark_session(MASTER, self.warehouse.path, conf=SMALL)


def generate_site(site: Path, files: int, seed: int) -> None:
    """A synthetic BNL-like site of `files` files with hints, an outage and a scattered dataset."""
    generate(
        site,
        site_params("bnl", files=files, seed=seed, hints=True, ack_outages=1, scattered_datasets=1),
    )


def copy_to_spark(dsn: str, spark: Any, tables: tuple[str, ...] = CANONICAL) -> None:
    """The PostgreSQL database's canonical tables as Delta tables of the session's warehouse."""
    spark.sql("create database if not exists tapelens")
    for table in tables:
        frame = read_frame(dsn, f"select * from tapelens.{table}")
        (
            spark.createDataFrame(frame.to_arrow())
            .write.format("delta")
            .mode("overwrite")
            .saveAsTable(f"tapelens.{table}")
        )


def build_on_both(dsn: str, site: Path, warehouse: Path, logs: Path) -> Built:
    """The generated `site` loaded and built on PostgreSQL (`dsn`), then copied to a Spark
    warehouse and built there."""
    from tapelens.spark.session import spark_session

    load_site(dsn, site, {"tapes", "catalog", "mounts", "transfers", "hints"})
    build(dsn, exclude=MODELS_ONLY, log_dir=logs / "postgres")
    spark = spark_session(MASTER, warehouse, conf=SMALL)
    copy_to_spark(dsn, spark)
    on_spark = SparkWarehouse(MASTER, warehouse)
    build(on_spark, exclude=MODELS_ONLY, log_dir=logs / "spark")
    return Built(dsn, on_spark, logs, site)


def spark_runs_table(dsn: str, spark: Any) -> None:
    """The load runs as the Spark engine keeps them (with the columns a Spark load adds, empty:
    no load is running), so that a reader that first rolls back killed loads finds none."""
    from tapelens.spark.tables import SPARK_ONLY, TABLES

    table = TABLES["ingest_runs"]
    runs = read_frame(dsn, "select * from tapelens.ingest_runs")
    kinds = dict(table.columns)
    frame = spark.createDataFrame(runs.to_arrow()).selectExpr(
        *(
            f"cast(null as {kinds[name]}) as `{name}`"
            if name in SPARK_ONLY["ingest_runs"]
            else f"cast(`{name}` as {kinds[name]}) as `{name}`"
            for name in table.names
        )
    )
    frame.write.format("delta").mode("overwrite").saveAsTable(table.qualified)


@pytest.fixture(scope="session")
def both_engines(
    server_dsn: str, template_dsn: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Built]:
    """One small site loaded and built on both engines, for the session's tests to read (they
    must not change it). Its Spark session is stopped at the end."""
    from tapelens.spark.session import stop_session

    databases = _fresh_database(server_dsn)
    dsn = next(databases)
    site = tmp_path_factory.mktemp("both-site")
    generate_site(site, SESSION_FILES, SESSION_SEED)
    built = build_on_both(
        dsn, site, tmp_path_factory.mktemp("both-warehouse"), tmp_path_factory.mktemp("both-dbt")
    )
    spark_runs_table(dsn, built.spark)
    # The placement costs, priced after each build as `marts build` does on either engine.
    store_placement_costs(dsn)
    store_placement_costs_on_spark(built.warehouse)
    try:
        yield built
    finally:
        stop_session()
        next(databases, None)


def same_frames(what: str, postgres: pl.DataFrame, spark: pl.DataFrame) -> None:
    """Both engines' frames equal, column for column and row for row, in their order."""
    assert spark.columns == postgres.columns, f"{what}: columns {spark.columns}"
    assert spark.height == postgres.height, f"{what}: {spark.height} rows, {postgres.height}"
    for name in postgres.columns:
        a, b = postgres[name], spark[name]
        bad = pl.DataFrame({"postgres": a, "spark": b}).with_row_index().filter(~a.eq_missing(b))
        assert bad.height == 0, f"{what}.{name}: {bad.height} rows differ: {bad.head(3).rows()}"
