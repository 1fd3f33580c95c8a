"""The Spark session tapelens works in: the configured master, Delta Lake, and a persistent catalog.

One session per process (Spark's getOrCreate): dbt-spark's `session` method calls getOrCreate in
the same process and so sees the same tables. The catalog of table names is a Hive metastore: on
a local warehouse an embedded Derby database under the warehouse folder, so that the tables of
one run are there in the next; on a cluster, the metastore the site's Spark configuration names
(hive-site.xml, spark-defaults.conf).

Delta Lake's jars come from Maven Central through Spark's own resolver (spark.jars.packages).
`scripts/install-spark` resolves them once at install time, into Spark's Ivy cache
(~/.ivy2.5.2), and records which files the resolver retrieved; every later session names those
files (spark.jars), so that the resolver, and the report it prints on stderr, stay idle.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path

from pyspark.sql import SparkSession

from tapelens.errors import ConfigError

SCALA = "2.13"

# Small-machine defaults: a site's spark-defaults.conf (or `conf`) sets its own.
DEFAULTS: dict[str, str] = {
    "spark.sql.shuffle.partitions": "16",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
}
# What tapelens's answers need, whatever the site's configuration says: instants in UTC (a
# report's months), Delta Lake's SQL (MERGE, RESTORE, DESCRIBE HISTORY) and its catalog for
# spark_catalog.
REQUIRED: dict[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}


def _conf_dir(env: Mapping[str, str]) -> Path | None:
    """The site's Spark configuration folder, where spark-submit looks: SPARK_CONF_DIR, else
    SPARK_HOME/conf."""
    if env.get("SPARK_CONF_DIR"):
        return Path(env["SPARK_CONF_DIR"])
    return Path(env["SPARK_HOME"]) / "conf" if env.get("SPARK_HOME") else None


def site_settings(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The settings of the site's spark-defaults.conf, where spark-submit reads it
    (SPARK_CONF_DIR, else SPARK_HOME/conf): a session's settings are passed to spark-submit on
    its command line and would override the file's, so the defaults leave its names alone."""
    env = os.environ if env is None else env
    folder = _conf_dir(env)
    if folder is None:
        return {}
    try:
        text = (folder / "spark-defaults.conf").read_text()
    except OSError:
        return {}
    # A Java properties file: the key, then blanks, '=' or ':', then the value.
    found: dict[str, str] = {}
    for line in text.splitlines():
        entry = _PROPERTY.match(line.strip())
        if entry and not line.strip().startswith(("#", "!")):
            found[entry["key"]] = entry["value"].strip()
    return found


_PROPERTY = re.compile(r"(?P<key>[^\s=:]+)\s*[\s=:]\s*(?P<value>.*)")


# Spark's own default heap for the driver, 1 GB, ran out at a million copies while the placement
# costs after a build were priced on it; a plan's requested paths are still broadcast from it.
# In local mode the driver is the executors too.
DRIVER_MEMORY = "spark.driver.memory"
RESULT_SIZE = "spark.driver.maxResultSize"


