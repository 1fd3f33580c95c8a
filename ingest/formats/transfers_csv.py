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
from tapelens.ingest.formats.base import Batch, Collector, LineReader, ParseOptions
from tapelens.ingest.formats.logfields import (
    CsvColumns,
    FieldError,
    canonical_value,
    cell,
    choice,
)

KIND = "transfers"
FORMAT = "csv"
REQUIRED = ("direction", "started_at")
DIRECTIONS = ("read", "write")
STATUSES = ("ok", "failed")


def parse(path: str | Path, *, options: ParseOptions) -> Iterator[Batch]:
    """Transfers of a canonical CSV; blank lines and header lines are counted skips."""
    with LineReader(path) as reader:
        out = Collector(reader, options, TRANSFERS)
        layout = CsvColumns(TRANSFERS, REQUIRED, options, lambda n: tuple(TRANSFERS))
        for line in reader:
            if not line.text.strip():
                out.skip()
                continue
            try:
                record = layout.read(line)
                if record is None:
                    out.skip()
                    continue
                out.add(_row(record, options.source), line.no)
            except FieldError as exc:
                out.reject(line, str(exc))
                continue
            if out.full():
                yield out.flush()
        yield out.flush()


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
