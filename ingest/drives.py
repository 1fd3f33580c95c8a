"""The drive inventory (tapelens.drives): loaded from a CSV the site keeps, or worked out from
the mount logs already loaded.

CSV: a header naming `drive` and `drive_type` (the media generation the drive writes: LTO8,
LTO-8, 3592-JF ...), optionally `library` and `state` (online or offline; default online), one
drive a line. Loading it adds or updates those drives and leaves the others; it is one
transaction, and loading the same file again changes nothing.

From the mounts: each drive named in tapelens.mounts gets the newest media generation whose
drive reads every media type mounted on it (an LTO-8 drive mounts LTO-7 and LTO-8 tapes), from
the inventory's media types of the mounted volumes.
"""

from __future__ import annotations

import csv
from pathlib import Path

import polars as pl
import psycopg

from tapelens.errors import DatabaseError, InputError, ParseError
from tapelens.frames import one_line
from tapelens.media import BY_NAME as MEDIA
from tapelens.media import normalise_drive_type
from tapelens.textfiles import LineReader

STATES = ("online", "offline")
SCHEMA = {"drive": pl.String, "drive_type": pl.String, "library": pl.String, "state": pl.String}


def read_drives_csv(path: str | Path) -> pl.DataFrame:
    """The drives a CSV lists (SCHEMA); a bad line is a ParseError naming file and line."""
    reader = LineReader(path)
    try:
        lines = [(line.no, line.text) for line in reader]
    finally:
        reader.close()
    if reader.encoding_rejects:
        bad = reader.encoding_rejects[0]
        raise ParseError(path, bad.line_no, bad.reason)
    content = [(no, text) for no, text in lines if text.strip() and not text.startswith("#")]
    if not content:
        raise InputError(f"{path}: no drives (expected a header naming drive and drive_type)")
    header_no, header = content[0]
    names = [c.strip().lower() for c in next(csv.reader([header.lstrip("\ufeff")]))]
    for needed in ("drive", "drive_type"):
        if needed not in names:
            raise ParseError(path, header_no, f"the header names no {needed} column: {header!r}")
    rows: dict[str, dict[str, str | None]] = {}
    for no, text in content[1:]:
        cells = next(csv.reader([text]))
        if len(cells) != len(names):
            raise ParseError(path, no, f"expected {len(names)} fields ({','.join(names)})")
        row = dict(zip(names, (c.strip() for c in cells), strict=True))
        drive = row["drive"]
        if not drive:
            raise ParseError(path, no, "empty drive name")
        kind = normalise_drive_type(row["drive_type"])
        if kind not in MEDIA:
            raise ParseError(
                path, no, f"unknown drive type {row['drive_type']!r} (known: {', '.join(MEDIA)})"
            )
        state = (row.get("state") or "online").lower()
        if state not in STATES:
            raise ParseError(path, no, f"state {state!r}: expected {' or '.join(STATES)}")
        if drive in rows:
            raise ParseError(path, no, f"drive {drive!r} listed twice")
        rows[drive] = {
            "drive": drive,
            "drive_type": kind,
            "library": row.get("library") or None,
            "state": state,
        }
    return pl.DataFrame(list(rows.values()), schema=SCHEMA)


def drives_from_mounts(conn: psycopg.Connection) -> pl.DataFrame:
    """The drives the mount logs name (SCHEMA; state online), each with the newest media
    generation whose drive reads every media type mounted on it; drives whose mounted tapes'
    media are all unknown are left out."""
    try:
        rows = conn.execute(
            "select m.drive, t.media_type, count(*) from tapelens.mounts m"
            " join tapelens.tapes t on t.volume = m.volume"
            " where m.drive is not null and t.media_type is not null"
            " group by 1, 2"
        ).fetchall()
    except psycopg.Error as exc:
        raise DatabaseError(one_line(exc)) from None
    mounted: dict[str, dict[str, int]] = {}
    for drive, media, n in rows:
        if media in MEDIA:
            mounted.setdefault(str(drive), {})[str(media)] = int(n)
    found = []
    for drive, media in sorted(mounted.items()):
        fits = [c for c in media if all(c in MEDIA[m].readable_by for m in media)]
        # The newest generation that reads them all; else the media mounted most.
        kind = (
            max(fits, key=lambda c: (MEDIA[c].generation, c))
            if fits
            else max(media, key=lambda m: (media[m], m))
        )
        found.append({"drive": drive, "drive_type": kind, "library": None, "state": "online"})
    return pl.DataFrame(found, schema=SCHEMA)


def store_drives(conn: psycopg.Connection, drives: pl.DataFrame) -> tuple[int, int]:
    """Add or update these drives in one transaction; (added, changed). A drive's library is
    kept when the new row names none."""
    try:
        with conn.transaction(), conn.cursor() as cur:
            cur.execute("select drive, drive_type, library, state from tapelens.drives")
            before = {r[0]: r[1:] for r in cur.fetchall()}
            added = changed = 0
            for drive, kind, library, state in drives.rows():
                old = before.get(drive)
                if old is None:
                    added += 1
                elif (kind, library or old[1], state) != old:
                    changed += 1
                else:
                    continue
                cur.execute(
                    "insert into tapelens.drives (drive, drive_type, library, state)"
                    " values (%s, %s, %s, %s) on conflict (drive) do update set"
                    " drive_type = excluded.drive_type,"
                    " library = coalesce(excluded.library, tapelens.drives.library),"
                    " state = excluded.state",
                    [drive, kind, library, state],
                )
    except psycopg.Error as exc:
        raise DatabaseError(one_line(exc)) from None
    return added, changed


def inventory(conn: psycopg.Connection) -> pl.DataFrame:
    """Every drive with its mounts in the logs and the last of them."""
    try:
        rows = conn.execute(
            "select d.drive, d.drive_type, d.library, d.state, count(m.drive) as mounts,"
            " max(m.mounted_at) as last_mounted_at from tapelens.drives d"
            " left join tapelens.mounts m on m.drive = d.drive"
            " group by 1, 2, 3, 4 order by d.drive_type, d.drive"
        ).fetchall()
    except psycopg.Error as exc:
        raise DatabaseError(one_line(exc)) from None
    return pl.DataFrame(
        rows,
        schema={**SCHEMA, "mounts": pl.Int64, "last_mounted_at": pl.Datetime("us", "UTC")},
        orient="row",
    )
