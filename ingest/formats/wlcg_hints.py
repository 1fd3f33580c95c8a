"""WLCG archive metadata: what one written file's collocation hints say, and how sure that is.

Rucio builds the metadata per file sent to tape (its FTS3 transfertool's tape metadata plugins,
rucio/rucio lib/rucio/transfertool/fts3_plugins.py; CMS's policy package, dmwm/CMSRucio
src/policy/CMSRucioPolicy/algorithms/tape_colocation.py):

    {"collocation_hints": {"0": "data", "1": "RAW", "2": "Run2024C", "3": "/ParkingVBF5/..."},
     "additional_hints": {"activity": "T0 Tape", "3": {"length": 1520, "size": 4100000000000}},
     "file_metadata": {"size": 4021002371, "md5": null, "adler32": "7c0a91e3"},
     "schema_version": 1}

FTS keeps it per file as JSON text (t_file.archive_metadata; fts-rest-flask stores json.dumps of
the submitted object), and the storage receives it base64-encoded in the `ArchiveMetadata`
HTTP header, which dCache hands its HSM script as `-archive_metadata=` (dCache/dcache
DcacheResourceFactory.java, ScriptNearlineStorage.java). Either form is read here.

Every value ends as one of: ok (at least one level named), empty (no level named: `{}`, only
empty strings, or no collocation_hints at all), absent (no metadata), malformed (not JSON, or
JSON of another shape), truncated (JSON that stops before it closes: cut at a column's or an
export's limit, such as the 4,096 bytes Rucio keeps metadata under). "contradictory" is decided
later, across records of a file (wlcg_hints_inputs.mark_contradictions).
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import json
from dataclasses import dataclass
from typing import Any

# Broad to narrow. The WLCG archive metadata names "0" to "3"; ATLAS's policy package sends a
# fifth, "4", for AOD data (ATLASArchiveMetadataPlugin.get_atlas_archive_metadata: data type,
# stream, project, version, then the parent dataset).
LEVELS = ("0", "1", "2", "3", "4")
NONE_PER_LEVEL: tuple[None, ...] = (None,) * len(LEVELS)
_LEVEL_AT = {level: n for n, level in enumerate(LEVELS)}
REASON_CHARS = 200  # a reason quotes at most this much of the metadata


@dataclass(frozen=True)
class Hints:
    """What a record's archive metadata says of its file's collocation."""

    status: str  # ok | empty | absent | malformed | truncated
    reason: str | None = None
    levels: tuple[str | None, ...] = NONE_PER_LEVEL
    lengths: tuple[int | None, ...] = NONE_PER_LEVEL
    sizes: tuple[int | None, ...] = NONE_PER_LEVEL
    activity: str | None = None
    schema_version: int | None = None
    file_size: int | None = None  # file_metadata.size, where the record gives no size
    raw: str | None = None  # kept when the metadata cannot be read

    @property
    def refused(self) -> bool:
        """Whether the metadata itself is refused (its line is reported with the reason)."""
        return self.status in ("malformed", "truncated")

    def digest(self) -> str:
        """md5 of the levels (or of the raw text when unreadable): one row per distinct hint.
        Levels 0-3 alone when level 4 is not named, as before level 4 was read, so that a
        record loaded again keeps its row."""
        if self.refused:
            return _digest(("raw", self.raw or ""))
        levels = self.levels if self.levels[4] is not None else self.levels[:4]
        return _digest(("levels", *(v or "" for v in levels)))

    def values(self) -> tuple[Any, ...]:
        """The hint columns of a write_hints row, in the order of HINT_COLUMNS."""
        return (
            self.activity,
            *self.levels,
            *self.lengths,
            *self.sizes,
            self.schema_version,
            self.status,
            self.reason,
            self.raw,
            self.digest(),
        )


# The columns of a write_hints row that the hints fill (Hints.values), in the table's order.
HINT_COLUMNS = (
    "activity",
    *(f"level_{n}" for n in range(len(LEVELS))),
    *(f"length_{n}" for n in range(len(LEVELS))),
    *(f"size_{n}" for n in range(len(LEVELS))),
    "schema_version",
    "status",
    "reason",
    "raw_metadata",
    "levels_digest",
)


@functools.lru_cache(maxsize=65_536)
def _digest(parts: tuple[str, ...]) -> str:
    """md5 of the parts joined by \\x1f; a dataset's files share their levels."""
    return hashlib.md5("\x1f".join(parts).encode(), usedforsecurity=False).hexdigest()


# How many distinct values a MetadataReader remembers before it starts afresh: a dataset's hints
# repeat for each of its files, and a few tens of thousands of datasets are open at once at most.
CACHE_VALUES = 20_000
# Longer values are read each time: they are unreadable (over the 4,096 bytes Rucio allows), and
# would make the remembered values hold tens of megabytes.
CACHE_CHARS = 4_096


class _Shape(ValueError):
    """The metadata is JSON, but not of the shape WLCG archive metadata has."""


