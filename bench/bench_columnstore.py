"""Columnstore compression: disk and query times of the catalog and the history, before and after.

    .venv/bin/python bench/bench_columnstore.py --copies 10000000 --transfers 10000000

Needs TimescaleDB's community edition (its module installed beside the Apache-2 one); on a
machine without it the script says so and stops. On one embedded server running that edition:

  write     the native HPSS catalog of bench_scale.py, a tape inventory, a transfer log (the
            canonical CSV, zstd) spanning the two years up to yesterday and a mount log
  load      `tapelens ingest` of each, through the CLI
  before    each hypertable's bytes (heap, indexes, TOAST), and the queries below, best of 3
  late      a late transfer log before compression: 1% of the history's rows again and as many
            new rows at old times (`ingest transfers`, timed)
  compress  `tapelens db compress --older-than 90` (transfers and mounts), timed
  catalog   the catalog compressed by hand, as a site could (segments by source and volume,
            ordered by position), timed: tapelens does not do this, a catalog load refuses it
  after     the same sizes and queries, and a second late log of the same shape, timed
  refused   `tapelens ingest catalog` of a newer dump (1% changed): refused, with its message
  restore   every catalog chunk decompressed, timed: what the next catalog load would cost

Prints markdown tables (sizes per 100 M rows, query times and their ratios), the machine and
the command; progress on stderr.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import polars as pl
import psycopg
import zstandard
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scale import PER_VOLUME, _mix, paths_of, write_catalog, write_tapes  # noqa: E402
from common import PG_BIN, TAPELENS, bench_server, fresh_database, machine, measure  # noqa: E402

from tapelens.server import community_module  # noqa: E402

CHUNK = 1_000_000
HISTORY = timedelta(days=730)
DRIVES = 40
HOSTS = 20
MOUNT_EVERY = 20  # one mount for this many transfers
RUNS = 3
MB = 2**20
TABLES = ("tape_files", "transfers", "mounts")
# The files written into --workdir, and removed at the end.
WRITTEN = (
    "ls-P.txt.zst",
    "ls-P-newer.txt.zst",
    "tapes.csv",
    "transfers.csv.zst",
    "mounts.csv.zst",
    "late-1.csv.zst",
    "late-2.csv.zst",
)

# What the marts, plans and dashboards ask of these tables, each a shape that recurs.
QUERIES: dict[str, str] = {
    "transfers: bytes read per drive and day, whole history": (
        "select drive, time_bucket('1 day', started_at) d, sum(size_bytes)"
        " from tapelens.transfers where direction = 'read' group by 1, 2"
    ),
    "transfers: one volume's reads in one week": (
        "select count(*), sum(size_bytes) from tapelens.transfers where volume = 'A0000700'"
        " and started_at >= now() - interval '400 days'"
        " and started_at < now() - interval '393 days'"
    ),
    "transfers: 1,000 paths read in the last 30 days": (
        "select count(*) from tapelens.transfers t where t.path = any(%(paths)s)"
        " and t.started_at >= now() - interval '30 days'"
    ),
    "mounts: per day, whole history": (
        "select time_bucket('1 day', mounted_at), count(*) from tapelens.mounts group by 1"
    ),
    "catalog: copies of 1,000 paths": (
        "select count(*) from tapelens.tape_files where path = any(%(paths)s)"
        " and removed_at is null"
    ),
    "catalog: one volume in position order": (
        "select path, position, offset_bytes from tapelens.tape_files"
        " where volume = 'A0000700' and removed_at is null order by position, offset_bytes"
    ),
    "catalog: copies and bytes per dataset": (
        "select dataset, count(*), sum(size_bytes) from tapelens.tape_files"
        " where removed_at is null group by 1"
    ),
}


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def transfers_of(k: np.ndarray, total: int, copies: int, end: datetime) -> pl.DataFrame:
    """Transfers number k of `total`, evenly over HISTORY up to `end`, in time order: each a
    copy drawn at random (so a volume's reads spread over the history), 90% reads."""
    i = (_mix(k, 21) * copies).astype(np.int64)
    step_us = HISTORY / timedelta(microseconds=1) / total
    started = (end - HISTORY).timestamp() * 1e6 + k * step_us
    size = 100_000_000 + (i * 7919) % 2_200_000_000
    read = _mix(k, 22) < 0.9
    failed = _mix(k, 23) < 0.01
    path = paths_of(i)
    return pl.DataFrame(
        {
            "direction": np.where(read, "read", "write"),
            "volume": pl.Series(i // PER_VOLUME).cast(pl.String).str.zfill(5),
            "drive": pl.Series(k % DRIVES).cast(pl.String).str.zfill(2),
            "host": pl.Series(k % HOSTS).cast(pl.String).str.zfill(3),
            "file_id": path,
            "path": path,
            "position": i % PER_VOLUME + 1,
            "size_bytes": size,
            "started_at": pl.Series(started.astype(np.int64)).cast(pl.Datetime("us", "UTC")),
            "duration_s": np.round(size / 300e6, 3),
            "queued_s": np.round(_mix(k, 24) * 600, 3),
            "locate_s": np.round(_mix(k, 25) * 90, 3),
            "status": np.where(failed, "failed", "ok"),
            "error": np.where(failed, "tape read error: medium error", ""),
            "requester": np.where(_mix(k, 26) < 0.8, "production", "analysis"),
        }
    ).with_columns(
        volume=pl.lit("A") + pl.col("volume") + pl.lit("00"),
        drive=pl.lit("LTO8-") + pl.col("drive"),
        host=pl.lit("tpsrv") + pl.col("host"),
    )


def transfers_chunk(start: int, stop: int, total: int, copies: int, end: datetime) -> pl.DataFrame:
    return transfers_of(np.arange(start, stop, dtype=np.int64), total, copies, end)


def mounts_chunk(start: int, stop: int, total: int, copies: int, end: datetime) -> pl.DataFrame:
    k = np.arange(start, stop, dtype=np.int64)
    volumes = max(1, copies // PER_VOLUME)
    step_us = HISTORY / timedelta(microseconds=1) / total
    mounted = (end - HISTORY).timestamp() * 1e6 + k * step_us
    stamp = pl.Datetime("us", "UTC")
    return pl.DataFrame(
        {
            "volume": (_mix(k, 31) * volumes).astype(np.int64),
            "drive": pl.Series(k % DRIVES).cast(pl.String).str.zfill(2),
            "requested_at": pl.Series((mounted - 95e6).astype(np.int64)).cast(stamp),
            "mounted_at": pl.Series(mounted.astype(np.int64)).cast(stamp),
            "dismounted_at": pl.Series((mounted + 1_800e6).astype(np.int64)).cast(stamp),
            "purpose": np.where(_mix(k, 32) < 0.9, "read", "write"),
            "status": "complete",
        }
    ).with_columns(
        volume=pl.lit("A") + pl.col("volume").cast(pl.String).str.zfill(5) + pl.lit("00"),
        drive=pl.lit("LTO8-") + pl.col("drive"),
    )


def write_csv(path: Path, chunks: Iterator[pl.DataFrame], total: int) -> int:
    rows = 0
    compressor = zstandard.ZstdCompressor(level=3, threads=2)
    with open(path, "wb") as raw, compressor.stream_writer(raw) as out:
        for n, chunk in enumerate(chunks):
            out.write(chunk.write_csv(include_header=n == 0).encode())
            rows += chunk.height
            say(f"  {path.name}: {rows:,}/{total:,}")
    return rows


def late_log(path: Path, total: int, copies: int, end: datetime, seed: int) -> int:
    """1% of the history's transfers again (already stored) and as many new ones between them,
    a millisecond later: a rotated log that reaches old chunks."""
    picks = np.sort((_mix(np.arange(total // 100, dtype=np.int64), seed) * total).astype(np.int64))
    frames = []
    for at in range(0, picks.size, CHUNK):
        rows = transfers_of(picks[at : at + CHUNK], total, copies, end)
        newer = rows.with_columns(pl.col("started_at") + pl.duration(milliseconds=1))
        frames += [rows, newer]
    return write_csv(path, iter(frames), 2 * picks.size)


def sizes(dsn: str) -> dict[str, tuple[int, int, int, int]]:
    """Per hypertable: (heap, indexes, TOAST, total) bytes, compressed chunks included."""
    found = {}
    with psycopg.connect(dsn) as conn:
        for table in TABLES:
            row = conn.execute(
                "select table_bytes, index_bytes, toast_bytes, total_bytes"
                " from hypertable_detailed_size(%s::regclass)",
                [f"tapelens.{table}"],
            ).fetchone()
            found[table] = tuple(int(v or 0) for v in row) if row else (0, 0, 0, 0)
    return found  # type: ignore[return-value]


def counts(dsn: str) -> dict[str, int]:
    found = {}
    with psycopg.connect(dsn) as conn:
        for t in TABLES:
            query = sql.SQL("select count(*) from {}").format(sql.Identifier("tapelens", t))
            row = conn.execute(query).fetchone()
            found[t] = int(row[0]) if row else 0
    return found


def time_queries(dsn: str, paths: list[str], recent: list[str]) -> dict[str, float]:
    """Best of RUNS wall seconds of each query, run to its last row."""
    best = {}
    with psycopg.connect(dsn) as conn:
        for name, query in QUERIES.items():
            args = {"paths": recent if "last 30 days" in name else paths}
            runs = []
            for _ in range(RUNS):
                started = time.perf_counter()
                conn.execute(query, args if "%(paths)s" in query else None).fetchall()
                runs.append(time.perf_counter() - started)
            best[name] = min(runs)
            say(f"  {name}: {best[name]:.3f} s")
    return best


def state(
    dsn: str, paths: list[str], recent: list[str], when: str
) -> tuple[dict[str, tuple[int, int, int, int]], dict[str, float]]:
    """Sizes and query times, after VACUUM ANALYZE (so both sides have their statistics)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("vacuum analyze")
    found = sizes(dsn)
    say(f"queries {when}")
    return found, time_queries(dsn, paths, recent)


def compress_catalog(dsn: str) -> float:
    started = time.perf_counter()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "alter table tapelens.tape_files set (timescaledb.compress,"
            " timescaledb.compress_segmentby = 'source, volume',"
            " timescaledb.compress_orderby = 'position, offset_bytes')"
        )
        chunks = [r[0] for r in conn.execute("select show_chunks('tapelens.tape_files')")]
        for n, chunk in enumerate(chunks, 1):
            conn.execute("select compress_chunk(%s)", [chunk])
            say(f"  catalog: {n}/{len(chunks)} chunks compressed")
    return time.perf_counter() - started


def decompress_catalog(dsn: str) -> float:
    started = time.perf_counter()
    with psycopg.connect(dsn, autocommit=True) as conn:
        chunks = [r[0] for r in conn.execute("select show_chunks('tapelens.tape_files')")]
        for n, chunk in enumerate(chunks, 1):
            conn.execute("select decompress_chunk(%s, true)", [chunk])
            say(f"  catalog: {n}/{len(chunks)} chunks decompressed")
    return time.perf_counter() - started


def run(args: argparse.Namespace, server: str) -> None:
    work: Path = args.workdir
    catalog, newer, tapes, transfers, mounts, *lates = (work / name for name in WRITTEN)
    end = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=1)
    n_mounts = args.transfers // MOUNT_EVERY
    say("write")
    write_tapes(tapes, args.copies)
    write_catalog(catalog, args.copies, args.seed, newer=False)
    write_catalog(newer, args.copies, args.seed, newer=True)
    write_csv(
        transfers,
        (
            transfers_chunk(s, min(s + CHUNK, args.transfers), args.transfers, args.copies, end)
            for s in range(0, args.transfers, CHUNK)
        ),
        args.transfers,
    )
    write_csv(
        mounts,
        (
            mounts_chunk(s, min(s + CHUNK, n_mounts), n_mounts, args.copies, end)
            for s in range(0, n_mounts, CHUNK)
        ),
        n_mounts,
    )
    late_rows = [late_log(p, args.transfers, args.copies, end, 40 + n) for n, p in enumerate(lates)]
    rng = np.random.default_rng(args.seed)
    paths = paths_of(rng.choice(args.copies, 1000, replace=False)).to_list()
    recent_at = args.transfers - 1 - rng.choice(args.transfers // 24, 1000, replace=False)
    recent = transfers_of(recent_at, args.transfers, args.copies, end)["path"].to_list()

    timings: dict[str, float] = {}
    with fresh_database(server) as dsn:
        base = [TAPELENS, "--dsn", dsn]
        for what, argv in (
            ("tapes", [*base, "ingest", "tapes", "--format", "csv", str(tapes)]),
            ("catalog", [*base, "ingest", "catalog", "--format", "hpss-lsp", str(catalog)]),
            ("mounts", [*base, "ingest", "mounts", "--format", "csv", str(mounts)]),
            ("transfers", [*base, "ingest", "transfers", "--format", "csv", str(transfers)]),
        ):
            say(f"load {what}")
            timings[f"load {what}"] = measure(argv).seconds
        rows = counts(dsn)
        before, q_before = state(dsn, paths, recent, "before")
        say("late log before compression")
        late = [*base, "ingest", "transfers", "--format", "csv"]
        timings["late before"] = measure([*late, str(lates[0])]).seconds
        say("db compress --older-than 90")
        done = measure([*base, "db", "compress", "--older-than", "90"])
        timings["db compress"] = done.seconds
        print(done.stdout, file=sys.stderr)
        say("catalog compressed by hand")
        timings["catalog compress"] = compress_catalog(dsn)
        after, q_after = state(dsn, paths, recent, "after")
        say("late log after compression")
        timings["late after"] = measure([*late, str(lates[1])]).seconds
        refused = _refused([*base, "ingest", "catalog", "--format", "hpss-lsp", str(newer)])
        say("catalog decompressed")
        timings["catalog decompress"] = decompress_catalog(dsn)
        restored = sizes(dsn)["tape_files"][3]
    report(args, rows, before, after, restored, q_before, q_after, timings, late_rows, refused)


def _refused(argv: list[str]) -> str:
    import subprocess

    res = subprocess.run(argv, capture_output=True, text=True, check=False)
    if res.returncode == 0:
        raise SystemExit("a catalog load over compressed chunks was not refused")
    return res.stderr.strip().splitlines()[-1]


def report(
    args: argparse.Namespace,
    rows: dict[str, int],
    before: dict[str, tuple[int, int, int, int]],
    after: dict[str, tuple[int, int, int, int]],
    restored: int,
    q_before: dict[str, float],
    q_after: dict[str, float],
    timings: dict[str, float],
    late_rows: list[int],
    refused: str,
) -> None:
    print(f"machine: {machine()}")
    print(f"command: {' '.join(sys.argv)}")
    print()
    print(
        "| table | rows | before: heap / indexes / total, MB | after: total, MB | ratio"
        " | GB per 100 M rows, before | after |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for t in TABLES:
        b, a, n = before[t], after[t], rows[t]
        per = 1e8 / max(n, 1) / 1e9
        print(
            f"| {t} | {n:,} | {b[0] / MB:,.0f} / {b[1] / MB:,.0f} / {b[3] / MB:,.0f}"
            f" | {a[3] / MB:,.0f} | {b[3] / max(a[3], 1):.1f}x | {b[3] * per:.1f}"
            f" | {a[3] * per:.1f} |"
        )
    print()
    print("| query | before, s | after, s | after / before |")
    print("|---|---:|---:|---:|")
    for name in QUERIES:
        b, a = q_before[name], q_after[name]
        print(f"| {name} | {b:.3f} | {a:.3f} | {a / b:.2f} |")
    print()
    print("| step | seconds |")
    print("|---|---:|")
    for name, seconds in timings.items():
        print(f"| {name} | {seconds:.1f} |")
    print()
    print(f"- late logs: {late_rows[0]:,} and {late_rows[1]:,} rows (half already stored)")
    late_ratio = timings["late after"] / timings["late before"]
    print(f"- late log into compressed chunks / into rows: {late_ratio:.2f}")
    print(f"- catalog after decompressing every chunk: {restored / MB:,.0f} MB")
    print(f"- a catalog load over the compressed catalog: {refused}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=int, default=10_000_000)
    ap.add_argument("--transfers", type=int, default=10_000_000)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/tapelens-columnstore"))
    args = ap.parse_args()
    if community_module(PG_BIN) is None:
        raise SystemExit(
            "bench_columnstore: TimescaleDB's community edition is not installed beside the"
            f" Apache-2 one (no timescaledb-tsl-*.so in {PG_BIN.parent / 'lib'}): nothing to"
            " measure"
        )
    args.workdir.mkdir(parents=True, exist_ok=True)
    os.environ.pop("TAPELENS_DSN", None)
    try:
        with bench_server(None, timescaledb_license="timescale") as server:
            run(args, server)
    finally:
        for name in WRITTEN:  # only what this script wrote: the directory may hold other files
            (args.workdir / name).unlink(missing_ok=True)


if __name__ == "__main__":
    main()
