"""HPSS PVL/PVR log: one mount per MountAdd -> MountCompleted -> DismountVolume sequence.

    03/13 23:42:36 RQST PVLS0001 Entering, function = "pvl_MountAdd",
        jobid = "20279994", arg = "A8553200"
    03/13 23:43:51 RQST PVRS0004 Entering pvr_Mount, cartridge = "A85532", drive = "0"
    03/13 23:44:12 RQST PVLS0001 Entering, function = "pvl_MountCompleted",
        jobid = "20279994", drive = "102108", arg = "A85532"
    03/14 00:52:40 RQST PVLS0001 Entering, function = "pvl_DismountVolume", arg = "A8553200"

(one line per event; wrapped here).
Lines carry no year. It comes from the file name when the name carries a date stamp, as rotated
PVL logs are named (logfile01_201301052000, 20130313_000000.log, pvl.log-20130105): the first
line's year is the stamp's, or the year before when the line's month is later than the
stamp's (a file named when it was closed, holding December lines, stamped in January). Without
a stamp the year is --year (or a lone year in the name), else the load stops with an error. A
month that goes backwards within a file means a new year. Volumes are normalised to the
cartridge (A8553200 -> A85532), as the catalogs and the tape inventory name it.

Pairing: MountAdd opens a request (requested_at) under its jobid; MountCompleted with that jobid
mounts it (mounted_at, drive = the PVL drive id); DismountVolume of the cartridge closes it
(dismounted_at). Unpaired events are kept as mounts with a status saying what is missing:
- no_mount: never mounted (a request that did not complete, or a dismount with no mount before
  it). mounted_at cannot be null, so it is the dismount time, else the request time;
- no_dismount: mounted but never dismounted (the log ended, or the cartridge was mounted again);
- no_request: mounted and dismounted, but the request is not in the log (it began earlier);
- complete: all three.
Logs rotate, so one mount can start in one file and end in another, and files can be loaded in
any order, in one command or in separate ones: what a file leaves open (a request with no mount,
a mount with no dismount, a dismount with no mount) is stored as such, and after every load
`merge_open_mounts` joins the open pieces of one cartridge that follow each other in time into
one mount, whichever load brought them. A MountCompleted repeated for a cartridge already
mounted by the same job counts once; "Exiting" lines repeat an event on its return and are
counted skips.
pvr_Mount lines repeat what the PVL events say with the PVR's own drive index: counted skips,
like every other message. The row of a mount is accounted to the event line that closes it; the
other event lines of the mount are counted skips when the row is emitted.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from tapelens.ingest.canonical import MOUNTS
from tapelens.ingest.formats.base import Batch, Collector, Line, LineReader, ParseOptions
from tapelens.ingest.formats.logfields import (
    FieldError,
    YearTracker,
    clock,
    first_year,
    hpss_cartridge,
    month_day,
    text,
    utc_time,
)

KIND = "mounts"
FORMAT = "hpss-pvl"
MOUNT_ADD = "pvl_MountAdd"
MOUNT_COMPLETED = "pvl_MountCompleted"
DISMOUNT = "pvl_DismountVolume"
ENTERING = "Entering"  # a request as it reaches the PVL; "Exiting" lines repeat it on return

_PREFIX = re.compile(r"([0-9]{2}/[0-9]{2})\s+([0-9]{2}:[0-9]{2}:[0-9]{2})\s(.*)")
_FIELD = re.compile(r'(\w+) = "([^"]*)"')


@dataclass
class _Mount:
    volume: str
    lines: int = 0  # event lines that went into this mount
    drive: str | None = None
    requested_at: datetime | None = None
    mounted_at: datetime | None = None
    dismounted_at: datetime | None = None
    jobid: str | None = None
    line_no: int | None = None  # the line that closed it


class _Pairing:
    """Open requests by jobid and mounted cartridges; rows come out as mounts close."""

    def __init__(self, out: Collector) -> None:
        self.out = out
        self.line_no: int | None = None  # the event line being read
        self.requests: dict[str, _Mount] = {}
        self.mounted: dict[str, _Mount] = {}

    def event(self, function: str, fields: dict[str, str], at: datetime) -> None:
        if function == MOUNT_ADD:
            jobid, volume = _need(fields, function, "jobid"), _volume(fields, function)
            if jobid in self.requests:
                self.emit(self.requests.pop(jobid))
            self.requests[jobid] = _Mount(volume, lines=1, requested_at=at, jobid=jobid)
        elif function == MOUNT_COMPLETED:
            jobid, volume = _need(fields, function, "jobid"), _volume(fields, function)
            drive = fields.get("drive")
            again = self.mounted.get(volume)
            if again is not None and again.jobid == jobid:
                again.lines += 1  # the same completion logged again: one mount
                return
            mount = self.requests.pop(jobid) if jobid in self.requests else _Mount(volume)
            mount.volume, mount.mounted_at, mount.lines = volume, at, mount.lines + 1
            mount.jobid = jobid
            mount.drive = text("drive", drive) if drive else None
            if volume in self.mounted:
                self.emit(self.mounted.pop(volume))
            self.mounted[volume] = mount
        else:
            volume = _volume(fields, function)
            found = self.mounted.pop(volume) if volume in self.mounted else None
            mount = found or self._request_for(volume) or _Mount(volume)
            mount.dismounted_at, mount.lines = at, mount.lines + 1
            self.emit(mount)

    def _request_for(self, volume: str) -> _Mount | None:
        for jobid, mount in self.requests.items():
            if mount.volume == volume:
                return self.requests.pop(jobid)
        return None

    def emit(self, mount: _Mount) -> None:
        self.out.add(_row(mount, self.out.options.source), self.line_no)
        for _ in range(mount.lines - 1):
            self.out.skip()

    def close(self) -> Iterator[Batch]:
        """Emit what the log left open, at its end."""
        left = [*self.requests.values(), *self.mounted.values()]
        self.requests.clear()
        self.mounted.clear()
        self.line_no = None  # left open by the log's end, not by a line
        for mount in left:
            self.emit(mount)
            if self.out.full():
                yield self.out.flush()


def parse(path: str | Path, *, options: ParseOptions) -> Iterator[Batch]:
    """Mounts of a PVL log; other messages and blank lines are counted skips."""
    years = _Years(path, options)
    with LineReader(path) as reader:
        out = Collector(reader, options, MOUNTS)
        pairing = _Pairing(out)
        for line in reader:
            if not line.text.strip():
                out.skip()
                continue
            try:
                pairing.line_no = line.no
                _line(line, years, pairing)
            except FieldError as exc:
                out.reject(line, str(exc))
            if out.full():
                yield out.flush()
        yield from pairing.close()
        yield out.flush()


# A date stamp in a rotated log's name: YYYYMMDD, perhaps followed by the time.
_STAMP = re.compile(r"(?<![0-9])((?:19|20)[0-9]{2})(0[1-9]|1[0-2])(0[1-9]|[12][0-9]|3[01])")


def stamp_of(path: str | Path) -> tuple[int, int] | None:
    """(year, month) of the date stamp in a PVL log's file name, if it has exactly one."""
    found = {(int(y), int(m)) for y, m, _ in _STAMP.findall(Path(str(path)).name)}
    return found.pop() if len(found) == 1 else None


