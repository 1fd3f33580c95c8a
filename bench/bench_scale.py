"""Site scale benchmark: one catalog of N copies through the whole pipeline on one embedded
server, or on Spark in local mode, every step a child process of the real CLI, timed with its
peak RSS.

    .venv/bin/python bench/bench_scale.py --copies 10000000 --workdir /tmp/scale-10m
    .venv/bin/python bench/bench_scale.py --copies 1000000 --steps write,first,full,disk
    .venv/bin/python bench/bench_scale.py --copies 1000000 --engine both

--engine postgres (the default) runs on a fresh database of the embedded server; spark runs the
same commands with TAPELENS_ENGINE=spark on a warehouse under --workdir (Delta tables, Spark at
--spark-master), first `db migrate` and a `db status` on the empty warehouse, whose time is the
session's start-up that every Spark command pays; both runs PostgreSQL then Spark on the same
generated files and adds a table of the two with the Spark/PostgreSQL ratio of each step. On
Spark the peak RSS is the command's whole process tree (its Python and the JVM it starts), the
size after a step the warehouse directory's, and a step that fails there is shown as not on
Spark yet, with the last line of its error, and the run goes on.

Steps (--steps, default all, in this order; a step needs those before it):

  write        the native HPSS `ls -P` catalog, zstd-compressed, written column-wise
  first        `tapelens ingest catalog --format hpss-lsp` of it into an empty catalog
  full         `tapelens marts build --full-refresh` (models; dbt tests excluded, as in the
               incremental build)
  newer-write  the same catalog with 1% of its copies changed (0.4% gone, 0.3% with a new
               size, 0.3% new beside an old one), written the same way; spread over every
               volume, or over a share of them (--changed-volumes 0.01: all on 1% of them)
  newer        `tapelens ingest catalog` of the newer dump over the first
  incremental  `tapelens marts build` (incremental marts recompute the changed volumes)
  gaps         `tapelens report gaps --by type`, wall of the whole command, best of 3
               (--report-runs)
  duplicates   `tapelens report duplicates --by dataset`, best of 3 (--report-runs)
  plan         `tapelens plan recall` of 1M requested paths (plain text) from the database
  disk         bytes of the catalog hypertable (heap, indexes, TOAST), each dbt schema and
               the whole database, per 100M copies; on Spark each Delta table's directory

The catalog is synthetic but shaped as a site's (see `catalog_chunk`): 5,000 tape objects a
volume, 10% of positions in aggregates, three datasets written interleaved per 600 files, 0.5%
of files with a second copy on a duplicate volume. Prints one markdown row per step, the machine
and the command; progress on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl
import psycopg
import zstandard

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import TAPELENS, Timed, bench_server, fresh_database, machine, measure  # noqa: E402

STEPS = (
    "write",
    "first",
    "full",
    "newer-write",
    "newer",
    "incremental",
    "gaps",
    "duplicates",
    "plan",
    "disk",
)
CHUNK = 1_000_000  # copies built and compressed at a time (a few hundred MB of strings)
PER_VOLUME = 5_000
TYPES = ("AOD", "RAW", "EVNT", "HITS", "DAOD")
COS = (42, 41, 44, 45, 43)  # HPSS class of service of each type (site-defined numbers)
EPOCH = 1_546_300_800  # 2019-01-01T00:00:00Z: the first copy's create time
# The newer dump: shares of the copies gone, resized and with a new copy beside them.
GONE, RESIZED, ADDED = 0.004, 0.003, 0.003
DUPLICATE_EVERY = 200  # one plain file in this many has a second copy
REPORT_RUNS = 3
MB = 2**20
ENGINES = ("postgres", "spark")
WRITES = ("write", "newer-write")  # steps that make the files, once for both engines


def _mix(i: np.ndarray, seed: int) -> np.ndarray:
    """A uniform draw in [0, 1) per copy number, the same in every run (splitmix64)."""
    with np.errstate(over="ignore"):
        z = i.astype(np.uint64) + np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def change_draw(i: np.ndarray, seed: int, spread: float) -> np.ndarray:
    """Each copy's draw for the newer dump (under GONE: gone, and so on). With spread < 1 the
    changes fall on that share of the volumes only, all of the same 1% of the copies there."""
    draw = _mix(i, seed)
    if spread >= 1.0:
        return draw
    chosen = _mix(i // PER_VOLUME, seed + 2) < spread
    return np.where(chosen, draw * spread, 1.0)


def _path(i: pl.Expr, ds: pl.Expr, kind: pl.Expr) -> pl.Expr:
    """An ATLAS-like path: the dataset is the directory, the type a token of the file name."""
    dsn = ds.cast(pl.String).str.zfill(8)
    return pl.concat_str(
        pl.lit("/atlas/mc23_13p6TeV/"),
        kind,
        pl.lit("/mc23_13p6TeV."),
        dsn,
        pl.lit("."),
        kind,
        pl.lit(".r14622_tid"),
        dsn,
        pl.lit("_00/"),
        kind,
        pl.lit("."),
        dsn,
        pl.lit("._"),
        i.cast(pl.String).str.zfill(9),
        pl.lit(".pool.root.1"),
    )


def plain_copies(start: int, stop: int, seed: int, spread: float = 1.0) -> pl.DataFrame:
    """Copies start..stop-1 of the first dump, one row each (before the duplicates and the
    newer dump's changes): i, volume, section, offset, ds, size, created (epoch seconds),
    draw, dup, kind, cos, vol, path."""
    i = np.arange(start, stop, dtype=np.int64)
    raw = i % PER_VOLUME
    member = raw % 100 < 10
    section = np.where(member, raw - raw % 100 + 1, raw + 1)
    offset = np.where(member, (raw % 100) * 1_000_000, 0)
    ds = (i // 600) * 3 + i % 3
    # about 1.2 GB a file on average: a volume's 5,000 objects fill most of an LTO-7 (6 TB)
    size = np.where(member, 900_000 + i % 97, 100_000_000 + (i * 7919) % 2_200_000_000)
    draw = change_draw(i, seed, spread)
    dup_draw = _mix(i, seed + 1)
    frame = pl.DataFrame(
        {
            "i": i,
            "volume": i // PER_VOLUME,
            "section": section,
            "offset": offset,
            "ds": ds,
            "size": size,
            "created": EPOCH + i * 3,
            "draw": draw,
            "dup": (~member) & (dup_draw < 1 / DUPLICATE_EVERY),
        }
    )
    frame = frame.with_columns(
        kind=pl.col("ds").mod(len(TYPES)).replace_strict(list(range(len(TYPES))), list(TYPES)),
        cos=pl.col("ds").mod(len(TYPES)).replace_strict(list(range(len(TYPES))), list(COS)),
        vol=pl.concat_str(pl.lit("A"), pl.col("volume").cast(pl.String).str.zfill(5), pl.lit("00")),
    ).with_columns(path=_path(pl.col("i"), pl.col("ds"), pl.col("kind")))
    return frame


def catalog_chunk(
    start: int, stop: int, seed: int, newer: bool, spread: float = 1.0
) -> pl.DataFrame:
    """The FILE lines of copies start..stop-1 (column `line`), in listing order.

    Copy i sits on volume i // PER_VOLUME; of each 100 tape objects the first 10 are members of
    one aggregate (one section, offsets 0, 1 MB, ...). Dataset (i // 600) * 3 + i % 3. A plain
    file whose draw falls under 1/DUPLICATE_EVERY has a second copy on a D volume, listed after
    it. In the newer dump, copies drawn under GONE are left out, the next RESIZED share is one
    byte larger and the next ADDED share get a new file beside them at a new section.
    """
    frame = plain_copies(start, stop, seed, spread)
    parts = [frame.with_columns(order=pl.col("i") * 3)]
    # Duplicates: placed by copy number (about PER_VOLUME on each D volume), so that a chunk
    # alone knows each one's place.
    dups = frame.filter(pl.col("dup")).with_columns(
        order=pl.col("i") * 3 + 1,
        section=pl.col("i") % (PER_VOLUME * DUPLICATE_EVERY) + 1,
        offset=pl.lit(0, pl.Int64),
        created=pl.col("created") + 86_400,
        vol=pl.concat_str(
            pl.lit("D"),
            (pl.col("i") // (PER_VOLUME * DUPLICATE_EVERY)).cast(pl.String).str.zfill(5),
            pl.lit("00"),
        ),
    )
    parts.append(dups)
    if newer:
        kept = pl.col("draw") >= GONE
        resized = (pl.col("draw") >= GONE) & (pl.col("draw") < GONE + RESIZED)
        parts[0] = (
            parts[0]
            .filter(kept)
            .with_columns(size=pl.when(resized).then(pl.col("size") + 1).otherwise(pl.col("size")))
        )
        added = frame.filter(
            (pl.col("draw") >= GONE + RESIZED) & (pl.col("draw") < GONE + RESIZED + ADDED)
        ).with_columns(
            order=pl.col("i") * 3 + 2,
            path=pl.concat_str(pl.col("path"), pl.lit(".new"), pl.col("i").cast(pl.String)),
            section=900_000_000 + pl.col("i"),
            offset=pl.lit(0, pl.Int64),
        )
        parts.append(added)
    rows = pl.concat(parts, how="vertical_relaxed").sort("order")
    created = pl.from_epoch(pl.col("created"), time_unit="s")
    written = pl.from_epoch(pl.col("created") + 3_600, time_unit="s")
    fmt = "%m/%d/%Y\t%H:%M:%S"
    return rows.select(
        line=pl.concat_str(
            pl.lit("FILE"),
            pl.col("path"),
            pl.col("size").cast(pl.String),
            pl.col("size").cast(pl.String),
            pl.concat_str(
                pl.col("section").cast(pl.String), pl.lit("+"), pl.col("offset").cast(pl.String)
            ),
            pl.col("vol"),
            pl.col("cos").cast(pl.String),
            pl.lit("0"),
            pl.lit("1"),
            created.dt.strftime(fmt),
            written.dt.strftime(fmt),
            separator="\t",
        )
    )


def write_catalog(path: Path, copies: int, seed: int, newer: bool, spread: float = 1.0) -> int:
    """Write the listing zstd-compressed (two threads); returns the FILE lines written."""
    lines = 0
    started = time.perf_counter()
    compressor = zstandard.ZstdCompressor(level=3, threads=2)
    with open(path, "wb") as raw, compressor.stream_writer(raw) as out:
        out.write(b"# hsi -q ls -P -R /atlas\n")
        for start in range(0, copies, CHUNK):
            stop = min(start + CHUNK, copies)
            chunk = catalog_chunk(start, stop, seed, newer, spread)
            out.write("\n".join(chunk["line"].to_list()).encode() + b"\n")
            lines += chunk.height
            _progress(path.name, stop, copies, started)
    return lines


def write_tapes(path: Path, copies: int) -> int:
    """The tape inventory (generic CSV): every fifth A volume an LTO-7, the rest LTO-8."""
    a = np.arange((copies + PER_VOLUME - 1) // PER_VOLUME)
    d = np.arange((copies + PER_VOLUME * DUPLICATE_EVERY - 1) // (PER_VOLUME * DUPLICATE_EVERY))
    lto7 = np.concatenate([a % 5 == 0, np.zeros(d.size, dtype=bool)])
    names = [f"A{v:05d}" for v in a] + [f"D{v:05d}" for v in d]
    frame = pl.DataFrame({"volume": names, "lto7": lto7}).select(
        "volume",
        barcode=pl.col("volume") + pl.when("lto7").then(pl.lit("L7")).otherwise(pl.lit("L8")),
        media_type=pl.when("lto7").then(pl.lit("LTO-7")).otherwise(pl.lit("LTO-8")),
        library=pl.lit("SL8500-1"),
        pool=pl.lit("atlas"),
        capacity_bytes=pl.when("lto7").then(6 * 10**12).otherwise(12 * 10**12),
        state=pl.lit("full"),
    )
    frame.write_csv(path)
    return frame.height


def request_paths(path: Path, copies: int, requests: int, seed: int, spread: float) -> int:
    """`requests` distinct paths of copies the newer dump keeps, one a line; returns how many."""
    rng = np.random.default_rng(seed)
    picked = np.sort(rng.choice(copies, size=min(requests, copies), replace=False))
    picked = picked[change_draw(picked, seed, spread) >= GONE]
    paths = paths_of(picked)
    path.write_text("\n".join(paths.to_list()) + "\n")
    return len(paths)


def paths_of(i: np.ndarray) -> pl.Series:
    """The paths of copies number i, as the catalog lists them."""
    frame = pl.DataFrame({"i": i}).with_columns(ds=(pl.col("i") // 600) * 3 + pl.col("i") % 3)
    frame = frame.with_columns(
        kind=pl.col("ds").mod(len(TYPES)).replace_strict(list(range(len(TYPES))), list(TYPES))
    )
    return frame.select(p=_path(pl.col("i"), pl.col("ds"), pl.col("kind")))["p"]


def _progress(what: str, done: int, total: int, started: float) -> None:
    elapsed = time.perf_counter() - started
    rate = done / elapsed if elapsed > 0 else 0.0
    eta = (total - done) / rate if rate > 0 else 0.0
    print(
        f"  {what}: {done:,}/{total:,} copies, {rate:,.0f}/s, ETA {eta:.0f} s",
        file=sys.stderr,
        flush=True,
    )


class FreeDisk:
    """The least free space on the work directory's file system while a step runs, sampled
    every second (a step's temporary files and WAL are gone once it ends)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.least = self.now()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def now(self) -> int:
        return shutil.disk_usage(self.path).free

    def _sample(self) -> None:
        while not self._stop.wait(1.0):
            self.least = min(self.least, self.now())

    def __enter__(self) -> FreeDisk:
        self.least = self.now()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.least = min(self.least, self.now())


class LoadAverage:
    """The machine's 1-minute load average every 10 s while an engine's run goes on: the
    cores are shared, and the figures are only as good as the share the run had."""

    def __init__(self) -> None:
        self.samples = [os.getloadavg()[0]]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(10):
            self.samples.append(os.getloadavg()[0])

    def stop(self) -> list[float]:
        self._stop.set()
        self._thread.join()
        return self.samples


class OutOfDisk(Exception):
    """Free space fell under the floor kept for others: the run stops before the next step."""


@dataclass
class Step:
    name: str
    what: str
    seconds: float
    rows: int | None = None
    peak_rss_mb: float | None = None
    note: str = ""
    database_bytes: int | None = None  # after the step
    peak_disk_bytes: int | None = None  # free space the step took at its peak
    failed: bool = False  # the command failed (on Spark: not there yet); note says why

    def row(self) -> str:
        rate = f"{self.rows / self.seconds:,.0f}" if self.rows and self.seconds > 0 else "-"
        rss = f"{self.peak_rss_mb:,.0f}" if self.peak_rss_mb is not None else "-"
        db = f"{self.database_bytes / 1e9:.2f}" if self.database_bytes is not None else "-"
        peak = f"{self.peak_disk_bytes / 1e9:.1f}" if self.peak_disk_bytes is not None else "-"
        return (
            f"| {self.name} | {self.what} | {self.seconds:.2f} | {rate} | {rss} | {db} |"
            f" {peak} | {self.note} |"
        )


@dataclass(frozen=True)
class Engine:
    """Where a run's commands work: the bench database, or Delta tables on Spark."""

    name: str  # "postgres" or "spark"
    home: Path
    env: dict[str, str] = field(default_factory=dict)
    warehouse: Path | None = None

    @property
    def spark(self) -> bool:
        return self.name == "spark"

    def stored_bytes(self, dsn: str) -> int:
        """What the engine keeps on disk now: the database, or the warehouse directory."""
        if self.warehouse is not None:
            return tree_bytes(self.warehouse)
        return _count(dsn, "select pg_database_size(current_database())")

    def peak_rss_mb(self, result: Timed) -> float:
        """The figure a step reports: on Spark the process tree's (the JVM is a child of the
        CLI), on PostgreSQL the CLI's alone, as before (the server is not in either)."""
        return result.tree_rss_mb if self.spark else result.peak_rss_mb


def spark_engine(work: Path, master: str) -> Engine:
    """Spark in local mode on a warehouse of its own under the work directory."""
    warehouse = work / "spark-warehouse"
    env = {
        "TAPELENS_ENGINE": "spark",
        "TAPELENS_SPARK_MASTER": master,
        "TAPELENS_SPARK_WAREHOUSE": str(warehouse),
    }
    return Engine("spark", work / "home-spark", env, warehouse)


def tree_bytes(path: Path) -> int:
    """Bytes of the files under a directory (as allocated; 0 when it does not exist)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                continue  # a file Spark removed while walked
    return total


def warehouse_disk(warehouse: Path) -> dict[str, int]:
    """Bytes of each Delta table's directory (schema.table), the metastore and the whole."""
    sizes: dict[str, int] = {}
    tables = warehouse / "tables"
    for schema in sorted(tables.glob("*.db")) if tables.exists() else []:
        for table in sorted(p for p in schema.iterdir() if p.is_dir()):
            sizes[f"{schema.name.removesuffix('.db')}.{table.name}"] = tree_bytes(table)
    sizes["metastore (Derby)"] = tree_bytes(warehouse / "metastore_db")
    sizes["warehouse"] = tree_bytes(warehouse)
    return sizes


def error_line(stderr: str) -> str:
    """The failed command's own one-line error, else the last line it said (the JVM's log
    lines, a stack trace's frames, may come after the error on Spark)."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    said = [ln for ln in lines if ln.startswith("tapelens: ")]
    return (said or lines or ["(nothing on stderr)"])[-1][:300]


def _count(dsn: str, query: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(query).fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def disk(dsn: str) -> dict[str, int]:
    """Bytes of the catalog hypertable by part, of each tapelens schema and the database."""
    sizes: dict[str, int] = {}
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "select table_bytes, index_bytes, toast_bytes, total_bytes"
            " from hypertable_detailed_size('tapelens.tape_files')"
        ).fetchone()
        if row:
            for key, value in zip(("heap", "indexes", "toast", "total"), row, strict=True):
                sizes[f"tape_files {key}"] = int(value or 0)
        for name, value in conn.execute(
            "select indexname, hypertable_index_size(format('%I.%I', schemaname, indexname))"
            " from pg_indexes where schemaname = 'tapelens' and tablename = 'tape_files'"
            " order by indexname"
        ).fetchall():
            sizes[f"tape_files index {name}"] = int(value or 0)
        for schema, value in conn.execute(
            "select n.nspname, sum(pg_total_relation_size(c.oid))::bigint"
            " from pg_class c join pg_namespace n on n.oid = c.relnamespace"
            " where c.relkind in ('r', 'm') and n.nspname like 'tapelens%'"
            " and not (n.nspname = 'tapelens' and c.relname = 'tape_files')"
            " group by n.nspname order by n.nspname"
        ).fetchall():
            sizes[f"schema {schema} (other tables)" if schema == "tapelens" else schema] = int(
                value
            )
        for name, value in conn.execute(
            "select c.relname, pg_total_relation_size(c.oid) from pg_class c"
            " join pg_namespace n on n.oid = c.relnamespace"
            " where c.relkind = 'r' and n.nspname = 'tapelens_marts'"
            " order by 2 desc limit 6"
        ).fetchall():
            sizes[f"  tapelens_marts.{name}"] = int(value)
        row = conn.execute("select pg_database_size(current_database())").fetchone()
        sizes["database"] = int(row[0]) if row else 0
    return sizes


def run(
    args: argparse.Namespace,
    dsn: str,
    steps: list[Step],
    sizes: dict[str, int],
    engine: Engine,
    todo: list[str],
    copies: dict[str, int],
) -> None:
    """Run the steps `todo` in order on `engine`, appending to `steps`; the disk sizes go into
    `sizes`. Live copies counted on PostgreSQL go into `copies` by step, for Spark's rates."""
    work: Path = args.workdir
    home = engine.home
    catalog = work / "ls-P.txt.zst"
    newer = work / "ls-P-newer.txt.zst"
    requests = work / "requests.txt"
    tapes = work / "tapes.csv"
    base = [TAPELENS, "--dsn", dsn, "--home", str(home)]
    ingest = [*base, "ingest", "catalog", "--format", "hpss-lsp"]
    models_only = ["--exclude", "resource_type:test", "--exclude", "resource_type:unit_test"]
    # On Spark the build's figures, not the copy into the dashboards' database (whose catalog
    # the PostgreSQL part loaded, so that a copy would be refused).
    build = [*base, "marts", "build", *(["--no-publish"] if engine.spark else [])]
    live = "select count(*) from tapelens.tape_files where removed_at is null"

    def go(argv: list[str]) -> Timed:
        # On Spark a failing command is a finding, not the end of the run.
        return measure(argv, env=engine.env, check=not engine.spark)

    def failed(result: Timed) -> bool:
        if result.returncode == 0:
            return False
        steps[-1].failed = True
        steps[-1].note = f"failed: {error_line(result.stderr)}"
        print(f"  {steps[-1].row()}", file=sys.stderr, flush=True)
        return True

    def timed(name: str, what: str, argv: list[str], rows: int | None = None) -> Timed | None:
        """The step's command run once; None when it failed on Spark (its step says why)."""
        free = shutil.disk_usage(work).free
        if free < args.min_free_gb * 1e9:
            raise OutOfDisk(
                f"before {name}: {free / 1e9:.1f} GB free, under the {args.min_free_gb:g} GB kept"
            )
        print(f"{name} ({engine.name}): {' '.join(argv[5:])}", file=sys.stderr, flush=True)
        with FreeDisk(work) as disk_free:
            result = go(argv)
        steps.append(Step(name, what, result.seconds, rows, engine.peak_rss_mb(result)))
        steps[-1].peak_disk_bytes = free - disk_free.least
        steps[-1].database_bytes = engine.stored_bytes(dsn)
        if failed(result):
            return None
        print(f"  {steps[-1].row()}", file=sys.stderr, flush=True)
        return result

    def best(name: str, what: str, argv: list[str]) -> None:
        print(
            f"{name} ({engine.name}): {' '.join(argv[5:])} (best of {args.report_runs})",
            file=sys.stderr,
        )
        runs = [go(argv)]
        steps.append(Step(name, what, runs[0].seconds, None, engine.peak_rss_mb(runs[0])))
        if failed(runs[0]):
            return
        runs += [go(argv) for _ in range(args.report_runs - 1)]
        top = min(runs, key=lambda r: r.seconds)
        note = ", ".join(f"{r.seconds:.2f}" for r in runs)
        steps[-1] = Step(name, what, top.seconds, None, engine.peak_rss_mb(top), f"runs: {note} s")
        print(f"  {steps[-1].row()}", file=sys.stderr, flush=True)

    def live_copies(step: str) -> int | None:
        """Live copies after a step: counted on PostgreSQL, taken from its run on Spark."""
        if engine.spark:
            return copies.get(step)
        copies[step] = _count(dsn, live)
        return copies[step]

    if engine.spark and "first" in todo:
        # The warehouse's tables, then a command that only starts the session and counts
        # them: the start-up each Spark command below pays before its work.
        timed("migrate", "`db migrate`", [*base, "db", "migrate"])
        timed(
            "start-up", "`db status`, empty warehouse (session start-up)", [*base, "db", "status"]
        )

    if "write" in todo:
        print(f"write: {catalog}", file=sys.stderr)
        started = time.perf_counter()
        write_tapes(tapes, args.copies)
        lines = write_catalog(catalog, args.copies, args.seed, newer=False)
        note = f"{lines:,} lines, {catalog.stat().st_size / MB:,.0f} MB zstd"
        steps.append(Step("write", "native catalog", time.perf_counter() - started, lines))
        steps[-1].note = note
    if "first" in todo:
        volumes = len(tapes.read_text().splitlines()) - 1
        if timed(
            "tapes",
            "ingest, tape inventory",
            [*base, "ingest", "tapes", "--format", "csv"] + [str(tapes)],
            volumes,
        ):
            steps[-1].note = f"{volumes:,} volumes"
        if timed("first", "ingest, first load", [*ingest, str(catalog)]):
            rows = live_copies("first")
            steps[-1].rows, steps[-1].note = rows, f"{rows:,} copies" if rows else ""
    if "full" in todo:
        # The first build in a new home parses the dbt project: done on a staging view alone,
        # so that the figure is a rebuild as a user makes it (models only, dbt tests excluded).
        go([*build, "--select", "stg_tape_files"])
        argv = [*build, "--full-refresh", *models_only]
        if timed("full", "`marts build --full-refresh`", argv):
            steps[-1].rows = live_copies("full")
    if "newer-write" in todo:
        started = time.perf_counter()
        lines = write_catalog(newer, args.copies, args.seed, True, args.changed_volumes)
        steps.append(Step("newer-write", "newer dump, 1% changed", time.perf_counter() - started))
        steps[-1].rows = lines
        steps[-1].note = f"{lines:,} lines, {newer.stat().st_size / MB:,.0f} MB zstd"
    if "newer" in todo and timed("newer", "ingest, newer dump", [*ingest, str(newer)]):
        rows = live_copies("newer")
        steps[-1].rows = rows
        steps[-1].note = f"{rows:,} live copies after" if rows else ""
    if "incremental" in todo:
        timed("incremental", "`marts build`, incremental", [*build, *models_only])
    if "gaps" in todo:
        best("gaps", "`report gaps --by type`", [*base, "report", "gaps", "--by", "type"])
    if "duplicates" in todo:
        argv = [*base, "report", "duplicates", "--by", "dataset", "--format", "csv"]
        best("duplicates", "`report duplicates --by dataset`", argv)
    if "plan" in todo:
        n = request_paths(requests, args.copies, args.requests, args.seed, args.changed_volumes)
        summary = work / "plan.json"
        summary.unlink(missing_ok=True)  # the other engine's
        argv = [*base, "plan", "recall", str(requests), "--drives", "LTO8:6,LTO7:4"]
        result = timed(
            "plan", f"`plan recall` of {n:,} paths", [*argv, "--summary", str(summary)], n
        )
        # The command says each of its steps with the seconds since it started: where it goes.
        said = [ln for ln in (result.stderr if result else "").splitlines()]
        said = [ln for ln in said if ln.startswith("plan recall:")]
        for line in said:
            print(f"  {line}", file=sys.stderr)
        if result and summary.exists():
            doc = json.loads(summary.read_text())
            keys = ("files", "tapes", "mounts", "unknown", "missing")
            shown = {k: doc[k] for k in keys if k in doc and not isinstance(doc[k], dict | list)}
            steps[-1].note = ", ".join(f"{k} {v}" for k, v in shown.items())
        read = next((ln for ln in said if "from the database" in ln), None)
        if read:
            steps[-1].note += f"; {read.removeprefix('plan recall: ')}"
    if "disk" in todo:
        sizes.update(warehouse_disk(engine.warehouse) if engine.warehouse else disk(dsn))


def parse_steps(text: str) -> list[str]:
    steps = [s.strip() for s in text.split(",") if s.strip()]
    unknown = sorted(set(steps) - set(STEPS))
    if unknown or not steps:
        raise argparse.ArgumentTypeError(f"steps are a comma-separated list of {','.join(STEPS)}")
    return steps


def print_steps(steps: list[Step]) -> None:
    print(
        "| step | what | seconds | rows/s | peak RSS, MB | database after, GB"
        " | disk taken at peak, GB | note |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for step in steps:
        print(step.row())


def print_sizes(sizes: dict[str, int], copies: int) -> None:
    print("| relation | MB | GB per 100M copies |")
    print("|---|---:|---:|")
    for name, value in sizes.items():
        per = value / copies * 100_000_000 / 1e9
        print(f"| {name} | {value / MB:,.0f} | {per:,.1f} |")


def _cell(step: Step | None) -> str:
    if step is None:
        return "-"
    if step.failed:
        return f"not on Spark yet: {step.note.removeprefix('not on Spark yet: ')}"
    parts = [f"{step.seconds:,.1f} s"]
    if step.peak_rss_mb is not None:
        parts.append(f"{step.peak_rss_mb:,.0f} MB")
    if step.database_bytes is not None:
        parts.append(f"{step.database_bytes / 1e9:.2f} GB after")
    if step.peak_disk_bytes is not None:
        parts.append(f"{step.peak_disk_bytes / 1e9:.1f} GB at peak")
    return ", ".join(parts)


def print_both(by_engine: dict[str, list[Step]]) -> None:
    """One row a step: PostgreSQL's and Spark's time, peak RSS and disk, and the ratio."""
    pg = {s.name: s for s in by_engine["postgres"]}
    spark = {s.name: s for s in by_engine["spark"]}
    names = [s.name for s in by_engine["postgres"] if s.name not in WRITES]
    names += [n for n in spark if n not in names]
    print("| step | PostgreSQL | Spark (local mode) | Spark / PostgreSQL, time | RSS |")
    print("|---|---|---|---:|---:|")
    for name in names:
        a, b = pg.get(name), spark.get(name)
        either = a or b
        what = either.what if either else name
        ratio = rss = "-"
        if a and b and not a.failed and not b.failed and a.seconds > 0:
            ratio = f"{b.seconds / a.seconds:.2f}"
            if a.peak_rss_mb and b.peak_rss_mb:
                rss = f"{b.peak_rss_mb / a.peak_rss_mb:.2f}"
        print(f"| {what} | {_cell(a)} | {_cell(b)} | {ratio} | {rss} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=int, default=10_000_000)
    ap.add_argument("--requests", type=int, default=1_000_000, help="paths in the recall")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument(
        "--changed-volumes",
        type=float,
        default=1.0,
        help="share of the volumes the newer dump's 1%% of changes fall on (default: all)",
    )
    ap.add_argument("--steps", type=parse_steps, default=list(STEPS))
    ap.add_argument(
        "--engine",
        choices=(*ENGINES, "both"),
        default="postgres",
        help="where the commands work; both: PostgreSQL then Spark on the same files",
    )
    ap.add_argument(
        "--report-runs",
        type=int,
        default=REPORT_RUNS,
        help=f"runs of each report, the best kept (default {REPORT_RUNS})",
    )
    ap.add_argument("--spark-master", default="local[*]", help="Spark's master (local mode)")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/tapelens-scale"))
    ap.add_argument(
        "--keep",
        action="store_true",
        help="keep the catalogs written and the Spark warehouse in --workdir",
    )
    ap.add_argument(
        "--min-free-gb",
        type=float,
        default=10.0,
        help="stop before a step when the work directory's disk has less free (for others)",
    )
    ap.add_argument("--dsn", default=None, help="server to use (default: embedded, temporary)")
    args = ap.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    engines = list(ENGINES) if args.engine == "both" else [args.engine]
    by_engine: dict[str, list[Step]] = {name: [] for name in engines}
    sizes: dict[str, dict[str, int]] = {name: {} for name in engines}
    seconds: dict[str, float] = {}
    copies: dict[str, int] = {}
    load: dict[str, list[float]] = {name: [] for name in engines}
    stopped = ""
    spark = spark_engine(args.workdir, args.spark_master)
    with bench_server(args.dsn) as server:
        for name in engines:
            # The files are written once, by the first engine's run.
            todo = [s for s in args.steps if name == engines[0] or s not in WRITES]
            begun = time.perf_counter()
            sampler = LoadAverage()
            try:
                if name == "postgres":
                    with fresh_database(server) as dsn:
                        engine = Engine("postgres", args.workdir / "home")
                        run(args, dsn, by_engine[name], sizes[name], engine, todo, copies)
                else:
                    if spark.warehouse and "first" in todo:
                        shutil.rmtree(spark.warehouse, ignore_errors=True)  # an earlier run's
                    run(args, server, by_engine[name], sizes[name], spark, todo, copies)
            except OutOfDisk as exc:
                stopped = f"{name}: {exc}"
                break
            except KeyboardInterrupt:
                # Stopped by hand (a step that will not end in the time there is): the steps
                # measured so far are still printed.
                stopped = f"{name}: interrupted during the step after the last one shown"
                break
            finally:
                seconds[name] = time.perf_counter() - begun
                load[name] = sampler.stop()
    if not args.keep:
        for name in (
            "tapes.csv",
            "ls-P.txt.zst",
            "ls-P-newer.txt.zst",
            "requests.txt",
            "plan.json",
        ):
            (args.workdir / name).unlink(missing_ok=True)
        if "spark" in engines and spark.warehouse:
            shutil.rmtree(spark.warehouse, ignore_errors=True)
    print(f"machine: {machine()}")
    print(f"command: {' '.join(sys.argv)}")
    print(f"whole run: {time.perf_counter() - started:,.0f} s")
    for name in engines:
        low, high = min(load[name], default=0), max(load[name], default=0)
        mean = sum(load[name]) / len(load[name]) if load[name] else 0
        print(
            f"{name}: {seconds.get(name, 0):,.0f} s, 1-minute load average"
            f" {low:.1f}-{high:.1f} (mean {mean:.1f}) on {os.cpu_count()} cores"
        )
    if "spark" in engines:
        print(f"spark: master {args.spark_master}, warehouse {spark.warehouse}")
    if stopped:
        print(f"stopped: {stopped}")
    for name in engines:
        print()
        if len(engines) > 1:
            print(f"{name}:")
            print()
        print_steps(by_engine[name])
        if sizes[name]:
            first = next((s.rows for s in by_engine[name] if s.name == "first" and s.rows), 0)
            print()
            print_sizes(sizes[name], first or copies.get("first") or args.copies)
    if len(engines) > 1:
        print()
        print_both(by_engine)


if __name__ == "__main__":
    main()
