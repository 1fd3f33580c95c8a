"""The marts built on Spark equal the marts built on PostgreSQL, row for row, on a small
synthetic site of every profile the generator has.

Each profile's site (with hint records, a lost-acknowledgement outage and a scattered dataset,
so that every mart has rows) is generated, and its files are loaded on both engines: into
TimescaleDB by the PostgreSQL loader, and into the Delta tables of a Spark warehouse by
`tapelens ingest manifest --engine spark`, the same files through the Spark loader (catalogs,
inventories, the mount and transfer logs and the hint records of each system: hpss-lsp and
HPSS PVL for bnl, Spectrum Protect's contents with its archives table and dCache billing for
gridka, CTA's tf ls and taped log for cern, Enstore's per-volume listings for fnal). The same
dbt project is built on both (dbt-spark on Spark). Every model dbt materialises as a table, and
every view of the marts, is then read from both engines and compared sorted by all its columns:
exact values equal, floats to 1e-9 relative. Then a newer catalog, 1% of its copies gone, is
loaded on both, each engine's incremental build recomputes what it touched (Spark's through its
Delta MERGE hooks), and the marts are compared again.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from tapelens.cli import cli
from tapelens.dbt_runs import SparkWarehouse, build
from tapelens.frames import read_frame
from tapelens.ingest.formats.base import ParseOptions
from tapelens.ingest.load import ShrinkGuard, ingest_files
from tapelens.ingest.manifest import group_dumps, read_manifest
from tapelens.world import PROFILES, generate, site_params
from tests.fixtures.generated_site import load_site
from tests.spark.conftest import MASTER, MODELS_ONLY, SMALL, Built

pytest.importorskip("pyspark")
pytest.importorskip("delta")

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]

FILES = 300
SEED = 11
REL = 1e-9
NEWER_EVERY = 100  # a newer catalog: one listed copy in this many gone
# The schemas dbt builds into (macros/generate_schema_name.sql); staging holds views of the
# canonical tables only, compared through everything built on them.
BUILT_SCHEMAS = ("tapelens_intermediate", "tapelens_marts")
LIVE = "select count(*) as n from tapelens.tape_files where removed_at is null"
LOAD_TIMES = ["removed_at", "last_seen_at", "updated_at"]  # stamped by each engine's load


@pytest.fixture(scope="module", autouse=True)
def own_sessions() -> Iterator[None]:
    """Each profile's site has a warehouse of its own, so a session of its own: none is left
    running when the module ends."""
    from tapelens.spark.session import stop_session

    stop_session()
    yield
    stop_session()


def ingest_on_spark(manifest: Path, warehouse: Path, *more: str) -> None:
    """`tapelens ingest manifest --engine spark` in this process (its session, already running
    on the warehouse, serves the command)."""
    result = CliRunner().invoke(
        cli,
        [
            "ingest",
            "manifest",
            "--engine",
            "spark",
            "--spark-master",
            MASTER,
            "--spark-warehouse",
            str(warehouse),
            *more,
            str(manifest),
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    assert "refused" not in result.stderr, result.stderr


def build_loaded(dsn: str, site: Path, warehouse: Path, logs: Path) -> Built:
    """The generated `site` loaded by each engine's loader and built on each engine."""
    from tapelens.spark.session import spark_session, stop_session

    load_site(dsn, site, {"tapes", "catalog", "mounts", "transfers", "hints"})
    build(dsn, exclude=MODELS_ONLY, log_dir=logs / "postgres")
    stop_session()  # the previous profile's warehouse
    spark = spark_session(MASTER, warehouse, conf=SMALL)
    ingest_on_spark(site / "manifest.json", warehouse)
    small(spark)
    on_spark = SparkWarehouse(MASTER, warehouse)
    build(on_spark, exclude=MODELS_ONLY, log_dir=logs / "spark")
    return Built(dsn, on_spark, logs, site)


