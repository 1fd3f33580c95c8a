"""CERN CTA tape daemon log: file reads as transfers, tape sessions as mounts.

Two forms, mixed freely in one file, both with the same message texts and field names, as
CTA's logger writes them (cern-cta/CTA, common/log/Logger.cpp: createMsgHeader, createMsgBody,
cleanString):
- the default key="value" form, as syslog or CTA's own log file writes it:
  `Jun  2 13:21:40.750123000 tpsrv01 cta-taped: LVL="INFO" PID="100" TID="101" MSG="File
  successfully read from tape" drive_name="..." instance="..." ... tapeVid="L81234" ...`
  (`%b %e %T` and nine digits of nanoseconds; the static parameters instance, sched_backend and
  drive_name, then the context parameters in name order, each followed by a space). The prefix
  time is local (ParseOptions.timezone) and has no year: --year, else the date stamp of the
  file name (cta-taped.log-20220331), by the rule every year-less log shares
  (logfields.LogYears). An ISO 8601 prefix (2024-06-02T13:21:40.750123+02:00, rsyslog's high
  precision form) carries both. CTA writes a value with its double quotes as single quotes and
  escapes nothing. Lines of other programs in a shared syslog file are counted skips.
- JSON lines (CTA's JSON logging), with epoch_time, hostname, pid and tid as numbers, message.

Per file, "File successfully read from tape" carries fileId, fSeq, positionTime, transferTime,
totalTime, dataVolume; per session, "Tape session finished" carries tapeVid, mountId,
tapeDrive, mountType, status and the session's times (docs/formats/cta-taped.md). Which
process logs which line decides how a read finds its tape (cern-cta/CTA, taped/session/ and,
in releases before 2026, tapeserver/castor/tape/tapeserver/daemon/): DataTransferSession puts
tapeVid and mountId in the session's log context; TapeReadSingleThread runs the reads in that
context ("File successfully read from tape" is logged by TapeReadTask on the tape thread, whose
tid is its own) and hands the session's parameters (tapeVid, mountId, tapeDrive, mountType,
status from the report packers, the times from TaskWatchDog) to the drive handler, the parent
process, which logs "Tape session finished" (taped/daemon/DriveHandler.cpp) with its own pid
and tid. So a read is attributed by its session's context: mountId first, else its tapeVid on
the same host within the session's time span, and only a line with neither waits on its host,
pid and tid. A read whose context names tape and drive (drive_name) is a row at once; one
naming its tape but whose session line never comes keeps its tape, without a drive. A crashed
session is reported twice by the drive handler (once with Error_sessionKilled, then as every
session ends): one mount, the first report's. A session line with neither tapeVid nor mountId
(a session that mounted nothing) is a counted skip.

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
    LogYears,
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
MOUNTED = "Tape mounted and drive ready"
_FAILURE = re.compile(r"(?i)\b(error|errors|fail|failed|failure)\b")
# mountType of a session (CTA's MountType names) -> purpose
PURPOSES = {"retrieve": "read", "archiveforuser": "write", "archiveforrepack": "write"}

# Where a file line waits for its session line: ("mountId", host, id), ("tape", host, vid) or,
# for lines that carry no session context, ("thread", host, pid, tid).
Key = tuple[str, ...]


@dataclass
class _Session:
    files: list[tuple[Line, dict[str, Any]]] = field(default_factory=list)
    first_start: datetime | None = None  # of its first file read
    opened_at: datetime | None = None  # its first line (the tape thread starts the session)
    mounted_at: datetime | None = None  # "Tape mounted and drive ready"


def parse(path: str | Path, *, options: ParseOptions) -> Iterator[Batch]:
    """Transfers: one per file line, attributed to the tape of its session."""
    return _parse(path, options, mounts=False)


def parse_mounts(path: str | Path, *, options: ParseOptions) -> Iterator[Batch]:
    """Mounts: one per tape session ("Tape session finished" line)."""
    return _parse(path, options, mounts=True)


class _Sessions:
    """File lines waiting for the line of their session, and the sessions already finished."""

    def __init__(self) -> None:
        self.waiting: dict[Key, _Session] = {}
        self.finished: set[tuple[str, str]] = set()  # (hostname, mountId) of finished sessions

    def hold(self, key: Key) -> _Session:
        return self.waiting.setdefault(key, _Session())

    def release(self, obj: dict[str, Any], end: datetime, start: datetime | None) -> _Session:
        """Everything that waited for this session line, by its mountId, else its tape (files
        within the session's time span), else the thread that logged it."""
        host = _text(obj, "hostname") or ""
        found = _Session()
        keys: list[Key] = []
        mount_id = _text(obj, "mountId")
        if mount_id is not None:
            keys.append(("mountId", host, mount_id))
        thread = _thread_key(obj)
        if thread is not None:
            keys.append(thread)
        for key in keys:
            session = self.waiting.pop(key, None)
            if session is not None:
                _take(found, session)
        volume = _text(obj, "tapeVid")
        if volume is not None:
            tape = ("tape", host, volume)
            session = self.waiting.get(tape)
            if session is not None:
                inside: list[tuple[Line, dict[str, Any]]] = []
                outside: list[tuple[Line, dict[str, Any]]] = []
                for item in session.files:
                    at = item[1]["started_at"]
                    within = at <= end and (start is None or at >= start)
                    (inside if within else outside).append(item)
                session.files = outside
                _join(found, inside)
                if not session.files:  # reading mounts, a session's times and no reads
                    _take(found, self.waiting.pop(tape))
        return found

    def note(self, obj: dict[str, Any], message: str) -> None:
        """When a session began and was mounted, from the lines of its tape thread: a session
        killed with its process reports no times in its "Tape session finished" line."""
        if _text(obj, "mountId") is None:
            return
        try:
            at = epoch_time("epoch_time", _number(obj, "epoch_time", required=True))
        except FieldError:
            return
        session = self.hold(_file_key(obj))
        session.opened_at = _earliest(session.opened_at, at)
        if message == MOUNTED:
            session.mounted_at = _earliest(session.mounted_at, whole_second(at))


def _empty(session: _Session) -> bool:
    """Nothing of the session was seen before its end."""
    return not session.files and session.first_start is None and session.opened_at is None


def _earliest(a: datetime | None, b: datetime | None) -> datetime | None:
    return b if a is None else a if b is None else min(a, b)


def _take(into: _Session, session: _Session) -> None:
    """Add what waited under one key to a finished session."""
    _join(into, session.files)
    into.first_start = _earliest(into.first_start, session.first_start)
    into.opened_at = _earliest(into.opened_at, session.opened_at)
    into.mounted_at = _earliest(into.mounted_at, session.mounted_at)


def _join(into: _Session, files: list[tuple[Line, dict[str, Any]]]) -> None:
    into.files.extend(files)
    for _, row in files:
        start = row["started_at"]
        if into.first_start is None or start < into.first_start:
            into.first_start = start


def _parse(path: str | Path, options: ParseOptions, *, mounts: bool) -> Iterator[Batch]:
    with LineReader(path) as reader:
        out = Collector(reader, options, MOUNTS if mounts else TRANSFERS)
        sessions = _Sessions()
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
                    _file_line(line, obj, message, sessions, out, options, mounts=mounts)
                else:
                    if mounts:
                        sessions.note(obj, message)
                    out.skip()
            except FieldError as exc:
                out.reject(line, str(exc))
            if out.full():
                yield out.flush()
        if not mounts:
            for key, session in sessions.waiting.items():
                for line, row in session.files:
                    if row["volume"] is not None:
                        out.add(row, line.no)  # its own context names its tape
                    else:
                        out.reject(line, f'no "{SESSION_END}" line follows for {_shown(key)}')
                    if out.full():
                        yield out.flush()
        yield out.flush()


def _shown(key: Key) -> str:
    if key[0] == "thread":
        return f"hostname {quote(key[1])}, pid {key[2]}, tid {key[3]}"
    return f"{key[0]} {quote(key[2])} on {quote(key[1])}"


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
# key="value" pairs. CTA writes a value with its double quotes turned into single quotes, tabs
# and newlines into spaces, and nothing escaped (common/log/Logger.cpp, cleanString): a value
# runs to the next double quote, a backslash is a backslash.
_PAIR = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_.]*)="([^"]*)"')
# Key names of the key="value" form that differ from the JSON form's.
_KV_NAMES = {"LVL": "log_level", "PID": "pid", "TID": "tid", "MSG": "message"}


