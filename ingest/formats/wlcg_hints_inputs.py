"""Where sites have written files' collocation hints: FTS's per-file records, any CSV with the
archive metadata as a column, and KIT's older dataset attributes (docs/formats/wlcg-hints.md).

Each record of a written file becomes one row of tapelens.write_hints: the file as the catalog
names it (`file_key`: the path after --path-map, or a file id the record gives: a dCache pnfsid,
a CTA archive id), when it was written, and its hints (wlcg_hints.read_metadata). A record
whose metadata cannot be read is kept as a file without hints (status malformed or truncated,
the raw text kept) and its line is also refused with the reason, so that the load summary
names it and --strict stops there. Records of transfers that did not finish are skipped.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import polars as pl
import psycopg

from tapelens.db import connect
from tapelens.ingest.canonical import WRITE_HINTS
from tapelens.ingest.datasets import DatasetRules, experiment_expr
from tapelens.ingest.formats.base import LINE_NO, Batch, Collector, Line, LineReader, ParseOptions
from tapelens.ingest.formats.fields import micros
from tapelens.ingest.formats.logfields import (
    CsvColumns,
    FieldError,
    cell,
    integer,
    iso_time,
    local_time,
    quote,
    text,
)
from tapelens.ingest.formats.wlcg_hints import HINT_COLUMNS, Hints, MetadataReader

KIND = "hints"

# FTS t_file columns (cern-fts/fts3 src/db/schema/mysql/fts-schema-10.0.1.sql) read here.
FTS_COLUMNS = (
    "file_id",
    "file_state",
    "dest_surl",
    "filesize",
    "finish_time",
    "archive_finish_time",
    "activity",
    "vo_name",
    "archive_metadata",
)
# A transfer in any other state wrote nothing (yet): its record is a counted skip.
WRITTEN_STATES = {"FINISHED"}
# The names a CSV's columns may have for each field (lower case).
PATH_NAMES = ("path", "dest_surl", "surl", "pfn", "url", "file", "lfn")
KEY_NAMES = ("pnfsid", "archive_id", "file_key")
TIME_NAMES = ("written_at", "archive_finish_time", "finish_time", "time", "timestamp")
SIZE_NAMES = ("size_bytes", "filesize", "size", "bytes")
VO_NAMES = ("experiment", "vo_name", "vo")
METADATA_NAMES = ("archive_metadata", "archivemetadata", "metadata", "hints")
KIT_NAMES = ("dataset_name", "dataset_length", "dataset_bytes")
_MYSQL_ESCAPE = re.compile(r"\\(.)")
_MYSQL_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "0": "\x00", "\\": "\\", "Z": "\x1a"}


def parse_fts(path: str | Path, *, options: ParseOptions) -> Iterator[Batch]:
    """FTS t_file records: `mysql -B` output (tab separated, `NULL`, backslash escapes) or a
    CSV export, each with a header naming the columns."""
    fts = (*FTS_COLUMNS, "archive_start_time", "start_time", "job_id", "source_surl")
    return _records(path, options, fts, ("dest_surl", "archive_metadata"), _fts_row)


def parse_csv(path: str | Path, *, options: ParseOptions) -> Iterator[Batch]:
    """Any CSV with a header, a path or file id column, a time and the archive metadata."""
    known = (*PATH_NAMES, *KEY_NAMES, *TIME_NAMES, *SIZE_NAMES, *VO_NAMES, *METADATA_NAMES)
    return _records(path, options, (*known, "activity"), (), _metadata_row)


def parse_kit(path: str | Path, *, options: ParseOptions) -> Iterator[Batch]:
    """KIT's dataset attributes: dataset_name, dataset_length, dataset_bytes per written file."""
    known = (*PATH_NAMES, *KEY_NAMES, *TIME_NAMES, *SIZE_NAMES, *VO_NAMES, *KIT_NAMES)
    return _records(path, options, (*known, "activity"), ("dataset_name",), _kit_row)


# A record's own columns (OWN_COLUMNS, in order) and its hints.
_Record = tuple[tuple[Any, ...], Hints]
_Row = Callable[[dict[str, str], ParseOptions, MetadataReader], _Record | None]
# The columns of a write_hints row that come from the record rather than from its hints; the
# activity is the hints', else the record's own (`own_activity`).
OWN_COLUMNS: dict[str, pl.DataType] = {
    "file_key": WRITE_HINTS["file_key"],
    "path": WRITE_HINTS["path"],
    "written_at": pl.Int64(),  # microseconds since 1970: cheaper to hand over than datetimes
    "size_bytes": WRITE_HINTS["size_bytes"],
    "experiment": WRITE_HINTS["experiment"],
    "own_activity": WRITE_HINTS["activity"],
}
HINT_SCHEMA = {n: WRITE_HINTS[n] for n in HINT_COLUMNS}


