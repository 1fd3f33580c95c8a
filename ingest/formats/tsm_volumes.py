"""IBM Spectrum Protect (TSM) volumes: `select * from volumes` through `dsmadmc -comma`.

    dsmadmc -id=admin -comma "select volume_name,stgpool_name,devclass_name,est_capacity_mb,
        status,access from volumes"

Without -dataonly=yes, dsmadmc prints its banner, the session lines, "ANS8000I Server command:"
and a header line of column names before the rows, and "ANS8002I Highest return code was 0."
after them: everything before the header and every ANS/ANR message is a counted skip. With
-dataonly=yes there is no header: --columns gives the order. Columns read (any order, any
case): VOLUME_NAME, STGPOOL_NAME, DEVCLASS_NAME, EST_CAPACITY_MB (Spectrum Protect's MB, 2^20
bytes), STATUS, ACCESS, LIBRARY_NAME when present. Fields may be padded with spaces.
The state comes from ACCESS and STATUS (tape_states.tsm_state); both words go to state_raw
("READWRITE/FULL"). The media type comes from the volume label's LTO/3592 suffix when it has
one (A00001L8: LTO-8), else the device class name when it names a media type (LTO8CLASS is not
one: unknown).
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl

from tapelens.analysis.media import BY_NAME, media_from_barcode, normalise_drive_type
from tapelens.errors import InputError
from tapelens.ingest.canonical import TAPES
from tapelens.ingest.formats.base import Batch, ParseOptions
from tapelens.ingest.formats.fields import is_message, quote
from tapelens.ingest.formats.linewise import Lines, run
from tapelens.ingest.formats.tape_states import tsm_state

KIND = "tapes"
FORMAT = "tsm-volumes"
MB = 1 << 20
UNKNOWN = "unknown"
REQUIRED = ("volume_name", "status", "access")


def parse(path: str | Path, *, options: ParseOptions) -> Iterator[Batch]:
    """Parse a Spectrum Protect volume listing into tapes rows."""
    columns: dict[str, int] | None = (
        {c.strip().lower(): i for i, c in enumerate(options.columns)} if options.columns else None
    )
    seen: dict[str, int] = {}

    def handle(no: int, text: str, out: Lines) -> None:
        nonlocal columns
        if not text.strip() or is_message(text):
            out.skip()
            return
        fields = [f.strip() for f in next(csv.reader([text]))]
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
        row = _row(fields, columns)
        if isinstance(row, str):
            out.reject(no, text, row)
            return
        if row[0] in seen:
            out.reject(no, text, f"volume {quote(row[0])} already listed on line {seen[row[0]]}")
            return
        seen[row[0]] = no
        out.keep(no, text, row)

    def finish(lines: Lines) -> pl.DataFrame:
        return lines.frame(TAPES).drop("raw")

    yield from run(path, options, tuple(TAPES), handle, finish)
    if columns is None and seen == {}:
        name = options.extra.get("display_name", str(path))
        raise InputError(
            f"{name}: no header line naming VOLUME_NAME; run dsmadmc without -dataonly=yes"
            " (or give --columns)"
        )


def _row(fields: list[str], c: dict[str, int]) -> tuple[Any, ...] | str:
    def get(name: str) -> str:
        return fields[c[name]] if name in c else ""

    volume = get("volume_name")
    if not volume:
        return "VOLUME_NAME is empty"
    access, status = get("access"), get("status")
    state = tsm_state(access, status)
    if state is None:
        return f"ACCESS {quote(access)} with STATUS {quote(status)} is not a volume state"
    capacity = None
    if get("est_capacity_mb"):
        try:
            capacity = round(float(get("est_capacity_mb")) * MB)
        except ValueError:
            return f"EST_CAPACITY_MB {quote(get('est_capacity_mb'))} is not a number"
        if capacity < 0:
            return f"EST_CAPACITY_MB {quote(get('est_capacity_mb'))} is negative"
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
        f"{access.upper()}/{status.upper()}",
    )
