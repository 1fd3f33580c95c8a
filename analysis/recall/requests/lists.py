"""Recall request lists: CSV or plain text read into one frame of requests, one a line.

A request list is either a CSV file with a header naming one of `path`, `file_id` or `dataset`
(a dataset means all its live files) and optionally `requester`, `group`, `priority` (higher is
served earlier) and `submitted_at` (ISO 8601); or plain text, one path a line. Each line is one
request; what the requests name in the catalog is analysis.recall.requests.resolve's work.
"""

from __future__ import annotations

import csv
import difflib
import io
import re
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from tapelens.errors import InputError, ParseError
from tapelens.textfiles import LineReader

KEY_COLUMNS = ("path", "file_id", "dataset")
OPTIONAL_COLUMNS = ("requester", "group", "priority", "submitted_at")
DEFAULT_REQUESTER = "default"
DEFAULT_GROUP = "default"


REQUESTS: dict[str, pl.DataType] = {
    "request_no": pl.Int64(),  # 0-based, in list order
    "line_no": pl.Int64(),  # 1-based line in the request file
    "kind": pl.String(),  # path | file_id | dataset
    "key": pl.String(),
    "requester": pl.String(),
    "group": pl.String(),
    "priority": pl.Int64(),
    "submitted_at": pl.Datetime("us", "UTC"),
}


def read_requests(path: str | Path) -> pl.DataFrame:
    """Read a request list from a file ('-' for stdin; .gz, .bz2 and .zst are read as well)."""
    reader = LineReader(path)
    try:
        lines = [line.text for line in reader]
    finally:
        reader.close()
    if reader.encoding_rejects:
        bad = reader.encoding_rejects[0]
        raise ParseError(path, bad.line_no, bad.reason)
    requests = parse_requests(lines, str(path))
    if requests.height == 0:
        raise InputError(
            f"{path}: no requests (the file is empty or holds only blank lines, comments or a"
            " header); expected one path a line, or a CSV naming path, file_id or dataset"
        )
    return requests


def parse_requests(lines: list[str], name: str = "<requests>") -> pl.DataFrame:
    """The requests of a list given as its lines (CSV with a header, or one path a line)."""
    first = _first_content_line(lines)
    if first is None:
        return pl.DataFrame(schema=REQUESTS)
    header = [c.strip().lower() for c in next(csv.reader([lines[first].lstrip("\ufeff")]))]
    if any(c in KEY_COLUMNS for c in header):
        return _parse_csv(lines, first, header, name)
    if _looks_like_header(header):
        # A header with a misspelled key column would otherwise become a request for a file
        # called `pathx`, reported as not found among the rest.
        known = (*KEY_COLUMNS, *OPTIONAL_COLUMNS)
        close = [
            m for c in header if c not in known for m in difflib.get_close_matches(c, known, n=1)
        ]
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise ParseError(
            name,
            first + 1,
            f"the header {lines[first].strip()!r} names none of {', '.join(KEY_COLUMNS)}{hint}",
        )
    return _parse_plain(lines, name)


def _looks_like_header(cells: list[str]) -> bool:
    """Whether a first line that names no key column is still a CSV header: several plain
    words (no path has none of '/'), or one word that is, or nearly is, a column's name."""
    words = [c for c in cells if re.fullmatch(r"[a-z_][a-z0-9_ ]*", c)]
    if len(words) != len(cells):
        return False
    if len(cells) > 1:
        return True
    known = (*KEY_COLUMNS, *OPTIONAL_COLUMNS)
    return cells[0] in known or bool(difflib.get_close_matches(cells[0], known, n=1, cutoff=0.7))


def _first_content_line(lines: list[str]) -> int | None:
    for i, text in enumerate(lines):
        stripped = text.strip().lstrip("\ufeff")
        if stripped and not stripped.startswith("#"):
            return i
    return None


