"""`tapelens ingest` on the Spark engine: a session for the configured master and warehouse,
the files loaded by tapelens.spark.load, the session stopped with the command."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tapelens.ingest.datasets import DatasetRules
from tapelens.ingest.formats import Format
from tapelens.ingest.formats.base import ParseOptions
from tapelens.ingest.load import IngestResult, ShrinkGuard
from tapelens.spark.settings import EngineSettings


def ingest_on_spark(
    engine: EngineSettings,
    home: Path,
    fmt: Format,
    files: Sequence[str | Path],
    options: ParseOptions,
    rules: DatasetRules,
    partial: bool | None,
    guard: ShrinkGuard | None,
) -> list[IngestResult]:
    """Load the files into the Delta tables of the engine's warehouse; one result per file."""
    from tapelens.spark.load import load_files
    from tapelens.spark.session import spark_session, stop_session

    spark = spark_session(engine.spark_master, engine.warehouse(home))
    try:
        return load_files(spark, fmt, files, options, rules, partial, guard)
    finally:
        stop_session()
