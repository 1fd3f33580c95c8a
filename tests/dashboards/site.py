"""A small site with something on every dashboard: two experiments, four dataset types, three
LTO generations, datasets interleaved on tape before the sort option and contiguous after it,
a few duplicate copies, three days of reads (some failed), and one saved recall plan that was
partly carried out.

Deterministic (a seeded random.Random), a few hundred rows: loads in well under a second.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

SEED = 11
GB = 1_000_000_000
CUTOVER = datetime(2020, 10, 1, tzinfo=UTC)
PLAN_NAME = "atlas-aod-reprocessing"
PLAN_SAVED_AT = datetime(2022, 2, 1, 8, 0, tzinfo=UTC)

# (volume, media type) — three cartridges of each generation
TAPES = [(f"V{n:02d}", media) for n, media in enumerate(["LTO-7"] * 3 + ["LTO-8"] * 3, 1)] + [
    (f"V{n:02d}", "LTO-9") for n in range(7, 10)
]
DRIVES = [("D1", "LTO-8"), ("D2", "LTO-8"), ("D3", "LTO-9"), ("D4", "LTO-9")]
RATE_MB_S = {"LTO-7": 300.0, "LTO-8": 360.0, "LTO-9": 400.0}
# (experiment, dataset type, dataset, files, mean size in GB)
DATASETS = [
    ("atlas", "AOD", "/atlas/data20/AOD/data20.00401.AOD", 30, 2.5),
    ("atlas", "AOD", "/atlas/data21/AOD/data21.00512.AOD", 24, 2.0),
    ("atlas", "RAW", "/atlas/data20/RAW/data20.00401.RAW", 20, 6.0),
    ("atlas", "EVNT", "/atlas/mc20/EVNT/mc20.8001.EVNT", 28, 0.4),
    ("cms", "AOD", "/cms/store/data/Run2020A/AOD", 26, 3.0),
    ("cms", "RAW", "/cms/store/data/Run2020A/RAW", 18, 8.0),
    ("cms", "HITS", "/cms/store/mc/Summer20/HITS", 32, 1.2),
]


def _copies(rng: random.Random) -> list[dict[str, Any]]:
    """Each dataset's files, half written before the cutover (interleaved with the others on
    the tape of the day) and half after (each dataset on a tape run of its own)."""
    files: list[dict[str, Any]] = []
    for experiment, dtype, dataset, count, mean_gb in DATASETS:
        for i in range(count):
            before = i < count // 2
            start = datetime(2019, 6, 1, tzinfo=UTC) if before else CUTOVER
            written = start + timedelta(days=rng.randrange(0, 420), seconds=rng.randrange(86400))
            files.append(
                {
                    "experiment": experiment,
                    "dataset_type": dtype,
                    "dataset": dataset,
                    "path": f"{dataset}/file{i:04d}.{dtype}.root",
                    "size_bytes": int(rng.uniform(0.3, 1.7) * mean_gb * GB),
                    "written_at": written,
                    "before": before,
                }
            )
    files.sort(key=lambda f: (f["written_at"], f["path"]))
    copies: list[dict[str, Any]] = []
    positions = {volume: 0 for volume, _ in TAPES}
    volumes = [v for v, _ in TAPES]
    for f in files:
        if f["before"]:
            volume = volumes[rng.randrange(0, 4)]  # V01-V04 mix every dataset
        else:
            volume = volumes[4 + DATASETS.index(_dataset_row(str(f["dataset"]))) % 5]
        positions[volume] += 1
        copies.append({**f, "volume": volume, "position": positions[volume], "copy_no": 1})
    # lost-acknowledgement retries: a few files written again, later, on the newest tapes
    for f in rng.sample(files, 12):
        volume = volumes[6 + rng.randrange(0, 3)]
        positions[volume] += 1
        rewritten = f["written_at"] + timedelta(days=rng.randrange(1, 30))
        copies.append(
            {
                **f,
                "volume": volume,
                "position": positions[volume],
                "copy_no": 2,
                "written_at": rewritten,
            }
        )
    return copies


def _dataset_row(dataset: str) -> tuple[str, str, str, int, float]:
    return next(row for row in DATASETS if row[2] == dataset)


def insert_site(conn: psycopg.Connection) -> None:
    """Load the site into the canonical tables of an empty, migrated database."""
    rng = random.Random(SEED)
    media = dict(TAPES)
    cur = conn.cursor()
    cur.executemany(
        "insert into tapelens.drives (drive, drive_type, library) values (%s, %s, 'LIB1')",
        DRIVES,
    )
    cur.executemany(
        """insert into tapelens.tapes (volume, barcode, media_type, library, pool, state)
           values (%s, %s, %s, 'LIB1', 'data', 'full')""",
        [(v, f"{v}L{m[-1]}", m) for v, m in TAPES],
    )
    copies = _copies(rng)
    cur.executemany(
        """insert into tapelens.tape_files (source, copy_id, file_id, path, dataset,
               dataset_type, experiment, size_bytes, volume, position, copy_no, written_at,
               ingest_run_id)
           values ('site', %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, 1)""",
        [
            (
                f"{c['volume']}:{c['position']}",
                c["path"],
                c["path"],
                c["dataset"],
                c["dataset_type"],
                c["experiment"],
                c["size_bytes"],
                c["volume"],
                c["position"],
                c["copy_no"],
                c["written_at"],
            )
            for c in copies
        ],
    )
    _operations(cur, rng, [c for c in copies if c["copy_no"] == 1], media)
    _plan(cur, rng, [c for c in copies if c["copy_no"] == 1], media)


def _operations(
    cur: psycopg.Cursor, rng: random.Random, copies: list[dict[str, Any]], media: dict[str, str]
) -> None:
    """Three days of recalls: each mount reads a sample of one tape in position order."""
    mounts: list[tuple[Any, ...]] = []
    reads: list[tuple[Any, ...]] = []
    for day in range(3):
        clock = datetime(2022, 1, 10 + day, 8, 0, tzinfo=UTC)
        for volume in rng.sample(sorted(media), 6):
            drive = "D3" if media[volume] == "LTO-9" else rng.choice(["D1", "D2"])
            on_tape = sorted(
                (c for c in copies if c["volume"] == volume),
                key=lambda c: c["position"],
            )
            wanted = sorted(rng.sample(on_tape, min(len(on_tape), 8)), key=lambda c: c["position"])
            mounted_at = clock + timedelta(seconds=90)
            at = mounted_at + timedelta(seconds=30)
            previous = 0
            for c in wanted:
                gap = int(c["position"]) - previous
                previous = int(c["position"])
                rate = RATE_MB_S[media[volume]] / (1 + 0.15 * max(gap - 1, 0))
                duration = int(c["size_bytes"]) / 1e6 / rate
                failed = rng.random() < 0.08
                reads.append(
                    (
                        "read",
                        volume,
                        drive,
                        c["path"],
                        c["position"],
                        c["size_bytes"],
                        at,
                        round(duration, 3),
                        "failed" if failed else "ok",
                        rng.choice(["checksum mismatch", "tape read error: medium error"])
                        if failed
                        else None,
                    )
                )
                at += timedelta(seconds=duration + 5)
            mounts.append(("site", volume, drive, clock, mounted_at, at + timedelta(seconds=60)))
            clock = at + timedelta(seconds=120)
    cur.executemany(
        """insert into tapelens.mounts (source, volume, drive, requested_at, mounted_at,
               dismounted_at, purpose, ingest_run_id)
           values (%s, %s, %s, %s, %s, %s, 'read', 2)""",
        mounts,
    )
    _insert_transfers(cur, reads)


def _insert_transfers(cur: psycopg.Cursor, reads: Sequence[tuple[Any, ...]]) -> None:
    cur.executemany(
        """insert into tapelens.transfers (source, direction, volume, drive, file_id, path,
               position, size_bytes, started_at, duration_s, status, error, ingest_run_id)
           values ('site', %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, 3)""",
        [
            (d, v, dr, p, p, pos, s, at, dur, st, err)
            for d, v, dr, p, pos, s, at, dur, st, err in reads
        ],
    )


def _plan(
    cur: psycopg.Cursor, rng: random.Random, copies: list[dict[str, Any]], media: dict[str, str]
) -> None:
    """A saved plan for one dataset, and the reads that carried out most of it, a bit slower
    than predicted."""
    dataset = DATASETS[0][2]
    files = sorted(
        (c for c in copies if c["dataset"] == dataset),
        key=lambda c: (c["volume"], c["position"]),
    )
    volumes = sorted({str(c["volume"]) for c in files})
    rows: list[tuple[Any, ...]] = []
    reads: list[tuple[Any, ...]] = []
    clock_s = {"D1": 0.0, "D2": 0.0}
    actual_start = PLAN_SAVED_AT + timedelta(minutes=20)
    for mount_order, volume in enumerate(volumes, 1):
        drive = "D1" if mount_order % 2 else "D2"
        at = clock_s[drive] + 120.0
        for c in (c for c in files if c["volume"] == volume):
            duration = int(c["size_bytes"]) / 1e6 / RATE_MB_S[media[volume]]
            rows.append(
                (
                    PLAN_NAME,
                    len(rows) + 1,
                    mount_order,
                    drive,
                    volume,
                    c["position"],
                    c["path"],
                    c["path"],
                    c["size_bytes"],
                    "reprocessing",
                    round(at, 3),
                    round(at + duration, 3),
                )
            )
            if mount_order < len(volumes):  # the last tape is not read yet
                started = actual_start + timedelta(seconds=at * 1.15)
                reads.append(
                    (
                        "read",
                        volume,
                        drive,
                        c["path"],
                        c["position"],
                        c["size_bytes"],
                        started,
                        round(duration * 1.1, 3),
                        "ok",
                        None,
                    )
                )
            at += duration + 2.0
        clock_s[drive] = at + 60.0
    makespan = max(r[-1] for r in rows)
    cur.execute(
        """insert into tapelens.recall_plans (name, created_at, summary, params)
           values (%s, %s, %s, %s)""",
        [
            PLAN_NAME,
            PLAN_SAVED_AT,
            json.dumps({"makespan_s": makespan, "files": len(rows)}),
            json.dumps({"drives": [["LTO-8", 2]]}),
        ],
    )
    cur.executemany(
        """insert into tapelens.recall_plan_files (plan_name, read_order, mount_order, drive,
               volume, position, path, file_id, size_bytes, requester, predicted_start_s,
               predicted_end_s)
           values (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)""",
        rows,
    )
    _insert_transfers(cur, reads)
