"""Recall request lists, and what they name in the catalog.

A request list is either a CSV file with a header naming one of `path`, `file_id` or `dataset`
(a dataset means all its live files) and optionally `requester`, `group`, `priority` (higher is
served earlier) and `submitted_at` (ISO 8601); or plain text, one path a line. Each line is one
request. Resolution against a frame of live copies is pure: entries the catalog does not know are
`not_found`; files whose every copy sits on a tape that cannot be read are `unavailable`, with the
reason: the tape is disabled or repacked, its media type is unknown (the inventory does not type
it and its label does not say), or no given drive reads its media. A tape in state `unknown` of a
known media type counts as readable. Nothing is ever dropped silently.
"""

from __future__ import annotations

import csv
import difflib
import io
import re
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import polars as pl

from tapelens.errors import InputError, ParseError
from tapelens.tape_states import NOT_RECALLABLE
from tapelens.textfiles import LineReader

KEY_COLUMNS = ("path", "file_id", "dataset")
OPTIONAL_COLUMNS = ("requester", "group", "priority", "submitted_at")
DEFAULT_REQUESTER = "default"
DEFAULT_GROUP = "default"
# Tape states whose copies cannot be recalled now (the vocabulary: tapelens.tape_states).
UNREADABLE_STATES = NOT_RECALLABLE
UNKNOWN_MEDIA = "unknown"

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

# What resolution needs of each live copy (plan_store loads these, with start_bytes and
# avg_object_bytes for the throughput model).
CATALOG_COLUMNS = (
    "file_id",
    "path",
    "dataset",
    "size_bytes",
    "volume",
    "position",
    "offset_bytes",
    "aggregate_id",
    "copy_no",
    "written_at",
    "media_type",
    "tape_state",
)


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


@dataclass(frozen=True)
class Resolution:
    """A request list resolved against the catalog of live copies.

    Files are identified by `fid`, a dense integer code of file_id (joins and sorts on integers
    keep a million-file plan fast); file_id itself is kept alongside.
    """

    demand: pl.DataFrame  # one row per (request, file): who wants what, in which order
    wanted: pl.DataFrame  # one row per requested file: its first request (the owner)
    copies: pl.DataFrame  # readable copies of wanted files (the copy-choice candidates)
    not_found: pl.DataFrame  # requests the catalog does not know (request_no, line_no, kind, key)
    unavailable: pl.DataFrame  # wanted files without a readable copy (file_id, path, reason)


def resolve(
    requests: pl.DataFrame,
    catalog: pl.DataFrame,
    readable_media: Collection[str] | None = None,
) -> Resolution:
    """Match requests to files and files to readable copies.

    `catalog` holds live copies (CATALOG_COLUMNS) on every tape, readable or not, so that a file
    whose copies are all on disabled tapes is told apart from one the catalog never had.
    `readable_media`, when given, are the media types some available drive reads.
    """
    coded = catalog.with_columns(pl.col("file_id").rank("dense").cast(pl.Int64).alias("fid"))
    # One row per file and name for matching: copies of a file normally share path and dataset.
    names = ["fid", "file_id", "path", "dataset"]
    first = pl.col("fid").is_first_distinct()
    files = coded.filter(first).select(names)
    named = files.select("fid", pl.col("path").alias("p0"), pl.col("dataset").alias("d0"))
    renamed_copies = (
        coded.filter(~first)
        .select(names)
        .join(named, on="fid")
        .filter((pl.col("path") != pl.col("p0")) | (pl.col("dataset") != pl.col("d0")))
        .select(names)
        .unique()
    )
    renamed = renamed_copies.height > 0  # some file has copies under another name
    if renamed:
        files = pl.concat([files, renamed_copies])
    matches = []
    for kind in KEY_COLUMNS:
        asked = requests.filter(pl.col("kind") == kind).select("request_no", "key")
        if asked.height:
            found = files.select(pl.col(kind).alias("_key"), "fid", "file_id", "path")
            matches.append(asked.join(found, left_on="key", right_on="_key").drop("key"))
    empty = {"request_no": pl.Int64(), "fid": pl.Int64(), "file_id": pl.String()}
    matched = pl.concat(matches) if matches else pl.DataFrame(schema={**empty, "path": pl.String()})
    if renamed:
        matched = matched.unique(["request_no", "fid"], keep="first", maintain_order=True)
    hit = _mask(matched["request_no"], requests["request_no"])
    not_found = (
        requests.filter(~hit)
        .select("request_no", "line_no", "kind", "key", "requester")
        .sort("request_no")
    )
    demand = _demand(requests, matched)
    if demand["fid"].n_unique() == demand.height:  # every file asked for once
        wanted = demand.with_columns(pl.lit(1, pl.UInt32).alias("requests"))
    else:
        wanted = demand.group_by("fid", maintain_order=True).agg(  # demand is in rank order
            pl.col("file_id").first(),
            pl.col("path").first(),
            pl.col("request_no").first(),
            pl.col("requester").first(),
            pl.col("group").first(),
            pl.col("rank").first(),
            pl.col("fifo_rank").min(),
            pl.len().alias("requests"),
        )
    owner = ["file_id", "path", "request_no", "requester", "group", "rank", "fifo_rank"]
    wanted = wanted.select("fid", *owner, "requests")
    copies, unavailable = _readable(wanted, coded, readable_media)
    return Resolution(demand, wanted, copies, not_found, unavailable)


