"""Field parsing shared by the transfer and mount log parsers.

Every helper either returns a clean value or raises FieldError whose message is the reason a
reject carries, quoting the bad value (`time "25:61:00" is not HH:MM:SS`). Values are checked
against what the canonical tables can hold (64-bit integers, finite floats, UTF-8 text without
NUL), so a refused value never reaches the loader.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import polars as pl

from tapelens.errors import ConfigError
from tapelens.ingest.formats.base import Batch, Collector, Line, LineReader, ParseOptions

INT64_MAX = 2**63 - 1
QUOTE_CHARS = 60  # a reason quotes at most this much of a bad value
HPSS_SIDE_DIGITS = 2  # A8553200 = cartridge A85532 + side "00" (docs/formats/hpss-pvl.md, HPSS PVL)
HPSS_PHYSICAL_LEN = 8
EPOCH_YEAR_10000 = 253_402_300_800  # datetime ends with year 9999
MAX_DURATION_S = 366 * 86400.0  # a longer transfer, mount or wait is a corrupt field

VERBATIM = {"path", "file_id", "error"}  # canonical text columns kept exactly as written

_INTEGER = re.compile(r"[-+]?[0-9]+")
_CLOCK = re.compile(r"([0-9]{2}):([0-9]{2}):([0-9]{2})")
_YEAR_IN_NAME = re.compile(r"(?<![0-9])((?:19|20)[0-9]{2})(?![0-9])")
# YYYYMMDD (a time may follow), YYYY-MM-DD or YYYY.MM.DD: the same separator twice, or none.
_STAMP_IN_NAME = re.compile(
    r"(?<![0-9])((?:19|20)[0-9]{2})([-.]?)(0[1-9]|1[0-2])\2(0[1-9]|[12][0-9]|3[01])"
)


class FieldError(ValueError):
    """A field of a line is not what its format says; str() is the reject reason."""


def quote(value: object) -> str:
    """A value as a reason shows it: shortened, with NUL and lone surrogates escaped."""
    shown = str(value)
    if len(shown) > QUOTE_CHARS:
        shown = shown[: QUOTE_CHARS - 3] + "..."
    shown = shown.encode("utf-8", "backslashreplace").decode("utf-8").replace("\x00", "\\x00")
    return '"' + shown + '"'


def text(name: str, value: str) -> str:
    """Text as PostgreSQL can store it (JSON escapes can smuggle in NUL or lone surrogates)."""
    if "\x00" in value:
        raise FieldError(f"{name} contains a NUL character")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise FieldError(f"{name} {quote(value)} is not valid Unicode") from None
    return value


def integer(name: str, value: str, *, minimum: int = 0) -> int:
    """A decimal integer in [minimum, 2**63)."""
    stripped = value.strip()
    if not _INTEGER.fullmatch(stripped):
        raise FieldError(f"{name} {quote(value)} is not an integer")
    if len(stripped.lstrip("+-")) > 19:
        raise FieldError(f"{name} {quote(value)} is too large")
    number = int(stripped)
    if number < minimum:
        raise FieldError(f"{name} {quote(value)} is below {minimum}")
    if number > INT64_MAX:
        raise FieldError(f"{name} {quote(value)} is too large")
    return number


def seconds(name: str, value: str | float, *, per_second: float = 1.0) -> float:
    """A non-negative, finite duration in seconds; `per_second`: log units in a second (ms: 1000).

    Dividing (not multiplying by 0.001) keeps a millisecond count exact to the last bit.
    """
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            raise FieldError(f"{name} {quote(value)} is not a number") from None
    else:
        try:
            number = float(value)
        except OverflowError:
            raise FieldError(f"{name} {quote(value)} is too large") from None
    if not math.isfinite(number) or number < 0:
        raise FieldError(f"{name} {quote(value)} is not a non-negative number")
    result = number / per_second
    if result > MAX_DURATION_S:
        raise FieldError(f"{name} {quote(value)} is longer than a year")
    return result


def clock(value: str) -> tuple[int, int, int]:
    """HH:MM:SS on a 24-hour clock."""
    m = _CLOCK.fullmatch(value)
    if not m:
        raise FieldError(f"time {quote(value)} is not HH:MM:SS")
    h, mi, s = (int(g) for g in m.groups())
    if h > 23 or mi > 59 or s > 59:
        raise FieldError(f"time {quote(value)} is not HH:MM:SS")
    return h, mi, s


def month_day(value: str, sep: str, layout: str) -> tuple[int, int]:
    """A month and day written MM<sep>DD (the year is not in the line)."""
    parts = value.split(sep)
    if (
        len(parts) != 2
        or not all(len(p) == 2 and p.isascii() and p.isdigit() for p in parts)
        or not 1 <= int(parts[0]) <= 12
        or not 1 <= int(parts[1]) <= 31
    ):
        raise FieldError(f"date {quote(value)} is not {layout}")
    return int(parts[0]), int(parts[1])


def utc_time(year: int, month: int, day: int, hms: tuple[int, int, int], shown: str) -> datetime:
    try:
        return datetime(year, month, day, *hms, tzinfo=UTC)
    except ValueError:
        raise FieldError(f"date {quote(shown)} is not a day of {year}") from None


def local_time(
    year: int, month: int, day: int, hms: tuple[int, int, int], shown: str, zone: str
) -> datetime:
    """A local wall-clock time in IANA `zone`, as UTC. A time the zone skipped (the hour lost
    when daylight saving time starts) is refused; one it repeats is read as the first."""
    if zone == "UTC":
        return utc_time(year, month, day, hms, shown)
    try:
        local = datetime(year, month, day, *hms)
    except ValueError:
        raise FieldError(f"date {quote(shown)} is not a day of {year}") from None
    tz = ZoneInfo(zone)
    aware = local.replace(tzinfo=tz, fold=0)
    if aware.astimezone(UTC).astimezone(tz).replace(tzinfo=None) != local:
        raise FieldError(f"{local:%Y-%m-%d %H:%M:%S} does not exist in {zone}")
    return aware.astimezone(UTC)


def iso_time(name: str, value: str) -> datetime:
    """An ISO 8601 time; with an offset it is converted to UTC, without one it is taken as UTC."""
    stripped = value.strip()
    try:
        parsed = datetime.fromisoformat(stripped)
    except ValueError:
        raise FieldError(f"{name} {quote(value)} is not an ISO 8601 time") from None
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except OverflowError:
        raise FieldError(f"{name} {quote(value)} is out of range") from None


def epoch_time(name: str, value: float) -> datetime:
    """A unix time (seconds, fractions allowed) as a UTC datetime."""
    if not 0 <= value < EPOCH_YEAR_10000:
        raise FieldError(f"{name} {quote(value)} is not a unix time")
    try:
        return datetime.fromtimestamp(value, UTC)
    except (OverflowError, ValueError, OSError):
        raise FieldError(f"{name} {quote(value)} is not a unix time") from None


def before(end: datetime, duration_s: float, what: str) -> datetime:
    """The time `duration_s` before `end`, to the whole second (logs write the end of an action).

    Canonical times are whole seconds (half a second rounds up), so a start derived from an end
    time and a millisecond duration lands on the second the action began.
    """
    try:
        start = end - timedelta(seconds=duration_s)
    except OverflowError:
        raise FieldError(f"{what} reaches before year 1") from None
    return whole_second(start)


def whole_second(moment: datetime) -> datetime:
    try:
        return (moment + timedelta(microseconds=500_000)).replace(microsecond=0)
    except OverflowError:
        return moment.replace(microsecond=0)


def hpss_cartridge(label: str) -> str:
    """The cartridge of an HPSS physical volume: A8553200 -> A85532 (other labels unchanged).

    HPSS names each side of a cartridge by appending two digits; catalogs and inventories name the
    cartridge, so every parser normalises to it.
    """
    side = label[-HPSS_SIDE_DIGITS:]
    if len(label) == HPSS_PHYSICAL_LEN and side.isascii() and side.isdigit():
        return label[:-HPSS_SIDE_DIGITS]
    return label


def year_from_name(path: str | Path) -> int | None:
    """The year a log's file name carries (billing-2021.11.02 -> 2021), if exactly one kind."""
    years = {int(y) for y in _YEAR_IN_NAME.findall(Path(str(path)).name)}
    return years.pop() if len(years) == 1 else None


