"""A command on Spark says its own progress and errors on stderr, not the JVM's warnings nor the
report of Spark's dependency resolver.

The session points Spark's JVM at tapelens/spark/log4j2.properties (errors only) through
log4j2's LOG4J_CONFIGURATION_FILE, unless the site's Spark configuration folder has a
log4j2.properties of its own (spark-submit puts it on the class path) or the variable is set.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("delta")

from tapelens.spark.session import LOG4J_FILE, LOG4J_VARIABLE, jvm_logging  # noqa: E402

# A log4j line at level WARN, in Spark's layout ("26/11/29 00:08:21 WARN NativeCodeLoader: ...").
WARN_LINE = re.compile(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d WARN ", re.MULTILINE)
# What Spark's Logging prints to stderr itself, past log4j, while it sets up a JVM's logging: the
# default profile it loads when log4j has no configuration, and the shell's level it sets when
# the JVM's entry point (a Python driver's PythonGatewayServer) has no logger of its own.
SPARK_NOTES = (
    "Using Spark's default log4j profile",
    "Setting default log level to",
    "To adjust logging level use sc.setLogLevel",
)
# What Spark's resolver prints to stderr when a session names its jars by Maven coordinates
# (spark.jars.packages), about 90 lines at each start: the session names the files
# scripts/install-spark recorded in the Ivy cache instead (spark.jars).
IVY_REPORT = (":: loading settings ::", ":: resolving dependencies ::", "confs: [default]")


def test_the_site_logging_configuration_wins(tmp_path: Path) -> None:
    assert jvm_logging({}) == {LOG4J_VARIABLE: str(LOG4J_FILE)}
    assert "rootLogger.level = error" in LOG4J_FILE.read_text()
    site = tmp_path / "conf"
    site.mkdir()
    assert jvm_logging({"SPARK_CONF_DIR": str(site)}) == {LOG4J_VARIABLE: str(LOG4J_FILE)}
    (site / "log4j2.properties").write_text("rootLogger.level = info\n")
    assert jvm_logging({"SPARK_CONF_DIR": str(site)}) == {}
    assert jvm_logging({"SPARK_HOME": str(tmp_path)}) == {}, "SPARK_HOME/conf is the folder too"
    assert jvm_logging({LOG4J_VARIABLE: "/etc/spark/log4j2.xml"}) == {}


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_command_on_spark_prints_no_warning_of_the_jvm(tmp_path: Path) -> None:
    """`db migrate` then `db status` on a new local warehouse, each its own process and JVM:
    their stderr holds no WARN line of Spark's, Hadoop's or the metastore's (Spark's own
    logging prints several at every start), and none of the notes Spark's Logging prints past
    log4j (SPARK_NOTES), and no report of Spark's resolver (IVY_REPORT)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("SPARK_CONF_DIR", "SPARK_HOME", LOG4J_VARIABLE)
    }
    env |= {
        "TAPELENS_ENGINE": "spark",
        "TAPELENS_SPARK_MASTER": "local[1]",
        "TAPELENS_SPARK_WAREHOUSE": str(tmp_path / "warehouse"),
        "TAPELENS_HOME": str(tmp_path / "home"),
    }
    tapelens = str(Path(sys.executable).with_name("tapelens"))
    for command in (["db", "migrate"], ["db", "status"]):
        done = subprocess.run(
            [tapelens, *command], env=env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert not WARN_LINE.findall(done.stderr), done.stderr[-2000:]
        assert [note for note in SPARK_NOTES if note in done.stderr] == [], done.stderr[-2000:]
        assert [line for line in IVY_REPORT if line in done.stderr] == [], done.stderr[:2000]
    assert "tapelens.tape_files" in done.stdout