def _records(
    path: str | Path,
    options: ParseOptions,
    known: tuple[str, ...],
    required: tuple[str, ...],
    make_row: _Row,
) -> Iterator[Batch]:
    """The batches of a file of hint records, one record a line after a header."""
    layout = CsvColumns(known, required, options, lambda _: None)
    rules = DatasetRules(experiment=options.extra.get("experiment_rule"))
    tabs: _TabColumns | None = None
    first = True
    metadata = MetadataReader()
    with LineReader(path) as reader:
        out = _HintRows(reader, options)
        for line in reader:
            if not line.text.strip():
                out.skip()
                continue
            if first:  # mysql -B separates with tabs; an export, with commas
                first = False
                tabs = _TabColumns(layout) if "\t" in line.text else None
            try:
                record = tabs.read(line) if tabs is not None else layout.read(line)
                made = None if record is None else make_row(record, options, metadata)
            except FieldError as exc:
                out.reject(line, str(exc))
                continue
            if made is None:
                out.skip()
                continue
            row, hints = made
            if hints.refused:
                out.reject(line, hints.reason or hints.status)  # kept all the same, as unhinted
            out.keep(row, hints, line.no)
            if out.full():
                yield _with_experiment(out.flush(), rules)
        yield _with_experiment(out.flush(), rules)


class _HintRows(Collector):
    """The Collector of hint records, as columns: each record's own values, and which of the
    batch's distinct hints it has, whose columns are made once (a dataset's files share them)."""

    def __init__(self, reader: LineReader, options: ParseOptions) -> None:
        super().__init__(reader, options, WRITE_HINTS)
        self.records: list[tuple[Any, ...]] = []
        self.distinct: list[Hints] = []
        self.index: dict[int, int] = {}  # id() of a Hints -> its place in `distinct`

    def keep(self, own: tuple[Any, ...], hints: Hints, line_no: int) -> None:
        at = self.index.get(id(hints))
        if at is None:
            at = self.index[id(hints)] = len(self.distinct)
            self.distinct.append(hints)  # held, so that its id() is not reused
        self.records.append((*own, at, line_no))

    def full(self) -> bool:
        return len(self.records) >= self.options.batch_rows

    def flush(self) -> Batch:
        batch = super().flush()
        if self.records:
            schema = {**OWN_COLUMNS, "hints": pl.UInt32(), LINE_NO: pl.Int64()}
            own = pl.DataFrame(self.records, schema=schema, orient="row")
            given = [h.values() for h in self.distinct]
            hints = pl.DataFrame(given, schema=HINT_SCHEMA, orient="row")[own["hints"]]
            frame = pl.concat([own, hints], how="horizontal")
            activity = pl.coalesce("activity", "own_activity").alias("activity")
            source = pl.lit(self.options.source, WRITE_HINTS["source"]).alias("source")
            written = pl.col("written_at").cast(WRITE_HINTS["written_at"])
            batch.frame = frame.with_columns(activity, source, written).select(*self.schema)
        self.records, self.distinct, self.index = [], [], {}
        return batch


class _TabColumns:
    """`mysql -B` lines by column name: the header (read as CsvColumns reads one, with its
    renames and required columns), then fields unescaped, NULL as an empty field."""

    def __init__(self, layout: CsvColumns) -> None:
        self.layout = layout
        self.names: tuple[str, ...] | None = None
        self.header = ""

    def read(self, line: Line) -> dict[str, str] | None:
        fields = line.text.split("\t")
        if self.names is None:
            joined = ",".join(_csv_quoted(f) for f in fields)
            self.layout.read(Line(line.no, joined))  # the header, or a FieldError
            if self.layout.fixed is None:
                raise FieldError("the first line is not a header naming the columns")
            self.names, self.header = self.layout.fixed, line.text
            return None
        if line.text == self.header:  # concatenated exports repeat it
            return None
        if len(fields) != len(self.names):
            raise FieldError(f"{len(fields)} fields where {len(self.names)} are expected")
        return {
            n: "" if f == "NULL" else (_unescape(f) if "\\" in f else f)
            for n, f in zip(self.names, fields, strict=True)
        }


