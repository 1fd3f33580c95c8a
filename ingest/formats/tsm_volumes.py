"""IBM Spectrum Protect (TSM) volumes, as `dsmadmc` prints them in either of two layouts.

`select ... from volumes` through `dsmadmc -comma`:

    dsmadmc -id=admin -comma "select volume_name,stgpool_name,devclass_name,est_capacity_mb,
        status,access from volumes"

Without -dataonly=yes, dsmadmc prints its banner, the session lines, "ANS8000I Server command:"
and a header line of column names before the rows, and "ANS8002I Highest return code was 0."
after them: everything before the header and every ANS/ANR message is a counted skip. With
-dataonly=yes there is no header: --columns gives the order. Columns read (any order, any
case): VOLUME_NAME, STGPOOL_NAME, DEVCLASS_NAME, EST_CAPACITY_MB (Spectrum Protect's MB, 2^20
bytes), STATUS, ACCESS, LIBRARY_NAME when present. Fields may be padded with spaces.

`query volume format=detailed`: one "Label: value" line per field, the labels right-aligned on
the colon, a record per volume from its "Volume Name:" line to the next record or a blank line.
Read: Volume Name, Storage Pool Name, Device Class Name, Estimated Capacity ("2.5 T", one
decimal of binary K, M, G, T, P), Volume Status ("Filling", "Full", "Empty", "Pending") and
Access ("Read/Write", "Read-Only", "Unavailable", "Destroyed", "Offsite"). The other labels
(Pct Util, mount and error counts, dates) are passed over. A record is kept or refused on its
"Volume Name:" line (the reason names another line at fault); its other lines are counted
skips, so that every line is still a row, a refusal or a skip.

In both layouts the state comes from the access mode and the status (tape_states.tsm_state),
both words going to state_raw ("READWRITE/FULL", "Read/Write, Full"). Random-access volumes
(status On-Line or Off-Line: disk pool volumes, not tapes) are counted skips. The media type
comes from the volume label's LTO/3592 suffix when it has one (A00001L8: LTO-8), else the
device class name when it names a media type (LTO8CLASS is not one: unknown).
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from tapelens.errors import InputError
from tapelens.ingest.canonical import TAPES
from tapelens.ingest.formats.base import Batch, ParseOptions
from tapelens.ingest.formats.fields import is_message, quote
from tapelens.ingest.formats.linewise import Lines, run
from tapelens.ingest.formats.tape_states import tsm_state
from tapelens.media import BY_NAME, media_from_barcode, normalise_drive_type

KIND = "tapes"
FORMAT = "tsm-volumes"
MB = 1 << 20
UNKNOWN = "unknown"
REQUIRED = ("volume_name", "status", "access")
# Statuses of random-access (disk) volumes: not tapes.
DISK_STATUSES = ("ONLINE", "OFFLINE")
# `query volume f=d` labels read, as the comma layout's column names.
LABELS = {
    "volume name": "volume_name",
    "storage pool name": "stgpool_name",
    "device class name": "devclass_name",
    "estimated capacity": "est_capacity",
    "volume status": "status",
    "access": "access",
}
# Units of the detailed layout's capacities: Spectrum Protect's binary K, M, G, T, P.
UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}


@dataclass
class _Record:
    """One volume of a `query volume f=d` listing, its fields with the lines they came from."""

    line_no: int
    raw: str
    fields: dict[str, tuple[str, int, str]] = field(default_factory=dict)
    stray: tuple[int, str] | None = None  # the first line inside it that is not "Label: value"


def parse(path: str | Path, *, options: ParseOptions) -> Iterator[Batch]:
    """Parse a Spectrum Protect volume listing into tapes rows."""
    columns: dict[str, int] | None = (
        {c.strip().lower(): i for i, c in enumerate(options.columns)} if options.columns else None
    )
    seen: dict[str, int] = {}
    record: _Record | None = None
    detailed = False

    def keep(no: int, text: str, row: tuple[Any, ...] | str | None, out: Lines) -> None:
        if row is None:
            out.skip()
        elif isinstance(row, str):
            out.reject(no, text, row)
        else:
            out.keep_once(no, text, row, seen)

    def close(out: Lines) -> None:
        nonlocal record
        if record is not None:
            no, text, row = _detailed_row(record)
            keep(no, text, row, out)
            record = None

    def handle(no: int, text: str, out: Lines) -> None:
        nonlocal columns, record, detailed
        label, colon, value = text.partition(":")
        label = label.strip().lower()
        if columns is None and colon and label == "volume name":
            detailed = True
        if detailed:
            # Every line but a record's first is a counted skip; the first is the record's
            # row, refusal or (a disk volume) skip.
            if colon and label == "volume name":
                close(out)
                record = _Record(no, text)
                record.fields["volume_name"] = (value.strip(), no, text)
                return
            out.skip()
            if not text.strip() or is_message(text):
                close(out)
            elif record is None:
                pass  # dsmadmc's banner and session lines before the first record
            elif colon and label:
                if label in LABELS:
                    record.fields[LABELS[label]] = (value.strip(), no, text)
            elif record.stray is None:
                record.stray = (no, text)
            return
        if not text.strip() or is_message(text):
            out.skip()
            return
        try:
            fields = [f.strip() for f in next(csv.reader([text]))]
        except csv.Error:  # a bare carriage return inside the line
            if columns is None:
                out.skip()
            else:
                out.reject(no, text, "a carriage return inside the line; expected one CSV row")
            return
        names = [f.lower() for f in fields]
        if "volume_name" in names:
            columns = {n: i for i, n in enumerate(names)}
            out.skip()
            return
        if columns is None:
            out.skip()  # dsmadmc's banner and session lines before the header
            return
        missing = [c for c in REQUIRED if c not in columns]
        if missing:
            out.reject(no, text, f"the header has no {', '.join(missing).upper()} column")
            return
        if len(fields) != len(columns):
            out.reject(no, text, f"expected {len(columns)} fields, found {len(fields)}")
            return
        keep(no, text, _select_row(fields, columns), out)

    def finish(lines: Lines) -> pl.DataFrame:
        return lines.frame(TAPES).drop("raw")

    yield from run(path, options, tuple(TAPES), handle, finish, at_end=close)
    if columns is None and not detailed and seen == {}:
        name = options.extra.get("display_name", str(path))
        raise InputError(
            f"{name}: neither a header line naming VOLUME_NAME nor a 'Volume Name:' line; run"
            " dsmadmc without -dataonly=yes (or give --columns), or `query volume f=d`"
        )


def _select_row(fields: list[str], c: dict[str, int]) -> tuple[Any, ...] | str | None:
    """A tapes row from a `select` line; a reason when refused; None for a disk volume."""

    def get(name: str) -> str:
        return fields[c[name]] if name in c else ""

    capacity = None
    text = get("est_capacity_mb")
    if text:
        try:
            capacity = round(float(text) * MB)
        except ValueError:
            return f"EST_CAPACITY_MB {quote(text)} is not a number"
        if capacity < 0:
            return f"EST_CAPACITY_MB {quote(text)} is negative"
    access, status = get("access"), get("status")
    return _tape(get, capacity, f"{access.upper()}/{status.upper()}")


def _detailed_row(record: _Record) -> tuple[int, str, tuple[Any, ...] | str | None]:
    """(line, text, row or reason or None) for one `query volume f=d` record: all on the
    record's first line, a reason naming the line at fault when it is another."""
    fields = record.fields

    def get(name: str) -> str:
        return fields[name][0] if name in fields else ""

    first = (record.line_no, record.raw)
    if record.stray is not None:
        no, text = record.stray
        return (*first, f"line {no} {quote(text.strip())} is not 'Label: value'")
    missing = [label for label, name in LABELS.items() if name in REQUIRED and name not in fields]
    if missing:
        names = ", ".join(f"'{label.title()}:'" for label in missing)
        return (*first, f"the volume's record has no {names} line")
    capacity = None
    if get("est_capacity"):
        capacity = _capacity(get("est_capacity"))
        if capacity is None:
            no = fields["est_capacity"][1]
            reason = f"Estimated Capacity {quote(get('est_capacity'))} (line {no}) is not a size"
            return (*first, reason + " like 2.5 T")
    return (*first, _tape(get, capacity, f"{get('access')}, {get('status')}"))