def name_stamp(path: str | Path) -> tuple[int, int] | None:
    """(year, month) of the date stamp in a log's file name, if it has exactly one.

    A stamp is YYYYMMDD (logrotate's dateext: cta-taped.log-20220331, pvl.log-20130105, perhaps
    followed by the time: logfile01_201301052000), YYYY-MM-DD or YYYY.MM.DD (dCache's
    billing-2021.11.02).
    """
    if str(path) == "-":
        return None
    found = {(int(y), int(m)) for y, _, m, _ in _STAMP_IN_NAME.findall(Path(str(path)).name)}
    return found.pop() if len(found) == 1 else None


def first_year(path: str | Path, options: ParseOptions, what: str) -> int:
    """The year of a log's first line: --year, else a year in the file name; else ConfigError."""
    if options.year is not None:
        return options.year
    found = year_from_name(path) if str(path) != "-" else None
    if found is None:
        raise _no_year(path, what)
    return found


def _no_year(path: str | Path, what: str) -> ConfigError:
    name = Path(str(path)).name if str(path) != "-" else "standard input"
    return ConfigError(
        "--year",
        f"--year and the file name {name!r}",
        f"{name}: {what} lines carry no year and the file name no date stamp"
        " (YYYYMMDD, YYYY-MM-DD or YYYY.MM.DD); pass --year",
    )


