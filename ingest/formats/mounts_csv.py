"""Generic mounts CSV: canonical column names (tapelens.ingest.canonical.MOUNTS), or the minimum
an ACSLS or library export gives: volume,drive,mounted_at,dismounted_at[,requested_at].

A header names the columns (any order, unknown columns ignored, `--mapping` renames); without
one, `--columns` is used, else 4 or 5 fields are the ACSLS layout and 8 the canonical order.
Times are ISO 8601 (no zone means UTC). volume and mounted_at are required; purpose defaults to
unknown; status defaults to complete, or no_dismount when dismounted_at is empty.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from tapelens.ingest.canonical import MOUNTS
from tapelens.ingest.formats.base import Batch, ParseOptions
from tapelens.ingest.formats.logfields import (
    CsvColumns,
    FieldError,
    canonical_value,
    cell,
    choice,
    csv_log_rows,
    quote,
)

KIND = "mounts"
FORMAT = "csv"
ACSLS = ("volume", "drive", "mounted_at", "dismounted_at", "requested_at")
ACSLS_MIN_FIELDS = 4
REQUIRED = ("volume", "mounted_at")
PURPOSES = ("read", "write", "unknown")
STATUSES = ("complete", "no_dismount", "no_mount", "no_request")


def parse(path: str | Path, *, options: ParseOptions) -> Iterator[Batch]:
    """Mounts of a CSV export; blank lines and header lines are counted skips."""
    layout = CsvColumns(MOUNTS, REQUIRED, options, _default_layout)
    yield from csv_log_rows(path, options, MOUNTS, layout, _row)


def _default_layout(fields: int) -> Sequence[str] | None:
    if fields in (ACSLS_MIN_FIELDS, len(ACSLS)):
        return ACSLS[:fields]
    if fields == len(MOUNTS):
        return tuple(MOUNTS)
    return None


def _row(record: dict[str, str], source: str) -> dict[str, Any]:
    row = {
        name: canonical_value(name, dtype, cell(record, name))
        for name, dtype in MOUNTS.items()
        if name != "source"
    }
    row["source"] = source
    if row["volume"] is None:
        raise FieldError("volume is empty")
    if row["mounted_at"] is None:
        raise FieldError("mounted_at is empty")
    if row["dismounted_at"] is not None and row["dismounted_at"] < row["mounted_at"]:
        raise FieldError(
            f"dismounted_at {quote(record['dismounted_at'])} is before "
            f"mounted_at {quote(record['mounted_at'])}"
        )
    if row["requested_at"] is not None and row["requested_at"] > row["mounted_at"]:
        raise FieldError(
            f"requested_at {quote(record['requested_at'])} is after "
            f"mounted_at {quote(record['mounted_at'])}"
        )
    row["purpose"] = choice("purpose", row["purpose"], PURPOSES, "unknown")
    default_status = "complete" if row["dismounted_at"] is not None else "no_dismount"
    row["status"] = choice("status", row["status"], STATUSES, default_status)
    return row
