"""Tape inventory CSV: volume,barcode,media_type,library,pool,capacity_bytes,state.

Columns come from the header line (any order; unknown columns ignored), ParseOptions.columns,
or the order above. The media type is the inventory's when it names a known type (LTO8 and
lto-8 are read as LTO-8); when it is empty or "unknown", the LTO/3592 suffix of the barcode
(A85532L8 -> LTO-8), else of the volume name (VTS104L7); else "unknown". `media_from` records
which (inventory, barcode, unknown). The state is a canonical word, one system's own word
(tape_states.py: every word CTA, Spectrum Protect, HPSS and Enstore use), or a pair of them
(Spectrum Protect's ACCESS/STATUS, an Enstore inhibit pair), kept as given in state_raw; an
optional `full` column (CTA's flag, true/false) decides CTA's ACTIVE, which without it is
"filling" (in service). An empty state is "unknown", a word no system uses is refused. A
volume listed twice is refused the second time (one row per cartridge).
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl

from tapelens.errors import ConfigError, ParseError
from tapelens.ingest.canonical import TAPES
from tapelens.ingest.formats.base import Batch, ParseOptions
from tapelens.ingest.formats.fields import is_message, parse_count, quote
from tapelens.ingest.formats.linewise import Lines, run
from tapelens.ingest.formats.tape_states import any_state, is_full
from tapelens.media import BY_NAME, media_from_barcode, normalise_drive_type
from tapelens.tape_states import STATES

KIND = "tapes"
FORMAT = "csv"

COLUMNS = ("volume", "barcode", "media_type", "library", "pool", "capacity_bytes", "state")
UNKNOWN = "unknown"


def parse(path: str | Path, *, options: ParseOptions) -> Iterator[Batch]:
    """Parse a tape inventory into tapes rows."""
    columns: dict[str, int] | None = _columns(options.columns) if options.columns else None
    seen: dict[str, int] = {}

    def handle(no: int, text: str, out: Lines) -> None:
        nonlocal columns
        if not text.strip() or is_message(text):
            out.skip()
            return
        fields = next(csv.reader([text])) if '"' in text else text.split(",")
        names = [f.strip().lower() for f in fields]
        if columns is None and "volume" in names:
            try:
                columns = _columns(names)
            except ConfigError as exc:
                raise ParseError(path, no, str(exc)) from None
            out.skip()
            return
        c = columns or _columns(COLUMNS)
        if len(fields) != c["#"]:
            out.reject(no, text, f"expected {c['#']} comma-separated fields, found {len(fields)}")
            return
        row = _row(fields, c)
        if isinstance(row, str):
            out.reject(no, text, row)
            return
        out.keep_once(no, text, row, seen)

    def finish(lines: Lines) -> pl.DataFrame:
        return lines.frame(TAPES).drop("raw")

    yield from run(path, options, tuple(TAPES), handle, finish)


def _columns(names: tuple[str, ...] | list[str]) -> dict[str, int]:
    index = {n.strip().lower(): i for i, n in reversed(list(enumerate(names)))}
    if "volume" not in index:
        raise ConfigError("--columns", "the header line or --columns", "no volume column")
    index["#"] = len(names)
    return index


def _row(fields: list[str], c: dict[str, int]) -> tuple[Any, ...] | str:
    """The TAPES columns of one inventory line, or the reason it has none."""

    def get(name: str) -> str:
        return fields[c[name]].strip() if name in c else ""

    volume = get("volume")
    if not volume:
        return "volume is empty"
    barcode = get("barcode")
    given = get("media_type")
    if given and given.lower() != UNKNOWN:
        name = normalise_drive_type(given)
        if name not in BY_NAME:
            known = ", ".join(BY_NAME)
            return f"media type {quote(given)} is not one of {known}"
        media, media_from = name, "inventory"
    else:
        found = media_from_barcode(barcode) if barcode else None
        found = found or media_from_barcode(volume)
        media, media_from = (found.media_type, "barcode") if found else (UNKNOWN, UNKNOWN)
    capacity_text = get("capacity_bytes")
    capacity = parse_count(capacity_text) if capacity_text else None
    if capacity_text and capacity is None:
        return f"capacity_bytes {quote(capacity_text)} is not a number of bytes"
    raw = get("state")
    full_text = get("full")
    full = is_full(full_text) if full_text else None
    if full_text and full is None:
        return f"full {quote(full_text)} is neither true nor false"
    state = any_state(raw, full) if raw else UNKNOWN
    if state is None:
        return (
            f"state {quote(raw)} is none of {', '.join(STATES)} nor a CTA, Spectrum Protect,"
            " HPSS or Enstore state"
        )
    return (
        volume,
        barcode or None,
        media,
        get("library") or None,
        get("pool") or None,
        capacity,
        state,
        media_from,
        raw or None,
    )
