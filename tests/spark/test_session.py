"""`spark_session` hands back the process's running session only when it was made for the same
master and warehouse: a command given another warehouse gets a session on that one, never the
tables of the last (getOrCreate alone would return the running session as it is)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("delta")

from tapelens.spark.session import spark_session, stop_session  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.own_process, pytest.mark.timeout(900)]

CONF = {"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"}


def test_a_session_of_another_warehouse_is_not_handed_back(tmp_path: Path) -> None:
    stop_session()
    first, second = tmp_path / "first", tmp_path / "second"
    try:
        spark = spark_session("local[2]", first, conf=CONF)
        spark.sql("create database if not exists marked_here")
        assert spark_session("local[2]", first, conf=CONF) is spark, "same warehouse: reused"

        other = spark_session("local[2]", second, conf=CONF)
        assert other is not spark
        assert other.sparkContext.getConf().get("spark.sql.warehouse.dir") == (
            (second / "tables").as_uri()
        )
        assert not other.catalog.databaseExists("marked_here"), "saw the first warehouse"
    finally:
        stop_session()
