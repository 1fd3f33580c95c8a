"""The marts built on Spark equal the marts built on PostgreSQL, row for row.

A small synthetic site (with hint records, a lost-acknowledgement outage and scattered
datasets, so that every mart has rows) is loaded into TimescaleDB and the dbt project built
there; the canonical tables are then copied into Delta tables of a Spark warehouse through
Arrow (the PostgreSQL tables as they are: the Spark loader of the canonical tables is another
path into the same tables, tested with it), and the same dbt project is built on them with
dbt-spark. Every model dbt materialises as a table, and every view of the marts, is then read
from both engines and compared sorted by all its columns: exact values equal, floats to 1e-9
relative.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import psycopg
import pytest

from tapelens.dbt_runs import SOURCE_TABLES, SparkWarehouse, build
from tapelens.frames import read_frame
from tapelens.world import generate, site_params
from tests.fixtures.generated_site import load_site

pytest.importorskip("pyspark")
pytest.importorskip("delta")

pytestmark = pytest.mark.slow

FILES = 1_500
SEED = 11
REL = 1e-9
MODELS_ONLY = ["resource_type:test", "resource_type:unit_test"]
# The schemas dbt builds into (macros/generate_schema_name.sql); staging holds views of the
# canonical tables only, compared through everything built on them.
BUILT_SCHEMAS = ("tapelens_intermediate", "tapelens_marts")
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


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    from tapelens.spark.session import stop_session

    yield tmp_path_factory.mktemp("warehouse")
    stop_session()


@dataclass(frozen=True)
class Built:
    """The site built on both engines."""

    dsn: str  # its PostgreSQL database
    spark: Any  # the Spark session
    warehouse: SparkWarehouse
    logs: Path  # dbt's logs, a folder per engine


@pytest.fixture(scope="module")
def built(module_dsn: str, warehouse: Path, tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The site loaded and built on both engines."""
    from tapelens.spark.session import spark_session

    site = tmp_path_factory.mktemp("site")
    generate(
        site,
        site_params("bnl", files=FILES, seed=SEED, hints=True, ack_outages=1, scattered_datasets=1),
    )
    load_site(module_dsn, site, {"tapes", "catalog", "mounts", "transfers", "hints"})
    logs = tmp_path_factory.mktemp("dbt")
    build(module_dsn, exclude=MODELS_ONLY, log_dir=logs / "postgres")

    spark = spark_session("local[2]", warehouse, conf=SMALL)
    spark.sql("create database if not exists tapelens")
    for table in CANONICAL:
        frame = read_frame(module_dsn, f"select * from tapelens.{table}")
        (
            spark.createDataFrame(frame.to_arrow())
            .write.format("delta")
            .mode("overwrite")
            .saveAsTable(f"tapelens.{table}")
        )
    on_spark = SparkWarehouse("local[2]", warehouse)
    build(on_spark, exclude=MODELS_ONLY, log_dir=logs / "spark")
    return Built(module_dsn, spark, on_spark, logs)


def built_relations(dsn: str) -> list[str]:
    """schema.name of every table and view dbt built on PostgreSQL."""
    found = read_frame(
        dsn,
        "select table_schema || '.' || table_name as name from information_schema.tables"
        " where table_schema = any($1) order by 1",
        [list(BUILT_SCHEMAS)],
    )
    return list(found["name"])


def plain(frame: pl.DataFrame) -> pl.DataFrame:
    """Both engines' values in one vocabulary: integers as Int64, decimals (PostgreSQL's
    numeric, Spark's decimal) and floats as Float64, instants in UTC microseconds."""
    columns = []
    for name, dtype in frame.schema.items():
        column = pl.col(name)
        if isinstance(dtype, pl.Extension):  # PostgreSQL's numeric, as text, from ADBC
            column = column.ext.storage().cast(pl.Float64)
        elif dtype.is_integer():
            column = column.cast(pl.Int64)
        elif dtype.is_decimal() or dtype.is_float():
            column = column.cast(pl.Float64)
        elif isinstance(dtype, pl.Datetime):
            zoned = column if dtype.time_zone else column.dt.replace_time_zone("UTC")
            column = zoned.dt.convert_time_zone("UTC").dt.cast_time_unit("us")
        columns.append(column)
    return frame.select(columns)


