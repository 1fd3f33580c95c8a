"""IBM Spectrum Protect (TSM) `select * from contents` (dsmadmc -dataonly=yes -comma), joined
with the `archives` table export for each object's archive date.

Columns come from a header line (VOLUME_NAME, ..., OBJECT_ID), ParseOptions.columns, or the
docs/formats/tsm.md order. FILE_NAME is the only free-text column: commas beyond the expected count
are taken to belong to it. Identity (contract): volume as given, file_id = path = FILESPACE_NAME +
FILE_NAME, copy_id = OBJECT_ID, copy_no 1, written_at = ARCHIVE_DATE of the object (a row whose
object has no archive row is refused). Position: see tsm_ranks.py. Only segment 1 of a file that
spans volumes gives a row; later segments are skipped, counted, but take their rank.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import polars as pl

from tapelens.errors import ConfigError, ParseError
from tapelens.ingest.canonical import conform_with_lines
from tapelens.ingest.formats.base import Batch, LineReader, ParseOptions
from tapelens.ingest.formats.fields import is_message, micros, parse_count, parse_iso_utc, quote
from tapelens.ingest.formats.linewise import Lines, refuse, run
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
KEPT_TYPES: dict[str, pl.DataType] = {
    "size_bytes": pl.Int64(),
    "position": pl.Int64(),
    "offset_bytes": pl.Int64(),
    "object": pl.Int64(),
}


def parse(path: str | Path, *, options: ParseOptions) -> Iterator[Batch]:
    """Parse a contents dump; options.extra["archives"] names the archives export (required)."""
    archives_path = options.extra.get("archives")
    if not archives_path:
        raise ConfigError(
            "--archives",
            "the command line and the manifest options (archives)",
            "tsm-contents needs the archives table export (object write dates)",
        )
    archives = Archives.read(archives_path, strict=options.strict)
    state = _State(options, str(path))

    def finish(lines: Lines) -> pl.DataFrame:
        frame = archives.join(lines.frame(KEPT_TYPES), lines)
        return rows(frame, options.source, pl.col("object").cast(pl.String))

    yield from run(path, options, KEPT, state.handle, finish)


def rows(frame: pl.DataFrame, source: str, copy_id: pl.Expr) -> pl.DataFrame:
    """Canonical rows from volume, path, size_bytes, position, offset_bytes, written_at."""
    place = pl.concat_str([pl.col("volume"), pl.lit(":"), pl.col("position").cast(pl.String)])
    return conform_with_lines(
        "catalog",
        frame.select(
            *(["line_no"] if "line_no" in frame.columns else []),
            pl.lit(source).alias("source"),
            copy_id.alias("copy_id"),
            pl.col("path").alias("file_id"),
            "path",
            "size_bytes",
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

    def __init__(self, object_ids: np.ndarray, dates_us: np.ndarray) -> None:
        order = np.argsort(object_ids, kind="stable")
        ids, dates = object_ids[order], dates_us[order]
        first = np.ones(ids.size, dtype=bool)
        first[1:] = ids[1:] != ids[:-1]  # an object listed twice keeps its first date
        self.ids, self.dates_us = ids[first], dates[first]

    @classmethod
    def read(cls, path: str | Path, strict: bool = False) -> Archives:
        ids: list[int] = []
        dates: list[int] = []
        columns: dict[str, int] | None = None
        with LineReader(path) as reader:
            for line in reader:
                text = line.text
                if not text.strip() or is_message(text):
                    continue
                names = [f.strip().upper() for f in text.split(",")]
                if "OBJECT_ID" in names and "ARCHIVE_DATE" in names:
                    columns = {n: i for i, n in enumerate(names)}
                    continue
                c = columns or {n: i for i, n in enumerate(ARCHIVE_COLUMNS)}
                found = _archive_fields(text, c)
                if isinstance(found, str):
                    if strict:
                        raise ParseError(reader.name, line.no, found)
                    continue
                ids.append(found[0])
                dates.append(found[1])
            if strict and reader.encoding_rejects:
                first = reader.encoding_rejects[0]
                raise ParseError(reader.name, first.line_no, first.reason)
        return cls(np.array(ids, dtype=np.int64), np.array(dates, dtype=np.int64))

    def join(self, frame: pl.DataFrame, lines: Lines) -> pl.DataFrame:
        """written_at from the archive dates; rows whose object has none are refused."""
        objects = frame["object"].to_numpy()
        found = np.zeros(objects.size, dtype=bool)
        dates = np.zeros(objects.size, dtype=np.int64)
        if self.ids.size and objects.size:
            idx = np.minimum(np.searchsorted(self.ids, objects), self.ids.size - 1)
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
