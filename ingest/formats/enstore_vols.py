"""Fermilab Enstore `enstore vol --vols`: the volume inventory with each volume's system inhibit.

Printed by src/volume_clerk_client.py (show_volume_header, show_volume) as

    label  avail.   (system_inhibit[0] time  system_inhibit[1] time)   library  volume_family

each line "%-16s %9s   (%-10s %9s %-8s %9s)   %-16s %-36s", then the volume's comment after a
space when it has one. avail. is the space left (capacity_str: GiB to two decimals, "35.87GB"),
not the capacity, so capacity_bytes stays empty; the times ("%m%d-%H%M", blank when never set)
are when each inhibit was set. The state comes from the system inhibit pair
(tape_states.enstore_state: NOACCESS, NOTALLOWED, DELETED, writing, then readonly, full,
migrating, migrated, duplicating, duplicated, cloning, cloned, none), kept as "first/second" in
state_raw. The volume family (storage_group.file_family.wrapper) is the pool. The media type
comes from the label's LTO/3592 suffix, else a library named after an LTO generation
(CD-LTO8F1: LTO-8), else "unknown". A volume listed twice is refused the second time.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl

from tapelens.ingest.canonical import TAPES
from tapelens.ingest.formats.base import Batch, ParseOptions
from tapelens.ingest.formats.fields import is_message, quote
from tapelens.ingest.formats.linewise import Lines, run
from tapelens.ingest.formats.tape_states import enstore_state
from tapelens.media import BY_NAME, media_from_barcode

KIND = "tapes"
FORMAT = "enstore-vols"
UNKNOWN = "unknown"
_LINE = re.compile(
    r"^(?P<label>\S+)\s+(?P<avail>-?[0-9]+\.[0-9]{2}GB)\s+"
    r"\(\s*(?P<first>\S+)\s+(?:[0-9]{4}-[0-9]{4}\s+)?(?P<second>\S+?)\s*(?:[0-9]{4}-[0-9]{4}\s*)?\)"
    r"\s+(?P<library>\S+)\s+(?P<family>\S+)(?:\s.*)?$"
)
_LTO_LIBRARY = re.compile(r"LTO-?([0-9]{1,2})", re.IGNORECASE)
EXPECTED = "label, avail. (NN.NNGB), (system_inhibit pair), library and volume family"


def parse(path: str | Path, *, options: ParseOptions) -> Iterator[Batch]:
    """Parse an `enstore vol --vols` listing into tapes rows."""
    seen: dict[str, int] = {}

    def handle(no: int, text: str, out: Lines) -> None:
        body = text.strip()
        if not body or is_message(body) or body.split()[0] == "label":
            out.skip()  # blank lines and the header
            return
        row = _row(body)
        if isinstance(row, str):
            out.reject(no, text, row)
            return
        out.keep_once(no, text, row, seen)

    def finish(lines: Lines) -> pl.DataFrame:
        return lines.frame(TAPES).drop("raw")

    yield from run(path, options, tuple(TAPES), handle, finish)


def _row(body: str) -> tuple[Any, ...] | str:
    """The TAPES columns of one volume line, or the reason it has none."""
    found = _LINE.match(body)
    if not found:
        return f"not a volume line: expected {EXPECTED}"
    first, second = found["first"], found["second"]
    state = enstore_state(first, second)
    if state is None:
        return f"system inhibit {quote(first + ' ' + second)} is not a pair of Enstore inhibits"
    label, library = found["label"], found["library"]
    media, media_from = UNKNOWN, UNKNOWN
    by_label = media_from_barcode(label)
    by_library = _LTO_LIBRARY.search(library)
    if by_label:
        media, media_from = by_label.media_type, "barcode"
    elif by_library and f"LTO-{int(by_library[1])}" in BY_NAME:
        media, media_from = f"LTO-{int(by_library[1])}", "inventory"
    return (
        label,
        None,
        media,
        library,
        found["family"],
        None,
        state,
        media_from,
        f"{first}/{second}",
    )
