"""Ingest benchmark: an HPSS `ls -P` catalog from the synthetic site, loaded end to end by
tapelens, against the limit measured in the same run: psql COPY of the same rows, already in
canonical CSV, into the same table with the same indexes.

    .venv/bin/python bench/bench_ingest.py --files 10000000

Prints rows/s of both, their ratio and tapelens's peak RSS.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import TAPELENS, bench_server, fresh_database, machine, measure  # noqa: E402

from tapelens.ingest.canonical import TAPE_FILES  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--files", type=int, default=10_000_000)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--dsn", default=None, help="server to use (default: embedded, temporary)")
    args = ap.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="tapelens-bench-ingest-"))
    site = work / "site"
    if not (site / "manifest.json").exists():
        print(f"generating {args.files:,} files into {site}", file=sys.stderr)
        measure(
            [
                TAPELENS,
                "demo",
                "generate",
                str(site),
                "--files",
                str(args.files),
                "--seed",
                str(args.seed),
                "--profile",
                "bnl",
            ]
        )
    catalog = next((site / "catalog").glob("*ls-P*"))
    print(f"machine: {machine()}")
    print(f"input: {catalog} ({catalog.stat().st_size / 1e9:.2f} GB)")
    cols = ", ".join([*TAPE_FILES, "ingest_run_id"])
    with bench_server(args.dsn) as server:
        with fresh_database(server) as dsn_a:
            a = measure(
                [
                    TAPELENS,
                    "--dsn",
                    dsn_a,
                    "ingest",
                    "catalog",
                    "--format",
                    "hpss-lsp",
                    str(catalog),
                ]
            )
            with psycopg.connect(dsn_a) as conn:
                row = conn.execute("select count(*) from tapelens.tape_files").fetchone()
                rows = int(row[0]) if row else 0
                canonical_csv = work / "canonical.csv"
                with (
                    conn.cursor() as cur,
                    open(canonical_csv, "wb") as fh,
                    cur.copy(
                        f"copy (select {cols} from tapelens.tape_files) to stdout (format csv)"
                    ) as copy,
                ):
                    for chunk in copy:
                        fh.write(chunk)
        with fresh_database(server) as dsn_b:
            b = measure(
                [
                    "psql",
                    dsn_b,
                    "-q",
                    "-v",
                    "ON_ERROR_STOP=1",
                    "-c",
                    f"\\copy tapelens.tape_files ({cols}) from '{canonical_csv}' csv",
                ]
            )
    rate_a, rate_b = rows / a.seconds, rows / b.seconds
    print(f"rows: {rows:,}")
    print(
        f"(a) tapelens ingest catalog --format hpss-lsp: {a.seconds:.1f} s, {rate_a:,.0f} rows/s,"
        f" peak RSS {a.peak_rss_mb:,.0f} MB"
    )
    print(
        f"(b) psql \\copy canonical CSV into tapelens.tape_files: {b.seconds:.1f} s,"
        f" {rate_b:,.0f} rows/s"
    )
    print(f"ratio (a)/(b): {rate_a / rate_b:.2f}  (target >= 0.7; peak RSS target < 2048 MB)")


if __name__ == "__main__":
    main()
