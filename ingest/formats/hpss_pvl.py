"""HPSS PVL/PVR log: one mount per MountAdd -> MountCompleted -> DismountVolume sequence.

    03/13 23:42:36 RQST PVLS0001 Entering, function = "pvl_MountAdd",
        jobid = "20279994", arg = "A8553200"
    03/13 23:43:51 RQST PVRS0004 Entering pvr_Mount, cartridge = "A85532", drive = "0"
    03/13 23:44:12 RQST PVLS0001 Entering, function = "pvl_MountCompleted",
        jobid = "20279994", drive = "102108", arg = "A85532"
    03/14 00:52:40 RQST PVLS0001 Entering, function = "pvl_DismountVolume", arg = "A8553200"

(one line per event; wrapped here).
Lines carry no year: the first event's year is --year (or the file name's), and a month that
goes backwards means a new year. Volumes are normalised to the cartridge (A8553200 -> A85532),
as the catalogs and the tape inventory name it.

Pairing: MountAdd opens a request (requested_at) under its jobid; MountCompleted with that jobid
mounts it (mounted_at, drive = the PVL drive id); DismountVolume of the cartridge closes it
(dismounted_at). Unpaired events are kept as mounts with a status saying what is missing:
- no_mount: never mounted (a request that did not complete, or a dismount with no mount before
  it). mounted_at cannot be null, so it is the dismount time, else the request time;
- no_dismount: mounted but never dismounted (the log ended, or the cartridge was mounted again);
- no_request: mounted and dismounted, but the request is not in the log (it began earlier);
- complete: all three.
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


class _Pairing:
    """Open requests by jobid and mounted cartridges; rows come out as mounts close."""

    def __init__(self, out: Collector) -> None:
        self.out = out
        self.requests: dict[str, _Mount] = {}
        self.mounted: dict[str, _Mount] = {}

    def event(self, function: str, fields: dict[str, str], at: datetime) -> None:
        if function == MOUNT_ADD:
            jobid, volume = _need(fields, function, "jobid"), _volume(fields, function)
            if jobid in self.requests:
                self.emit(self.requests.pop(jobid))
            self.requests[jobid] = _Mount(volume, lines=1, requested_at=at)
        elif function == MOUNT_COMPLETED:
            jobid, volume = _need(fields, function, "jobid"), _volume(fields, function)
            drive = fields.get("drive")
            mount = self.requests.pop(jobid) if jobid in self.requests else _Mount(volume)
            mount.volume, mount.mounted_at, mount.lines = volume, at, mount.lines + 1
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
        self.out.add(_row(mount, self.out.options.source))
        for _ in range(mount.lines - 1):
            self.out.skip()

    def close(self) -> Iterator[Batch]:
        """Emit what the log left open, at its end."""
        left = [*self.requests.values(), *self.mounted.values()]
        self.requests.clear()
        self.mounted.clear()
        for mount in left:
            self.emit(mount)
            if self.out.full():
                yield self.out.flush()


def parse(path: str | Path, *, options: ParseOptions) -> Iterator[Batch]:
    """Mounts of a PVL log; other messages and blank lines are counted skips."""
    years = YearTracker(first_year(path, options, "HPSS PVL"))
    with LineReader(path) as reader:
        out = Collector(reader, options, MOUNTS)
        pairing = _Pairing(out)
        for line in reader:
            if not line.text.strip():
                out.skip()
                continue
            try:
                _line(line, years, pairing)
            except FieldError as exc:
                out.reject(line, str(exc))
            if out.full():
                yield out.flush()
        yield from pairing.close()
        yield out.flush()


def _line(line: Line, years: YearTracker, pairing: _Pairing) -> None:
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
