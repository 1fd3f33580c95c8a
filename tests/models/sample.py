"""A tiny hand-made site whose gaps, duplicates and rates are worked out by hand in the tests.

Volume V1 (LTO-8), positions (dataset: files):
    1 A1   2 A2   3 B1   4 A3   5 aggregate [B2 @0, A4 @50, A5 @110]   6 B3   7 A6
    8 B1 (second copy)   50 C1   107 A7   206 A8
V2 (LTO-8): 1 A2 (second copy, newer)   2 A9 (removed from the catalog)
V3 (LTO-7, repacked): 1 A10
V5 (LTO-9, capacity 17 TB in the inventory): 1 C2 (3 GB)

Dataset A on V1 in position order: A1 first; A2 posdiff 1; A3 posdiff 2 over B1 (1000 bytes);
A4, A5 aggregate members; A6 posdiff 2 over B3 (500 bytes); A7 posdiff 100 (locate); A8
posdiff 99 (read through). Read-through posdiffs of A on V1: 1, 2, 2, 99.
"""

from __future__ import annotations

from datetime import UTC, datetime

import psycopg

A = "/atlas/data20/AOD/ds.A"
B = "/atlas/data20/RAW/ds.B"
C = "/atlas/data20/EVNT/ds.C"
GB = 1_000_000_000