def small(spark: object) -> None:
    """The small site's settings again: a command's session takes the engine's defaults."""
    for key, value in SMALL.items():
        spark.conf.set(key, value)  # type: ignore[attr-defined]


def newer_catalog(site: Path, folder: Path) -> Path:
    """A manifest of the site's catalog inputs as a newer dump lists them: every
    NEWER_EVERY-th listed line gone (headers, trailers and short lines kept, so that each file
    reads as before); return the manifest."""
    doc = json.loads((site / "manifest.json").read_text())
    inputs, seen, dropped = [], 0, 0
    for entry in doc["inputs"]:
        if entry["kind"] != "catalog" or entry.get("skip"):
            continue
        lines = (site / entry["path"]).read_text().splitlines(keepends=True)
        kept = []
        for i, line in enumerate(lines):
            listed = 5 <= i < len(lines) - 2 and len(line) > 40
            seen += listed
            if listed and seen % NEWER_EVERY == NEWER_EVERY // 2:
                dropped += 1
                continue
            kept.append(line)
        path = folder / entry["path"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(kept))
        options = dict(entry.get("options") or {})
        if "archives" in options:
            options["archives"] = str(site / options["archives"])
        inputs.append({**entry, "path": str(path), "options": options})
    assert dropped, "the newer catalog lists every copy again"
    manifest = folder / "manifest.json"
    manifest.write_text(json.dumps({"inputs": inputs}))
    return manifest


def load_newer_on_postgres(dsn: str, manifest: Path) -> None:
    for group in group_dumps(read_manifest(manifest)):
        item = group[0]
        options = ParseOptions(
            source=item.source or item.format.source, extra=item.extra, **item.options
        )
        paths: list[str | Path] = [i.path for i in group]
        ingest_files(dsn, item.format, paths, options, guard=ShrinkGuard(allow=True))


def built_relations(dsn: str) -> list[str]:
    """schema.name of every table and view dbt built on PostgreSQL."""
    found = read_frame(
        dsn,
        "select table_schema || '.' || table_name as name from information_schema.tables"
        " where table_schema = any($1) order by 1",
        [list(BUILT_SCHEMAS)],
    )
    return list(found["name"])


def plain(frame: pl.DataFrame) -> pl.DataFrame:
    """Both engines' values in one vocabulary: integers as Int64, decimals (PostgreSQL's
    numeric, Spark's decimal) and floats as Float64, instants in UTC microseconds."""
    columns = []
    for name, dtype in frame.schema.items():
        column = pl.col(name)
        if isinstance(dtype, pl.Extension):  # PostgreSQL's numeric, as text, from ADBC
            column = column.ext.storage().cast(pl.Float64)
        elif dtype.is_integer():
            column = column.cast(pl.Int64)
        elif dtype.is_decimal() or dtype.is_float():
            column = column.cast(pl.Float64)
        elif isinstance(dtype, pl.Datetime):
            zoned = column if dtype.time_zone else column.dt.replace_time_zone("UTC")
            column = zoned.dt.convert_time_zone("UTC").dt.cast_time_unit("us")
        columns.append(column)
    return frame.select(columns)


def sorted_rows(frame: pl.DataFrame) -> pl.DataFrame:
    """Sorted by the exact columns, then the floats (which only break ties)."""
    floats = [n for n, t in frame.schema.items() if t == pl.Float64]
    lists = [n for n, t in frame.schema.items() if isinstance(t, pl.List)]
    exact = [n for n in frame.columns if n not in floats and n not in lists]
    keys = [*exact, *floats, *(pl.col(n).list.join("\x1f") for n in lists)]
    return frame.sort(keys, nulls_last=True)


def same(a: pl.Expr, b: pl.Expr, floats: bool) -> pl.Expr:
    """Equal, nulls equal; floats equal to a relative REL."""
    if not floats:
        return a.eq_missing(b)
    close = ((a - b).abs() <= REL * pl.max_horizontal(a.abs(), b.abs())).fill_null(False)
    return (a.is_null() & b.is_null()) | close


