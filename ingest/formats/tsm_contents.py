"""IBM Spectrum Protect (TSM) `select * from contents` (dsmadmc -dataonly=yes -comma), joined
with the `archives` table export for each object's archive date.

Columns come from a header line (VOLUME_NAME, ..., OBJECT_ID), ParseOptions.columns, or the
docs/formats/tsm.md order. FILE_NAME is the only free-text column: commas beyond the expected count
are taken to belong to it. Identity (contract): volume as given, file_id = path = FILESPACE_NAME +
FILE_NAME, copy_id = OBJECT_ID, copy_no 1, written_at = ARCHIVE_DATE of the object (a row whose
object has no archive row is refused). Position: see tsm_ranks.py. Only segment 1 of a file that
spans volumes gives a row; later segments are skipped, counted, but take their rank.
Dumps run to millions of lines: runs of plain lines are read a block at a time with Polars
(tsm_contents_blocks.py), the other lines one by one in their place, with the same outcome.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import polars as pl

from tapelens.arrays import sorted_search
from tapelens.errors import ConfigError, ParseError
from tapelens.ingest.canonical import conform_with_lines
from tapelens.ingest.formats.base import BATCH_ROWS, Batch, ParseOptions, Reject, aggregate_at
from tapelens.ingest.formats.blocks import (
    REFUSED,
    Block,
    BlockReader,
    FileBlocks,
    block_bytes_for,
    is_plain_file,
    line_series,
)
from tapelens.ingest.formats.fields import (
    is_message,
    micros,
    parse_count,
    parse_iso_utc,
    quote,
)
from tapelens.ingest.formats.linewise import Lines, refuse, run_blocks
from tapelens.ingest.formats.tsm_contents_blocks import (
    NEUTRAL,
    ODD,
    OK,
    SKIP,
    archive_lines,
    contents_lines,
    line_kinds,
)
from tapelens.ingest.formats.tsm_ranks import VolumeRanks, aggregated, fraction

KIND = "catalog"
FORMAT = "tsm-contents"

COLUMNS = (
    "VOLUME_NAME",
    "NODE_NAME",
    "TYPE",
    "FILESPACE_NAME",
    "FILE_NAME",
    "AGGREGATED",
    "FILE_SIZE",
    "SEGMENT",
    "CACHED",
    "FILESPACE_ID",
    "FILESPACE_HEXNAME",
    "BITFILE_ID",
    "OBJECT_ID",
)
REQUIRED = (
    "VOLUME_NAME",
    "FILESPACE_NAME",
    "FILE_NAME",
    "AGGREGATED",
    "FILE_SIZE",
    "SEGMENT",
    "OBJECT_ID",
)
ARCHIVE_COLUMNS = ("NODE_NAME", "FILESPACE_NAME", "HL_NAME", "LL_NAME", "OBJECT_ID", "ARCHIVE_DATE")
# What a kept line carries to the batch's end, where the archive dates are joined.
KEPT = ("volume", "path", "size_bytes", "position", "offset_bytes", "object")
# A block with more lines the block reading leaves to the line-by-line path than this is read
# line by line whole: its runs of plain lines would be too short to gain.
MAX_ODD_LINES = 16
KEPT_TYPES: dict[str, pl.DataType] = {
    "size_bytes": pl.Int64(),
    "position": pl.Int64(),
    "offset_bytes": pl.Int64(),
    "object": pl.Int64(),
}


def parse(path: str | Path, *, options: ParseOptions) -> Iterator[Batch]:
    """Parse a contents dump; options.extra["archives"] names the archives export (required)."""
    return _parse(path, options, by_blocks=True)


def parse_by_line(path: str | Path, *, options: ParseOptions) -> Iterator[Batch]:
    """`parse` with every line read one by one: the reference the block reading must equal."""
    return _parse(path, options, by_blocks=False)


def _parse(path: str | Path, options: ParseOptions, by_blocks: bool) -> Iterator[Batch]:
    archives_path = options.extra.get("archives")
    if not archives_path:
        raise ConfigError(
            "--archives",
            "the command line and the manifest options (archives)",
            "tsm-contents needs the archives table export (object write dates)",
        )
    archives = Archives.read(archives_path, strict=options.strict, by_blocks=by_blocks)
    state = _State(options, str(path))
    object_id = pl.col("object").cast(pl.String)

    def frame_of(raw: pl.Series, block: Block, lines: Lines) -> pl.DataFrame:
        kept = state.block(raw, block.first_line_no, lines, by_blocks)
        return rows(archives.join(kept, lines), options.source, object_id)

    def empty_of(lines: Lines) -> pl.DataFrame:
        return rows(archives.join(lines.frame(KEPT_TYPES), lines), options.source, object_id)

    yield from run_blocks(path, options, KEPT, frame_of, empty_of)


def rows(frame: pl.DataFrame, source: str, copy_id: pl.Expr) -> pl.DataFrame:
    """Canonical rows from volume, path, size_bytes, position, offset_bytes, written_at (and
    size_bound_bytes where the sizes were printed rounded)."""
    place = aggregate_at(pl.col("volume"), pl.col("position"))
    return conform_with_lines(
        "catalog",
        frame.select(
            *(["line_no"] if "line_no" in frame.columns else []),
            pl.lit(source).alias("source"),
            copy_id.alias("copy_id"),
            pl.col("path").alias("file_id"),
            "path",
            "size_bytes",
            *(["size_bound_bytes"] if "size_bound_bytes" in frame.columns else []),
            "volume",
            "position",
            "offset_bytes",
            pl.when(pl.col("offset_bytes").is_not_null()).then(place).alias("aggregate_id"),
            pl.lit(1, pl.Int32).alias("copy_no"),
            "written_at",
        ),
    )


class _State:
    def __init__(self, options: ParseOptions, name: str) -> None:
        self.name = name
        self.columns: dict[str, int] | None = None
        if options.columns:
            self.columns = _column_map([c.strip().upper() for c in options.columns])
        self.ranks = VolumeRanks()

    def block(self, raw: pl.Series, first_no: int, out: Lines, by_blocks: bool) -> pl.DataFrame:
        """The kept lines of a block (line_no, raw and KEPT, in line order); refused and skipped
        lines go to `out`. Runs of plain lines are read at once; the lines between them, and
        every line when not `by_blocks`, one by one in their place (ranks carry across)."""
        found = line_kinds(raw, first_no) if by_blocks else None
        if found is not None:
            kinds = contents_lines(found, self.columns or _DEFAULT)
            if kinds["kind"].eq(ODD).sum() > MAX_ODD_LINES:  # runs too short to gain
                found = None
        if found is None:
            for no, text in enumerate(raw.to_list(), first_no):
                if text != REFUSED:
                    self.handle(no, text, out)
            return out.frame(KEPT_TYPES)
        runs: list[pl.DataFrame] = []
        start, n = 0, raw.len()
        while True:
            odd = kinds["kind"].slice(start).eq(ODD).arg_true()
            end = start + int(odd[0]) if odd.len() else n
            run = kinds.slice(start, end - start)
            # Lines refused or skipped before they take a rank: read here, out of turn.
            for no, text in run.filter(pl.col("kind") == NEUTRAL).select("line_no", "raw").rows():
                self.handle(no, text, out)
            runs.append(self._run(run, out))
            if end == n:
                break
            columns = self.columns
            self.handle(first_no + end, raw[end], out)
            start = end + 1
            if self.columns is not columns and start < n:
                # A header line: the lines after it are read under its columns.
                rest = contents_lines(found.slice(start), self.columns or _DEFAULT)
                kinds = pl.concat([kinds.slice(0, start), rest])
        if out.rows:
            runs.append(out.frame(KEPT_TYPES).select(runs[0].columns))
            return pl.concat(runs).sort("line_no")
        return pl.concat(runs)

    def _run(self, run: pl.DataFrame, out: Lines) -> pl.DataFrame:
        """The kept lines of a run of OK and SKIP lines, placed on their volumes."""
        out.skipped += int(run["kind"].eq(SKIP).sum())
        listed = run.filter(pl.col("kind") == OK)
        placed = self.ranks.place_all(
            listed.select("volume", "member_i", "member_n", "size_bytes", "occupies")
        )
        listed = pl.concat([listed, placed], how="horizontal")
        out.skipped += int(listed["occupies"].sum())
        return listed.filter(~pl.col("occupies")).select("line_no", "raw", *KEPT)

    def handle(self, no: int, text: str, out: Lines) -> None:
        if not text.strip() or is_message(text):
            out.skip()
            return
        names = [f.strip().upper() for f in text.split(",")] if _maybe_header(text) else []
        if "VOLUME_NAME" in names and "OBJECT_ID" in names:
            try:
                self.columns = _column_map(names)
            except ConfigError as exc:
                raise ParseError(self.name, no, str(exc)) from None
            out.skip()
            return
        columns = self.columns or _DEFAULT
        fields = split_fields(text, ",", columns["#"], columns["FILE_NAME"])
        if isinstance(fields, str):
            out.reject(no, text, fields)
            return
        reason = self._row(no, text, fields, columns, out)
        if reason:
            out.reject(no, text, reason)

    def _row(self, no: int, text: str, f: list[str], c: dict[str, int], out: Lines) -> str | None:
        """Keeps the line or skips it; returns the reason when it is refused."""
        i_vol, i_agg, i_seg, i_size, i_obj, i_fs, i_name = (c[n] for n in _USED)
        volume = f[i_vol].strip()
        if not volume:
            return "VOLUME_NAME is empty"
        # A line refused from here on still takes its place on the volume.
        member = aggregated(f[i_agg])
        segment = fraction(f[i_seg])
        if segment is not None and segment[0] > 1:
            self.ranks.occupy(volume)
            out.skip()
            return None
        size = parse_count(f[i_size])
        position, offset = self.ranks.place(volume, member or (1, 1), size or 0)
        if member is None:
            return f"AGGREGATED {quote(f[i_agg])} is not No or i/n"
        if segment is None:
            return f"SEGMENT {quote(f[i_seg])} is not i/n"
        if size is None:
            return f"FILE_SIZE {quote(f[i_size])} is not a number of bytes"
        object_id = parse_count(f[i_obj])
        if object_id is None:
            return f"OBJECT_ID {quote(f[i_obj])} is not a number"
        path = f[i_fs] + f[i_name]
        if not path.strip():
            return "FILESPACE_NAME and FILE_NAME are empty"
        out.keep(no, text, (volume, path, size, position, offset, object_id))
        return None


_USED = (
    "VOLUME_NAME",
    "AGGREGATED",
    "SEGMENT",
    "FILE_SIZE",
    "OBJECT_ID",
    "FILESPACE_NAME",
    "FILE_NAME",
)


def _column_map(names: list[str]) -> dict[str, int]:
    index = {name: i for i, name in reversed(list(enumerate(names)))}
    missing = [n for n in REQUIRED if n not in index]
    if missing:
        raise ConfigError(
            "--columns", "the header line or --columns", f"no column {', '.join(missing)}"
        )
    index["#"] = len(names)
    return index


_DEFAULT = _column_map(list(COLUMNS))


def _maybe_header(text: str) -> bool:
    return "VOLUME_NAME" in text or "volume_name" in text.lower()


def split_fields(text: str, sep: str, expected: int, free: int) -> list[str] | str:
    """Fields of a delimited line; surplus separators are taken to be inside column `free`.

    Returns the reason as a string when the line cannot hold the expected fields.
    """
    fields = text.split(sep)
    if len(fields) != expected and '"' in text:
        try:
            quoted = next(csv.reader([text], delimiter=sep))
        except csv.Error:
            quoted = []
        if len(quoted) == expected:
            return quoted
    if len(fields) > expected:
        surplus = len(fields) - expected
        merged = sep.join(fields[free : free + surplus + 1])
        return [*fields[:free], merged, *fields[free + surplus + 1 :]]
    if len(fields) < expected:
        name = {",": "comma", "\t": "tab"}.get(sep, repr(sep))
        return f"expected {expected} {name}-separated fields, found {len(fields)}"
    return fields


class Archives:
    """OBJECT_ID -> ARCHIVE_DATE from the `archives` table export, as sorted arrays."""

    def __init__(self, dates: list[pl.DataFrame], in_order: bool = True) -> None:
        """`dates`: frames of object, date_us and line_no, taken apart here (their memory freed
        a column at a time); `in_order`: their rows already in line order."""
        ids = _column(dates, "object")
        if in_order and bool((ids[1:] > ids[:-1]).all()):
            # An export listed in object id order needs no sort, and lists no object twice.
            self.ids, self.dates_us = ids, _column(dates, "date_us")
            return
        # Sorted by Polars on all cores; among rows of one object, the first line first (rows
        # in line order keep it through a stable sort; the others are ordered by line number).
        columns = {"object": ids, "date_us": _column(dates, "date_us")}
        if not in_order:
            columns["line_no"] = _column(dates, "line_no")
        by_id = pl.DataFrame(columns).sort(
            "object" if in_order else ["object", "line_no"], maintain_order=in_order
        )
        ids, dates_us = by_id["object"].to_numpy(), by_id["date_us"].to_numpy()
        first = np.ones(ids.size, dtype=bool)
        first[1:] = ids[1:] != ids[:-1]  # an object listed twice keeps its first date
        self.ids, self.dates_us = (ids, dates_us) if first.all() else (ids[first], dates_us[first])

    @classmethod
    def read(
        cls,
        path: str | Path,
        strict: bool = False,
        by_blocks: bool = True,
        block_bytes: int = block_bytes_for(BATCH_ROWS),
    ) -> Archives:
        """The export's dates; a line without an id and a date is passed over (strict: raises).
        Plain lines are read a block at a time, the others one by one in their place."""
        found: list[pl.DataFrame] = []
        reading = _ArchiveLines(strict, by_blocks)
        # A plain file is mapped: its blocks are not copied twice.
        with FileBlocks(path) if is_plain_file(path) else BlockReader(path) as reader:
            reading.name = reader.name
            for block in reader.blocks(block_bytes):
                raw, refused = line_series(block)
                reader.advance(raw.len())
                reading.refused += refused
                found += reading.block(raw, block.first_line_no)
        if strict and reading.refused:
            first = reading.refused[0]
            raise ParseError(reading.name, first.line_no, first.reason)
        # Lines read one by one come last: in_order is False, and line numbers order them.
        return cls([*found, reading.one_by_one()], in_order=not reading.found)

    def join(self, frame: pl.DataFrame, lines: Lines) -> pl.DataFrame:
        """written_at from the archive dates; rows whose object has none are refused."""
        objects = frame["object"].to_numpy()
        found = np.zeros(objects.size, dtype=bool)
        dates = np.zeros(objects.size, dtype=np.int64)
        if self.ids.size and objects.size:
            idx = np.minimum(sorted_search(self.ids, objects), self.ids.size - 1)
            found = self.ids[idx] == objects
            dates = np.where(found, self.dates_us[idx], 0)
        frame = frame.with_columns(
            pl.Series("written_at", dates).cast(pl.Datetime("us")).dt.replace_time_zone("UTC"),
            pl.Series("found", found),
        )
        return refuse(
            frame,
            [
                (
                    ~pl.col("found"),
                    pl.format('OBJECT_ID "{}" has no row in the archives file', pl.col("object")),
                )
            ],
            lines,
        )


def _column(frames: list[pl.DataFrame], name: str) -> np.ndarray:
    """One column of all the frames as one array, taken out of each frame as it goes: the
    export's 10 million dates then need one column's copy at a time beside the frames, not a
    copy of them all (measured at 10 M: a peak of 0.6 GB instead of 0.8)."""
    parts = [f.drop_in_place(name).to_numpy() for f in frames]
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)


_ARCHIVE_DEFAULT = {n: i for i, n in enumerate(ARCHIVE_COLUMNS)}
_DATES = {"line_no": pl.Int64, "object": pl.Int64, "date_us": pl.Int64}


class _ArchiveLines:
    """The reading of an archives export: its columns (from a header line) and the lines read
    one by one."""

    def __init__(self, strict: bool, by_blocks: bool) -> None:
        self.strict, self.by_blocks = strict, by_blocks
        self.name = ""
        self.columns: dict[str, int] | None = None
        self.refused: list[Reject] = []
        self.found: list[tuple[int, int, int]] = []  # (line no, object id, date)

    def block(self, raw: pl.Series, first_no: int) -> list[pl.DataFrame]:
        """(line_no, object, date_us) of the block's lines read at once; the others are read
        in their place, and a header line changes the columns of the lines after it."""
        frames: list[pl.DataFrame] = []
        start = 0
        while start < raw.len():
            rest = raw.slice(start)
            kinds = line_kinds(rest, first_no + start) if self.by_blocks else None
            if kinds is None:
                odd = [(i, t) for i, t in enumerate(rest.to_list()) if t != REFUSED]
            else:
                kinds = archive_lines(kinds, self.columns or _ARCHIVE_DEFAULT)
                odd = (
                    kinds.with_row_index()
                    .filter(pl.col("kind") == ODD)
                    .select("index", "raw")
                    .rows()
                )
            header = None
            for at, text in odd:
                if self.line(first_no + start + at, text) and kinds is not None:
                    header = at  # the lines after it are read again under its columns
                    break
            if kinds is not None:
                good = kinds.filter(pl.col("kind") == OK)
                if header is not None:
                    good = good.filter(pl.col("line_no") < first_no + start + header)
                frames.append(good.select(*_DATES))
            if header is None:
                break
            start += header + 1
        return frames

    def line(self, no: int, text: str) -> bool:
        """Reads one line; True when it is a header."""
        if not text.strip() or is_message(text):
            return False
        names = [f.strip().upper() for f in text.split(",")]
        if "OBJECT_ID" in names and "ARCHIVE_DATE" in names:
            self.columns = {n: i for i, n in enumerate(names)}
            return True
        found = _archive_fields(text, self.columns or _ARCHIVE_DEFAULT)
        if isinstance(found, str):
            if self.strict:
                raise ParseError(self.name, no, found)
            return False
        self.found.append((no, *found))
        return False

    def one_by_one(self) -> pl.DataFrame:
        return pl.DataFrame(self.found, schema=_DATES, orient="row")


def _archive_fields(text: str, c: dict[str, int]) -> tuple[int, int] | str:
    """(object id, archive date in µs since 1970) of an archives line, or the reason why not."""
    fields = text.split(",")
    oid, date = c.get("OBJECT_ID", 4), c.get("ARCHIVE_DATE", 5)
    candidates = [(fields[oid], fields[date])] if max(oid, date) < len(fields) else []
    # Names with commas shift the columns: look for the id/date pair further right.
    candidates += [(fields[i], fields[i + 1]) for i in range(oid + 1, len(fields) - 1)]
    for oid_text, date_text in candidates:
        object_id = parse_count(oid_text)
        when = parse_iso_utc(date_text)
        if object_id is not None and when is not None:
            return object_id, micros(when)
    return f"no OBJECT_ID and ARCHIVE_DATE in {quote(text)}"
