"""Ingest benchmark: a native catalog loaded end to end by tapelens, against the best manual bulk
load of the same rows, measured in the same run on the same server.

    .venv/bin/python bench/bench_ingest.py --files 1000000
    .venv/bin/python bench/bench_ingest.py --files 10000000 --formats hpss-lsp
    .venv/bin/python bench/bench_ingest.py --files 1000000 --formats hpss-lsp,tsm-contents,cta-tf

Per format (the synthetic site's profile that writes it: bnl for HPSS `ls -P`, gridka for TSM
`select * from contents` with its archives export, cern for CTA `tf ls`), each side into a
fresh database of one embedded server:

(a) first load: `tapelens ingest catalog --format F` of the native file into an empty catalog
    (wall time and peak RSS of the command);
(b) the limit, as PostgreSQL's manual advises for a bulk load ("Populating a Database"): the
    hypertable stripped of its indexes, `psql \\copy` of the same rows already in canonical CSV,
    then `CREATE INDEX` of the same indexes, one after the other;
(c) the COPY of (b) alone, without indexes (a floor no loader that keeps indexes reaches);
(d) a newer dump: the native file with 1% of its copies changed (0.4% gone, 0.3% with a new
    size, 0.3% new), loaded by tapelens over (a), against (a)'s time; twice: right after (a),
    while autovacuum still works through the rows (a) wrote and the first read of each page
    sets its hint bits, then a second such dump (1% of the first changed) after `VACUUM
    ANALYZE` of the catalog, as a site's next dump finds it a day later.

Targets: (a) >= 1.0 x (b) in rows/s, peak RSS < 2 GB; (d) <= 0.3 x (a). Prints one table row
per format (markdown), the machine and the command line.

Where the server runs on this machine, a second table gives the CPU seconds of each side: of
the tapelens command (all its threads) and of the server during (a), of the server during (b)'s
COPY and during its index builds. From them, the shortest (a) this loader's work allows here:
its index builds come after its last row, alone on the server, and take at least (b)'s index
time; the rest of its work, client and server, at best shares the cores evenly. When that
bound is under (b)'s time, (a) cannot reach 1.0 x (b) on this machine without doing less work.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (  # noqa: E402
    TAPELENS,
    bench_server,
    fresh_database,
    machine,
    measure,
    server_cpu_seconds,
)

from tapelens.ingest.canonical import TAPE_FILES  # noqa: E402

CHANGED_SHARE = 0.01  # of the copies, in the newer dump


@dataclass(frozen=True)
class Native:
    """Where the synthetic site writes a format, and how tapelens is told to read it."""

    profile: str
    file: str
    options: tuple[str, ...] = ()


NATIVE = {
    "hpss-lsp": Native("bnl", "ls-P.txt"),
    "tsm-contents": Native("gridka", "contents.csv", ("--archives", "{catalog}/archives.csv")),
    "cta-tf": Native("cern", "tf-ls.txt"),
}


def _bump(digits: str) -> str:
    """Another number of the same width (a changed size in a fixed-width column)."""
    return digits[:-1] + str((int(digits[-1]) + 1) % 10)


def _mutate_lsp(line: str, action: str, k: int) -> str | None:
    if not line.startswith("FILE\t"):
        return line
    f = line.split("\t")
    if action == "gone":
        return None
    if action == "size":
        f[2] = f[3] = str(int(f[2]) + 1)
    else:  # new: another file at an unused place on the same tape
        f[1] += f".new{k}"
        f[4] = f"{900_000_000 + k}+0"
    return "\t".join(f)


def _mutate_contents(line: str, action: str, k: int) -> str | None:
    if line.startswith("VOLUME_NAME"):
        return line
    f = line.split(",")
    if action == "gone":
        return None
    if action == "size":
        f[6] = str(int(f[6]) + 1)
    else:
        f[4] += f".new{k}"
        f[12] = str(9_000_000_000 + k)  # OBJECT_ID
    return ",".join(f)


def _mutate_tf(line: str, action: str, k: int) -> str | None:
    if not re.match(r"\s*\d", line):  # header
        return line
    if action == "gone":
        return None
    # Fixed-width columns: change digits in place, so that the layout stays as CTA prints it.
    cells = list(re.finditer(r"\S+", line))
    archive_id, size = cells[0], cells[7]
    if action == "size":
        return line[: size.start()] + _bump(size.group()) + line[size.end() :]
    new_id = str(9_000_000_000 + k).rjust(len(archive_id.group()))[-len(archive_id.group()) :]
    fseq = cells[3]
    line = line[: fseq.start()] + _bump(fseq.group()) + line[fseq.end() :]
    return line[: archive_id.start()] + new_id + line[archive_id.end() :]


MUTATE: dict[str, Callable[[str, str, int], str | None]] = {
    "hpss-lsp": _mutate_lsp,
    "tsm-contents": _mutate_contents,
    "cta-tf": _mutate_tf,
}


def newer_dump(fmt: str, src: Path, dst: Path, seed: int) -> int:
    """`src` with CHANGED_SHARE of its copies changed; returns how many."""
    rng = random.Random(seed)
    mutate = MUTATE[fmt]
    changed = 0
    with open(src, encoding="utf-8") as fin, open(dst, "w", encoding="utf-8") as fout:
        for k, line in enumerate(fin):
            draw = rng.random()
            if draw >= CHANGED_SHARE:
                fout.write(line)
                continue
            action = "gone" if draw < 0.4 * CHANGED_SHARE else "size"
            action = "new" if draw >= 0.7 * CHANGED_SHARE else action
            out = mutate(line.rstrip("\n"), action, k)
            if out != line.rstrip("\n"):
                changed += 1
            if action == "new":
                fout.write(line)  # the old copy stays, the new one comes beside it
            if out is not None:
                fout.write(out + "\n")
    return changed


@dataclass(frozen=True)
class Cpu:
    """CPU seconds (user + system) of each side, where the server runs on this machine."""

    first_client: float  # the tapelens command of (a), every thread
    first_server: float  # the server's processes during (a)
    copy_server: float  # the server's during the COPY of (b)
    index_server: float  # the server's during the index builds of (b)

    def row(self, fmt: str, first_s: float, limit_s: float, index_s: float) -> str:
        # (a) builds the same indexes as (b), after its last row, alone on the server: that
        # phase takes at least (b)'s index time. Everything else (a) does (its client's work and
        # the server's COPY) can at best share the machine's cores evenly.
        cores = os.cpu_count() or 1
        rest = self.first_client + self.first_server - self.index_server
        floor_s = index_s + rest / cores
        return (
            f"| {fmt} | {self.first_client:.1f} s | {self.first_server:.1f} s |"
            f" {self.copy_server:.1f} s | {self.index_server:.1f} s | {floor_s:.1f} s |"
            f" **{limit_s / floor_s:.2f}** | {limit_s / first_s:.2f} |"
        )


@dataclass
class Figures:
    fmt: str
    rows: int
    first_s: float
    first_rss_mb: float
    copy_s: float
    index_s: float
    newer_s: float | None
    changed: int
    newer_rss_mb: float | None = None
    newer_now_s: float | None = None
    cpu: Cpu | None = None

    def row(self) -> str:
        limit_s = self.copy_s + self.index_s
        newer = (
            f"{self.newer_s:.1f} s, **{self.newer_s / self.first_s:.2f}**,"
            f" {self.newer_rss_mb or 0:,.0f} MB; right after (a):"
            f" {self.newer_now_s or 0:.1f} s, {(self.newer_now_s or 0) / self.first_s:.2f}"
            if self.newer_s is not None
            else "-"
        )
        return (
            f"| {self.fmt} | {self.rows:,} | {self.first_s:.1f} s, {self.rows / self.first_s:,.0f}"
            f" rows/s | {limit_s:.1f} s ({self.copy_s:.1f} + {self.index_s:.1f}) |"
            f" **{limit_s / self.first_s:.2f}** | {self.copy_s / self.first_s:.2f} |"
            f" {self.first_rss_mb:,.0f} MB | {self.changed:,}: {newer} |"
        )


def site_for(fmt: str, files: int, seed: int, work: Path) -> Path:
    native = NATIVE[fmt]
    site = work / f"site-{native.profile}-{files}"
    if not (site / "manifest.json").exists():
        print(f"generating {files:,} files ({native.profile}) into {site}", file=sys.stderr)
        measure(
            [TAPELENS, "demo", "generate", str(site), "--files", str(files), "--seed", str(seed)]
            + ["--profile", native.profile, "--no-history"]
        )
    return site / "catalog"


def run_format(fmt: str, args: argparse.Namespace, work: Path, server: str) -> Figures:
    native = NATIVE[fmt]
    catalog = site_for(fmt, args.files, args.seed, work)
    source = catalog / native.file
    options = [o.format(catalog=catalog) for o in native.options]
    cols = ", ".join([*TAPE_FILES, "ingest_run_id"])
    canonical_csv = work / f"canonical-{fmt}.csv"
    ingest = [TAPELENS, "--dsn", "{dsn}", "ingest", "catalog", "--format", fmt, *options]
    print(f"{fmt}: (a) first load of {source.name}", file=sys.stderr)
    with fresh_database(server) as dsn_a:
        before = server_cpu_seconds(dsn_a)
        a = measure([x.format(dsn=dsn_a) for x in ingest] + [str(source)])
        first_server = _spent(server_cpu_seconds(dsn_a), before)
        with psycopg.connect(dsn_a) as conn:
            row = conn.execute("select count(*) from tapelens.tape_files").fetchone()
            rows = int(row[0]) if row else 0
            indexes = [
                str(r[0])
                for r in conn.execute(
                    "select indexdef from pg_indexes where schemaname = 'tapelens'"
                    " and tablename = 'tape_files' order by indexname"
                )
            ]
            export = f"copy (select {cols} from tapelens.tape_files) to stdout (format csv)"
            with conn.cursor() as cur, open(canonical_csv, "wb") as fh, cur.copy(export) as out:
                for chunk in out:
                    fh.write(chunk)
        newer_s, changed, newer_rss, newer_now_s = None, 0, None, None
        if "newer" in args.steps:
            newer = work / f"newer-{fmt}-{source.name}"
            later = work / f"later-{fmt}-{source.name}"
            now_changed = newer_dump(fmt, source, newer, args.seed)
            print(
                f"{fmt}: (d) newer dump right after (a), {now_changed:,} changed", file=sys.stderr
            )
            newer_now_s = measure([x.format(dsn=dsn_a) for x in ingest] + [str(newer)]).seconds
            changed = newer_dump(fmt, newer, later, args.seed + 1)
            with psycopg.connect(dsn_a, autocommit=True) as conn:
                started = time.perf_counter()
                conn.execute("vacuum analyze tapelens.tape_files")
                vacuum_s = time.perf_counter() - started
            print(f"{fmt}: vacuum analyze {vacuum_s:.1f} s", file=sys.stderr)
            print(f"{fmt}: (d) newer dump after it, {changed:,} changed", file=sys.stderr)
            d = measure([x.format(dsn=dsn_a) for x in ingest] + [str(later)])
            newer_s, newer_rss = d.seconds, d.peak_rss_mb
            newer.unlink()
            later.unlink()
    print(f"{fmt}: (b) the limit", file=sys.stderr)
    with fresh_database(server) as dsn_b:
        with psycopg.connect(dsn_b, autocommit=True) as conn:
            for (name,) in conn.execute(
                "select indexname from pg_indexes where schemaname = 'tapelens'"
                " and tablename = 'tape_files'"
            ).fetchall():
                conn.execute(f"drop index tapelens.{name}")
        before = server_cpu_seconds(dsn_b)
        copy = measure(
            ["psql", dsn_b, "-q", "-v", "ON_ERROR_STOP=1", "-c"]
            + [f"\\copy tapelens.tape_files ({cols}) from '{canonical_csv}' csv"]
        )
        after_copy = server_cpu_seconds(dsn_b)
        with psycopg.connect(dsn_b, autocommit=True) as conn:
            started = time.perf_counter()
            for definition in indexes:
                conn.execute(definition)
            index_s = time.perf_counter() - started
        after_index = server_cpu_seconds(dsn_b)
    canonical_csv.unlink()
    spent = [first_server, _spent(after_copy, before), _spent(after_index, after_copy)]
    cpu = (
        Cpu(a.cpu_seconds, *(s for s in spent if s is not None))
        if all(s is not None for s in spent)
        else None
    )
    return Figures(
        fmt,
        rows,
        a.seconds,
        a.peak_rss_mb,
        copy.seconds,
        index_s,
        newer_s,
        changed,
        newer_rss,
        newer_now_s,
        cpu,
    )


def _spent(after: float | None, before: float | None) -> float | None:
    return after - before if after is not None and before is not None else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=1_000_000)
    ap.add_argument("--formats", default="hpss-lsp,tsm-contents,cta-tf")
    ap.add_argument("--steps", default="first,newer", help="first (always), newer")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--workdir", type=Path, default=None, help="keeps generated sites for reruns")
    ap.add_argument("--dsn", default=None, help="server to use (default: embedded, temporary)")
    args = ap.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="tapelens-bench-ingest-"))
    work.mkdir(parents=True, exist_ok=True)
    figures = []
    with bench_server(args.dsn) as server:
        for fmt in args.formats.split(","):
            figures.append(run_format(fmt, args, work, server))
    print(f"machine: {machine()}")
    print(f"command: {' '.join(sys.argv)}")
    print()
    print(
        "| format | rows | (a) tapelens first load | (b) limit: COPY + indexes | (a)/(b) |"
        " (a)/(c) COPY alone | peak RSS (a) | (d) newer dump after VACUUM: changed, time, / (a),"
        " peak RSS; right after (a) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for f in figures:
        print(f.row())
    if any(f.cpu for f in figures):
        print()
        print(
            "| format | (a) CPU: tapelens | (a) CPU: server | (b) CPU: COPY | (b) CPU: indexes |"
            f" (a) at best on {os.cpu_count()} cores | (a)/(b) at best | (a)/(b) measured |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for f in figures:
            if f.cpu:
                limit_s = f.copy_s + f.index_s
                print(f.cpu.row(f.fmt, f.first_s, limit_s, f.index_s))


if __name__ == "__main__":
    main()