def _capacity(text: str) -> int | None:
    """'2.5 T' -> bytes (binary units); None when it is not a number and a unit."""
    number, _, unit = text.strip().rpartition(" ")
    unit = unit.upper()
    if unit not in UNITS:
        return None
    try:
        value = float(number.replace(",", ""))
    except ValueError:
        return None
    return round(value * UNITS[unit]) if value >= 0 else None


def _tape(
    get: Callable[[str], str], capacity: int | None, raw: str
) -> tuple[Any, ...] | str | None:
    """A tapes row from the fields of either layout; a reason when refused; None for disk."""
    volume = get("volume_name")
    if not volume:
        return "the volume name is empty"
    access, status = get("access"), get("status")
    if status.replace("-", "").replace(" ", "").upper() in DISK_STATUSES:
        return None
    state = tsm_state(access, status)
    if state is None:
        return f"access {quote(access)} with status {quote(status)} is not a volume state"
    found = media_from_barcode(volume)
    devclass = normalise_drive_type(get("devclass_name"))
    if found:
        media, media_from = found.media_type, "barcode"
    elif devclass in BY_NAME:
        media, media_from = devclass, "inventory"
    else:
        media, media_from = UNKNOWN, UNKNOWN
    return (
        volume,
        None,
        media,
        get("library_name") or None,
        get("stgpool_name") or None,
        capacity,
        state,
        media_from,
        raw,
    )