class _Clock:
    """Times of the key="value" form: local, and without a year in the classic syslog prefix."""

    def __init__(self, path: str | Path, options: ParseOptions) -> None:
        self.path, self.options = path, options
        self.zone = ZoneInfo(options.timezone)
        self.years: LogYears | None = None

    def syslog(self, month: int, day: int, hms: str, frac: str | None) -> float:
        if self.years is None:  # made at the first such line: JSON lines need no year
            self.years = LogYears(self.path, self.options, "CTA taped syslog")
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
    # One pass over the pairs; what is left must be blank (no copy of the rest at each pair:
    # a CTA line holds some thirty of them).
    at = 0
    pair = _PAIR.match(rest, at)
    while pair is not None:
        obj[_KV_NAMES.get(pair[1], pair[1])] = pair[2]
        at = pair.end()
        pair = _PAIR.match(rest, at)
    if rest[at:].strip():
        raise FieldError(f'expected key="value" at character {at + 1} of the message')
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


def _file_line(
    line: Line,
    obj: dict[str, Any],
    message: str,
    sessions: _Sessions,
    out: Collector,
    options: ParseOptions,
    *,
    mounts: bool,
) -> None:
    """A file read: a row now when its own context names its tape and drive, else it waits for
    the line of its session.

    CTA logs a file line from the session's tape thread, in the session's context (tapeVid,
    mountId; drive_name on every line of newer versions), while "Tape session finished" comes
    from the drive handler, another process. Reading mounts, file lines are counted skips
    (reading transfers accounts for them); a valid one still gives its session's first start.
    """
    try:
        row = _transfer(obj, message, options.source)
        key = _file_key(obj)
    except FieldError:
        if not mounts:
            raise
        out.skip()
        return
    row["volume"] = _text(obj, "tapeVid")
    row["drive"] = _text(obj, "tapeDrive") or _text(obj, "drive_name")
    if mounts:
        session = sessions.hold(key)
        session.first_start = _earliest(session.first_start, row["started_at"])
        out.skip()
    elif row["volume"] is not None and row["drive"] is not None:
        out.add(row, line.no)
    else:
        sessions.hold(key).files.append((line, row))


