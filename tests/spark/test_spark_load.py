"""The loader on Spark keeps the PostgreSQL loader's promises, on a real local Spark session
(local[2]) and real Delta tables in a temporary warehouse; the rows it loads are those the
PostgreSQL path loads from the same files.

The inputs are the readers' fixtures, written from the programs that print them:
tests/data/catalog/ls-P.txt (HPSS `hsi ls -P`, docs/formats/hpss-lsp.md: HPSS's hsi source as
cited there) and tests/data/catalog/copies.csv (the canonical CSV, docs/formats/csv.md); newer
dumps are those files with lines changed, dropped and added.

One Spark session serves the module (a JVM start costs tens of seconds on two cores); each test
loads under a source of its own, so that the tests do not see each other's copies.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from tapelens.cli import cli
from tapelens.errors import ParseError
from tapelens.ingest import canonical
from tapelens.ingest.formats import FORMATS, lookup
from tapelens.ingest.formats.base import ParseOptions
from tapelens.ingest.load import ShrinkGuard, ShrinkRefused, ingest_file
from tapelens.spark.load import load_files, roll_back_killed
from tapelens.spark.session import spark_session, stop_session
from tapelens.spark.tables import TABLES, table_versions

pytestmark = [pytest.mark.slow, pytest.mark.own_process, pytest.mark.timeout(1800)]

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "catalog"
FMT = {f.name: f for f in FORMATS if f.kind == "catalog"}
# Small: two cores, tables of a few rows (Delta's default of 50 partitions to read a table's
# log is for tables of many files).
CONF = {
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "2",
    "spark.databricks.delta.snapshotPartitions": "2",
}
# What both engines store of a copy (line digests aside: the Spark loader reads every line).
COMPARED = [*canonical.TAPE_FILES, "row_digest"]
TIMES = {"written_at", "removed_at", "last_seen_at"}
STAMP, PY_STAMP = "yyyy-MM-dd'T'HH:mm:ss.SSSSSS", "%Y-%m-%dT%H:%M:%S.%f"  # times compared as UTC


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("warehouse")


@pytest.fixture(scope="module")
def killed(warehouse: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """A load of a newer dump killed (SIGKILL, the JVM with it) right after its copies were
    committed to tape_files, before its run was: done before this module's session starts,
    since a local warehouse's metastore serves one JVM at a time."""
    folder = tmp_path_factory.mktemp("killed")
    lines = (DATA / "ls-P.txt").read_text().splitlines(keepends=True)
    old = folder / "old.txt"
    old.write_text("".join(lines))
    new = folder / "new.txt"
    new.write_text("".join(lines[:-1]).replace("\t734003\t734003\t", "\t734004\t734004\t"))
    code = (
        "import sys\n"
        "from tapelens.ingest.formats import FORMATS\n"
        "from tapelens.ingest.formats.base import ParseOptions\n"
        "from tapelens.ingest.load import ShrinkGuard\n"
        "from tapelens.spark.load import load_files\n"
        "from tapelens.spark.session import spark_session\n"
        "fmt = {f.name: f for f in FORMATS}['hpss-lsp']\n"
        f"s = spark_session('local[2]', sys.argv[1], conf={CONF!r})\n"
        "o = ParseOptions(source='killed')\n"
        "load_files(s, fmt, [sys.argv[2]], o)\n"
        "print('old loaded', flush=True)\n"
        "load_files(s, fmt, [sys.argv[3]], o, guard=ShrinkGuard(allow=True))\n"
        "print('new loaded', flush=True)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(warehouse), str(old), str(new)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=ROOT,
        start_new_session=True,  # its JVM in its process group, killed with it
    )
    log = warehouse / "tables" / "tapelens.db" / "tape_files" / "_delta_log"
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "old loaded"
        commits = len(list(log.glob("*.json")))
        deadline = time.monotonic() + 900
        while len(list(log.glob("*.json"))) == commits and time.monotonic() < deadline:
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    return {"old": old, "new": new, "commits": commits}


@pytest.fixture(scope="module")
def spark(warehouse: Path, killed: dict[str, object]) -> Iterator[SparkSession]:
    stop_session()  # a session another module left holds another warehouse
    session = spark_session("local[2]", warehouse, conf=CONF)
    yield session
    stop_session()


