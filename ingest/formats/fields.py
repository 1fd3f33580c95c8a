"""Field parsing shared by the catalog parsers: numbers, sizes with units, times, reasons.

Every helper returns None for a value it cannot read, so that a parser can turn it into a
reject with a reason that quotes the value; none of them raises for bad input.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import polars as pl

from tapelens.errors import ParseError
from tapelens.ingest.canonical import UTC_TIME
from tapelens.ingest.formats.base import Batch, Reject

QUOTE_MAX = 60  # characters of a bad value shown in a reason

# TSM prints sizes with binary multiples: "1 KB" is 1024 bytes (IBM Spectrum Protect
# administrator's reference, QUERY CONTENT output).
BINARY_UNITS: dict[str, int] = {
    "B": 1,
    "BYTES": 1,
    "KB": 1024,
    "MB": 1024**2,
    "GB": 1024**3,
    "TB": 1024**4,
    "PB": 1024**5,
}
_SIZE = re.compile(r"^\s*([0-9][0-9,]*(?:\.[0-9]+)?|\.[0-9]+)\s*([A-Za-z]*)\s*$")
_ISO = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?"
    r"\s*(Z|[+-]\d{2}:?\d{2}|UTC)?$"
)
INT64_MAX = 2**63 - 1

# Lines that dump tools print besides data: TSM server messages (ANR/ANS codes), hsi warnings.
_MESSAGE = re.compile(r"^\s*(#|\*\*\*|AN[RSE]\d{4}[IEWSK]\b|Username:)")


def quote(value: object, limit: int = QUOTE_MAX) -> str:
    """A value for a reject reason: in double quotes, cut short when long."""
    text = str(value)
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return f'"{text}"'


def quote_expr(expr: pl.Expr, limit: int = QUOTE_MAX) -> pl.Expr:
    """`quote` as a Polars expression (for reasons built on the refused rows only)."""
    text = expr.fill_null("")
    cut = pl.when(text.str.len_chars() > limit).then(text.str.slice(0, limit - 3) + pl.lit("..."))
    return pl.lit('"') + cut.otherwise(text) + pl.lit('"')


_MESSAGE_START = frozenset("#*AU \t")


def is_message(text: str) -> bool:
    """A comment, warning or server message line rather than data."""
    return bool(text) and text[0] in _MESSAGE_START and _MESSAGE.match(text) is not None


def message_expr(line: pl.Expr) -> pl.Expr:
    return line.str.contains(_MESSAGE.pattern)


def parse_count(text: str) -> int | None:
    """A non-negative integer written with digits only (sizes, positions, ids)."""
    text = text.strip()
    if not (text.isascii() and text.isdigit()):
        return None
    value = int(text)
    return value if value <= INT64_MAX else None


def parse_size(text: str, units: dict[str, int] = BINARY_UNITS) -> int | None:
    """'73,191 B', '1.5 GB', '4021002371' -> bytes (rounded to a whole byte)."""
    m = _SIZE.match(text)
    if not m:
        return None
    number, unit = m.group(1).replace(",", ""), m.group(2).upper()
    if unit == "":
        unit = "B"
    factor = units.get(unit)
    if factor is None:
        return None
    value = round(float(number) * factor) if "." in number else int(number) * factor
    return value if value <= INT64_MAX else None


def size_bound(text: str, units: dict[str, int] = BINARY_UNITS) -> int | None:
    """How far the bytes a printed size stands for may be from parse_size's value: half a unit
    of its last digit ("1.5 GB": 0.05 GiB), None for a count of bytes (exact) or a non-size."""
    m = _SIZE.match(text)
    factor = units.get((m.group(2) or "B").upper()) if m else None
    if m is None or factor is None or factor == 1:
        return None
    decimals = len(m.group(1).partition(".")[2])
    return factor // (2 * 10**decimals)


def parse_iso_utc(text: str) -> datetime | None:
    """ISO 8601 date/time ('2019-04-26 02:25:11', '...T...Z', '+02:00'), naive = UTC."""
    m = _ISO.match(text.strip())
    if not m:
        return None
    year, month, day, hour, minute, second, frac, zone = m.groups()
    try:
        when = datetime(
            int(year),
            int(month),
            int(day),
            int(hour or 0),
            int(minute or 0),
            int(second or 0),
            int((frac or "0")[:6].ljust(6, "0")),
            tzinfo=UTC,
        )
    except ValueError:
        return None
    if zone and zone not in ("Z", "UTC"):
        sign = 1 if zone[0] == "+" else -1
        digits = zone[1:].replace(":", "")
        minutes = int(digits[:2]) * 60 + int(digits[2:])
        if int(digits[:2]) > 23 or int(digits[2:]) > 59:
            return None
        when = when - sign * timedelta(minutes=minutes)
    return when


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def micros(when: datetime) -> int:
    """Microseconds since 1970 (exact, unlike datetime.timestamp())."""
    return (when - EPOCH) // timedelta(microseconds=1)


def parse_epoch_utc(text: str) -> datetime | None:
    """Seconds since 1970 (integer or decimal) -> UTC time."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    if not (0 <= value < 253_402_300_800):  # before year 10000
        return None
    return datetime.fromtimestamp(value, UTC)


