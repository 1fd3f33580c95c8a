"""Generic catalog exports: CSV (header line) or Parquet, with canonical column names or a mapping.

The mapping (a YAML file, options.mapping or options.extra["mapping"]) renames the site's
columns to canonical ones and says how times are written:

    columns:                # site column -> canonical column (tape_files names)
      tapenum: volume
      pos: position
      ctime: written_at
    time_format: "%Y-%m-%d %H:%M:%S"   # strftime codes; default ISO 8601 or epoch seconds (UTC)
    separator: ","                     # CSV only; default ","

A flat mapping (site -> canonical pairs at the top level) is read too. Without a mapping the
header names are canonical names (case-insensitive); other columns are ignored.
Text values lose the spaces around them (an export that writes ", " between columns), but a
path keeps spaces after its last character (part of a name, as in hpss-lsp).
Identity (contract): everything as given; file_id defaults to path (and path to file_id),
copy_id to "volume:position:offset" (offset empty when 0 or none), copy_no to 1. `source` is
always the ingest's source. CSV lines are parsed one per line (a quoted field cannot span
lines); Parquet rows are numbered from 1 in place of line numbers.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import yaml

from tapelens.errors import ConfigError, InputError
from tapelens.ingest.canonical import TAPE_FILES, UTC_TIME, conform_with_lines
from tapelens.ingest.formats.base import Batch, ParseOptions, Reject
from tapelens.ingest.formats.blocks import materialised
from tapelens.ingest.formats.fields import check_strict, is_message, parse_times, quote_expr
from tapelens.ingest.formats.linewise import Lines, run

KIND = "catalog"
FORMAT = "csv"

INTEGER_COLUMNS = ("size_bytes", "position", "offset_bytes", "copy_no")
TIME_COLUMNS = ("written_at",)
NEEDED = ("volume", "position", "size_bytes", "written_at")  # besides path or file_id
PATH_COLUMNS = ("path", "file_id")
PARQUET_MAGIC = b"PAR1"
_SETTINGS = ("time_format", "separator", "columns")


@dataclass(frozen=True)
class Mapping:
    columns: dict[str, str]  # site column (lower case) -> canonical column; empty: identity
    time_format: str | None = None
    separator: str = ","

    def target(self, site_column: str) -> str | None:
        name = site_column.strip().lower()
        if name in self.columns:
            return self.columns[name]
        # Columns already named canonically pass through unless a mapped column takes the name.
        return name if name in TAPE_FILES and name not in self.columns.values() else None


def load_mapping(path: str | Path) -> dict[str, Any]:
    """The mapping document of a YAML file."""
    try:
        doc = yaml.safe_load(Path(path).read_text())
    except OSError as exc:
        raise ConfigError("--mapping", str(path), f"cannot read ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        raise ConfigError("--mapping", str(path), f"not valid YAML ({exc})") from None
    if not isinstance(doc, dict):
        raise ConfigError("--mapping", str(path), "expected a mapping of site columns")
    return doc


def mapping_of(options: ParseOptions) -> Mapping:
    """The Mapping from options.mapping (a document) or options.extra["mapping"] (a file)."""
    where = "--mapping"
    doc: dict[str, Any] | None = options.mapping
    if doc is None and options.extra.get("mapping"):
        where = str(options.extra["mapping"])
        doc = load_mapping(where)
    if not doc:
        return Mapping({})
    raw_columns = doc.get("columns", {k: v for k, v in doc.items() if k not in _SETTINGS})
    if not isinstance(raw_columns, dict):
        raise ConfigError("--mapping", where, "columns must map site columns to canonical ones")
    columns = {}
    for site, canonical in raw_columns.items():
        if not isinstance(canonical, str) or canonical not in TAPE_FILES:
            raise ConfigError(
                "--mapping", where, f"{canonical!r} (for {site!r}) is not a tape_files column"
            )
        columns[str(site).strip().lower()] = canonical
    time_format = doc.get("time_format")
    separator = doc.get("separator", ",")
    if not isinstance(separator, str) or len(separator) != 1:
        raise ConfigError("--mapping", where, "separator must be one character")
    return Mapping(columns, str(time_format) if time_format else None, separator)


def parse(path: str | Path, *, options: ParseOptions) -> Iterator[Batch]:
    """Parse a CSV or Parquet catalog export into tape_files rows."""
    mapping = mapping_of(options)
    with materialised(path) as real:
        if _is_parquet(real):
            yield from _parquet(real, str(path), options, mapping)
        else:
            yield from _csv(real, str(path), options, mapping)


def _is_parquet(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == PARQUET_MAGIC
    except OSError as exc:
        raise InputError(f"{path}: cannot open ({exc.strerror})") from None


# ----------------------------------------------------------------------------------------- CSV


def _csv(real: Path, name: str, options: ParseOptions, mapping: Mapping) -> Iterator[Batch]:
    sep = mapping.separator
    what = "comma" if sep == "," else repr(sep)
    columns: list[str] = []  # canonical names of the kept fields, set from the header line
    picked: list[int] = []  # their places in a line
    width: list[int] = []  # fields per line, once the header is read

    def handle(no: int, text: str, out: Lines) -> None:
        if not text.strip() or (width and is_message(text)):
            out.skip()
            return
        fields = next(csv.reader([text], delimiter=sep)) if '"' in text else text.split(sep)
        if not width:
            targets = [mapping.target(f) for f in fields]
            _check_header(targets, fields, mapping, name)
            kept = [(i, t) for i, t in enumerate(targets) if t]
            picked[:] = [i for i, _ in kept]
            columns[:] = [t for _, t in kept]
            width.append(len(fields))
            out.skip()
        elif len(fields) != width[0]:
            out.reject(
                no, text, f"expected {width[0]} {what}-separated fields, found {len(fields)}"
            )
        else:
            out.keep(no, text, tuple(fields[i] for i in picked))

    def finish(lines: Lines) -> pl.DataFrame:
        lines.columns = tuple(columns)
        good, refused = typed(lines.frame(), mapping.time_format, options.source)
        lines.rejects += refused
        return good

    yield from run(real, options, (), handle, finish, name=name)


def _check_header(header: list[str | None], fields: list[str], mapping: Mapping, name: str) -> None:
    present = {h for h in header if h}
    missing = [c for c in NEEDED if c not in present]
    if "path" not in present and "file_id" not in present:
        missing.insert(0, "path")
    if missing:
        shown = ", ".join(fields)[:200]
        raise ConfigError(
            "--mapping",
            name,
            f"no column for {', '.join(missing)} in the header ({shown})"
            + ("" if mapping.columns else "; give a mapping from the file's columns"),
        )


# ------------------------------------------------------------------------------------- Parquet


def _parquet(real: Path, name: str, options: ParseOptions, mapping: Mapping) -> Iterator[Batch]:
    import pyarrow.parquet as pq

    try:
        source = pq.ParquetFile(real)
    except Exception as exc:  # pyarrow raises its own error types for damaged files
        raise InputError(f"{name}: not a readable Parquet file ({exc})") from None
    names = source.schema_arrow.names
    header = [mapping.target(n) for n in names]
    _check_header(header, names, mapping, name)
    row_no = 0
    for record_batch in source.iter_batches(batch_size=max(1, options.batch_rows)):
        data = pl.from_arrow(record_batch)
        assert isinstance(data, pl.DataFrame)
        n = data.height
        frame = data.select(
            pl.col(site).alias(target) for site, target in zip(names, header, strict=True) if target
        ).with_columns(pl.int_range(row_no + 1, row_no + n + 1, dtype=pl.Int64).alias("line_no"))
        raw = data.select(
            pl.struct(pl.all()).map_elements(_json_row, return_dtype=pl.String).alias("raw")
        )["raw"]
        good, refused = typed(frame.with_columns(raw), mapping.time_format, options.source)
        check_strict(name, options.strict, refused)
        row_no += n
        yield Batch(good, refused, 0, real.stat().st_size)


def _json_row(row: dict[str, Any]) -> str:
    return json.dumps(row, default=str)


# ------------------------------------------------------------------------------- typed columns


def typed(
    frame: pl.DataFrame, time_format: str | None, source: str
) -> tuple[pl.DataFrame, list[Reject]]:
    """Canonical types from the given columns; rows that do not convert become rejects.

    `frame` holds line_no, raw and canonical-named columns (strings, or already typed).
    """
    converted: list[pl.Expr] = []
    kept: list[pl.Expr] = []  # the given text, for reasons
    checks: list[tuple[str, pl.Expr]] = []  # (flag column, reason) in column order
    for column, dtype in TAPE_FILES.items():
        if column not in frame.columns:
            converted.append(pl.lit(None, dtype).alias(column))
            continue
        value, given_dtype = pl.col(column), frame.schema[column]
        is_text = given_dtype == pl.String
        text = value.str.strip_chars() if is_text else value.cast(pl.String)
        given = text.is_not_null() & (text != "")
        if column in INTEGER_COLUMNS:
            number = (
                text.str.to_integer(strict=False) if is_text else value.cast(pl.Int64, strict=False)
            )
            low = 1 if column == "copy_no" else 0
            result = pl.when(number >= low).then(number).cast(dtype, strict=False)
            what = "a copy number" if column == "copy_no" else "a whole number >= 0"
        elif column in TIME_COLUMNS:
            result = _time(frame[column], time_format)
            what = f"a time ({time_format})" if time_format else "an ISO 8601 time"
        else:
            converted.append(pl.when(given).then(_unpadded(column, value, is_text)).alias(column))
            continue
        converted.append(result.alias(column))
        kept.append(text.alias(f"_given_{column}"))
        flag = f"_bad_{column}"
        converted.append((given & result.is_null()).fill_null(False).alias(flag))
        checks.append(
            (
                flag,
                pl.format(f"{column} {{}} is not {what}", quote_expr(pl.col(f"_given_{column}"))),
            )
        )
    frame = frame.with_columns(*converted, *kept).with_columns(
        pl.coalesce("file_id", "path").alias("file_id"),
        pl.coalesce("path", "file_id").alias("path"),
    )
    for column in ("path", *NEEDED):
        flag = f"_empty_{column}"
        frame = frame.with_columns(pl.col(column).is_null().alias(flag))
        checks.append((flag, pl.lit(f"{column} is empty")))
    bad = pl.any_horizontal([pl.col(flag) for flag, _ in checks])
    refused = frame.filter(bad)
    rejects: list[Reject] = []
    if refused.height:
        reason = pl.coalesce([pl.when(pl.col(flag)).then(why) for flag, why in checks])
        rejects = [
            Reject(no, raw, why)
            for no, raw, why in refused.select("line_no", "raw", reason.alias("r")).iter_rows()
        ]
        frame = frame.filter(~bad)
    offset = pl.col("offset_bytes")
    good = frame.with_columns(
        pl.lit(source, pl.String).alias("source"),
        pl.coalesce(
            "copy_id",
            pl.format(
                "{}:{}:{}",
                "volume",
                "position",
                pl.when(offset > 0).then(offset.cast(pl.String)).otherwise(pl.lit("")),
            ),
        ).alias("copy_id"),
        pl.col("copy_no").fill_null(1),
    )
    return conform_with_lines("catalog", good), rejects


def _unpadded(column: str, value: pl.Expr, is_text: bool) -> pl.Expr:
    """A text value without the spaces around it ("path, volume" exports put one after each
    comma), except that a path keeps the spaces after its last character: a name may end with
    one, as hpss-lsp keeps it, so that the same file is the same path in every format."""
    if not is_text:
        return value.cast(pl.String)
    if column in PATH_COLUMNS:
        path = value.str.strip_chars_start(" ")
        return pl.when(path.str.starts_with("/")).then(path).otherwise(value.str.strip_chars())
    return value.str.strip_chars()


def _time(given: pl.Series, time_format: str | None) -> pl.Expr:
    """UTC times from text (see fields.parse_times), datetimes, dates or epoch seconds."""
    value = pl.lit(given)
    if given.dtype == pl.String:
        return pl.lit(parse_times(given, time_format))
    if isinstance(given.dtype, pl.Datetime):
        if given.dtype.time_zone is None:
            return value.dt.replace_time_zone("UTC").cast(UTC_TIME)
        return value.dt.convert_time_zone("UTC").cast(UTC_TIME)
    if isinstance(given.dtype, pl.Date):
        return value.cast(pl.Datetime("us")).dt.replace_time_zone("UTC")
    if given.dtype.is_integer():
        return (
            (value.cast(pl.Int64, strict=False) * 1_000_000)
            .cast(pl.Datetime("us"))
            .dt.replace_time_zone("UTC")
        )
    return pl.lit(None, UTC_TIME)
