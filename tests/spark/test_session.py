"""The session tapelens builds: the site's spark-defaults.conf keeps the settings it names
(spark-submit would otherwise let the session's command line override them), what tapelens's
answers need holds whatever it says; and `spark_session` hands back the process's running
session only when it was made for the same master and warehouse: a command given another
warehouse gets a session on that one, never the tables of the last (getOrCreate alone would
return the running session as it is)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("delta")

from tapelens.spark.session import (  # noqa: E402
    REQUIRED,
    session_settings,
    site_settings,
    spark_session,
    stop_session,
)

CONF = {"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"}


def test_the_site_configuration_keeps_what_it_sets(tmp_path: Path) -> None:
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    (conf_dir / "spark-defaults.conf").write_text(
        "# the site's cluster\n"
        "spark.sql.shuffle.partitions   320\n"
        "spark.ui.enabled=true\n"
        "spark.sql.session.timeZone  Europe/Zurich\n"
        "spark.driver.memory 48g\n"
    )
    env = {"SPARK_CONF_DIR": str(conf_dir)}
    assert site_settings(env)["spark.sql.shuffle.partitions"] == "320"
    on_site = session_settings("hdfs://namenode:8020/tape/tapelens/", env=env)
    assert "spark.sql.shuffle.partitions" not in on_site and "spark.ui.enabled" not in on_site
    assert "spark.driver.memory" not in on_site, "the site's 48g stays the driver's heap"
    assert {k: on_site[k] for k in REQUIRED} == REQUIRED, (
        "UTC and Delta Lake whatever the site says"
    )
    assert on_site["spark.sql.warehouse.dir"] == "hdfs://namenode:8020/tape/tapelens/tables"
    alone = session_settings(str(tmp_path / "w"), env={})
    assert alone["spark.sql.shuffle.partitions"] == "16"
    # Spark's own 1 GB runs out of heap at a million copies: a quarter of the machine, at least
    # 1 GB, half of it for one result handed back.
    heap = int(alone["spark.driver.memory"].removesuffix("m"))
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert heap == max(1024, memory // 4 // 2**20)
    assert alone["spark.driver.maxResultSize"] == f"{heap // 2}m"
    told = session_settings(str(tmp_path / "w"), env={"SPARK_DRIVER_MEMORY": "3g"})
    assert "spark.driver.memory" not in told, "spark-submit reads SPARK_DRIVER_MEMORY itself"
    assert alone["spark.sql.warehouse.dir"] == (tmp_path / "w" / "tables").as_uri()
    given = session_settings(str(tmp_path / "w"), {"spark.sql.shuffle.partitions": "4"}, env=env)
    assert given["spark.sql.shuffle.partitions"] == "4"


@pytest.mark.slow
@pytest.mark.own_process
@pytest.mark.timeout(900)
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
