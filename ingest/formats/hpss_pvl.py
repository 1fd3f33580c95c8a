"""HPSS PVL/PVR log: one mount per MountAdd -> MountCompleted -> DismountVolume sequence.

    03/13 23:42:36 RQST PVLS0001 Entering, function = "pvl_MountAdd", jobid = "20279994",
        arg = "WB187900"
    03/13 23:42:36 RQST PVLS0002 Exiting, function = "pvl_MountAdd", jobid = "20279994",
        arg = "WB187900"
    03/13 23:43:51 RQST PVRS0004 Entering pvr_Mount, cartridge = "WB1879", drive = "0"
    03/13 23:44:12 RQST PVLS0001 Entering, function = "pvl_MountCompleted",
        jobid = "20279994", drive = "102108", arg = "WB1879"
    03/13 23:44:14 RQST PVLS0002 Exiting, function = "pvl_MountCompleted",
        jobid = "20279994", drive = "102108", arg = "WB1879"
    03/14 00:52:40 RQST PVLS0001 Entering, function = "pvl_DismountVolume", arg = "WB187900"
    03/14 00:52:40 RQST PVLS0002 Exiting, function = "pvl_DismountVolume", arg = "WB187900"

(one line per event; wrapped here). The PVL logs each call as it enters (PVLS0001) and as it
returns (PVLS0002), the return with the same fields; a completion can take minutes to return.
Shapes as published with HPSS PVL traces and the parsers written for them
(maesker/RoboticTapeLibrary, src/TraceAnalyser/whpss/db/events_pattern.anydb and
src/TraceAnalyser/anydb_inspector.py: Entering/Exiting patterns of pvl_MountAdd,
pvl_MountCompleted, pvl_DismountVolume, pvr_Mount, pvr_DismountCart); docs/formats/hpss-pvl.md.

Lines carry no year: --year, else the date stamp of the file name (pvl.log-20130105,
logfile01_201301052000, 20130313_000000.log), by the rule every year-less log shares
(logfields.LogYears). Volumes are normalised to the cartridge (A8553200 -> A85532), as the
catalogs and the tape inventory name it.

Pairing: MountAdd opens a request (requested_at) under its jobid; MountCompleted with that jobid
mounts it (mounted_at, drive = the PVL drive id); DismountVolume of the cartridge closes it
(dismounted_at). A call's Exiting line is a counted skip when its Entering line was read; when
it was not (the Entering line is at the end of the previous file), the Exiting line is the event,
at its own time: a file that starts mid-mount still ends that mount at its dismount.
A MountCompleted repeated by the job that mounted the cartridge is the same mount; on another
drive (the PVR retried an unreadable cartridge elsewhere) the mount moves to that drive. A job
the client cancels (`WARN PVLS0134 Client Cancels All Jobs, jobid = ...`) gets no
pvl_DismountVolume: its mount ends at the cancel, aborted; its request, if not yet mounted,
stays a request.

What a file holds of a mount is a row with a status saying what is missing:
- complete: request, mount and dismount;
- no_dismount: mounted, the dismount not in the file (the log ended);
- no_request: mounted, the request not in the file (it began earlier);
- aborted: mounted, then the client cancelled the job;
- no_mount: not a mount but a piece of one: a request never mounted in the file (mounted_at is
  the request time), or a dismount of a cartridge the file never mounted (mounted_at is the
  dismount time).
Logs rotate, so one mount can start in one file and end in another, and files can be loaded in
any order, in one command or in separate ones. After every load `merge_open_mounts` moves the
pieces out of the mounts (into tapelens.mount_pieces: a request is not a mount) and joins what
belongs together: a request with the mount of its cartridge that follows it, a dismount with the
mount before it, a mount with no dismount with the next mount of its cartridge that has no
request (the same mount, as its Exiting line told it in the next file).
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
    LogYears,
    clock,
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
ENTERING = "Entering"  # a call as it reaches the PVL
EXITING = "Exiting"  # the same call as it returns, with the same fields
CANCEL = "Client Cancels All Jobs"  # the client gave the job up: no pvl_DismountVolume follows

_PREFIX = re.compile(r"([0-9]{2}/[0-9]{2})\s+([0-9]{2}:[0-9]{2}:[0-9]{2})\s(.*)")
_PHASE = re.compile(r"\b(Entering|Exiting),")
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
    cancelled: bool = False


class _Pairing:
    """Open requests by jobid and mounted cartridges; rows come out as mounts close."""

    def __init__(self, out: Collector) -> None:
        self.out = out
        self.line_no: int | None = None  # the event line being read
        self.requests: dict[str, _Mount] = {}
        self.mounted: dict[str, _Mount] = {}
        self.entered: set[tuple[str, str]] = set()  # calls whose Exiting line is still to come

    def call(self, phase: str, function: str, fields: dict[str, str], at: datetime) -> None:
        """One Entering or Exiting line of a PVL call."""
        name = fields.get("arg" if function == DISMOUNT else "jobid") or ""
        ident = (function, hpss_cartridge(name) if function == DISMOUNT else name)
        if phase == EXITING:
            if ident in self.entered:
                self.entered.discard(ident)
                self.out.skip()  # the return of a call already read
                return
            # Its Entering line is in the previous file: the return tells the same event.
        else:
            self.entered.add(ident)
        self.event(function, fields, at)

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
                # The same job's mount logged again; on another drive when the PVR retried an
                # unreadable cartridge there: the mount goes on where it ended up.
                again.lines += 1
                if drive:
                    again.drive = text("drive", drive)
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
            # A dismount of a cartridge this file never mounted is a piece of a mount that
            # began in another file, never a request's: a request is not a mount.
            mount = self.mounted.pop(volume) if volume in self.mounted else _Mount(volume)
            mount.dismounted_at, mount.lines = at, mount.lines + 1
            self.emit(mount)

    def cancel(self, fields: dict[str, str], at: datetime) -> None:
        """The client gave a job up. A request not yet mounted stays a request (a piece); a
        mount of the job ends here, aborted: the PVR dismounts the cartridge and the PVL logs
        no pvl_DismountVolume for it. A job this file holds nothing of is a counted skip."""
        jobid = fields.get("jobid", "")
        if jobid in self.requests:
            self.emit(self.requests.pop(jobid))
            return
        for volume, mount in self.mounted.items():
            if mount.jobid == jobid:
                del self.mounted[volume]
                mount.dismounted_at, mount.lines, mount.cancelled = at, mount.lines + 1, True
                self.emit(mount)
                return
        self.out.skip()

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
    years = LogYears(path, options, "HPSS PVL")
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


def _line(line: Line, years: LogYears, pairing: _Pairing) -> None:
    prefix = _PREFIX.fullmatch(line.text.strip())
    if prefix is None:
        raise FieldError("not a PVL log line (MM/DD HH:MM:SS ...)")
    date, time_of_day, message = prefix.groups()
    phase = _PHASE.search(message)
    fields = dict(_FIELD.findall(message))
    function = fields.get("function")
    cancel = CANCEL in message and "jobid" in fields
    if not cancel and (phase is None or function not in (MOUNT_ADD, MOUNT_COMPLETED, DISMOUNT)):
        pairing.out.skip()
        return
    month, day = month_day(date, "/", "MM/DD")
    at = utc_time(years.peek(month), month, day, clock(time_of_day), date)
    years.commit(month)
    if cancel:
        pairing.cancel(fields, at)
    else:
        assert phase is not None and function is not None
        pairing.call(phase[1], function, fields, at)


# After a load: the pieces among the rows of PVL logs (status no_mount: a request never
# mounted, or a dismount of a cartridge never mounted in its file) leave the mounts for
# mount_pieces; those of every file of the command, whose hooks run one after the other.
_TAKE_PIECES = """
    with moved as (
        delete from tapelens.mounts m
        using tapelens.ingest_runs r
        where m.source = %(s)s and m.status = 'no_mount'
          and r.run_id = m.ingest_run_id and r.format = 'hpss-pvl'
        returning m.source, m.volume, m.drive, m.requested_at, m.dismounted_at,
                  m.ingest_run_id
    )
    insert into tapelens.mount_pieces (source, volume, kind, at, drive, ingest_run_id)
    select source, volume,
           case when dismounted_at is null then 'request' else 'dismount' end,
           coalesce(dismounted_at, requested_at), drive, ingest_run_id
    from moved
    on conflict do nothing
