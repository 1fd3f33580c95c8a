"""The Spark planner's catalog read takes the tapes changed since the marts were built by the
rule PostgreSQL's follows (addresses.stale_volumes): the same marts and load runs on both
engines give the same stale tapes at every step (a fresh build, a later load of one tape, a
whole-catalog load, no marts), and after a later load the planners read the same addresses,
summing the same tapes from the catalog.

The marts are built by dbt on PostgreSQL and copied to the Spark warehouse with the canonical
tables, as the load runs are after each step: a dbt-spark build would cost minutes, and is
held equal to PostgreSQL's by test_marts_equal.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import psycopg
import pytest

from tapelens.analysis.recall.store import catalog, on_spark
from tapelens.analysis.recall.store.addresses import stale_volumes
from tapelens.dbt_runs import MARTS_SCHEMA, build
from tapelens.frames import postgres_reader, read_frame
from tests.fixtures.catalog_runs import LoadedCopy, record_catalog_load
from tests.spark.conftest import MASTER, MODELS_ONLY, SMALL, copy_to_spark, spark_runs_table

pytest.importorskip("pyspark")
pytest.importorskip("delta")

pytestmark = pytest.mark.slow

MARTS = ("plan_tape_objects", "plan_tape_layouts")


@pytest.fixture
def spark(tmp_path: Path) -> Iterator[Any]:
    """A session on a warehouse of this test's own; stopped at the end."""
    from tapelens.spark.session import spark_session, stop_session

    try:
        yield spark_session(MASTER, tmp_path / "warehouse", conf=SMALL)
    finally:
        stop_session()


def load(dsn: str, copies: list[LoadedCopy], whole: bool = False) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        record_catalog_load(conn, copies, whole)


def to_spark(dsn: str, spark: Any, tables: tuple[str, ...] = (), marts: bool = False) -> None:
    """PostgreSQL's load runs, `tables` of the catalog and with `marts` the planner's marts, as
    the Spark warehouse's tables."""
    copy_to_spark(dsn, spark, tables)
    spark_runs_table(dsn, spark)
    if marts:
        spark.sql(f"create database if not exists {MARTS_SCHEMA}")
        for mart in MARTS:
            frame = read_frame(dsn, f"select * from {MARTS_SCHEMA}.{mart}")
            table = spark.createDataFrame(frame.to_arrow())
            table.write.format("delta").mode("overwrite").saveAsTable(f"{MARTS_SCHEMA}.{mart}")


def same_rule(dsn: str, spark: Any) -> tuple[bool, tuple[str, ...] | None]:
    """The stale tapes as each engine's planner takes them, held equal."""
    on_postgres = stale_volumes(postgres_reader(dsn))
    _, _, from_marts, stale = on_spark._catalog_query(spark)
    assert (from_marts, stale) == on_postgres, "the engines take different tapes for changed"
    return on_postgres


def same_read(dsn: str, spark: Any) -> tuple[dict[str, int], list[str]]:
    """What each engine's planner reads of every path (its byte address) and says, held equal."""
    paths = read_frame(dsn, "select path from tapelens.tape_files")["path"]
    requests = pl.DataFrame({"kind": "path", "key": paths})
    read = {}
    for engine in ("postgres", "spark"):
        notes: list[str] = []
        if engine == "postgres":
            with psycopg.connect(dsn) as conn:
                copies = catalog.load_catalog(conn, requests, notes.append)
        else:
            copies = on_spark.load_catalog(spark, requests, notes.append)
        read[engine] = (dict(copies.select("path", "start_bytes").iter_rows()), notes)
    assert read["spark"] == read["postgres"], "the engines' planners read different addresses"
    return read["postgres"]


def test_both_planners_take_the_same_tapes_for_changed_since_the_build(
    dsn: str, spark: Any, tmp_path: Path
) -> None:
    catalog_copies: list[LoadedCopy] = [
        ("/d/a", "V1", 1, 100),
        ("/d/b", "V1", 2, 30),
        ("/d/e", "V2", 7, 9),
        ("/d/f", "V2", 9, 11),
    ]
    load(dsn, catalog_copies)
    build(dsn, select=["+plan_tape_layouts"], exclude=MODELS_ONLY, log_dir=tmp_path / "dbt")
    with psycopg.connect(dsn, autocommit=True) as conn:
        # An address only the marts hold, to tell whether a tape's address came from them.
        conn.execute(
            f"update {MARTS_SCHEMA}.plan_tape_objects set start_bytes = 101"
            " where volume = 'V1' and position = 2"
        )
    to_spark(dsn, spark, marts=True)
    assert same_rule(dsn, spark) == (True, ())

    # A later load of V2: V2 is summed again, V1 read from the marts.
    load(dsn, [("/d/g", "V2", 8, 4)])
    to_spark(dsn, spark, ("tape_files", "tapes"))
    assert same_rule(dsn, spark) == (True, ("V2",))
    addresses, notes = same_read(dsn, spark)
    assert addresses == {"/d/a": 0, "/d/b": 101, "/d/e": 0, "/d/g": 9, "/d/f": 13}
    assert len(notes) == 1 and notes[0].startswith("byte addresses of 1 tape summed")

    # A whole-catalog load: any tape may have changed (the rule reads the load runs alone).
    load(dsn, [("/d/h", "V3", 1, 5)], whole=True)
    to_spark(dsn, spark)
    assert same_rule(dsn, spark) == (True, None)

    # A warehouse without load runs (tables written other than by a load) has had no load
    # after its build.
    spark.sql("drop table tapelens.ingest_runs")
    assert on_spark._catalog_query(spark)[2:] == (True, ())

    # No marts on either engine.
    to_spark(dsn, spark)
    spark.sql(f"drop database {MARTS_SCHEMA} cascade")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"drop schema {MARTS_SCHEMA} cascade")
    assert same_rule(dsn, spark) == (False, None)