def spark_copies(spark: SparkSession, source: str) -> list[tuple]:
    frame = spark.table(TABLES["tape_files"].qualified).where(F.col("source") == source)
    cols = [F.date_format(c, STAMP).alias(c) if c in TIMES else F.col(c) for c in COMPARED]
    rows = frame.select(*cols, F.col("removed_at").isNull().alias("live")).collect()
    return sorted(tuple(r) for r in rows)


def pg_copies(dsn: str, source: str) -> list[tuple]:
    cols = ", ".join(COMPARED)
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            f"select {cols}, removed_at is null from tapelens.tape_files where source = %s",
            [source],
        ).fetchall()
    written = COMPARED.index("written_at")
    return sorted(
        tuple(v.astimezone(UTC).strftime(PY_STAMP) if i == written else v for i, v in enumerate(r))
        for r in rows
    )


def spark_rejects(spark: SparkSession, run_id: int) -> list[tuple]:
    rows = (
        spark.table(TABLES["ingest_rejects"].qualified)
        .where(F.col("run_id") == run_id)
        .select("line_no", "raw", "reason")
        .collect()
    )
    return sorted(tuple(r) for r in rows)


def runs(spark: SparkSession, source: str) -> list[tuple]:
    rows = (
        spark.table(TABLES["ingest_runs"].qualified)
        .where(F.col("source") == source)
        .select("run_id", "status", "rows", "rejects")
        .orderBy("run_id")
        .collect()
    )
    return [tuple(r) for r in rows]


def test_a_killed_load_is_rolled_back_whole(spark: SparkSession, killed: dict) -> None:
    # The kill came after the copies' commit and before the run's: the new sizes are in the
    # table, the run is still running.
    sizes = {r[COMPARED.index("size_bytes")] for r in spark_copies(spark, "killed")}
    assert 734004 in sizes, "the load was not killed after its copies' commit"
    assert [r[1] for r in runs(spark, "killed")] == ["loaded", "running"]
    rolled = roll_back_killed(spark)
    assert rolled == [runs(spark, "killed")[1][0]]
    assert [r[1] for r in runs(spark, "killed")] == ["loaded", "failed"]
    # Every table is as the first load left it: the old sizes, every copy live.
    rows = spark_copies(spark, "killed")
    assert {r[COMPARED.index("size_bytes")] for r in rows} >= {734003}
    assert 734004 not in {r[COMPARED.index("size_bytes")] for r in rows}
    assert all(r[-1] for r in rows)
    # The next load of the newer dump loads it, as if the killed one had never run.
    fmt, opts = FMT["hpss-lsp"], ParseOptions(source="killed")
    [again] = load_files(spark, fmt, [killed["new"]], opts, guard=ShrinkGuard(allow=True))
    assert (again.status, again.removed) == ("loaded", 1)


@pytest.mark.parametrize(
    ("fmt", "file"), [("hpss-lsp", "ls-P.txt"), ("csv", "copies.csv")], ids=["hpss-lsp", "csv"]
)
def test_the_rows_are_those_the_postgres_path_loads(
    spark: SparkSession, dsn: str, fmt: str, file: str
) -> None:
    opts = ParseOptions(source=f"eq-{fmt}")
    [on_spark] = load_files(spark, FMT[fmt], [DATA / file], opts)
    on_pg = ingest_file(dsn, FMT[fmt], DATA / file, opts)
    assert (on_spark.status, on_spark.rows, on_spark.rejects, on_spark.skipped) == (
        on_pg.status,
        on_pg.rows,
        on_pg.rejects,
        on_pg.skipped,
    )
    stored = spark_copies(spark, opts.source)
    assert stored and stored == pg_copies(dsn, opts.source)
    with psycopg.connect(dsn) as conn:
        pg_tapes = conn.execute(
            "select volume, media_type, media_from from tapelens.tapes"
        ).fetchall()
    volumes = {r[COMPARED.index("volume")] for r in stored}
    tapes = spark.table(TABLES["tapes"].qualified).where(F.col("volume").isin(list(volumes)))
    assert sorted(
        tuple(r) for r in tapes.select("volume", "media_type", "media_from").collect()
    ) == (sorted(pg_tapes))


def test_the_same_dump_again_is_unchanged_with_no_commit(spark: SparkSession) -> None:
    opts = ParseOptions(source="again")
    [first] = load_files(spark, FMT["hpss-lsp"], [DATA / "ls-P.txt"], opts)
    before = table_versions(spark, sorted(TABLES))
    [again] = load_files(spark, FMT["hpss-lsp"], [DATA / "ls-P.txt"], opts)
    assert (again.status, again.run_id) == ("unchanged", first.run_id)
    assert table_versions(spark, sorted(TABLES)) == before