"""
# Each rule joins what belongs to one mount of one cartridge; repeated until nothing joins.
_MERGES = (
    # A request piece: it is the request of the first mount of its cartridge after it, if that
    # one has no request and follows within a day (a request waits hours, not days); of
    # several pieces before one mount, the latest (the others were given up).
    """
    with pieces as (
        select p.volume, p.at,
               (select m.mounted_at from tapelens.mounts m
                where m.source = p.source and m.volume = p.volume and m.mounted_at >= p.at
                order by m.mounted_at limit 1) as mount_at
        from tapelens.mount_pieces p
        where p.source = %(s)s and p.volume = any(%(v)s) and p.kind = 'request'
    ), matched as (
        select distinct on (x.volume, x.mount_at) x.volume, x.at, x.mount_at
        from pieces x
        join tapelens.mounts m
          on m.source = %(s)s and m.volume = x.volume and m.mounted_at = x.mount_at
        where m.requested_at is null and x.mount_at - x.at <= interval '1 day'
        order by x.volume, x.mount_at, x.at desc
    ), updated as (
        update tapelens.mounts m set requested_at = x.at
        from matched x
        where m.source = %(s)s and m.volume = x.volume and m.mounted_at = x.mount_at
        returning x.volume, x.at
    )
    delete from tapelens.mount_pieces p using updated u
    where p.source = %(s)s and p.volume = u.volume and p.kind = 'request' and p.at = u.at
    """,
    # A dismount piece: it ends the last mount of its cartridge before it, if that one has
    # no dismount (the first such piece after the mount).
    """
    with pieces as (
        select p.volume, p.at,
               (select m.mounted_at from tapelens.mounts m
                where m.source = p.source and m.volume = p.volume and m.mounted_at <= p.at
                order by m.mounted_at desc limit 1) as mount_at
        from tapelens.mount_pieces p
        where p.source = %(s)s and p.volume = any(%(v)s) and p.kind = 'dismount'
    ), matched as (
        select distinct on (x.volume, x.mount_at) x.volume, x.at, x.mount_at
        from pieces x
        join tapelens.mounts m
          on m.source = %(s)s and m.volume = x.volume and m.mounted_at = x.mount_at
        where m.dismounted_at is null
        order by x.volume, x.mount_at, x.at
    ), updated as (
        update tapelens.mounts m set dismounted_at = x.at
        from matched x
        where m.source = %(s)s and m.volume = x.volume and m.mounted_at = x.mount_at
        returning x.volume, x.at
    )
    delete from tapelens.mount_pieces p using updated u
    where p.source = %(s)s and p.volume = u.volume and p.kind = 'dismount' and p.at = u.at
    """,
    # A mount with no dismount, then the next mount of the cartridge with no request within
    # the hour: the same mount, the second known from its Exiting line (the completion's
    # return) in the next file. One row, mounted when the first says, ended when the second.
    # A row that is itself the second of such a pair waits for the next pass.
    """
    with rows as (
        select volume, mounted_at, dismounted_at,
               lead(mounted_at) over w as next_at, lead(requested_at) over w as next_req,
               lead(dismounted_at) over w as next_dis, lead(drive) over w as next_drive,
               lead(status) over w as next_status
        from tapelens.mounts
        where source = %(s)s and volume = any(%(v)s)
        window w as (partition by volume order by mounted_at)
    ), flagged as (
        select *, (dismounted_at is null and next_at is not null and next_req is null
                   and next_at - mounted_at <= interval '1 hour') as joins
        from rows
    ), pairs as (
        select * from (
            select *, lag(joins) over (partition by volume order by mounted_at) as prev_joins
            from flagged
        ) f
        where joins and not coalesce(prev_joins, false)
    ), updated as (
        update tapelens.mounts m set dismounted_at = p.next_dis,
               drive = coalesce(p.next_drive, m.drive),
               status = case when p.next_status = 'aborted' then 'aborted' else m.status end
        from pairs p
        where m.source = %(s)s and m.volume = p.volume and m.mounted_at = p.mounted_at
        returning p.volume, p.next_at
    )
    delete from tapelens.mounts d using updated u
    where d.source = %(s)s and d.volume = u.volume and d.mounted_at = u.next_at
    """,
)
# What a joined mount holds decides its status.
_STATUS = """
    update tapelens.mounts set status = case
            when dismounted_at is null then 'no_dismount'
            when requested_at is null then 'no_request'
            else 'complete' end
    where source = %(s)s and volume = any(%(v)s)
      and status in ('complete', 'no_dismount', 'no_request')
      and status <> case
            when dismounted_at is null then 'no_dismount'
            when requested_at is null then 'no_request'
            else 'complete' end
"""
MAX_MERGE_PASSES = 8


def merge_open_mounts(cur: Any, source: str, run_id: int) -> None:
    """Move a load's pieces out of the mounts and join the pieces of mounts split across files
    (after-load hook of hpss-pvl, in the load's transaction)."""
    cur.execute(_TAKE_PIECES, {"s": source})
    cur.execute(
        "select coalesce(array_agg(distinct volume), '{}') from ("
        " select volume from tapelens.mounts"
        " where source = %(s)s and ingest_run_id = %(r)s and status <> 'complete'"
        " union all select volume from tapelens.mount_pieces"
        " where source = %(s)s and ingest_run_id = %(r)s) v",
        {"s": source, "r": run_id},
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
            break
    cur.execute(_STATUS, {"s": source, "v": volumes})


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
        if mount.cancelled:
            status = "aborted"
        elif mount.dismounted_at is None:
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