def read_metadata(value: str | None) -> Hints:
    """The hints of one archive metadata value, as FTS stores it (JSON) or as the storage
    receives it (base64 of the JSON)."""
    if value is None or not value.strip() or value.strip() == "NULL":
        return Hints("absent")
    text = value.strip()
    if text[0] not in '{["':  # JSON begins so; base64 never does
        decoded = _base64(text)
        if decoded is None:
            return _unreadable(value, "archive metadata is neither JSON nor base64 of JSON")
        text = decoded
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        if _cut_short(text):
            size = len(text.encode())
            return Hints(
                "truncated",
                f"archive metadata stops after {size:,} bytes before its JSON closes (cut short)",
                raw=value,
            )
        return _unreadable(value, f"archive metadata is not JSON ({exc.msg} at {exc.pos})")
    try:
        return _hints(doc)
    except _Shape as exc:
        return _unreadable(value, str(exc))


def _unreadable(value: str, reason: str) -> Hints:
    return Hints("malformed", reason, raw=value)


def _base64(text: str) -> str | None:
    try:
        raw = base64.b64decode(text, validate=True)
        decoded = raw.decode("utf-8").strip()
    except (binascii.Error, ValueError):
        return None
    return decoded if decoded[:1] in ("{", "[") else None


def _cut_short(text: str) -> bool:
    """Whether `text` is the start of a JSON document that ends before it closes: brackets and
    strings still open at the end, and none closed out of turn before it."""
    stack: list[str] = []
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]" and (not stack or stack.pop() != ch):
            return False
    return in_string or bool(stack)


def _hints(doc: object) -> Hints:
    if not isinstance(doc, dict):
        raise _Shape(f"archive metadata is a JSON {_kind(doc)}, not an object")
    levels = _levels(doc.get("collocation_hints"))
    extra = doc.get("additional_hints")
    if extra is not None and not isinstance(extra, dict):
        raise _Shape(f"additional_hints is a JSON {_kind(extra)}, not an object")
    extra = extra or {}
    activity = extra.get("activity")
    if activity is not None and not isinstance(activity, str):
        raise _Shape(f"additional_hints.activity is a JSON {_kind(activity)}, not a string")
    lengths: list[int | None] = [None] * len(LEVELS)
    sizes: list[int | None] = [None] * len(LEVELS)
    for n, level in enumerate(LEVELS):
        announced = extra.get(level)
        if announced is None:
            continue
        if not isinstance(announced, dict):
            raise _Shape(f"additional_hints.{level} is a JSON {_kind(announced)}, not an object")
        lengths[n] = _count(announced.get("length"), f"additional_hints.{level}.length")
        sizes[n] = _count(announced.get("size"), f"additional_hints.{level}.size")
    version = doc.get("schema_version")
    if version is not None and (not isinstance(version, int) or isinstance(version, bool)):
        raise _Shape(f"schema_version {json.dumps(version)[:40]} is not an integer")
    file_size = _file_size(doc.get("file_metadata"))
    named = any(v is not None for v in levels)
    reason = None
    if not named:
        reason = (
            "no collocation_hints"
            if doc.get("collocation_hints") is None
            else "collocation_hints names no level"
        )
    return Hints(
        "ok" if named else "empty",
        reason,
        tuple(levels),
        tuple(lengths),
        tuple(sizes),
        activity or None,
        version,
        file_size,
    )


def _file_size(file_meta: object) -> int | None:
    """The file's size as file_metadata gives it (an object that is not is ignored)."""
    if isinstance(file_meta, dict) and file_meta.get("size") is not None:
        return _count(file_meta.get("size"), "file_metadata.size")
    return None


def _levels(hints: object) -> list[str | None]:
    levels: list[str | None] = [None] * len(LEVELS)
    if hints is None:
        return levels
    if not isinstance(hints, dict):
        raise _Shape(f"collocation_hints is a JSON {_kind(hints)}, not an object")
    for key, value in hints.items():
        at = _LEVEL_AT.get(key)
        if at is None:
            raise _Shape(f'collocation level "{key[:20]}" is not one of 0-4')
        if value is None:
            continue
        if not isinstance(value, str):
            raise _Shape(f'collocation level "{key}" is a JSON {_kind(value)}, not a string')
        if "\x00" in value:
            raise _Shape(f'collocation level "{key}" contains a NUL character')
        levels[at] = value.strip() or None  # Rucio's placeholder is the empty string
    return levels


def _count(value: object, name: str) -> int | None:
    """A file or byte count: an integer, or a float with no fraction (JSON's 4.1e12)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Shape(f"{name} is a JSON {_kind(value)}, not a number")
    if isinstance(value, float) and (value != value or not value.is_integer()):
        raise _Shape(f"{name} {value} is not a whole number")
    number = int(value)
    if number < 0 or number >= 2**63:
        raise _Shape(f"{name} {number} is out of range")
    return number


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    return "number"


class MetadataReader:
    """read_metadata of many records, each distinct value read once: a dataset's files often
    share their metadata whole (no per-file size or checksum in it, or no hints at all). The
    remembered values are bounded (`limit`); results are read_metadata's, value for value."""

    def __init__(self, limit: int = CACHE_VALUES) -> None:
        self.limit = limit
        self._known: dict[str, Hints] = {}

    def read(self, value: str | None) -> Hints:
        if value is None or len(value) > CACHE_CHARS:
            return read_metadata(value)
        hints = self._known.get(value)
        if hints is None:
            if len(self._known) >= self.limit:
                self._known.clear()
            hints = self._known[value] = read_metadata(value)
        return hints