def test_a_newer_dump_writes_what_changed_and_retires_what_disappeared(
    spark: SparkSession, dsn: str, tmp_path: Path
) -> None:
    lines = (DATA / "ls-P.txt").read_text().splitlines(keepends=True)
    new = tmp_path / "ls-P-newer.txt"
    # One copy's size changed, the last copy gone.
    new.write_text("".join(lines[:-1]).replace("\t734003\t734003\t", "\t734004\t734004\t"))
    opts = ParseOptions(source="newer")
    [first] = load_files(spark, FMT["hpss-lsp"], [DATA / "ls-P.txt"], opts)
    # One copy of the few is more than the guard lets a dump retire unconfirmed.
    before = table_versions(spark, sorted(TABLES))
    with pytest.raises(ShrinkRefused, match="would retire 1 of the"):
        load_files(spark, FMT["hpss-lsp"], [new], opts)
    after = table_versions(spark, sorted(TABLES))
    assert {k: v for k, v in after.items() if k != "ingest_runs"} == {
        k: v for k, v in before.items() if k != "ingest_runs"
    }, "a refused dump wrote to a table other than its failed run"
    [second] = load_files(spark, FMT["hpss-lsp"], [new], opts, guard=ShrinkGuard(allow=True))
    assert (second.status, second.removed) == ("loaded", 1)
    # The PostgreSQL path, the same two dumps: the same copies, the same one retired.
    ingest_file(dsn, FMT["hpss-lsp"], DATA / "ls-P.txt", opts)
    ingest_file(dsn, FMT["hpss-lsp"], new, opts, guard=ShrinkGuard(allow=True))
    assert spark_copies(spark, "newer") == pg_copies(dsn, "newer")
    # Only the changed copy was written again: the others keep the first run's id.
    written = (
        spark.table(TABLES["tape_files"].qualified)
        .where((F.col("source") == "newer") & F.col("removed_at").isNull())
        .groupBy("ingest_run_id")
        .count()
        .collect()
    )
    assert {r["ingest_run_id"]: r["count"] for r in written} == {
        first.run_id: second.rows - 1,
        second.run_id: 1,
    }


def test_lenient_rejects_are_kept_with_their_reasons_and_strict_loads_nothing(
    spark: SparkSession, dsn: str, tmp_path: Path
) -> None:
    lines = (DATA / "copies.csv").read_text().splitlines(keepends=True)
    bad = tmp_path / "bad.csv"
    bad.write_text("".join([*lines[:3], "bnl,,/x/y,/x/y,,,,many,A85532,99,,,1,2023-01-01,\n"]))
    opts = ParseOptions(source="lenient")
    [on_spark] = load_files(spark, FMT["csv"], [bad], opts)
    on_pg = ingest_file(dsn, FMT["csv"], bad, opts)
    assert on_spark.rejects == on_pg.rejects == 1
    assert on_spark.rejects_summary == on_pg.rejects_summary
    with psycopg.connect(dsn) as conn:
        pg = conn.execute("select line_no, raw, reason from tapelens.ingest_rejects").fetchall()
    assert on_spark.run_id is not None
    assert spark_rejects(spark, on_spark.run_id) == sorted(pg)
    strict = ParseOptions(source="strict", strict=True)
    with pytest.raises(ParseError, match=rf"{bad}:4: "):
        load_files(spark, FMT["csv"], [bad], strict)
    assert spark_copies(spark, "strict") == []
    assert [r[1] for r in runs(spark, "strict")] == ["failed"]