class _Years:
    """The year of each line: from the name's stamp, else --year; set at the first line."""

    def __init__(self, path: str | Path, options: ParseOptions) -> None:
        self.path, self.options = path, options
        self.tracker: YearTracker | None = None

    def peek(self, month: int) -> int:
        if self.tracker is None:
            stamp = stamp_of(self.path) if str(self.path) != "-" else None
            if stamp is not None:
                year, stamp_month = stamp
                start = year if month <= stamp_month else year - 1
            else:
                start = first_year(self.path, self.options, "HPSS PVL")
            self.tracker = YearTracker(start)
        return self.tracker.peek(month)

    def commit(self, month: int) -> None:
        assert self.tracker is not None
        self.tracker.commit(month)


def _line(line: Line, years: _Years, pairing: _Pairing) -> None:
    prefix = _PREFIX.fullmatch(line.text.strip())
    if prefix is None:
        raise FieldError("not a PVL log line (MM/DD HH:MM:SS ...)")
    date, time_of_day, message = prefix.groups()
    fields = dict(_FIELD.findall(message))
    function = fields.get("function")
    if ENTERING not in message or function not in (MOUNT_ADD, MOUNT_COMPLETED, DISMOUNT):
        pairing.out.skip()
        return
    month, day = month_day(date, "/", "MM/DD")
    at = utc_time(years.peek(month), month, day, clock(time_of_day), date)
    years.commit(month)
    pairing.event(function, fields, at)