class LogYears:
    """The year of each line of a log whose lines print only month and day.

    One rule for every such log (docs/formats/README.md, "Logs without a year"):
    - `--year` is the year of the first line, and the lines that follow keep it until the log
      crosses a new year (YearTracker);
    - else a date stamp in the file name: the log was named when it was closed (logrotate's
      dateext, dCache's daily billing files), so a line of a month later than the stamp's is of
      the year before (December's lines in a file stamped in January), every other line of the
      stamp's year. Each line is dated on its own, so lines a little out of order (several
      processes writing one log) cannot shift the year of the lines after them;
    - else a year alone in the name (cta-taped-2024.log), as `--year`;
    - else a ConfigError naming the file and `--year`, raised when the reader is made.
    """

    def __init__(self, path: str | Path, options: ParseOptions, what: str) -> None:
        self.stamp: tuple[int, int] | None = None
        self.tracker: YearTracker | None = None
        if options.year is not None:
            self.tracker = YearTracker(options.year)
            return
        self.stamp = name_stamp(path)
        if self.stamp is None:
            self.tracker = YearTracker(first_year(path, options, what))

    def peek(self, month: int) -> int:
        """The year of a line of `month` (not yet taken: see commit)."""
        if self.stamp is not None:
            year, stamp_month = self.stamp
            return year - 1 if month > stamp_month else year
        assert self.tracker is not None
        return self.tracker.peek(month)

    def commit(self, month: int) -> None:
        """Take a line of `month` as read (after its date proved valid)."""
        if self.tracker is not None:
            self.tracker.commit(month)


class YearTracker:
    """The year of each line of a log that writes only month and day, from a first year.

    Lines are in time order, so a month smaller than the latest line's means the log crossed a
    new year (12/31 -> 01/01). One month back is not: several processes write to one log, and a
    line stamped a moment before the month turned can follow one stamped after it. Such a line
    keeps its own year (a December line just after the new year's first lines is of the old
    year) and does not move the tracker.
    """

    def __init__(self, year: int) -> None:
        self.year = year
        self._month: int | None = None
        self._crossed = False  # this log crossed into self.year

    def peek(self, month: int) -> int:
        last = self._month
        if last is None or month == last or month == last - 1:
            return self.year
        if month < last:
            return self.year + 1
        if self._crossed and last == 1 and month == 12:
            return self.year - 1
        return self.year

    def commit(self, month: int) -> None:
        year = self.peek(month)
        if year > self.year:
            self.year, self._month, self._crossed = year, month, True
        elif year == self.year and (self._month is None or month > self._month):
            self._month = month


def csv_fields(line: str) -> list[str]:
    try:
        return next(csv.reader([line]), [])
    except csv.Error as exc:
        raise FieldError(f"not a CSV line ({exc})") from None