def _file_key(obj: dict[str, Any]) -> Key:
    host = _text(obj, "hostname") or ""
    mount_id = _text(obj, "mountId")
    if mount_id is not None:
        return ("mountId", host, mount_id)
    volume = _text(obj, "tapeVid")
    if volume is not None:
        return ("tape", host, volume)
    thread = _thread_key(obj)
    if thread is None:
        raise FieldError('neither "mountId", "tapeVid" nor "pid" and "tid" to find its session')
    return thread


def _thread_key(obj: dict[str, Any]) -> Key | None:
    pid, tid = _text(obj, "pid"), _text(obj, "tid")
    if pid is None or tid is None:
        return None
    return ("thread", _text(obj, "hostname") or "", pid, tid)


def _end_session(
    line: Line,
    obj: dict[str, Any],
    sessions: _Sessions,
    out: Collector,
    options: ParseOptions,
    *,
    mounts: bool,
) -> Iterator[Batch]:
    """Emit a finished session: its mount, or the transfers that waited for it.

    Reading transfers needs only the tape (and drive) of the session line; reading mounts needs
    its times too, so each reading refuses the line only for what it uses. A session the drive
    handler reports twice (a crashed session: once with the kill, once as every session ends)
    is one mount, the first report's.
    """
    host, mount_id = _text(obj, "hostname") or "", _text(obj, "mountId")
    volume = _text(obj, "tapeVid")
    end = epoch_time("epoch_time", _number(obj, "epoch_time", required=True))
    total = _seconds(obj, "totalTime")
    start = None if total is None else before(end, total, "the session's start")
    session = sessions.release(obj, end, start)
    if volume is None and mount_id is None and _empty(session):
        out.skip()  # a session that mounted nothing: no tape, no mount, nothing read
        return
    if mount_id is not None:
        if (host, mount_id) in sessions.finished:
            out.skip()
            if not mounts:
                yield from _attribute(session, volume, _text(obj, "tapeDrive"), out)
            return
        sessions.finished.add((host, mount_id))
    try:
        if volume is None:
            raise FieldError('no "tapeVid"')
        drive = _text(obj, "tapeDrive") or _text(obj, "drive_name")
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
    yield from _attribute(session, volume, drive, out)


def _attribute(
    session: _Session, volume: str | None, drive: str | None, out: Collector
) -> Iterator[Batch]:
    for file_line, row in session.files:
        row["volume"] = row["volume"] or volume
        row["drive"] = row["drive"] or drive
        if row["volume"] is None:
            out.reject(file_line, "its session line names no tape")
        else:
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
    mounted_at: datetime | None = None
    if total is not None:
        started_at = before(ended_at, total, what)
    elif session.opened_at is not None:
        # A session reported without its times (killed with its process): it began with its
        # tape thread's first line and was mounted when that thread said so.
        started_at = whole_second(session.opened_at)
        mounted_at = session.mounted_at
    elif session.first_start is not None:
        started_at = before(session.first_start, mount_s, what)
    else:
        started_at = before(ended_at, mount_s + sum(p for p in phases if p is not None), what)
    if mounted_at is None:
        mounted_at = whole_second(started_at + timedelta(seconds=mount_s))
    mount_type = _text(obj, "mountType")
    purpose = PURPOSES.get((mount_type or "").lower())
    if purpose is None:
        purpose = "read" if session.first_start is not None or session.files else "unknown"
    unmount_s = phases[2] or 0.0
    status = session_status(obj)
    return {
        "source": source,
        "volume": volume,
        "drive": drive,
        "requested_at": started_at,
        "mounted_at": mounted_at,
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