def assert_equal(relation: str, want: pl.DataFrame, got: pl.DataFrame) -> None:
    assert got.columns == want.columns, f"{relation}: columns {got.columns} != {want.columns}"
    assert got.height == want.height, f"{relation}: {got.height} rows on Spark, {want.height}"
    want, got = sorted_rows(want), sorted_rows(got)
    for name, dtype in want.schema.items():
        pair = pl.DataFrame({"postgres": want[name], "spark": got[name]})
        bad = pair.filter(~same(pl.col("postgres"), pl.col("spark"), dtype == pl.Float64))
        assert bad.height == 0, (
            f"{relation}.{name}: {bad.height} of {want.height} rows differ, e.g. "
            f"{bad.head(3).rows()}"
        )


# Marts built from one kind of input alone, empty where a site's inputs have none of it (a
# generated site whose transfer log is dCache's billing files has no mount log).
FROM_ONE_INPUT = {"mounts": {"tapelens_marts.fct_mounts_daily"}}


def assert_every_relation_equal(site: Built, inputs: set[str]) -> None:
    """Every table and view built on PostgreSQL equals Spark's, and none is empty but the
    marts of a kind of input the site's manifest lacks (`inputs`: the kinds it has)."""
    may_be_empty = {
        r for kind, marts in FROM_ONE_INPUT.items() if kind not in inputs for r in marts
    }
    relations = built_relations(site.dsn)
    assert "tapelens_marts.fct_file_gaps" in relations
    empty = []
    for relation in relations:
        want = plain(read_frame(site.dsn, f"select * from {relation}"))
        got = pl.from_arrow(site.spark.sql(f"select * from {relation}").toArrow())
        assert isinstance(got, pl.DataFrame)
        # the partition column of Spark's per-copy marts (macros/dialect.sql), Spark's only
        got = got.drop("volume_bucket", strict=False)
        # When each engine's load ran (a copy retired by the newer catalog), not what it loaded.
        want, got = want.drop(LOAD_TIMES, strict=False), got.drop(LOAD_TIMES, strict=False)
        if want.height == 0 and relation not in may_be_empty:
            empty.append(relation)
        assert_equal(relation, want, plain(got))
    assert not empty, f"the site leaves these empty, so they are not compared: {empty}"


# CI compares the bnl site; `make test-spark` compares every profile (each is a Spark session
# and a dozen loads of its own, minutes on two cores).
@pytest.mark.parametrize(
    "profile",
    [pytest.param(p, marks=() if p == "bnl" else pytest.mark.every_profile) for p in PROFILES],
)
def test_every_mart_equals_postgres_after_a_full_and_an_incremental_build(
    dsn: str, tmp_path: Path, profile: str
) -> None:
    site = tmp_path / "site"
    generate(
        site,
        site_params(
            profile, files=FILES, seed=SEED, hints=True, ack_outages=1, scattered_datasets=1
        ),
    )
    built = build_loaded(dsn, site, tmp_path / "warehouse", tmp_path / "dbt")
    inputs = {item.format.kind for item in read_manifest(site / "manifest.json")}
    assert_every_relation_equal(built, inputs)

    newer = newer_catalog(site, tmp_path / "newer")
    before = read_frame(
        dsn, "select count(*) as n from tapelens.tape_files where removed_at is null"
    )
    load_newer_on_postgres(dsn, newer)
    ingest_on_spark(newer, tmp_path / "warehouse", "--allow-shrink")
    small(built.spark)
    after = read_frame(
        dsn, "select count(*) as n from tapelens.tape_files where removed_at is null"
    )
    assert 0 < before["n"][0] - after["n"][0] < before["n"][0] // 10, "not a 1% newer catalog"
    build(dsn, exclude=MODELS_ONLY, log_dir=built.logs / "postgres")
    build(built.warehouse, exclude=MODELS_ONLY, log_dir=built.logs / "spark")
    assert_every_relation_equal(built, inputs)
