"""Frames out of the Spark tables: Spark SQL run by the session, its rows handed over in Arrow.

The analyses read the marts and the catalog on Spark through the same queries they run on
PostgreSQL (tapelens.frames.FrameReader, with the Spark dialect): Spark plans and runs each
query on the cluster, and only its result comes back to the driver, as Arrow batches
(`DataFrame.toArrow()`), into Polars. Parameters are bound by Spark's own named markers
(`:p1`, `:p2` ...), never pasted into the SQL text.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession

from tapelens.errors import DatabaseError
from tapelens.frames import SPARK, FrameReader

# Delta Lake's SQL parser wraps Spark's and leaves the parameters of a query to the interface's
# default, which drops them: every marker is then unbound. Spark's legacy substitution binds
# them after parsing instead, where a literal may stand (all the analyses need).
BIND_AFTER_PARSING = "spark.sql.legacy.parameterSubstitution.constantsOnly"
UTC = pl.Datetime("us", "UTC")


def spark_sql(spark: SparkSession, query: str, params: Sequence[Any] = ()) -> DataFrame:
    """`query` as a Spark DataFrame, its markers :p1, :p2 ... bound to `params` in order;
    Spark's refusal (a missing table, a type it cannot compare) as a one-line DatabaseError."""
    args = {f"p{n}": value for n, value in enumerate(params, start=1)}
    try:
        if args:
            spark.conf.set(BIND_AFTER_PARSING, "true")
            return spark.sql(query, args=args)
        return spark.sql(query)
    except PySparkException as exc:
        raise DatabaseError(spark_error(exc)) from None


def spark_frame(spark: SparkSession, query: str, params: Sequence[Any] = ()) -> pl.DataFrame:
    """The rows of `query` (markers :p1, :p2 ...) as a frame, instants as UTC microseconds
    as read_frame gives them from PostgreSQL."""
    try:
        table = spark_sql(spark, query, params).toArrow()
    except PySparkException as exc:
        raise DatabaseError(spark_error(exc)) from None
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    return in_utc(frame)


def in_utc(frame: pl.DataFrame) -> pl.DataFrame:
    """Every timestamp column as a UTC instant in microseconds (Spark's TIMESTAMP is an
    instant; Arrow may carry it with the session's zone or none)."""
    fixed = []
    for name, dtype in frame.schema.items():
        if isinstance(dtype, pl.Datetime) and dtype != UTC:
            column = pl.col(name)
            zoned = (
                column.dt.convert_time_zone("UTC")
                if dtype.time_zone
                else column.dt.replace_time_zone("UTC")
            )
            fixed.append(zoned.dt.cast_time_unit("us").alias(name))
    return frame.with_columns(fixed) if fixed else frame


def spark_error(exc: PySparkException) -> str:
    """Spark's message in one line, without its plan and its hints (`Verify the spelling...`)."""
    first = " ".join(str(exc).split("\n", 1)[0].split())
    return first.split(" Verify the spelling", 1)[0].split(" SQLSTATE:", 1)[0]


def spark_reader(master: str, warehouse: str | Path) -> FrameReader:
    """A FrameReader running Spark SQL on the process's session on `master`, over the tables
    of `warehouse`."""
    from tapelens.spark.session import spark_session

    spark = spark_session(master, warehouse)
    return FrameReader(SPARK, lambda query, params: spark_frame(spark, query, params))