def time_expr(text: pl.Expr, time_format: str | None = None) -> pl.Expr:
    """Strings to UTC times: with `time_format` (strftime codes), else ISO 8601 or epoch seconds.

    Times without a zone are taken as UTC; times with an offset are converted to UTC.
    """
    s = text.str.strip_chars()
    if time_format:
        return s.str.strptime(UTC_TIME, time_format, strict=False)
    # Normalise ISO variants to one shape, then try with and without an offset.
    iso = s.str.replace(r"^(\d{4}-\d{2}-\d{2})[T ]", "${1}T").str.replace(r"(?:Z|UTC)$", "")
    with_offset = iso.str.replace(r"([+-]\d{2})(\d{2})$", "${1}:${2}")
    candidates = [
        with_offset.str.strptime(UTC_TIME, "%Y-%m-%dT%H:%M:%S%.f%:z", strict=False),
        with_offset.str.strptime(UTC_TIME, "%Y-%m-%dT%H:%M%:z", strict=False),
        iso.str.strptime(UTC_TIME, "%Y-%m-%dT%H:%M:%S%.f", strict=False),
        iso.str.strptime(UTC_TIME, "%Y-%m-%dT%H:%M", strict=False),
        iso.str.strptime(UTC_TIME, "%Y-%m-%d", strict=False),
        pl.when(s.str.contains(r"^\d{1,11}$"))
        .then(s.str.to_integer(strict=False) * 1_000_000)
        .cast(pl.Datetime("us"))
        .dt.replace_time_zone("UTC"),
    ]
    return pl.coalesce(candidates)


ISO_Z = "%Y-%m-%dT%H:%M:%SZ"  # the canonical exports' form, tried first


def parse_times(text: pl.Series, time_format: str | None = None) -> pl.Series:
    """`time_expr` on a Series, cheaply: the common ISO form first for all values, the other
    shapes only for the values it did not read."""
    s = text.str.strip_chars()
    if time_format:
        return s.str.strptime(UTC_TIME, time_format, strict=False)
    out = s.str.strptime(UTC_TIME, ISO_Z, strict=False)
    missing = (out.is_null() & s.is_not_null() & (s != "")).arg_true()
    if missing.len():
        others = pl.select(time_expr(pl.lit(s.gather(missing)))).to_series()
        out = out.scatter(missing, others)
    return out


def batches(
    frame: pl.DataFrame,
    rejects: list[Reject],
    skipped: int,
    bytes_read: int,
    batch_rows: int,
) -> Iterator[Batch]:
    """Cut one block's result into Batches of at most `batch_rows` rows.

    The block's rejects and skip count travel with its first batch.
    """
    step = max(1, batch_rows)
    if frame.height <= step:
        yield Batch(frame, rejects, skipped, bytes_read)
        return
    for start in range(0, frame.height, step):
        first = start == 0
        yield Batch(
            frame.slice(start, step),
            rejects if first else [],
            skipped if first else 0,
            bytes_read,
        )


def check_strict(name: str, strict: bool, rejects: list[Reject]) -> None:
    """In strict mode, the first refused line stops the parse."""
    if strict and rejects:
        first = min(rejects, key=lambda r: r.line_no)
        raise ParseError(name, first.line_no, first.reason)
