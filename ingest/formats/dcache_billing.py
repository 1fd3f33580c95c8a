"""dCache billing text: one transfer per restore (tape -> pool) or store (pool -> tape) record.

    11.02 03:14:07 [pool:f01-080-128_T:restore] [0000A3C5B52E...,3791544320]
        [/pnfs/gridka.de/atlas/data22/AOD/f12.pool.root.1] atlas:tape@osm 15311 904 {0:""}

(one line per record; wrapped here). Layout (docs/formats/dcache-billing.md): date MM.dd, time,
[cellType:cellName:type], [pnfsid,size], [path], storageClass@hsm, transferTime (ms), queuingTime
(ms), {rc:"message"}. Lines carry no year (dCache prints the date as MM.dd): it comes from
--year, else the date stamp of the file name (billing-2021.11.02), by the rule every year-less
log shares (logfields.LogYears, docs/formats/README.md). dCache names a flat billing file after
the day of its records and a file under yyyy/MM/ after the day it was written, so a record
logged just before midnight on 31 December can sit in billing-2022.01.01: a line of a month
later than the stamp's is of the year before (dCache/dcache,
modules/dcache/src/main/java/org/dcache/services/billing/cells/BillingCell.java, logInfo).

Choices:
- dCache writes a billing record when the transfer ends, so started_at = the line's time minus
  the transfer time, rounded to the whole second; duration_s = transferTime, queued_s =
  queuingTime (the queue wait came before the transfer and is not subtracted again).
- host = the pool (cell name); file_id = the pnfsid; no volume: the loader links by path.
  A path dCache did not know (`[Unknown]` or `[]`) is null.
- rc != 0 is a failed transfer, kept with status failed and the message in `error`.
- Records of other types (transfer, request, remove, ...) are counted skips.
- Billing writes the pool's local time without a zone: times are read in
  ParseOptions.timezone (--timezone, default UTC); a local time the zone skipped is refused.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tapelens.ingest.canonical import TRANSFERS
from tapelens.ingest.formats.base import Batch, Line, ParseOptions
from tapelens.ingest.formats.logfields import (
    FieldError,
    LogYears,
    before,
    clock,
    integer,
    local_time,
    log_rows,
    month_day,
    quote,
    seconds,
    text,
)

KIND = "transfers"
FORMAT = "dcache-billing"
MS_PER_S = 1000.0
DIRECTIONS = {"restore": "read", "store": "write"}
UNKNOWN_PATHS = {"", "Unknown"}  # what dCache writes when it has no name for the file

_HEAD = re.compile(r"(\S+)\s+(\S+)\s+\[([^\]]*)\](.*)")
_REST = re.compile(
    r"\s*\[(?P<pnfsid>[^,\]]*),(?P<size>[^\]]*)\]\s+\[(?P<path>.*)\]"
    r"\s+(?P<storage>\S+)\s+(?P<transfer>\S+)\s+(?P<queue>\S+)"
    r"\s+\{\s*(?P<rc>[^:{}]*?)\s*:(?P<message>.*)\}\s*"
)


def parse(path: str | Path, *, options: ParseOptions) -> Iterator[Batch]:
    """Transfers of a billing file; other record types and blank lines are counted skips."""
    years = LogYears(path, options, "dCache billing")
    yield from log_rows(
        path,
        options,
        TRANSFERS,
        lambda line: _record(line, years, options.source, options.timezone),
    )


def _record(line: Line, years: LogYears, source: str, zone: str = "UTC") -> dict[str, Any] | None:
    head = _HEAD.fullmatch(line.text.strip())
    if head is None:
        raise FieldError("not a billing record (MM.dd HH:MM:SS [cellType:cellName:type] ...)")
    date, time_of_day, cell, rest = head.groups()
    parts = cell.split(":")
    if len(parts) < 3:
        raise FieldError(f"cell {quote('[' + cell + ']')} is not [cellType:cellName:type]")
    direction = DIRECTIONS.get(parts[-1])
    if direction is None:
        return None
    month, day = month_day(date, ".", "MM.dd")
    hms = clock(time_of_day)
    ended_at = local_time(years.peek(month), month, day, hms, date, zone)
    years.commit(month)

    body = _REST.fullmatch(rest)
    if body is None:
        raise FieldError(
            'expected [pnfsid,size] [path] storageClass@hsm transferTime queuingTime {rc:"message"}'
        )
    transfer_s = seconds("transferTime", body["transfer"], per_second=MS_PER_S)
    rc = integer("rc", body["rc"], minimum=-(2**63))
    message = body["message"].strip()
    if len(message) >= 2 and message[0] == message[-1] == '"':
        message = message[1:-1]
    path = body["path"]
    pnfsid = body["pnfsid"].strip()
    return {
        "source": source,
        "direction": direction,
        "host": text("cell name", ":".join(parts[1:-1])),
        "file_id": text("pnfsid", pnfsid) if pnfsid else None,
        "path": None if path in UNKNOWN_PATHS else text("path", path),
        "size_bytes": integer("size", body["size"]),
        "started_at": before(ended_at, transfer_s, "the transfer's start"),
        "duration_s": transfer_s,
        "queued_s": seconds("queuingTime", body["queue"], per_second=MS_PER_S),
        "status": "ok" if rc == 0 else "failed",
        "error": None if rc == 0 else text("message", message or f"rc {rc}"),
    }