def _unescape(field: str) -> str:
    return _MYSQL_ESCAPE.sub(lambda m: _MYSQL_ESCAPES.get(m[1], m[1]), field)


def _csv_quoted(field: str) -> str:
    return '"' + field.replace('"', '""') + '"'


def _with_experiment(batch: Batch, rules: DatasetRules) -> Batch:
    """The experiment a record names, else the one its path gives (as the catalog derives it)."""
    frame = batch.frame
    if frame.height:
        derived = experiment_expr(rules, pl.coalesce(pl.col("path"), pl.col("file_key")))
        batch.frame = frame.with_columns(pl.coalesce(pl.col("experiment"), derived))
    return batch


def _fts_row(
    record: dict[str, str], options: ParseOptions, metadata: MetadataReader
) -> _Record | None:
    state = (cell(record, "file_state") or "FINISHED").strip().upper()
    if state not in WRITTEN_STATES:
        return None
    surl = cell(record, "dest_surl")
    if surl is None:
        raise FieldError("dest_surl is empty")
    when = _time(record, ("archive_finish_time", "finish_time"), options.timezone)
    hints = metadata.read(cell(record, "archive_metadata"))
    activity = cell(record, "activity")
    return _row(record, options, _url_path(surl), None, when, hints, activity), hints


def _metadata_row(
    record: dict[str, str], options: ParseOptions, metadata: MetadataReader
) -> _Record | None:
    name = next((n for n in METADATA_NAMES if n in record), None)
    if name is None:
        raise FieldError("no archive_metadata column (or metadata, hints)")
    hints = metadata.read(cell(record, name))
    path, key = _where(record)
    when = _time(record, TIME_NAMES, options.timezone)
    activity = cell(record, "activity")
    return _row(record, options, path, key, when, hints, activity), hints


def _kit_row(
    record: dict[str, str], options: ParseOptions, metadata: MetadataReader
) -> _Record | None:
    path, key = _where(record)
    when = _time(record, TIME_NAMES, options.timezone)
    hints = _kit_hints(record)
    activity = cell(record, "activity")
    return _row(record, options, path, key, when, hints, activity), hints


def _kit_hints(record: dict[str, str]) -> Hints:
    """The dataset is the narrowest group there is: level 3, with its announced length and
    bytes; the broader levels are unknown."""
    name = cell(record, "dataset_name")
    length, size = cell(record, "dataset_length"), cell(record, "dataset_bytes")
    if name is None:
        return (
            Hints("empty", "no dataset_name")
            if length is None and size is None
            else (
                Hints(
                    "malformed",
                    "dataset_length or dataset_bytes without a dataset_name",
                    raw=_kit_raw(record),
                )
            )
        )
    try:
        counts = [
            None if v is None else integer(n, v)
            for n, v in (("dataset_length", length), ("dataset_bytes", size))
        ]
        name = text("dataset_name", name.strip())
    except FieldError as exc:
        return Hints("malformed", str(exc), raw=_kit_raw(record))
    return Hints(
        "ok",
        levels=(None, None, None, name, None),
        lengths=(None, None, None, counts[0], None),
        sizes=(None, None, None, counts[1], None),
    )


def _kit_raw(record: dict[str, str]) -> str:
    return ";".join(f"{n}={record.get(n, '')}" for n in KIT_NAMES)


def _where(record: dict[str, str]) -> tuple[str | None, str | None]:
    """The record's path (a URL's path part) and the file id it gives, if any."""
    url = _first(record, PATH_NAMES)
    key = _first(record, KEY_NAMES)
    key = None if key is None else key.strip()
    if url is None and key is None:
        raise FieldError("neither a path nor a file id (pnfsid, archive_id)")
    return (None if url is None else _url_path(url)), key


def _first(record: dict[str, str], names: tuple[str, ...]) -> str | None:
    """The first of these fields that is not empty (cell), if any."""
    for name in names:
        if (value := cell(record, name)) is not None:
            return value
    return None


