"""CERN CTA tape daemon log (JSON lines): file reads as transfers, tape sessions as mounts.

Per file, "File successfully read from tape" carries fileId, fSeq, positionTime, transferTime,
totalTime, dataVolume; per session, "Tape session finished" carries tapeVid, mountTime,
positionTime, unloadTime, unmountTime, files, dataVolume (docs/formats/cta-taped.md). Every line has
epoch_time, hostname, pid and tid. A file line does not name its tape: the session line that
follows it on the same (hostname, pid, tid) does, so file lines wait per session key and become
rows when their session line arrives. File lines whose session never finishes are rejects at the
end, and so are those of a session line that is itself refused.

Choices (every log time is written when the action ends; times are rounded to the second):
- transfer: duration_s = totalTime (else positionTime + transferTime): like every duration in
  tapelens it includes the positioning before the read, which locate_s = positionTime tells
  apart; started_at = epoch_time - duration_s; position = fSeq; size_bytes = dataVolume;
  host = hostname; drive = the session's tapeDrive.
- a file line with a fileId whose message tells of an error or failure (a read error, a failed
  mount for this file) is a transfer with status failed; its errorMessage (or the message) is
  the error.
- mount: requested_at = the session start: epoch_time - totalTime when given, else the first
  file's start minus mountTime, else epoch_time minus mountTime, positionTime, unloadTime and
  unmountTime; mounted_at = requested_at + mountTime (the cartridge is loaded and ready);
  dismounted_at = epoch_time - unmountTime (the drive let it go; the robot's return follows),
  the same moments the HPSS PVL log gives.
- any other message is a counted skip; as are session lines when reading transfers and file
  lines when reading mounts (each is accounted as a row by the other reading).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from tapelens.ingest.canonical import MOUNTS, TRANSFERS
from tapelens.ingest.formats.base import Batch, Collector, Line, LineReader, ParseOptions
from tapelens.ingest.formats.logfields import (
    FieldError,
    before,
    epoch_time,
    quote,
    seconds,
    text,
    whole_second,
)

KIND = "transfers"
FORMAT = "cta-taped"
READ_OK = "File successfully read from tape"
SESSION_END = "Tape session finished"
_FAILURE = re.compile(r"(?i)\b(error|errors|fail|failed|failure)\b")
# mountType of a session (CTA's MountType names) -> purpose
PURPOSES = {"retrieve": "read", "archiveforuser": "write", "archiveforrepack": "write"}

Key = tuple[str, str, str]


@dataclass
class _Session:
    files: list[tuple[Line, dict[str, Any]]] = field(default_factory=list)
    first_start: datetime | None = None


def parse(path: str | Path, *, options: ParseOptions) -> Iterator[Batch]:
    """Transfers: one per file line, attributed to the tape of its session."""
    return _parse(path, options, mounts=False)


def parse_mounts(path: str | Path, *, options: ParseOptions) -> Iterator[Batch]:
    """Mounts: one per "Tape session finished" line."""
    return _parse(path, options, mounts=True)


def _parse(path: str | Path, options: ParseOptions, *, mounts: bool) -> Iterator[Batch]:
    with LineReader(path) as reader:
        out = Collector(reader, options, MOUNTS if mounts else TRANSFERS)
        sessions: dict[Key, _Session] = {}
        for line in reader:
            if not line.text.strip():
                out.skip()
                continue
            try:
                obj = _object(line.text)
                message = obj.get("message")
                if not isinstance(message, str):
                    raise FieldError('no "message" text')
                if message == SESSION_END:
                    yield from _end_session(line, obj, sessions, out, options, mounts=mounts)
                elif _is_file_line(message, obj):
                    _wait_for_session(line, obj, message, sessions, out, options, mounts=mounts)
                else:
                    out.skip()
            except FieldError as exc:
                out.reject(line, str(exc))
            if out.full():
                yield out.flush()
        if not mounts:
            for key, session in sessions.items():
                for line, _ in session.files:
                    out.reject(
                        line,
                        f'no "{SESSION_END}" line follows for hostname {quote(key[0])}, '
                        f"pid {key[1]}, tid {key[2]}",
                    )
        yield out.flush()


def _object(line: str) -> dict[str, Any]:
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):
        raise FieldError("not a JSON object") from None
    if not isinstance(obj, dict):
        raise FieldError("not a JSON object")
    return obj


def _is_file_line(message: str, obj: dict[str, Any]) -> bool:
    return message == READ_OK or ("fileId" in obj and _FAILURE.search(message) is not None)


def _wait_for_session(
    line: Line,
    obj: dict[str, Any],
    message: str,
    sessions: dict[Key, _Session],
    out: Collector,
    options: ParseOptions,
    *,
    mounts: bool,
) -> None:
    """Hold a file line until its session line names the tape.

    Reading mounts, file lines are counted skips (reading transfers accounts for them); a valid
    one still gives its session's first start.
    """
    try:
        row = _transfer(obj, message, options.source)
        key = _key(obj)
    except FieldError:
        if not mounts:
            raise
        out.skip()
        return
    session = sessions.setdefault(key, _Session())
    session.files.append((line, row))
    start = row["started_at"]
    if session.first_start is None or start < session.first_start:
        session.first_start = start
    if mounts:
        out.skip()


def _end_session(
    line: Line,
    obj: dict[str, Any],
    sessions: dict[Key, _Session],
    out: Collector,
    options: ParseOptions,
    *,
    mounts: bool,
) -> Iterator[Batch]:
    """Emit a finished session: its mount, or the transfers that waited for it.

    Reading transfers needs only the tape (and drive) of the session line; reading mounts needs
    its times too, so each reading refuses the line only for what it uses.
    """
    session = sessions.pop(_key(obj), _Session())
    try:
        volume = _text(obj, "tapeVid")
        if volume is None:
            raise FieldError('no "tapeVid"')
        drive = _text(obj, "tapeDrive")
        if mounts:
            out.add(_mount(obj, volume, drive, session, options.source))
            return
    except FieldError as exc:
        out.reject(line, str(exc))
        if not mounts:
            for file_line, _ in session.files:
                out.reject(file_line, f"its session line {line.no} was refused")
        return
    out.skip()
    for _, row in session.files:
        row["volume"] = volume
        row["drive"] = drive
        out.add(row)
        if out.full():
            yield out.flush()


def _mount(
    obj: dict[str, Any], volume: str, drive: str | None, session: _Session, source: str
) -> dict[str, Any]:
    ended_at = epoch_time("epoch_time", _number(obj, "epoch_time", required=True))
    total = _seconds(obj, "totalTime")
    mount_s = _seconds(obj, "mountTime") or 0.0
    phases = [_seconds(obj, k) for k in ("positionTime", "unloadTime", "unmountTime")]
    what = "the session's start"
    if total is not None:
        started_at = before(ended_at, total, what)
    elif session.first_start is not None:
        started_at = before(session.first_start, mount_s, what)
    else:
        started_at = before(ended_at, mount_s + sum(p for p in phases if p is not None), what)
    mount_type = _text(obj, "mountType")
    purpose = PURPOSES.get((mount_type or "").lower())
    if purpose is None:
        purpose = "read" if session.files else "unknown"
    unmount_s = phases[2] or 0.0
    return {
        "source": source,
        "volume": volume,
        "drive": drive,
        "requested_at": started_at,
        "mounted_at": whole_second(started_at + timedelta(seconds=mount_s)),
        "dismounted_at": before(ended_at, unmount_s, "the dismount"),
        "purpose": purpose,
        "status": "complete",
    }


def _transfer(obj: dict[str, Any], message: str, source: str) -> dict[str, Any]:
    ended_at = epoch_time("epoch_time", _number(obj, "epoch_time", required=True))
    file_id = _text(obj, "fileId")
    if file_id is None:
        raise FieldError('no "fileId"')
    locate_s = _seconds(obj, "positionTime")
    transfer_s = _seconds(obj, "transferTime")
    total_s = _seconds(obj, "totalTime")
    if total_s is None and transfer_s is not None:
        total_s = (locate_s or 0.0) + transfer_s
    ok = message == READ_OK
    if ok and total_s is None:
        raise FieldError('neither "totalTime" nor "transferTime"')
    position = _number(obj, "fSeq")
    size = _number(obj, "dataVolume")
    return {
        "source": source,
        "direction": "read",
        "host": _text(obj, "hostname"),
        "file_id": file_id,
        "position": None if position is None else _whole(position, "fSeq"),
        "size_bytes": None if size is None else _whole(size, "dataVolume"),
        "started_at": before(ended_at, total_s or 0.0, "the transfer's start"),
        "duration_s": total_s,
        "locate_s": locate_s,
        "status": "ok" if ok else "failed",
        "error": None if ok else _error(obj, message),
    }


def _error(obj: dict[str, Any], message: str) -> str:
    found = _text(obj, "errorMessage") or _text(obj, "exceptionMessage")
    return found or text("message", message)


def _key(obj: dict[str, Any]) -> Key:
    parts = []
    for name in ("hostname", "pid", "tid"):
        value = _text(obj, name)
        if value is None:
            raise FieldError(f'no "{name}"')
        parts.append(value)
    return parts[0], parts[1], parts[2]


def _text(obj: dict[str, Any], name: str) -> str | None:
    """A string or integer field as text; None when absent or empty."""
    value = obj.get(name)
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise FieldError(f"{name} {quote(json.dumps(value))} is not text")
    return text(name, str(value))


def _number(obj: dict[str, Any], name: str, *, required: bool = False) -> Any:
    """A numeric field (JSON number or numeric string); None when absent and not required."""
    value = obj.get(name)
    if value is None or value == "":
        if required:
            raise FieldError(f'no "{name}"')
        return None
    if isinstance(value, str):
        try:
            return float(value) if any(c in value for c in ".eE") else int(value)
        except ValueError:
            raise FieldError(f"{name} {quote(value)} is not a number") from None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise FieldError(f"{name} {quote(json.dumps(value))} is not a number")
    return value


def _seconds(obj: dict[str, Any], name: str) -> float | None:
    value = _number(obj, name)
    return None if value is None else seconds(name, value)


def _whole(value: Any, name: str) -> int:
    if (isinstance(value, float) and not value.is_integer()) or not 0 <= value < 2**63:
        raise FieldError(f"{name} {quote(value)} is not a whole non-negative number")
    return int(value)
