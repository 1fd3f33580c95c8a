"""`tapelens ingest hints` against the best manual bulk load of the same rows.

Run: nice -n 19 .venv/bin/python bench/bench_hints_ingest.py [--records 1000000] [--seed 7]
[--dsn DSN] [--workdir DIR]

Writes --records records of WLCG archive metadata in the ATLAS plugin's shape, one dataset in
twenty sent with empty hints (bench_families' site_hints, zstd-compressed CSV as bench_families
part 4 loads it), then on a fresh database of an embedded server (or of --dsn):

1. `tapelens ingest hints --format csv FILE`, the CLI as a child process, timed with its peak
   RSS;
2. the peer: the rows that load stored, exported as COPY text and loaded into
   tapelens.write_hints of a second fresh database with one plain `COPY ... FROM STDIN` (no
   parsing, no checks, no staging table): the floor of any loader of these rows.

Prints records/s of each and their ratio, with the CPU seconds of the command and of the
server (a machine shared with other work stretches wall times, less so CPU times). Progress
goes to stderr.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_families import write_site_hints  # noqa: E402
from bench.common import (  # noqa: E402
    TAPELENS,
    bench_server,
    fresh_database,
    machine,
    measure,
    server_cpu_seconds,
)
from tapelens.ingest.canonical import WRITE_HINTS  # noqa: E402

COPY_BLOCK = 1 << 20
SESSION_WAITS = 300  # tenths of a second to wait for the sessions before to end
# The stored columns of a write_hints row: the canonical ones and the load that wrote it.
COLUMNS = ", ".join([*WRITE_HINTS, "ingest_run_id"])


def say(message: str) -> None:
    print(f"  {message}", file=sys.stderr, flush=True)


def stored_rows(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("select count(*) from tapelens.write_hints").fetchone()
    return int(row[0]) if row else 0


def export_rows(dsn: str, path: Path) -> None:
    """The stored rows as COPY text, for the peer to load."""
    with (
        psycopg.connect(dsn) as conn,
        conn.cursor() as cur,
        open(path, "wb") as out,
        cur.copy(f"copy (select {COLUMNS} from tapelens.write_hints) to stdout") as rows,
    ):
        for block in rows:
            out.write(block)


def copy_in(dsn: str, path: Path) -> float:
    """Seconds of one `COPY tapelens.write_hints FROM STDIN` of the exported rows, committed."""
    with psycopg.connect(dsn) as conn:
        started = time.perf_counter()
        with (
            conn.cursor() as cur,
            open(path, "rb") as src,
            cur.copy(f"copy tapelens.write_hints ({COLUMNS}) from stdin") as sink,
        ):
            while block := src.read(COPY_BLOCK):
                sink.write(block)
        conn.commit()
        return time.perf_counter() - started


def server_cpu_after(dsn: str) -> float | None:
    """server_cpu_seconds once the database's other sessions have ended: a backend's CPU
    counts only once it has exited, which lags its client's exit on a busy machine."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        for _ in range(SESSION_WAITS):
            row = conn.execute(
                "select count(*) from pg_stat_activity"
                " where datname = current_database() and pid <> pg_backend_pid()"
            ).fetchone()
            if not row or not row[0]:
                break
            time.sleep(0.1)
    return server_cpu_seconds(dsn)


def _spent(before: float | None, after: float | None) -> float:
    """CPU seconds the server spent between two readings (NaN when it is not on this machine)."""
    return float("nan") if before is None or after is None else after - before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--dsn", help="a server to use instead of an embedded one")
    parser.add_argument("--workdir", type=Path, help="where the input goes (a temp dir if none)")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    with tempfile.TemporaryDirectory(prefix="tapelens-hints-", dir=args.workdir) as tmp:
        hints, exported = Path(tmp) / "hints.csv.zst", Path(tmp) / "write_hints.copy"
        say(f"writing {args.records:,} records")
        written = write_site_hints(hints, args.records, args.seed)
        print(f"input: {written:,} records, {hints.stat().st_size / 1e6:.1f} MB zstd-compressed")
        with bench_server(args.dsn) as server:
            with fresh_database(server) as dsn:
                say("tapelens ingest hints")
                command = [TAPELENS, "--dsn", dsn, "ingest", "hints", "--format", "csv"]
                before = server_cpu_seconds(dsn)
                done = measure([*command, str(hints)])
                server_s = _spent(before, server_cpu_after(dsn))
                rows = stored_rows(dsn)
                export_rows(dsn, exported)
            print(done.stderr.strip().splitlines()[0])
            with fresh_database(server) as dsn:
                say("peer: COPY FROM STDIN")
                before = server_cpu_seconds(dsn)
                peer_s = copy_in(dsn, exported)
                peer_server_s = _spent(before, server_cpu_after(dsn))
                peer_rows = stored_rows(dsn)
    ours = written / done.seconds
    peer = peer_rows / peer_s
    print(
        f"`tapelens ingest hints --format csv`: {written:,} records in {done.seconds:.1f} s,"
        f" {ours:,.0f} records/s ({rows:,} rows stored; {done.cpu_seconds:.1f} s CPU of the"
        f" command and {server_s:.1f} s of the server, peak {done.peak_rss_mb:,.0f} MB)"
    )
    print(
        f"peer, COPY FROM STDIN of the stored rows: {peer_s:.1f} s, {peer:,.0f} records/s"
        f" ({peer_server_s:.1f} s CPU of the server)"
    )
    print(f"ratio: the command takes {done.seconds / peer_s:.1f}x the COPY's time")


if __name__ == "__main__":
    main()
