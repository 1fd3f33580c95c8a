"""Resolve Delta Lake's jars once, at install time: `python -m tapelens.spark.install`.

Spark's resolver (spark.jars.packages) fetches them from Maven Central into its Ivy cache the
first time a session starts; starting one here, on a throw-away warehouse, makes that first time
the install step rather than a test run or a site's first load. Which files it retrieved is then
recorded beside them (`record_resolved_jars`), and later sessions name those files instead.
"""

from __future__ import annotations

import sys
import tempfile

from tapelens.spark.session import delta_package, ivy_jars, resolved_jars, site_settings


def main() -> int:
    from tapelens.spark.session import record_resolved_jars, spark_session, stop_session

    package = delta_package()
    if resolved_jars(package, ivy_jars(site_settings())) is not None:
        print(f"install-spark: {package} already resolved", file=sys.stderr)
        return 0
    print(f"install-spark: resolving {package} from Maven Central", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="tapelens-spark-install-") as tmp:
        spark = spark_session("local[1]", tmp, app_name="tapelens-install")
        try:
            spark.sql("select 1").collect()
            recorded = record_resolved_jars(spark, package)
        finally:
            stop_session()
    if not recorded:
        print(f"install-spark: {package} was not resolved", file=sys.stderr)
        return 1
    print(f"install-spark: {package}: {len(recorded)} jars", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
