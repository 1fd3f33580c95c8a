"""Generic transfers CSV: the canonical column names (tapelens.ingest.canonical.TRANSFERS).

A header names the columns (any order, unknown columns ignored; `--mapping` may rename site
columns to canonical ones); without one, `--columns` or the canonical order is assumed. Times
are ISO 8601 (no zone means UTC); durations are seconds. direction (read|write) and started_at
are required; status defaults to ok. `source` is always the ingest's source, never a column.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tapelens.ingest.canonical import TRANSFERS
from tapelens.ingest.formats.base import Batch, ParseOptions
from tapelens.ingest.formats.logfields import (
    CsvColumns,
    FieldError,
    canonical_value,
    cell,
    choice,
    csv_log_rows,
)

KIND = "transfers"
FORMAT = "csv"
REQUIRED = ("direction", "started_at")
DIRECTIONS = ("read", "write")
STATUSES = ("ok", "failed")


def parse(path: str | Path, *, options: ParseOptions) -> Iterator[Batch]:
    """Transfers of a canonical CSV; blank lines and header lines are counted skips."""
    layout = CsvColumns(TRANSFERS, REQUIRED, options, lambda n: tuple(TRANSFERS))
    yield from csv_log_rows(path, options, TRANSFERS, layout, _row)


def _row(record: dict[str, str], source: str) -> dict[str, Any]:
    row = {
        name: canonical_value(name, dtype, cell(record, name))
        for name, dtype in TRANSFERS.items()
        if name != "source"
    }
    row["source"] = source
    row["direction"] = choice("direction", row["direction"], DIRECTIONS, None)
    row["status"] = choice("status", row["status"], STATUSES, "ok")
    if row["started_at"] is None:
        raise FieldError("started_at is empty")
    return row