@pytest.mark.parametrize(
    ("kind", "fmt", "file"),
    [
        ("transfers", "dcache-billing", "billing-2021.11.02"),
        ("mounts", "cta-taped", "cta-taped.jsonl"),
    ],
    ids=["billing", "cta-taped-mounts"],
)
def test_a_logs_records_are_those_the_postgres_path_loads(
    spark: SparkSession, dsn: str, kind: str, fmt: str, file: str
) -> None:
    # The logs' fixtures: tests/data/logs/ (dCache's billing cells and CTA's taped, each
    # described with its source in docs/formats/dcache-billing.md and docs/formats/cta-taped.md).
    fmt_used = lookup(kind, fmt)
    path = ROOT / "tests" / "data" / "logs" / file
    opts = ParseOptions(source=f"eq-{kind}")
    [on_spark] = load_files(spark, fmt_used, [path], opts)
    on_pg = ingest_file(dsn, fmt_used, path, opts)
    assert (on_spark.status, on_spark.rows, on_spark.rejects) == (
        on_pg.status,
        on_pg.rows,
        on_pg.rejects,
    )
    cols = list(canonical.SCHEMAS[kind])
    times = [c for c, t in canonical.SCHEMAS[kind].items() if t == canonical.UTC_TIME]
    frame = spark.table(TABLES[kind].qualified).where(F.col("source") == opts.source)
    rows = frame.select(
        *(F.date_format(c, STAMP).alias(c) if c in times else F.col(c) for c in cols)
    ).collect()
    with psycopg.connect(dsn) as conn:
        pg = conn.execute(
            f"select {', '.join(cols)} from tapelens.{kind} where source = %s", [opts.source]
        ).fetchall()
    at = [cols.index(c) for c in times]
    pg_rows = [
        tuple(
            v.astimezone(UTC).strftime(PY_STAMP) if i in at and v is not None else v
            for i, v in enumerate(r)
        )
        for r in pg
    ]
    assert rows and sorted(map(tuple, rows), key=repr) == sorted(pg_rows, key=repr)
    # Loading the log again adds nothing.
    [again] = load_files(spark, fmt_used, [path], opts)
    assert (again.status, again.run_id) == ("unchanged", on_spark.run_id)


# The inputs of the formats beyond the catalog listings whose positions are places and the logs
# whose records stand alone, each with the readers' fixture written from the program that prints
# it (its source cited in docs/formats/): Spectrum Protect's `select * from contents` with the
# archives table and `query content` (docs/formats/tsm.md: IBM's dsmadmc output as documented
# there), CTA's `cta-admin tape ls` (cern-cta/CTA tools/CtaAdminTextFormatter.cpp), Spectrum
# Protect's volumes, Enstore's `enstore vol --vols` (Enstore-org/enstore
# src/volume_clerk_client.py), an inventory CSV (docs/formats/inventories.md), HPSS PVL logs
# rotated mid-mount (maesker/RoboticTapeLibrary src/TraceAnalyser/anydb_inspector.py,
# docs/formats/hpss-pvl.md) and the WLCG hint exports (rucio/rucio
# lib/rucio/transfertool/fts3_plugins.py, cern-fts/fts3 src/db/mysql/MySqlAPI.cpp,
# docs/formats/wlcg-hints.md). Most hold a bad line the reader refuses.
CATALOG_DATA = ROOT / "tests" / "data" / "catalog"
LOGS = ROOT / "tests" / "data" / "logs"
HINTS = ROOT / "tests" / "data" / "hints"
LISTED = {"listed_at": "2024-03-01T00:00:00Z"}
PVL = [LOGS / "pvl-rotated" / f"pvl.log-2013010{d}" for d in (7, 5, 6)]  # any order
INPUTS: dict[str, tuple[str, str, list[Path], dict[str, str]]] = {
    "tsm-contents": (
        "catalog",
        "tsm-contents",
        [CATALOG_DATA / "contents.csv"],
        {"archives": str(CATALOG_DATA / "archives.csv")},
    ),
    "tsm-qcontent": ("catalog", "tsm-qcontent", [CATALOG_DATA / "VTS104L7.qcontent.txt"], LISTED),
    "hpss-pvl": ("mounts", "hpss-pvl", PVL, {}),
    "tapes-csv": ("tapes", "csv", [CATALOG_DATA / "tapes.csv"], {}),
    "cta-tape-ls": ("tapes", "cta-tape-ls", [CATALOG_DATA / "inventory-cta-tape-ls.txt"], {}),
    "tsm-volumes": ("tapes", "tsm-volumes", [CATALOG_DATA / "inventory-tsm-volumes.txt"], {}),
    "enstore-vols": ("tapes", "enstore-vols", [CATALOG_DATA / "enstore-vols.txt"], {}),
    "fts-files": ("hints", "fts-files", [HINTS / "fts-t_file.tsv"], {}),
    "hints-csv": ("hints", "csv", [HINTS / "storage-archive-metadata.csv"], {}),
    "kit": ("hints", "kit", [HINTS / "kit-attributes.csv"], {}),
}
# The formats whose fixture holds a line its reader refuses: one at least of each family.
REFUSED = {"tsm-contents", "tapes-csv", "tsm-volumes", "fts-files"}
# What a table's rows are compared on: every column both engines store of a record.
STORED: dict[str, list[str]] = {
    "catalog": COMPARED,
    "mounts": list(canonical.MOUNTS),
    "tapes": list(canonical.TAPES),
    "hints": list(canonical.WRITE_HINTS),
}