def ts(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


# (file name, dataset, type, size_bytes, volume, position, offset_bytes, copy_no, written_at,
#  removed)
COPIES: list[tuple[str, str, str, int, str, int, int | None, int, str, bool]] = [
    ("A1.AOD.root", A, "AOD", 100, "V1", 1, None, 1, "2020-09-01 00:00:01", False),
    ("A2.AOD.root", A, "AOD", 200, "V1", 2, None, 1, "2020-09-01 00:00:02", False),
    ("B1.RAW.data", B, "RAW", 1000, "V1", 3, None, 1, "2020-09-01 00:00:03", False),
    ("A3.AOD.root", A, "AOD", 300, "V1", 4, None, 1, "2020-09-30 23:59:59", False),
    ("B2.RAW.data", B, "RAW", 50, "V1", 5, 0, 1, "2021-03-01 00:00:01", False),
    ("A4.AOD.root", A, "AOD", 60, "V1", 5, 50, 1, "2021-03-01 00:00:01", False),
    ("A5.AOD.root", A, "AOD", 70, "V1", 5, 110, 1, "2021-03-01 00:00:01", False),
    ("B3.RAW.data", B, "RAW", 500, "V1", 6, None, 1, "2021-03-02 00:00:00", False),
    ("A6.AOD.root", A, "AOD", 400, "V1", 7, None, 1, "2021-03-03 00:00:00", False),
    ("B1.RAW.data", B, "RAW", 1000, "V1", 8, None, 2, "2021-03-04 00:00:00", False),
    ("C1.EVNT.root", C, "EVNT", 2 * GB, "V1", 50, None, 1, "2021-03-05 00:00:00", False),
    ("A7.AOD.root", A, "AOD", 500, "V1", 107, None, 1, "2021-03-06 00:00:00", False),
    ("A8.AOD.root", A, "AOD", 600, "V1", 206, None, 1, "2021-03-07 00:00:00", False),
    ("A2.AOD.root", A, "AOD", 200, "V2", 1, None, 2, "2021-04-01 00:00:00", False),
    ("A9.AOD.root", A, "AOD", 900, "V2", 2, None, 1, "2021-04-02 00:00:00", True),
    ("A10.AOD.root", A, "AOD", 1000, "V3", 1, None, 1, "2019-01-01 00:00:00", False),
    ("C2.EVNT.root", C, "EVNT", 3 * GB, "V5", 1, None, 1, "2021-05-01 00:00:00", False),
]

# (volume, media_type, capacity_bytes, state)
TAPES = [
    ("V1", "LTO-8", None, "full"),
    ("V2", "LTO-8", None, "filling"),
    ("V3", "LTO-7", None, "repacked"),
    ("V5", "LTO-9", 17_000_000_000_000, "filling"),
]

# (drive, volume, mounted_at, dismounted_at, requested_at)
MOUNTS = [
    ("D1", "V1", "2021-04-10 10:00:00", "2021-04-10 11:00:00", "2021-04-10 09:58:00"),
    ("D1", "V1", "2021-04-10 12:00:00", "2021-04-10 12:30:00", None),
]

# (file name or None, dataset, volume or None, position or None, drive, started_at, duration_s,
#  size_bytes or None)
READS = [
    ("A1.AOD.root", A, "V1", 1, "D1", "2021-04-10 10:01:00", 1.0, 100),
    ("A2.AOD.root", A, "V1", 2, "D1", "2021-04-10 10:02:00", 2.0, 200),
    ("A3.AOD.root", A, "V1", 4, "D1", "2021-04-10 10:03:00", 3.0, 300),
    # billing style: no volume, no position, no size; the catalog fills them
    ("A6.AOD.root", A, None, None, "D1", "2021-04-10 10:04:00", 4.0, None),
    # second mount: the first read of a mount has no gap
    ("A8.AOD.root", A, "V1", 206, "D1", "2021-04-10 12:01:00", 6.0, 600),
    # V2 has no mount record: a window session
    ("A2.AOD.root", A, "V2", 1, None, "2021-04-11 08:00:00", 2.0, 200),
]


def copy_id(volume: str, position: int, offset: int | None) -> str:
    return f"{volume}:{position}:{'' if offset is None else offset}"


def insert_copies(
    conn: psycopg.Connection,
    rows: list[tuple[str, str, str, int, str, int, int | None, int, str, bool]],
    run_id: int,
) -> None:
    conn.cursor().executemany(
        """insert into tapelens.tape_files (source, copy_id, file_id, path, dataset,
               dataset_type, experiment, size_bytes, volume, position, offset_bytes, aggregate_id,
               copy_no, written_at, ingest_run_id, removed_at)
           values ('hpss', %s, %s, %s, %s, %s, 'atlas', %s, %s, %s, %s, %s, %s, %s, %s,
                   case when %s then now() end)""",
        [
            (
                copy_id(volume, position, offset),
                f"{dataset}/{name}",
                f"{dataset}/{name}",
                dataset,
                dtype,
                size,
                volume,
                position,
                offset,
                None if offset is None else f"{volume}:{position}",
                copy_no,
                ts(written),
                run_id,
                removed,
            )
            for (
                name,
                dataset,
                dtype,
                size,
                volume,
                position,
                offset,
                copy_no,
                written,
                removed,
            ) in rows
        ],
    )


def insert_sample(conn: psycopg.Connection) -> None:
    insert_copies(conn, COPIES, run_id=1)
    conn.cursor().executemany(
        """insert into tapelens.tapes (volume, barcode, media_type, capacity_bytes, state)
           values (%s, %s || 'L8', %s, %s, %s)""",
        [(v, v, m, c, s) for v, m, c, s in TAPES],
    )
    conn.cursor().executemany(
        """insert into tapelens.mounts (source, volume, drive, requested_at, mounted_at,
               dismounted_at, purpose, ingest_run_id)
           values ('pvl', %s, %s, %s, %s, %s, 'read', 2)""",
        [(v, d, req and ts(req), ts(m), ts(dm)) for d, v, m, dm, req in MOUNTS],
    )
    conn.cursor().executemany(
        """insert into tapelens.transfers (source, direction, volume, drive, file_id, path,
               position, size_bytes, started_at, duration_s, status, ingest_run_id)
           values ('billing', 'read', %s, %s, null, %s, %s, %s, %s, %s, 'ok', 3)""",
        [
            (v, d, f"{ds}/{name}", p, size, ts(at), dur)
            for name, ds, v, p, d, at, dur, size in READS
        ],
    )