def _url_path(url: str) -> str:
    """The path of a storage URL (davs://host:port//eos/x -> /eos/x), or the path itself."""
    value = url.strip()
    scheme = value.find("://")
    if scheme >= 0:
        start = value.find("/", scheme + 3)
        value = "" if start < 0 else value[start:]
        cut = min((i for i in (value.find("?"), value.find("#")) if i >= 0), default=len(value))
        value = value[:cut]
        if "%" in value:
            value = unquote(value)
    value = "/" + value.lstrip("/") if value.startswith("/") else value
    if not value:
        raise FieldError(f"URL {quote(url)} has no path")
    return text("path", value)


def _time(record: dict[str, str], names: tuple[str, ...], zone: str) -> datetime:
    """The first time the record gives: ISO 8601; without an offset, in `zone` (--timezone;
    FTS's database keeps UTC)."""
    for name in names:
        value = cell(record, name)
        if value is None:
            continue
        moment = iso_time(name, value)
        if zone == "UTC" or datetime.fromisoformat(value.strip()).tzinfo is not None:
            return moment
        return local_time(
            moment.year,
            moment.month,
            moment.day,
            (moment.hour, moment.minute, moment.second),
            value,
            zone,
        ).replace(microsecond=moment.microsecond)
    raise FieldError(f"no write time ({', '.join(n for n in names if n in record) or names[0]})")


def _row(
    record: dict[str, str],
    options: ParseOptions,
    path: str | None,
    key: str | None,
    when: datetime,
    hints: Hints,
    activity: str | None,
) -> tuple[Any, ...]:
    """The record's own columns (OWN_COLUMNS)."""
    mapped = None if path is None else _mapped(path, options.extra.get("path_map") or ())
    size = _first(record, SIZE_NAMES)
    vo = _first(record, VO_NAMES)
    vo = None if vo is None else vo.strip().lower()
    size_bytes = integer("size", size) if size is not None else hints.file_size
    # The record's own activity column (FTS's t_file.activity) where the hints name none.
    own = None
    if hints.activity is None and activity is not None:
        own = text("activity", activity.strip())
    return (key or mapped, mapped, micros(when), size_bytes, vo, own)


def _mapped(path: str, path_map: tuple[tuple[str, str], ...]) -> str:
    """`path` with the longest matching prefix rewritten (storage path -> tape system path)."""
    for old, new in sorted(path_map, key=lambda p: len(p[0]), reverse=True):
        if path == old or path.startswith(old.rstrip("/") + "/"):
            return new + path[len(old) :]
    return path


def mark_contradictions(cur: psycopg.Cursor, source: str, run_id: int) -> None:
    """After a load: files whose records (of any load, any source) name different levels are
    contradictory, every such record. Empty records say nothing and contradict nothing."""
    # Statistics of the rows just loaded: without them the planner takes the load for a few
    # rows and joins by nested loop, quadratic in the records (200,000 took over 15 minutes).
    cur.execute("analyze tapelens.write_hints")
    # Files with two digests are found by hashing (min <> max, compared bytewise), not by
    # sorting every touched record by its text key as count(distinct ...) does; the versions
    # are then counted for those files alone.
    cur.execute(
        "with touched as (select distinct file_key from tapelens.write_hints"
        "   where ingest_run_id = %(run)s and status in ('ok', 'contradictory')),"
        " split_keys as (select h.file_key"
        "   from tapelens.write_hints h join touched t on t.file_key = h.file_key"
        "   where h.status in ('ok', 'contradictory') group by h.file_key"
        '   having min(h.levels_digest collate "C") <> max(h.levels_digest collate "C")),'
        " split as (select h.file_key, count(distinct h.levels_digest) as versions"
        "   from tapelens.write_hints h join split_keys k on k.file_key = h.file_key"
        "   where h.status in ('ok', 'contradictory') group by h.file_key)"
        " update tapelens.write_hints h set status = 'contradictory',"
        "   reason = format('%%s records of this file name different levels', s.versions)"
        " from split s where h.file_key = s.file_key"
        "   and h.status in ('ok', 'contradictory')",
        {"run": run_id},
    )


STATUSES = ("ok", "empty", "absent", "malformed", "truncated", "contradictory")


def statuses(dsn: str, run_ids: list[int]) -> dict[str, int]:
    """How many of these loads' records stand in each status (contradictions included)."""
    with connect(dsn) as conn:
        found = conn.execute(
            "select status, count(*) from tapelens.write_hints"
            " where ingest_run_id = any(%s) group by status",
            [run_ids],
        ).fetchall()
    counts = {str(s): int(n) for s, n in found}
    return {s: counts[s] for s in STATUSES if counts.get(s)}