def _parse_plain(lines: list[str], name: str) -> pl.DataFrame:
    keys: list[str] = []
    line_nos: list[int] = []
    for i, text in enumerate(lines):
        stripped = text.strip().lstrip("\ufeff")
        if stripped and not stripped.startswith("#"):
            keys.append(stripped)
            line_nos.append(i + 1)
    return _frame(line_nos, ["path"] * len(keys), keys, None, None, None, None)


def _parse_csv(lines: list[str], first: int, header: list[str], name: str) -> pl.DataFrame:
    known = (*KEY_COLUMNS, *OPTIONAL_COLUMNS)
    for column in header:
        if column not in known:
            raise ParseError(
                name, first + 1, f"unknown column {column!r} (expected {', '.join(known)})"
            )
    if len(set(header)) != len(header):
        raise ParseError(name, first + 1, "a column is named twice in the header")
    at = {c: header.index(c) for c in header}
    key_cols = [c for c in KEY_COLUMNS if c in at]
    line_nos: list[int] = []
    kinds: list[str] = []
    keys: list[str] = []
    optional: dict[str, list[str | None]] = {c: [] for c in OPTIONAL_COLUMNS}
    reader = csv.reader(io.StringIO("\n".join(lines[first + 1 :])))
    for row in reader:
        line_no = first + 1 + reader.line_num
        if not row or all(not v.strip() for v in row):
            continue
        if len(row) > len(header):
            raise ParseError(name, line_no, f"{len(row)} fields, the header has {len(header)}")
        values = [v.strip() for v in row] + [""] * (len(header) - len(row))
        given = [c for c in key_cols if values[at[c]]]
        if len(given) != 1:
            raise ParseError(
                name, line_no, f"expected exactly one of {', '.join(key_cols)}, got {len(given)}"
            )
        line_nos.append(line_no)
        kinds.append(given[0])
        keys.append(values[at[given[0]]])
        for c in OPTIONAL_COLUMNS:
            optional[c].append((values[at[c]] or None) if c in at else None)
    priority = [_int(v, name, n) for v, n in zip(optional["priority"], line_nos, strict=True)]
    submitted = [_time(v, name, n) for v, n in zip(optional["submitted_at"], line_nos, strict=True)]
    return _frame(
        line_nos, kinds, keys, optional["requester"], optional["group"], priority, submitted
    )


def _int(value: str | None, name: str, line_no: int) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        raise ParseError(name, line_no, f"priority {value!r} is not an integer") from None


def _time(value: str | None, name: str, line_no: int) -> datetime | None:
    if value is None:
        return None
    try:
        stamp = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ParseError(name, line_no, f"submitted_at {value!r} is not an ISO 8601 time") from None
    return stamp.replace(tzinfo=UTC) if stamp.tzinfo is None else stamp.astimezone(UTC)


def _frame(
    line_nos: list[int],
    kinds: list[str],
    keys: list[str],
    requesters: list[str | None] | None,
    groups: list[str | None] | None,
    priorities: list[int | None] | None,
    submitted: list[datetime | None] | None,
) -> pl.DataFrame:
    n = len(keys)
    frame = pl.DataFrame(
        {
            "request_no": range(n),
            "line_no": line_nos,
            "kind": kinds,
            "key": keys,
            "requester": requesters if requesters is not None else [None] * n,
            "group": groups if groups is not None else [None] * n,
            "priority": priorities if priorities is not None else [None] * n,
            "submitted_at": submitted if submitted is not None else [None] * n,
        },
        schema=REQUESTS,
    )
    return frame.with_columns(
        pl.col("requester").fill_null(DEFAULT_REQUESTER),
        pl.col("group").fill_null(DEFAULT_GROUP),
        pl.col("priority").fill_null(0),
    )


def requests_frame(
    keys: list[str],
    kind: str = "path",
    requester: str = DEFAULT_REQUESTER,
    group: str = DEFAULT_GROUP,
) -> pl.DataFrame:
    """Requests built in code (benchmarks, tests, the demo): one per key, all of one kind."""
    frame = _frame(list(range(1, len(keys) + 1)), [kind] * len(keys), keys, None, None, None, None)
    return frame.with_columns(pl.lit(requester).alias("requester"), pl.lit(group).alias("group"))