def stored_rows(spark: SparkSession, dsn: str, kind: str, where: str, value: str) -> tuple:
    """The rows of a kind's table where a column has a value, from both engines, in one form."""
    cols = STORED[kind]
    table = canonical.TABLES[kind]
    times = {c for c, t in canonical.SCHEMAS[kind].items() if t == canonical.UTC_TIME} | (
        TIMES & set(cols)
    )
    frame = spark.table(TABLES[table].qualified).where(F.col(where) == value)
    on_spark = frame.select(
        *(F.date_format(c, STAMP).alias(c) if c in times else F.col(c) for c in cols)
    ).collect()
    with psycopg.connect(dsn) as conn:
        pg = conn.execute(
            f"select {', '.join(cols)} from tapelens.{table} where {where} = %s", [value]
        ).fetchall()
    at = {i for i, c in enumerate(cols) if c in times}
    on_pg = [
        tuple(
            v.astimezone(UTC).strftime(PY_STAMP) if i in at and v is not None else v
            for i, v in enumerate(r)
        )
        for r in pg
    ]
    return sorted(map(tuple, on_spark), key=repr), sorted(on_pg, key=repr)


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_every_format_loads_as_on_postgres_and_again_unchanged(
    spark: SparkSession, dsn: str, name: str
) -> None:
    kind, fmt_name, files, extra = INPUTS[name]
    fmt = lookup(kind, fmt_name)
    source = f"fmt-{name}"
    opts = ParseOptions(source=source, extra=extra, year=2013 if kind == "mounts" else None)
    on_spark = load_files(spark, fmt, files, opts)
    on_pg = [ingest_file(dsn, fmt, f, opts) for f in files]
    assert [(r.status, r.rows, r.rejects, r.skipped) for r in on_spark] == [
        (r.status, r.rows, r.rejects, r.skipped) for r in on_pg
    ]
    assert [r.rejects_summary for r in on_spark] == [r.rejects_summary for r in on_pg]
    if name in REFUSED:
        assert on_spark[0].rejects, f"{name}: the fixture's bad line was not refused"
        with psycopg.connect(dsn) as conn:
            pg = conn.execute("select line_no, raw, reason from tapelens.ingest_rejects").fetchall()
        assert on_spark[0].run_id is not None
        assert spark_rejects(spark, on_spark[0].run_id) == sorted(pg)
    if kind == "tapes":  # an inventory has no source: its volumes, as PostgreSQL has them
        with psycopg.connect(dsn) as conn:
            volumes = [r[0] for r in conn.execute("select volume from tapelens.tapes")]
        assert volumes
        for volume in volumes:
            got, want = stored_rows(spark, dsn, kind, "volume", volume)
            assert got == want, volume
    else:
        got, want = stored_rows(spark, dsn, kind, "source", source)
        assert got and got == want
    if kind == "mounts":  # the pieces no file joined wait alike on both engines
        pieces = spark.table(TABLES["mount_pieces"].qualified).where(F.col("source") == source)
        with psycopg.connect(dsn) as conn:
            pg_pieces = conn.execute(
                "select volume, kind, drive from tapelens.mount_pieces where source = %s",
                [source],
            ).fetchall()
        assert sorted(tuple(r) for r in pieces.select("volume", "kind", "drive").collect()) == (
            sorted(pg_pieces)
        )
    # The same files again: unchanged, and no table has a new version.
    before = table_versions(spark, sorted(TABLES))
    again = load_files(spark, fmt, files, opts)
    assert [(r.status, r.run_id) for r in again] == [("unchanged", r.run_id) for r in on_spark]
    assert table_versions(spark, sorted(TABLES)) == before


