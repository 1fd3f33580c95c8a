"""CERN CTA tape daemon log: file reads as transfers, tape sessions as mounts.

Two forms, mixed freely in one file, both with the same message texts and field names:
- CTA's default key="value" form, as syslog or CTA's own log file writes it:
  `Jun  2 13:21:40.750123 tpsrv01 cta-taped: LVL="INFO" PID="100" TID="101" MSG="File
  successfully read from tape" tapeVid="L81234" fileId="4211190" fSeq="1375" ...`
  The prefix time is local (ParseOptions.timezone) and, in the classic syslog form, has no
  year: it comes from --year or the file name, a month going backwards starts the next year.
  An ISO 8601 prefix (2024-06-02T13:21:40.750123+02:00) carries both. A value may hold escaped
  quotes (\\"). Lines of other programs in a shared syslog file are counted skips.
- JSON lines (CTA's JSON logging), with epoch_time, hostname, pid, tid and message.

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
- a session's status: "Tape session finished" with status="success" (or none) is complete; a
  status of failure or error, or an error count or message, makes it failed, and an aborted,
  killed or cancelled one aborted: such a session keeps its real times (the drive was busy
  for them), never a zero-length complete mount.
- any other message is a counted skip; as are session lines when reading transfers and file
  lines when reading mounts (each is accounted as a row by the other reading).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from tapelens.ingest.canonical import MOUNTS, TRANSFERS
from tapelens.ingest.formats.base import Batch, Collector, Line, LineReader, ParseOptions
from tapelens.ingest.formats.logfields import (
    FieldError,
    YearTracker,
    before,
    epoch_time,
    first_year,
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
        clock = _Clock(path, options)
        for line in reader:
            if not line.text.strip():
                out.skip()
                continue
            try:
                found = _object(line.text, clock)
                if found is None:
                    out.skip()  # another program's line of a shared syslog file
                    continue
                obj = found
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


_MONTHS = {
    m: i
    for i, m in enumerate(
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"], 1
    )
}
# "Jun  2 13:21:40.750123 host prog[pid]: " or "2024-06-02T13:21:40.75+02:00 host prog: "
_SYSLOG = re.compile(
    r"(?P<mon>[A-Z][a-z]{2}) +(?P<day>\d{1,2}) (?P<hms>\d{2}:\d{2}:\d{2})(?P<frac>\.\d{1,9})?"
    r" (?P<host>\S+) (?P<prog>[^\s:\[]+)(?:\[\d+\])?: (?P<body>.*)"
)
_ISO = re.compile(
    r"(?P<when>\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})?)"
    r" (?P<host>\S+) (?P<prog>[^\s:\[]+)(?:\[\d+\])?: (?P<body>.*)"
)
# key="value" pairs; a value may hold \" and \\ (no backtracking: each step consumes input).
_PAIR = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_.]*)="((?:[^"\\]|\\.)*)"')
# Key names of the key="value" form that differ from the JSON form's.
_KV_NAMES = {"LVL": "log_level", "PID": "pid", "TID": "tid", "MSG": "message"}


class _Clock:
    """Times of the key="value" form: local, and without a year in the classic syslog prefix."""

    def __init__(self, path: str | Path, options: ParseOptions) -> None:
        self.path, self.options = path, options
        self.zone = ZoneInfo(options.timezone)
        self.years: YearTracker | None = None

    def syslog(self, month: int, day: int, hms: str, frac: str | None) -> float:
        if self.years is None:
            self.years = YearTracker(first_year(self.path, self.options, "syslog"))
        year = self.years.peek(month)
        try:
            h, m, sec = (int(x) for x in hms.split(":"))
            local = datetime(year, month, day, h, m, sec)
        except ValueError:
            raise FieldError(f"{quote(f'{day} {hms}')} is not a time of {year}") from None
        self.years.commit(month)
        return self._epoch(local) + (float(frac) if frac else 0.0)

    def iso(self, when: str) -> float:
        try:
            moment = datetime.fromisoformat(when.replace(" ", "T"))
        except ValueError:
            raise FieldError(f"time {quote(when)} is not ISO 8601") from None
        if moment.tzinfo is None:
            return self._epoch(moment)
        return moment.timestamp()

    def _epoch(self, local: datetime) -> float:
        # A local time that never happened (the hour skipped in spring) is refused, not shifted.
        aware = local.replace(tzinfo=self.zone)
        back = aware.astimezone(UTC).astimezone(self.zone).replace(tzinfo=None)
        if back != local:
            raise FieldError(f"{local:%Y-%m-%d %H:%M:%S} does not exist in {self.options.timezone}")
        return aware.timestamp()


def _object(line: str, clock: _Clock) -> dict[str, Any] | None:
    """The line's fields (JSON names), or None for another program's syslog line."""
    body = line.lstrip()
    if body.startswith(("{", "[")):
        try:
            doc = json.loads(body)
        except (ValueError, RecursionError):
            raise FieldError("not a JSON object") from None
        if not isinstance(doc, dict):
            raise FieldError("not a JSON object")
        return doc
    found = _SYSLOG.match(body) or _ISO.match(body)
    if found is None:
        raise FieldError('neither a JSON object nor a syslog line with key="value" fields')
    if not found["prog"].startswith("cta-taped") and "MSG=" not in found["body"]:
        return None
    obj: dict[str, Any] = {"hostname": found["host"]}
    rest = found["body"]
    at = 0
    while at < len(rest) and not rest[at:].isspace():
        pair = _PAIR.match(rest, at)
        if pair is None:
            raise FieldError(f'expected key="value" at character {at + 1} of the message')
        value = pair[2].replace('\\"', '"').replace("\\\\", "\\")
        obj[_KV_NAMES.get(pair[1], pair[1])] = value
        at = pair.end()
    if "mon" in found.groupdict():
        month = _MONTHS.get(found["mon"])
        if month is None:
            raise FieldError(f"month {quote(found['mon'])} is not a month")
        obj["epoch_time"] = clock.syslog(month, int(found["day"]), found["hms"], found["frac"])
    else:
        obj["epoch_time"] = clock.iso(found["when"])
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
            out.add(_mount(obj, volume, drive, session, options.source), line.no)
            return
    except FieldError as exc:
        out.reject(line, str(exc))
        if not mounts:
            for file_line, _ in session.files:
                out.reject(file_line, f"its session line {line.no} was refused")
        return
    out.skip()
    for file_line, row in session.files:
        row["volume"] = volume
        row["drive"] = drive
        out.add(row, file_line.no)
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
    status = session_status(obj)
    return {
        "source": source,
        "volume": volume,
        "drive": drive,
        "requested_at": started_at,
        "mounted_at": whole_second(started_at + timedelta(seconds=mount_s)),
        "dismounted_at": before(ended_at, unmount_s, "the dismount"),
        "purpose": purpose,
        "status": status,
    }


_FAILED = {"failure", "failed", "error", "errors"}
_ABORTED = {"aborted", "abort", "killed", "cancelled", "canceled"}
_OK = {"success", "successful", "ok", "complete", "completed", "done"}


def session_status(obj: dict[str, Any]) -> str:
    """complete, failed or aborted, from the session line's status and error fields."""
    status = str(obj.get("status") or "").strip().lower()
    if status in _ABORTED or any(str(obj.get(k)).lower() in {"1", "true"} for k in _KILLED):
        return "aborted"
    if status in _FAILED or any(_positive(obj.get(k)) for k in _ERROR_COUNTS):
        return "failed"
    if obj.get("errorMessage") or obj.get("exceptionMessage"):
        return "failed"
    if status and status not in _OK:
        raise FieldError(f"session status {quote(status)} is not success, failure or aborted")
    return "complete"


# Error counters and flags a finished session reports (non-zero: something went wrong).
_ERROR_COUNTS = (
    "Error_tapeReadError",
    "Error_tapeWriteError",
    "Error_tapeUnreadable",
    "Error_sessionFailed",
    "errors",
    "errorCount",
)
_KILLED = ("Error_sessionKilled", "sessionKilled", "killed")


def _positive(value: Any) -> bool:
    try:
        return float(value) > 0
    except (TypeError, ValueError):
        return False


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
        "path": _text(obj, "diskFilePath"),
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