def driver_memory(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The driver's heap and largest result, where neither the site's configuration nor
    SPARK_DRIVER_MEMORY (which spark-submit reads) sets them: a quarter of this machine's
    memory, at least 1 GB, and half of that for one result handed back (a larger one is refused
    by Spark in one line rather than ending the driver's JVM)."""
    env = os.environ if env is None else env
    if env.get("SPARK_DRIVER_MEMORY"):
        return {}
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return {}
    heap_mb = max(1024, total // 4 // 2**20)
    return {DRIVER_MEMORY: f"{heap_mb}m", RESULT_SIZE: f"{heap_mb // 2}m"}


# Spark's JVM logs errors only (the file says why), unless the site configures its logging.
LOG4J_FILE = Path(__file__).with_name("log4j2.properties")
LOG4J_VARIABLE = "LOG4J_CONFIGURATION_FILE"  # log4j2's log4j2.configurationFile, from the env


def jvm_logging(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment that points the session's JVM at tapelens's log4j2.properties (errors
    only): none where the site's Spark configuration folder has a log4j2.properties (which
    spark-submit puts on the JVM's class path) or LOG4J_CONFIGURATION_FILE is already set."""
    env = os.environ if env is None else env
    folder = _conf_dir(env)
    if env.get(LOG4J_VARIABLE) or (folder is not None and (folder / "log4j2.properties").exists()):
        return {}
    return {LOG4J_VARIABLE: str(LOG4J_FILE)}


def delta_package() -> str:
    """The Maven coordinate of the Delta Lake jar that matches the installed delta-spark and
    pyspark wheels (Delta names its artifact after Spark's major.minor: delta-spark_4.2_2.13)."""
    try:
        delta = metadata.version("delta-spark")
        spark = metadata.version("pyspark")
    except metadata.PackageNotFoundError:
        raise ConfigError(
            "engine",
            "--engine, TAPELENS_ENGINE",
            "spark needs pyspark and delta-spark: run `make setup` (or pip install -e '.[spark]')",
        ) from None
    minor = ".".join(spark.split(".")[:2])
    return f"io.delta:delta-spark_{minor}_{SCALA}:{delta}"


# Spark 4's Ivy folder (MavenUtils: ~/.ivy2.5.2 unless spark.jars.ivy names another); the
# resolver copies the jars it resolved into its `jars` folder.
IVY_HOME = "~/.ivy2.5.2"
IVY = "spark.jars.ivy"
JARS = "spark.jars"
PACKAGES = "spark.jars.packages"


def ivy_jars(given: Mapping[str, str]) -> Path:
    """The folder Spark's resolver retrieves jars into, where `given` (the site's settings and a
    session's) leave spark.jars.ivy: <spark.jars.ivy, else ~/.ivy2.5.2>/jars."""
    return Path(given.get(IVY) or IVY_HOME).expanduser() / "jars"


def _closure_file(package: str, jars: Path) -> Path:
    group, artifact, version = package.split(":")
    return jars / f"{group}_{artifact}-{version}.closure"


def resolved_jars(package: str, jars: Path) -> list[Path] | None:
    """The files in `jars` that Spark's resolver retrieved for the Maven coordinate `package`
    (its jar and every jar it needs, in the resolver's order), as `record_resolved_jars`
    recorded them; None where nothing is recorded or a recorded file is gone."""
    try:
        names = _closure_file(package, jars).read_text().split()
    except OSError:
        return None
    paths = [jars / name for name in names]
    return paths if paths and all(path.is_file() for path in paths) else None


def retrieved_jars(spark: SparkSession, package: str) -> list[Path]:
    """The jars the running session's resolver retrieved for `package`, where the session was
    started with spark.jars.packages `package` alone: spark-submit appends their paths in the
    Ivy folder's `jars` to spark.jars; none otherwise."""
    conf = spark.sparkContext.getConf()
    if conf.get(PACKAGES) != package:
        return []
    jars = ivy_jars({IVY: conf.get(IVY) or ""})
    listed = [local_path(entry) for entry in (conf.get(JARS) or "").split(",") if entry]
    return [path for path in listed if path.parent == jars]


def record_resolved_jars(spark: SparkSession, package: str) -> list[Path]:
    """Record the jars the running session's resolver retrieved for `package` beside them, for
    `resolved_jars` to find; returns them (none recorded where the session did not resolve
    `package` alone). The file is replaced whole, so that a session never reads half of it."""
    retrieved = retrieved_jars(spark, package)
    if retrieved:
        target = _closure_file(package, retrieved[0].parent)
        partial = target.with_name(f"{target.name}.{os.getpid()}")
        partial.write_text("".join(f"{path.name}\n" for path in retrieved))
        partial.replace(target)
    return retrieved


def delta_jars(given: Mapping[str, str]) -> dict[str, str]:
    """How a session gets Delta Lake's jars: by spark.jars, the files scripts/install-spark
    recorded in Spark's Ivy cache, where they are all there (the resolver then has nothing to
    do, and prints nothing); else by spark.jars.packages, through the resolver. Spark ships
    either to the executors itself. Neither name where `given` (the site's spark-defaults.conf,
    a session's `conf`) sets it: a value passed to spark-submit would replace the site's."""
    package = delta_package()
    recorded = resolved_jars(package, ivy_jars(given))
    if recorded is not None and JARS not in given:
        return {JARS: ",".join(str(path) for path in recorded)}
    if PACKAGES not in given:
        return {PACKAGES: package}
    return {}


def is_local(path: str) -> bool:
    """A warehouse on this machine's disk (a plain path or file:), not HDFS, S3 or the like."""
    return "://" not in path or path.startswith("file:")


def local_path(path: str) -> Path:
    return Path(path.removeprefix("file://").removeprefix("file:")).expanduser().absolute()


def session_settings(
    warehouse: str, conf: Mapping[str, str] | None = None, env: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The settings a session of `warehouse` is built with: the small-machine defaults the
    site's spark-defaults.conf does not set, what tapelens's answers need, the warehouse and
    its metastore, Delta Lake's jars (`delta_jars`), then `conf` over all of them. The
    driver's memory is among the defaults (`driver_memory`)."""
    site = site_settings(env)
    settings = {k: v for k, v in (DEFAULTS | driver_memory(env)).items() if k not in site}
    settings.update(REQUIRED)
    if is_local(warehouse):
        root = local_path(warehouse)
        settings["spark.sql.warehouse.dir"] = (root / "tables").as_uri()
        settings["spark.hadoop.javax.jdo.option.ConnectionURL"] = (
            f"jdbc:derby:;databaseName={root / 'metastore_db'};create=true"
        )
        # derby.log beside the metastore rather than in the working directory.
        settings["spark.driver.extraJavaOptions"] = f"-Dderby.system.home={root}"
    else:
        settings["spark.sql.warehouse.dir"] = warehouse.rstrip("/") + "/tables"
    settings.update(delta_jars(site | dict(conf or {})))
    settings.update(conf or {})
    return settings


def spark_session(
    master: str,
    warehouse: str | Path,
    *,
    app_name: str = "tapelens",
    conf: Mapping[str, str] | None = None,
) -> SparkSession:
    """The process's Spark session on `master` with Delta Lake, its tables under `warehouse`.

    `warehouse` is any path Spark reaches: a local folder (the Delta tables in its `tables`
    folder, the embedded metastore in `metastore_db`), or `hdfs://`, `s3a://`... (the tables
    there, the metastore the site configures). `conf` sets further Spark settings
    (`session_settings`). A session already running in the process on the
    same master and warehouse is returned as it is (Spark keeps one per process); one running
    on another master or warehouse is stopped first, so that no command reads or writes the
    tables of a warehouse it was not given."""
    where = str(warehouse)
    if is_local(where):
        local_path(where).mkdir(parents=True, exist_ok=True)
    settings = session_settings(where, conf)
    # The executors' Python is this one (pyspark and tapelens are installed in it).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # Read by the JVM spark-submit starts for a new session; a running one keeps its logging.
    os.environ.update(jvm_logging())
    _stop_if_elsewhere(master, settings["spark.sql.warehouse.dir"])
    builder = SparkSession.builder.master(master).appName(app_name).enableHiveSupport()
    for key, value in settings.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def _running() -> SparkSession | None:
    """The session this process runs, if any: the one getOrCreate would hand back (Spark keeps
    it on the class, whatever thread made it), else this thread's active one."""
    made = SparkSession._instantiatedSession
    if made is not None and made._sc._jsc is not None:
        return made
    return SparkSession.getActiveSession()


def _stop_if_elsewhere(master: str, warehouse_dir: str) -> None:
    """Stop the running session when it was made for another master or warehouse: getOrCreate
    would hand it back as it is, tables and metastore of the other warehouse included."""
    running = _running()
    if running is None:
        return
    made_for = running.sparkContext.getConf().get("spark.sql.warehouse.dir") or ""
    if running.sparkContext.master == master and _place(made_for) == _place(warehouse_dir):
        return
    running.stop()


def _place(warehouse_dir: str) -> str:
    """A warehouse folder as one spelling: the session's Hive state rewrites file:///x as
    file:/x once it starts."""
    if is_local(warehouse_dir):
        return str(local_path(warehouse_dir))
    return warehouse_dir.rstrip("/")


def stop_session() -> None:
    """Stop the process's Spark session and its JVM, if one runs."""
    running = _running()
    if running is not None:
        running.stop()