def test_a_newer_tsm_listing_keeps_places_as_on_postgres(
    spark: SparkSession, dsn: str, tmp_path: Path
) -> None:
    """Spectrum Protect's ranks: a copy gone moves every later copy of its volume up one rank,
    a stored copy keeps its place, a new one goes after the volume's last place."""
    lines = (CATALOG_DATA / "contents.csv").read_text().splitlines(keepends=True)
    # The first copy of VTS104L7 gone, a new object listed after the volume's last.
    dropped = next(i for i, line in enumerate(lines) if ",10441881235,10441881235" in line)
    added = lines[dropped].replace("10441881235", "10441881299").replace("_0001.data", "_0099.data")
    newer = tmp_path / "contents-newer.csv"
    newer.write_text("".join([*lines[:dropped], *lines[dropped + 1 :], added]))
    archives = tmp_path / "archives.csv"
    old_archives = (CATALOG_DATA / "archives.csv").read_text()
    archives.write_text(
        old_archives
        + "GRIDKA_ATLAS,/pnfs,/gridka.de/atlas/data18/RAW/,data18.003588.RAW._lb0120._0099.data,"
        "10441881299,2024-05-02 11:20:05.000000,atlas,\n"
    )
    fmt = lookup("catalog", "tsm-contents")
    first = ParseOptions(source="ranks", extra={"archives": str(CATALOG_DATA / "archives.csv")})
    second = ParseOptions(source="ranks", extra={"archives": str(archives)})
    allow = ShrinkGuard(allow=True)
    load_files(spark, fmt, [CATALOG_DATA / "contents.csv"], first)
    [on_spark] = load_files(spark, fmt, [newer], second, guard=allow)
    ingest_file(dsn, fmt, CATALOG_DATA / "contents.csv", first)
    on_pg = ingest_file(dsn, fmt, newer, second, guard=allow)
    assert (on_spark.removed, on_spark.rows) == (on_pg.removed, on_pg.rows) == (1, on_pg.rows)
    assert spark_copies(spark, "ranks") == pg_copies(dsn, "ranks")


def test_a_copy_listed_again_elsewhere_keeps_its_place_as_on_postgres(
    spark: SparkSession, dsn: str, tmp_path: Path
) -> None:
    """A stored copy listed again at another rank (the listing's order changed, the object did
    not move: Spectrum Protect rewrites an object only to another volume) keeps its place and
    is not retired, on both engines; the copies after it keep theirs."""
    lines = (CATALOG_DATA / "contents.csv").read_text().splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if ",10441881235,10441881235" in line)
    newer = tmp_path / "contents-reordered.csv"
    newer.write_text("".join([*lines[:first], *lines[first + 1 :], lines[first]]))
    fmt = lookup("catalog", "tsm-contents")
    options = ParseOptions(
        source="reordered", extra={"archives": str(CATALOG_DATA / "archives.csv")}
    )
    load_files(spark, fmt, [CATALOG_DATA / "contents.csv"], options)
    [on_spark] = load_files(spark, fmt, [newer], options)
    ingest_file(dsn, fmt, CATALOG_DATA / "contents.csv", options)
    on_pg = ingest_file(dsn, fmt, newer, options)
    assert (on_pg.removed, on_spark.removed) == (0, 0)
    assert spark_copies(spark, "reordered") == pg_copies(dsn, "reordered")


def test_a_format_without_a_spark_step_after_its_load_is_refused_in_one_line() -> None:
    from tapelens.errors import InputError
    from tapelens.ingest.formats import Format
    from tapelens.spark.load import refuse_unsupported

    for fmt in FORMATS:
        refuse_unsupported(fmt)  # every format tapelens ingest takes loads on Spark
    other = Format("mounts", "pairs", "x", after_load="pair_sessions")
    with pytest.raises(InputError, match=r"^--format pairs: .*pair_sessions.*--engine postgres$"):
        refuse_unsupported(other)


def test_db_status_says_the_engine_where_the_tables_are_and_their_rows(
    spark: SparkSession, warehouse: Path
) -> None:
    # Last in the module: the command stops the process's session when it is done.
    counts = {n: spark.table(TABLES[n].qualified).count() for n in ("tape_files", "ingest_runs")}
    env = {"TAPELENS_ENGINE": "spark", "TAPELENS_SPARK_MASTER": "local[2]"}
    result = CliRunner().invoke(
        cli, ["db", "status", "--spark-warehouse", str(warehouse)], env=env, catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[:3] == ["engine       spark", "master       local[2]", f"warehouse    {warehouse}"]
    assert lines[3].startswith("spark        4.2.")
    for name, n in counts.items():
        assert f"  tapelens.{name:<16} {n:>14,}" in lines
    assert "  tapelens.media_types                  10" in lines