def _mask(hits: pl.Series, of: pl.Series) -> pl.Series:
    """For each value of `of` (small non-negative integers), whether it is among `hits`."""
    values, marked = of.to_numpy(), hits.to_numpy()
    size = int(max(values.max(initial=0), marked.max(initial=0))) + 1
    flags = np.zeros(size, dtype=bool)
    flags[marked] = True
    return pl.Series(flags[values])


def _demand(requests: pl.DataFrame, matched: pl.DataFrame) -> pl.DataFrame:
    """Per (request, file): the request's attributes and two orders over all requested files.

    fifo_rank is submission order (submitted_at, then list order; a dataset's files by path);
    rank adds priority first (higher first): the order of "oldest request first" policies.
    """
    frame = matched.join(
        requests.select("request_no", "kind", "requester", "group", "priority", "submitted_at"),
        on="request_no",
    )
    many = frame.filter(pl.col("kind") == "dataset")
    if many.height:
        # Only a dataset names several files: order them by path within their request.
        many = many.sort(["request_no", "path"]).with_columns(
            pl.int_range(pl.len(), dtype=pl.Int64).over("request_no").alias("within")
        )
        frame = pl.concat(
            [
                frame.filter(pl.col("kind") != "dataset").with_columns(
                    pl.lit(0, pl.Int64).alias("within")
                ),
                many,
            ]
        )
    else:
        frame = frame.with_columns(pl.lit(0, pl.Int64).alias("within"))
    fifo = ["submitted_at", "request_no", "within"]
    frame = frame.sort(fifo, nulls_last=True).with_columns(
        pl.int_range(pl.len(), dtype=pl.Int64).alias("fifo_rank")
    )
    if frame["priority"].n_unique() > 1:
        frame = frame.sort("priority", descending=True, maintain_order=True)
    return frame.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias("rank")).drop(
        "kind", "within"
    )


def _readable(
    wanted: pl.DataFrame, catalog: pl.DataFrame, readable_media: Collection[str] | None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    copies = catalog.filter(_mask(wanted["fid"], catalog["fid"]))
    reason = (
        pl.when(pl.col("tape_state").is_in(list(UNREADABLE_STATES)))
        .then(pl.format("tape {}", pl.col("tape_state")))
        .when(pl.col("media_type").is_null() | (pl.col("media_type") == UNKNOWN_MEDIA))
        .then(pl.lit("unknown media type"))
    )
    if readable_media is not None:
        reason = reason.when(~pl.col("media_type").is_in(list(readable_media))).then(
            pl.format("no drive reads {}", pl.col("media_type"))
        )
    copies = copies.with_columns(reason.otherwise(None).alias("reason"))
    readable = copies.filter(pl.col("reason").is_null()).drop("reason")
    lost = copies.filter(pl.col("reason").is_not_null())
    unavailable = (
        lost.filter(~_mask(readable["fid"], lost["fid"]))
        .group_by("fid")
        .agg(
            pl.col("file_id").first(),
            pl.col("path").first(),
            pl.col("size_bytes").first(),
            pl.col("reason").unique().sort().str.join("; "),
        )
        .sort("path")
    )
    return readable, unavailable
