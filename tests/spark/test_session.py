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

from pyspark.sql import SparkSession  # noqa: E402

from tapelens.spark.session import (  # noqa: E402
    IVY,
    JARS,
    PACKAGES,
    REQUIRED,
    delta_package,
    ivy_jars,
    resolved_jars,
    retrieved_jars,
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


def test_delta_jars_are_named_from_the_cache_the_install_recorded(tmp_path: Path) -> None:
    """The files the install recorded go by spark.jars, where every one is there; else the
    coordinate by spark.jars.packages; and neither name where the site sets it."""
    package = delta_package()
    jars = tmp_path / "ivy" / "jars"
    jars.mkdir(parents=True)
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    env = {"SPARK_CONF_DIR": str(conf_dir)}

    def site(*lines: str) -> dict[str, str]:
        (conf_dir / "spark-defaults.conf").write_text(f"{IVY} {jars.parent}\n" + "".join(lines))
        settings = session_settings(str(tmp_path / "w"), env=env)
        return {k: settings[k] for k in (JARS, PACKAGES) if k in settings}

    assert site() == {PACKAGES: package}, "nothing recorded: the resolver"
    names = ["io.delta_delta-spark.jar", "org.slf4j_slf4j-api.jar"]
    group, artifact, version = package.split(":")
    (jars / f"{group}_{artifact}-{version}.closure").write_text("\n".join(names) + "\n")
    assert site() == {PACKAGES: package}, "recorded, but no file there yet"
    for name in names:
        (jars / name).write_bytes(b"PK")
    assert resolved_jars(package, jars) == [jars / name for name in names]
    assert site() == {JARS: ",".join(str(jars / name) for name in names)}
    assert site("spark.jars.packages org.example:theirs:1\n") == {
        JARS: ",".join(str(jars / name) for name in names)
    }, "the site's packages are the site's, Delta's jars by name beside them"
    assert site("spark.jars /opt/s3/hadoop-aws.jar\n") == {PACKAGES: package}, (
        "the site's jars are the site's: Delta's through the resolver, which adds to them"
    )
    assert site("spark.jars /opt/a.jar\n", "spark.jars.packages org.example:theirs:1\n") == {}
    (jars / names[1]).unlink()
    assert site() == {PACKAGES: package}, "a recorded file gone: the resolver again"
    assert ivy_jars({}) == Path("~/.ivy2.5.2/jars").expanduser()


@pytest.mark.slow
@pytest.mark.own_process
@pytest.mark.timeout(900)
def test_the_recorded_jars_are_those_the_resolver_retrieves(tmp_path: Path) -> None:
    """What scripts/install-spark recorded is what Spark's resolver retrieves for the
    coordinate now, file for file and in its order: the sessions' spark.jars cannot drift
    from spark.jars.packages."""
    package = delta_package()
    recorded = resolved_jars(package, ivy_jars(site_settings()))
    assert recorded, "scripts/install-spark (make setup) records the jars it resolved"
    stop_session()
    spark = (
        SparkSession.builder.master("local[1]")
        .config(PACKAGES, package)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.warehouse.dir", (tmp_path / "tables").as_uri())
        .getOrCreate()
    )
    try:
        assert retrieved_jars(spark, package) == recorded
    finally:
        stop_session()
