"""CERN CTA `cta-admin tape ls`: the tape inventory, as its text table or as JSON lines.

Text, as cta-admin's text formatter prints it: a header line (wrapped in ANSI colour codes),
then one line per tape, every column right-aligned to its widest cell (header included) and
followed by one space, empty cells shown as "-", the last column (comment) left-aligned. Cells
can hold spaces (a state reason, a time "2024-06-02 13:20"), so columns are cut where the
header says they end rather than split on spaces. Columns used: vid, media type, library,
tapepool, capacity (as dataSizeToStr prints it: 18.0T), full, state, state reason.
JSON (`cta-admin --json tape ls`): one object per line, or an array one object per line, with
vid, mediaType, logicalLibrary, tapepool, capacity (bytes), full, state (camelCase or
snake_case).
The state is mapped with the full flag (tape_states.cta_state); CTA's own word goes to
state_raw. A tape listed twice is refused the second time.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl

from tapelens.ingest.canonical import TAPES
from tapelens.ingest.formats.base import Batch, ParseOptions
from tapelens.ingest.formats.cta_tf import size_of
from tapelens.ingest.formats.fields import is_message, quote
from tapelens.ingest.formats.linewise import Lines, run
from tapelens.ingest.formats.tape_states import cta_state, is_full
from tapelens.media import BY_NAME, media_from_barcode, normalise_drive_type

KIND = "tapes"
FORMAT = "cta-tape-ls"
UNKNOWN = "unknown"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
# The header's column names, as cta-admin prints them, and the JSON names of those read.
WANTED = {
    "vid": ("vid",),
    "media type": ("mediaType", "media_type"),
    "library": ("logicalLibrary", "logical_library", "library"),
    "tapepool": ("tapepool", "tapePool"),
    "capacity": ("capacity",),
    "full": ("full",),
    "state": ("state",),
}


def parse(path: str | Path, *, options: ParseOptions) -> Iterator[Batch]:
    """Parse a CTA tape listing into tapes rows."""
    spans: dict[str, tuple[int, int]] = {}
    seen: dict[str, int] = {}

    def handle(no: int, text: str, out: Lines) -> None:
        body = _ANSI.sub("", text).rstrip()
        if not body.strip() or is_message(body) or not body.strip("[],"):
            out.skip()
            return
        stripped = body.strip()
        if stripped.startswith(("{", "[")):
            fields = _json_fields(stripped.strip("[],"))
        elif stripped.startswith("vid "):
            spans.clear()
            spans.update(_header(body))
            out.skip()
            return
        elif not spans:
            out.reject(no, text, "a tape line before the header line (vid  media type ...)")
            return
        else:
            fields = {name: body[a:b].strip() for name, (a, b) in spans.items()}
        row = fields if isinstance(fields, str) else _row(fields)
        if isinstance(row, str):
            out.reject(no, text, row)
            return
        out.keep_once(no, text, row, seen, "vid")

    def finish(lines: Lines) -> pl.DataFrame:
        return lines.frame(TAPES).drop("raw")

    yield from run(path, options, tuple(TAPES), handle, finish)


def _header(header: str) -> dict[str, tuple[int, int]]:
    """Where each wanted column lies: from after the previous name's end to its own end."""
    spans: dict[str, tuple[int, int]] = {}
    start = 0
    for name, end in _split_names(header):
        if name in WANTED:
            spans[name] = (start, end)
        start = end
    return spans


def _split_names(header: str) -> list[tuple[str, int]]:
    """The header's column names with their end positions (known multi-word names kept)."""
    known = (
        "media type",
        "encryption key name",
        "last fseq",
        "from castor",
        "state reason",
        "label drive",
        "label time",
        "last w drive",
        "last w time",
        "w mounts",
        "last r drive",
        "last r time",
        "r mounts",
    )
    found: list[tuple[str, int]] = []
    at = 0
    while at < len(header):
        while at < len(header) and header[at] == " ":
            at += 1
        if at >= len(header):
            break
        name = next((k for k in known if header.startswith(k, at)), None)
        if name is None:
            end = header.find(" ", at)
            end = len(header) if end < 0 else end
            name = header[at:end]
        found.append((name, at + len(name)))
        at += len(name)
    return found


def _json_fields(body: str) -> dict[str, str] | str:
    try:
        doc = json.loads(body)
        # JSON may escape a lone surrogate (\ud800), which no UTF-8 text can hold.
        json.dumps(doc, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return "a JSON string holds a lone surrogate (not valid Unicode)"
    except (ValueError, RecursionError):
        return "not a JSON object"
    if not isinstance(doc, dict):
        return "not a JSON object"
    out: dict[str, str] = {}
    for name, keys in WANTED.items():
        value: Any = next((doc[k] for k in keys if doc.get(k) is not None), "")
        out[name] = str(value).lower() if isinstance(value, bool) else str(value)
    return out


def _row(fields: dict[str, str]) -> tuple[Any, ...] | str:
    vid = fields.get("vid", "")
    if not vid or vid == "-":
        return "vid is empty"
    full = is_full(fields.get("full", ""))
    if full is None:
        return f"full {quote(fields.get('full', ''))} is not true or false"
    word = fields.get("state", "")
    state = cta_state(word, full)
    if state is None:
        return f"state {quote(word)} is not a CTA tape state (ACTIVE, DISABLED, BROKEN, ...)"
    capacity_text = fields.get("capacity", "")
    capacity = None
    if capacity_text and capacity_text != "-":
        size = size_of(capacity_text)
        if size is None:
            return f"capacity {quote(capacity_text)} is not a size"
        capacity = size[0]
    given = fields.get("media type", "")
    name = normalise_drive_type(given) if given and given != "-" else ""
    if re.fullmatch(r"3592[A-Z]{2}", name):  # CTA writes 3592JE for the 3592-JE cartridge
        name = f"3592-{name[4:]}"
    if name in BY_NAME:
        media, media_from = name, "inventory"
    else:
        found = media_from_barcode(vid)
        media, media_from = (found.media_type, "barcode") if found else (UNKNOWN, UNKNOWN)
    library = fields.get("library", "")
    pool = fields.get("tapepool", "")
    return (
        vid,
        None,
        media,
        library if library not in ("", "-") else None,
        pool if pool not in ("", "-") else None,
        capacity,
        state,
        media_from,
        word,
    )