# Open pieces a load leaves: a request alone (no_mount, no dismount), a mount alone
# (no_dismount), a dismount alone (no_mount, mounted_at = the dismount), a mount whose request
# is elsewhere (no_request). Each rule joins a piece with the next one of the same cartridge in
# time, if that one can be its continuation; repeated until nothing joins.
_MERGES = (
    # a request, then a mount without its request: the request is that mount's
    """
    with pieces as (
        select volume, mounted_at, requested_at, dismounted_at, status,
               lead(mounted_at) over w as next_at, lead(status) over w as next_status,
               lead(requested_at) over w as next_requested
        from tapelens.mounts
        where source = %(s)s and volume = any(%(v)s)
        window w as (partition by volume order by mounted_at)
    ), joined as (
        select volume, mounted_at, next_at, requested_at from pieces
        where status = 'no_mount' and dismounted_at is null
          and next_status in ('no_request', 'no_dismount') and next_requested is null
          and next_at - requested_at <= interval '1 day'  -- a request waits hours, not days
    ), updated as (
        update tapelens.mounts m set requested_at = j.requested_at,
               status = case when m.dismounted_at is null then 'no_dismount' else 'complete' end
        from joined j
        where m.source = %(s)s and m.volume = j.volume and m.mounted_at = j.next_at
        returning j.volume, j.mounted_at
    )
    delete from tapelens.mounts d using updated u
    where d.source = %(s)s and d.volume = u.volume and d.mounted_at = u.mounted_at
    """,
    # a mount without its dismount, then a dismount alone: that mount's dismount
    """
    with pieces as (
        select volume, mounted_at, status,
               lead(mounted_at) over w as next_at, lead(status) over w as next_status,
               lead(dismounted_at) over w as next_dismounted,
               lead(requested_at) over w as next_requested
        from tapelens.mounts
        where source = %(s)s and volume = any(%(v)s)
        window w as (partition by volume order by mounted_at)
    ), joined as (
        select volume, mounted_at, next_at, next_dismounted from pieces
        where status = 'no_dismount' and next_status = 'no_mount'
          and next_dismounted is not null and next_requested is null
    ), updated as (
        update tapelens.mounts m set dismounted_at = j.next_dismounted,
               status = case when m.requested_at is null then 'no_request' else 'complete' end
        from joined j
        where m.source = %(s)s and m.volume = j.volume and m.mounted_at = j.mounted_at
        returning j.volume, j.next_at
    )
    delete from tapelens.mounts d using updated u
    where d.source = %(s)s and d.volume = u.volume and d.mounted_at = u.next_at
    """,
)
MAX_MERGE_PASSES = 4


def merge_open_mounts(cur: Any, source: str, run_id: int) -> None:
    """Join the open pieces of mounts split across files (after-load hook of hpss-pvl)."""
    cur.execute(
        "select coalesce(array_agg(distinct volume), '{}') from tapelens.mounts"
        " where source = %s and ingest_run_id = %s and status <> 'complete'",
        [source, run_id],
    )
    row = cur.fetchone()
    volumes = list(row[0]) if row else []
    if not volumes:
        return
    for _ in range(MAX_MERGE_PASSES):
        joined = 0
        for statement in _MERGES:
            cur.execute(statement, {"s": source, "v": volumes})
            joined += max(cur.rowcount, 0)
        if not joined:
            return


def _need(fields: dict[str, str], function: str, name: str) -> str:
    value = fields.get(name, "").strip()
    if not value:
        raise FieldError(f"{function} without {name}")
    return text(name, value)


def _volume(fields: dict[str, str], function: str) -> str:
    return hpss_cartridge(_need(fields, function, "arg"))


def _row(mount: _Mount, source: str) -> dict[str, Any]:
    if mount.mounted_at is None:
        status = "no_mount"
        mounted_at = mount.dismounted_at or mount.requested_at
    else:
        mounted_at = mount.mounted_at
        if mount.dismounted_at is None:
            status = "no_dismount"
        elif mount.requested_at is None:
            status = "no_request"
        else:
            status = "complete"
    return {
        "source": source,
        "volume": mount.volume,
        "drive": mount.drive,
        "requested_at": mount.requested_at,
        "mounted_at": mounted_at,
        "dismounted_at": mount.dismounted_at,
        "purpose": "unknown",
        "status": status,
    }