def sorted_rows(frame: pl.DataFrame) -> pl.DataFrame:
    """Sorted by the exact columns, then the floats (which only break ties)."""
    floats = [n for n, t in frame.schema.items() if t == pl.Float64]
    lists = [n for n, t in frame.schema.items() if isinstance(t, pl.List)]
    exact = [n for n in frame.columns if n not in floats and n not in lists]
    keys = [*exact, *floats, *(pl.col(n).list.join("\x1f") for n in lists)]
    return frame.sort(keys, nulls_last=True)


def same(a: pl.Expr, b: pl.Expr, floats: bool) -> pl.Expr:
    """Equal, nulls equal; floats equal to a relative REL."""
    if not floats:
        return a.eq_missing(b)
    close = ((a - b).abs() <= REL * pl.max_horizontal(a.abs(), b.abs())).fill_null(False)
    return (a.is_null() & b.is_null()) | close


def assert_equal(relation: str, want: pl.DataFrame, got: pl.DataFrame) -> None:
    assert got.columns == want.columns, f"{relation}: columns {got.columns} != {want.columns}"
    assert got.height == want.height, f"{relation}: {got.height} rows on Spark, {want.height}"
    want, got = sorted_rows(want), sorted_rows(got)
    for name, dtype in want.schema.items():
        pair = pl.DataFrame({"postgres": want[name], "spark": got[name]})
        bad = pair.filter(~same(pl.col("postgres"), pl.col("spark"), dtype == pl.Float64))
        assert bad.height == 0, (
            f"{relation}.{name}: {bad.height} of {want.height} rows differ, e.g. "
            f"{bad.head(3).rows()}"
        )


def assert_every_relation_equal(site: Built) -> None:
    """Every table and view built on PostgreSQL equals Spark's, and none is empty."""
    relations = built_relations(site.dsn)
    assert "tapelens_marts.fct_file_gaps" in relations
    empty = []
    for relation in relations:
        want = plain(read_frame(site.dsn, f"select * from {relation}"))
        got = pl.from_arrow(site.spark.sql(f"select * from {relation}").toArrow())
        assert isinstance(got, pl.DataFrame)
        # the partition column of Spark's per-copy marts (macros/dialect.sql), Spark's only
        got = got.drop("volume_bucket", strict=False)
        if want.height == 0:
            empty.append(relation)
        assert_equal(relation, want, plain(got))
    assert not empty, f"the site leaves these empty, so they are not compared: {empty}"


def test_every_mart_equals_postgres(built: Built) -> None:
    assert_every_relation_equal(built)


def test_incremental_build_equals_postgres(built: Built) -> None:
    """A copy removed on one volume, on both engines alike: each engine's incremental build
    (Spark's through its Delta MERGE hooks) recomputes that volume, and the marts stay equal."""
    copy = read_frame(
        built.dsn,
        "select source, copy_id, written_at from tapelens_marts.fct_file_gaps"
        " order by volume, position limit 1",
    ).row(0, named=True)
    key = (copy["source"], copy["copy_id"], copy["written_at"])
    # A later run than any load's: the volume's watermark moves past the marts'.
    removed = "removed_at = timestamp '2030-01-01 00:00:00', removed_run_id = 1000000"
    with psycopg.connect(built.dsn, autocommit=True) as conn:
        conn.execute("set time zone 'UTC'")
        changed = conn.execute(
            f"update tapelens.tape_files set {removed}"
            " where source = %s and copy_id = %s and written_at = %s",
            key,
        )
        assert changed.rowcount == 1
    # Delta's UPDATE takes no bound parameters: the key as literals (the session is in UTC).
    on_spark = (
        f"source = '{copy['source']}' and copy_id = '{copy['copy_id']}'"
        f" and written_at = timestamp '{copy['written_at']:%Y-%m-%d %H:%M:%S.%f}'"
    )
    built.spark.sql(f"update tapelens.tape_files set {removed} where {on_spark}")
    build(built.dsn, exclude=MODELS_ONLY, log_dir=built.logs / "postgres")
    build(built.warehouse, exclude=MODELS_ONLY, log_dir=built.logs / "spark")
    left = built.spark.sql(
        f"select count(*) from tapelens_marts.fct_file_gaps where {on_spark}"
    ).collect()[0][0]
    assert left == 0, "the removed copy is still in Spark's fct_file_gaps"
    assert_every_relation_equal(built)
