"""Resolve Delta Lake's jars once, at install time: `python -m tapelens.spark.install`.

Spark's resolver (spark.jars.packages) fetches them from Maven Central into its Ivy cache the
first time a session starts; starting one here, on a throw-away warehouse, makes that first time
the install step rather than a test run or a site's first load.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from tapelens.spark.session import delta_package

IVY_JARS = Path("~/.ivy2.5.2/jars").expanduser()  # Spark 4's Ivy cache


def resolved(package: str) -> bool:
    """Whether the package's jar is in Spark's Ivy cache already."""
    group, artifact, version = package.split(":")
    return (IVY_JARS / f"{group}_{artifact}-{version}.jar").is_file()


def main() -> int:
    from tapelens.spark.session import spark_session, stop_session

    package = delta_package()
    if resolved(package):
        print(f"install-spark: {package} already resolved", file=sys.stderr)
        return 0
    print(f"install-spark: resolving {package} from Maven Central", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="tapelens-spark-install-") as tmp:
        spark = spark_session("local[1]", tmp, app_name="tapelens-install")
        try:
            spark.sql("select 1").collect()
        finally:
            stop_session()
    if not resolved(package):
        print(f"install-spark: {package} was not resolved", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
