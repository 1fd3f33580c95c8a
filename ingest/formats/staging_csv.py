"""Staging-queue export (TReqS-style schedulers in front of HPSS): one recall per CSV row.

    file,tape,position,size,submission_time,queued_time,end_time,status

A request is submitted, waits in the scheduler, is queued to the tape system at queued_time and is
on disk at end_time (docs/formats/staging-csv.md): started_at = queued_time, duration_s = end_time
- queued_time, queued_s = queued_time - submission_time. The tape is normalised like the HPSS
catalogs name it (physical volume A8553200 -> cartridge A85532) so recalls join the catalog. Times
are ISO 8601 (a space may replace the T; no zone means UTC) or unix seconds.

Two optional columns, read when a header names them: `drive` (the drive that read the file) and
`error` (the failure's message). A failed request's error is its error text, else its status.

Statuses: done-like (done, ended, staged, ok, ...) are status ok; failure-like (failed, error,
aborted, ...) are status failed with the status text as the error; requests not finished yet
(queued, submitted, activated, ...) are counted skips. An empty or absent status counts as
done; any other status is refused.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from tapelens.ingest.canonical import TRANSFERS
from tapelens.ingest.formats.base import Batch, ParseOptions
from tapelens.ingest.formats.logfields import (
    CsvColumns,
    FieldError,
    cell,
    csv_log_rows,
    epoch_time,
    hpss_cartridge,
    integer,
    iso_time,
    quote,
    text,
)

KIND = "transfers"
FORMAT = "staging-csv"
COLUMNS = (
    "file",
    "tape",
    "position",
    "size",
    "submission_time",
    "queued_time",
    "end_time",
    "status",
)
# Read only when a header names them.
OPTIONAL = ("drive", "error")
REQUIRED = ("file", "queued_time", "end_time")
DONE = {"done", "ended", "staged", "ok", "success", "succeeded", "completed", "complete"}
FAILED = {"failed", "failure", "error", "aborted", "cancelled", "canceled", "killed"}
PENDING = {"queued", "submitted", "created", "activated", "pending", "running", "waiting", "new"}
_UNIX_TIME = re.compile(r"[0-9]+(\.[0-9]+)?")


def parse(path: str | Path, *, options: ParseOptions) -> Iterator[Batch]:
    """Recalls of a staging export; blank lines, headers and unfinished requests are skips."""
    layout = CsvColumns(COLUMNS + OPTIONAL, REQUIRED, options, lambda n: COLUMNS)
    yield from csv_log_rows(path, options, TRANSFERS, layout, _row)


def _row(record: dict[str, str], source: str) -> dict[str, Any] | None:
    status_text = (cell(record, "status") or "done").strip()
    status = status_text.lower()
    if status in PENDING:
        return None
    if status not in DONE and status not in FAILED:
        raise FieldError(f"status {quote(status_text)} is neither done-like nor failed-like")
    file = cell(record, "file")
    if file is None:
        raise FieldError("file is empty")
    submitted = _time(record, "submission_time")
    queued = _time(record, "queued_time")
    ended = _time(record, "end_time")
    if status in DONE and (queued is None or ended is None):
        raise FieldError(f"a {status_text} request needs queued_time and end_time")
    started = queued or submitted or ended
    if started is None:
        raise FieldError("no submission_time, queued_time or end_time")
    tape = cell(record, "tape")
    position = cell(record, "position")
    size = cell(record, "size")
    drive = cell(record, "drive")
    message = cell(record, "error")
    return {
        "source": source,
        "direction": "read",
        "volume": None if tape is None else hpss_cartridge(text("tape", tape.strip())),
        "drive": None if drive is None else text("drive", drive.strip()),
        "path": text("file", file),
        "position": None if position is None else integer("position", position),
        "size_bytes": None if size is None else integer("size", size),
        "started_at": started,
        "duration_s": _span(record, "queued_time", queued, "end_time", ended),
        "queued_s": _span(record, "submission_time", submitted, "queued_time", queued),
        "status": "ok" if status in DONE else "failed",
        "error": None
        if status in DONE
        else text("error", message.strip())
        if message and message.strip()
        else text("status", status_text),
    }


def _time(record: dict[str, str], name: str) -> datetime | None:
    value = cell(record, name)
    if value is None:
        return None
    if _UNIX_TIME.fullmatch(value.strip()):
        return epoch_time(name, float(value))
    return iso_time(name, value)


def _span(
    record: dict[str, str], first: str, start: datetime | None, then: str, end: datetime | None
) -> float | None:
    if start is None or end is None:
        return None
    if end < start:
        raise FieldError(f"{then} {quote(record[then])} is before {first} {quote(record[first])}")
    return (end - start).total_seconds()
