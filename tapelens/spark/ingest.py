"""`tapelens ingest` on the Spark engine: a session for the configured master and warehouse,
the files loaded by tapelens.spark.load, the session stopped with the command."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tapelens.ingest.datasets import DatasetRules
from tapelens.ingest.formats import Format
from tapelens.ingest.formats.base import ParseOptions
from tapelens.ingest.load import IngestResult, ShrinkGuard
from tapelens.spark.settings import EngineSettings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass(frozen=True)
class Load:
    """One load of a command: files of one format and source, and how to read them."""

    fmt: Format
    files: Sequence[str | Path]
    options: ParseOptions
    rules: DatasetRules
    partial: bool | None = None
    guard: ShrinkGuard | None = None


@contextmanager
def _session(engine: EngineSettings, home: Path) -> Iterator[SparkSession]:
    """The engine's session, stopped when the command is done with it if the command started
    it (a process that runs the command in its own session keeps it)."""
    # Imported here: pyspark is the optional spark dependency, and a JVM takes seconds.
    from pyspark.sql import SparkSession

    from tapelens.spark.session import spark_session, stop_session

    running = SparkSession.getActiveSession() is not None
    spark = spark_session(engine.spark_master, engine.warehouse(home))
    try:
        yield spark
    finally:
        if not running:
            stop_session()


def ingest_on_spark(
    engine: EngineSettings,
    home: Path,
    loads: Sequence[Load],
    report: Callable[[IngestResult], None],
) -> dict[str, int]:
    """Load each load's files into the Delta tables of the engine's warehouse, in order, in one
    session, reporting each file's result as it is done; return how many of the hint records
    loaded stand in each status (empty when no hints were loaded)."""
    from tapelens.spark.after_load import hint_statuses
    from tapelens.spark.load import load_files, refuse_unsupported

    for load in loads:  # before a JVM starts: a format Spark cannot load is refused at once
        refuse_unsupported(load.fmt)
    hint_runs: list[int] = []
    with _session(engine, home) as spark:
        for load in loads:
            results = load_files(
                spark, load.fmt, load.files, load.options, load.rules, load.partial, load.guard
            )
            for result in results:
                report(result)
                if load.fmt.kind == "hints" and result.status == "loaded" and result.run_id:
                    hint_runs.append(result.run_id)
        return hint_statuses(spark, hint_runs)