class CsvColumns:
    """Which column each field of a CSV log holds: from its header, `--columns`, or a default.

    The first non-blank line is a header when it names at least one known column (after the
    optional renames of `options.mapping`, site name -> canonical name); unknown header columns
    are ignored. Without a header the layout is `options.columns`, else `default(field_count)`.
    A repeat of the header line (concatenated exports) is a header again.
    """

    def __init__(
        self,
        known: Collection[str],
        required: Sequence[str],
        options: ParseOptions,
        default: Callable[[int], Sequence[str] | None],
    ) -> None:
        self.known = set(known)
        self.required = tuple(required)
        self.renames = {
            str(k).strip().lower(): v
            for k, v in (options.mapping or {}).items()
            if isinstance(v, str) and v in self.known
        }
        self.fixed: tuple[str, ...] | None = tuple(options.columns) if options.columns else None
        self.default = default
        self.header: str | None = None
        self.problem: str | None = None
        self._first = True

    def _names(self, fields: list[str]) -> list[str]:
        names = [f.strip().lower() for f in fields]
        return [self.renames.get(n, n) for n in names]

    def read(self, line: Line) -> dict[str, str] | None:
        """The line's fields by column name, or None for a header line (a counted skip)."""
        if self.header is not None and line.text == self.header:
            return None
        fields = csv_fields(line.text)
        if self._first:
            self._first = False
            names = self._names(fields)
            if any(n in self.known for n in names):
                self.header = line.text
                self.fixed = tuple(names)
                missing = [c for c in self.required if c not in names]
                if missing:
                    self.problem = f"the header (line {line.no}) has no {quote(missing[0])} column"
                    raise FieldError(f"header has no {quote(missing[0])} column")
                return None
        if self.problem:
            raise FieldError(self.problem)
        names_used = self.fixed or self.default(len(fields))
        if names_used is None:
            raise FieldError(f"{len(fields)} fields, not a layout this format knows")
        if len(fields) != len(names_used):
            raise FieldError(f"{len(fields)} fields where {len(names_used)} are expected")
        return dict(zip(names_used, fields, strict=True))


def cell(record: dict[str, str], name: str) -> str | None:
    """A CSV field, None when the column is absent or the field empty."""
    value = record.get(name)
    if value is None or not value.strip():
        return None
    return value


def canonical_value(name: str, dtype: pl.DataType, value: str | None) -> Any:
    """A field of a canonical CSV converted to its column's type (ISO 8601 times).

    Names and codes lose surrounding blanks; paths, file ids and messages are kept verbatim.
    """
    if value is None:
        return None
    if isinstance(dtype, pl.Datetime):
        return iso_time(name, value)
    if isinstance(dtype, pl.Int64 | pl.Int32):
        number = integer(name, value)
        if isinstance(dtype, pl.Int32) and number > 2**31 - 1:
            raise FieldError(f"{name} {quote(value)} is too large")
        return number
    if isinstance(dtype, pl.Float64):
        return seconds(name, value)
    return text(name, value if name in VERBATIM else value.strip())


def choice(name: str, value: str | None, allowed: Sequence[str], default: str | None) -> str:
    """One of a column's allowed codes (case-insensitive); the default when empty."""
    if value is None:
        if default is None:
            raise FieldError(f"{name} is empty")
        return default
    if value.lower() not in allowed:
        raise FieldError(f"{name} {quote(value)} is not one of {', '.join(allowed)}")
    return value.lower()


def log_rows(
    path: str | Path,
    options: ParseOptions,
    schema: Mapping[str, pl.DataType],
    row_of: Callable[[Line], dict[str, Any] | None],
) -> Iterator[Batch]:
    """The batches of a log read one line at a time: blank lines and lines `row_of` passes over
    (None) are counted skips; a FieldError is that line's refusal with its reason."""
    with LineReader(path) as reader:
        out = Collector(reader, options, schema)
        for line in reader:
            if not line.text.strip():
                out.skip()
                continue
            try:
                row = row_of(line)
            except FieldError as exc:
                out.reject(line, str(exc))
                continue
            if row is None:
                out.skip()
                continue
            out.add(row, line.no)
            if out.full():
                yield out.flush()
        yield out.flush()


def csv_log_rows(
    path: str | Path,
    options: ParseOptions,
    schema: Mapping[str, Any],
    columns: CsvColumns,
    make_row: Callable[[dict[str, str], str], dict[str, Any] | None],
) -> Iterator[Batch]:
    """The batches of a CSV log (log_rows): header lines are counted skips too."""

    def row_of(line: Line) -> dict[str, Any] | None:
        record = columns.read(line)
        return None if record is None else make_row(record, options.source)

    return log_rows(path, options, schema, row_of)
