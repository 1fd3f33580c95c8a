"""The dashboards on a Spark build: `dashboards publish --engine spark` copies the Spark marts
the dashboards read into a PostgreSQL database of their own, and every dashboard dataset
(the marts and the views of dashboards/views/*.sql that Superset reads) then returns there the
rows it returns in the database built on PostgreSQL.

The site is conftest's `both_engines`, read and never changed: its PostgreSQL database gets
the dashboard views only inside a transaction that is rolled back.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import polars as pl
import psycopg
import pytest
import yaml
from click.testing import CliRunner, Result
from psycopg import sql

from tapelens.cli import cli, main
from tapelens.dashboards.assets import ASSETS_DIR
from tapelens.dashboards.reader_role import VIEWS_SCHEMA, view_files
from tapelens.frames import read_frame
from tapelens.ingest import canonical
from tapelens.spark import publish as publishing
from tests.conftest import _fresh_database
from tests.spark.conftest import MASTER, Built

pytest.importorskip("pyspark")
pytest.importorskip("delta")

pytestmark = pytest.mark.slow


def dashboard_datasets() -> list[tuple[str, str]]:
    """(schema, table) of every dataset the Superset bundle defines."""
    found = []
    for path in sorted((ASSETS_DIR / "datasets").glob("*/*.yaml")):
        doc = yaml.safe_load(path.read_text())
        found.append((str(doc["schema"]), str(doc["table_name"])))
    return found


DATASETS = dashboard_datasets()
# The "Data as of" view says what the database holds: its loads on PostgreSQL, the Spark copy
# in the published one, so its rows differ between the two by design (checked on their own).
DATA_AS_OF = ("tapelens_dashboards", "data_as_of")
COPIED = [d for d in DATASETS if d[1] not in publishing.PER_ROW_MARTS and d != DATA_AS_OF]


def publish_args(dsn: str, warehouse: str | Path) -> list[str]:
    args = ["--dsn", dsn, "dashboards", "publish", "--engine", "spark"]
    return [*args, "--spark-master", MASTER, "--spark-warehouse", str(warehouse)]


def publish_cli(dsn: str, warehouse: str | Path) -> Result:
    return CliRunner().invoke(cli, publish_args(dsn, warehouse))


def refused(dsn: str, warehouse: str | Path, capsys: pytest.CaptureFixture[str]) -> str:
    """The one line the console prints when the publish is refused (it must be)."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main(publish_args(dsn, warehouse))
    assert exited.value.code != 0
    err = capsys.readouterr().err
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith("tapelens: error:")]
    assert len(errors) == 1, err
    return errors[0]


def create_views(conn: psycopg.Connection) -> None:
    conn.execute(sql.SQL("create schema if not exists {}").format(sql.Identifier(VIEWS_SCHEMA)))
    for path in view_files():
        conn.execute(path.read_text().encode())


def rows_of(conn: psycopg.Connection, schema: str, table: str) -> pl.DataFrame:
    """Every row of a dataset, its columns in name order, numbers widened, rows sorted."""
    cur = conn.execute(sql.SQL("select * from {}").format(sql.Identifier(schema, table)))
    names = [d.name for d in cur.description or []]
    frame = pl.DataFrame(cur.fetchall(), schema=names, orient="row", infer_schema_length=None)
    frame = frame.select(sorted(frame.columns))
    widened = []
    for name, dtype in frame.schema.items():
        if dtype.is_integer():
            widened.append(pl.col(name).cast(pl.Int64))
        elif dtype.is_float() or isinstance(dtype, pl.Decimal):
            widened.append(pl.col(name).cast(pl.Float64))
    frame = frame.with_columns(widened)
    # Floats last in the sort key: a float's last bits differ between the engines.
    keys = [c for c, t in frame.schema.items() if not t.is_float()]
    keys += [c for c, t in frame.schema.items() if t.is_float()]
    return frame.sort(keys, nulls_last=True)


def assert_same_rows(got: pl.DataFrame, expected: pl.DataFrame, what: str) -> None:
    assert got.columns == expected.columns, what
    assert got.height == expected.height, what
    for name in expected.columns:
        pair = pl.DataFrame({"got": got[name], "expected": expected[name]})
        if expected.schema[name].is_float():
            a, b = pl.col("got"), pl.col("expected")
            same = (
                ((a - b).abs() <= 1e-9 * pl.max_horizontal(a.abs(), b.abs()))
                | (a == b)
                | (a.is_null() & b.is_null())
            ).fill_null(False)
            assert pair.select(same.all()).item(), f"{what}.{name}"
        else:
            assert pair["got"].to_list() == pair["expected"].to_list(), f"{what}.{name}"


def dump(dsn: str) -> dict[tuple[str, str], pl.DataFrame]:
    with psycopg.connect(dsn) as conn:
        return {d: rows_of(conn, *d) for d in COPIED}


def publications(dsn: str) -> int:
    return int(read_frame(dsn, f"select count(*) as n from {publishing.RECORD}")["n"][0])


@pytest.fixture(scope="module")
def published(both_engines: Built, server_dsn: str, template_dsn: str) -> Iterator[str]:
    """A fresh migrated database with the dashboard views, the site's Spark build published."""
    databases = _fresh_database(server_dsn)
    dsn = next(databases)
    with psycopg.connect(dsn, autocommit=True) as conn:
        create_views(conn)
    result = publish_cli(dsn, both_engines.warehouse.path)
    assert result.exit_code == 0, result.output
    try:
        yield dsn
    finally:
        next(databases, None)


@pytest.fixture(scope="module")
def built_on_postgres(both_engines: Built) -> dict[tuple[str, str], pl.DataFrame]:
    """Every dataset's rows in the database built on PostgreSQL, its views made in a
    transaction that is rolled back."""
    with psycopg.connect(both_engines.dsn) as conn:
        create_views(conn)
        rows = {d: rows_of(conn, *d) for d in COPIED}
        conn.rollback()
    return rows


def test_the_dashboards_read_the_same_rows_from_the_published_copy(
    published: str, built_on_postgres: dict[tuple[str, str], pl.DataFrame]
) -> None:
    got = dump(published)
    shown = [d for d, frame in built_on_postgres.items() if frame.height > 0]
    # The site has rows for the placement, recall and drive dashboards: not an empty compare.
    assert len(shown) >= len(COPIED) - 6, sorted(set(COPIED) - set(shown))
    for dataset, expected in built_on_postgres.items():
        assert_same_rows(got[dataset], expected, ".".join(dataset))


def test_every_chart_finds_its_table_in_the_published_copy(published: str) -> None:
    """Every dataset of the dashboards (a mart or a view) is a relation of the published copy,
    none a mart left on Spark: the gap histogram and the read rate charts read the per-day
    aggregates, which the copy holds with rows."""
    assert not [d for d in DATASETS if d[1] in publishing.PER_ROW_MARTS]
    missing = [
        d
        for d in DATASETS
        if read_frame(published, f"select to_regclass('{d[0]}.{d[1]}')::text as t")["t"][0] is None
    ]
    assert not missing
    for mart in ("agg_gap_histogram", "agg_read_rates_daily", "agg_read_rates_by_gap"):
        assert ("tapelens_marts", mart) in DATASETS
        found = read_frame(published, f"select count(*) as n from tapelens_marts.{mart}")
        assert found["n"][0] > 0, mart


def test_the_copy_is_recorded_with_the_spark_build_it_came_from(
    both_engines: Built, published: str
) -> None:
    record = read_frame(
        published,
        f"select warehouse, built_at, tables::text as tables from {publishing.RECORD}"
        " order by publication_id desc limit 1",
    ).row(0, named=True)
    assert record["warehouse"] == str(both_engines.warehouse.path)
    assert record["built_at"] is not None
    history = both_engines.spark.sql("describe history tapelens_marts.dim_datasets limit 1")
    tables = json.loads(record["tables"])
    assert tables["tapelens_marts.dim_datasets"]["delta_version"] == history.collect()[0][0]
    assert tables["tapelens_marts.dim_datasets"]["rows"] > 0
    assert set(tables) >= {f"tapelens_marts.{m}" for m in publishing.AGGREGATE_MARTS}


def test_the_data_as_of_view_shows_the_spark_build_and_copy_it_came_from(
    both_engines: Built, published: str
) -> None:
    """After a publish, the view of the "Data as of" chart shows the build the copy came
    from (built_at, when it was copied, the warehouse) and each input at the Delta version
    and commit time the copy read its table at; no load, the database having none."""
    record = read_frame(
        published,
        f"select published_at, built_at, tables::text as tables from {publishing.RECORD}"
        " order by publication_id desc limit 1",
    ).row(0, named=True)
    shown = read_frame(published, "select * from tapelens_dashboards.data_as_of")
    assert set(shown["engine"]) == {"Spark"}
    build = shown.filter(pl.col("kind") == "marts").row(0, named=True)
    assert build["as_of"] == record["built_at"] is not None
    assert build["published_at"] == record["published_at"]
    assert build["warehouse"] == str(both_engines.warehouse.path)
    tables = json.loads(record["tables"])
    # The inputs whose tables the copy reads (hints stay on Spark), as the loader names them.
    inputs = {kind: canonical.TABLES[kind] for kind in ("catalog", "tapes", "transfers", "mounts")}
    assert sorted(shown["kind"]) == sorted(["marts", *inputs])
    for kind, table in inputs.items():
        row = shown.filter(pl.col("kind") == kind).row(0, named=True)
        history = both_engines.spark.sql(f"describe history tapelens.{table} limit 1").collect()
        assert row["delta_version"] == history[0][0], kind
        committed = datetime.fromisoformat(tables[f"tapelens.{table}"]["committed_at"])
        assert row["as_of"] == committed <= record["built_at"], kind
        assert row["published_at"] == record["published_at"], kind


def test_the_per_copy_and_per_read_marts_and_the_catalog_stay_on_spark(
    both_engines: Built, published: str
) -> None:
    for mart in publishing.PER_ROW_MARTS:
        found = read_frame(published, f"select to_regclass('tapelens_marts.{mart}')::text as t")
        assert found["t"][0] is None, mart
    copies = read_frame(published, "select count(*) as n from tapelens.tape_files")["n"][0]
    catalog = read_frame(both_engines.dsn, "select count(*) as n from tapelens.tape_files")
    assert 0 < copies < catalog["n"][0] / 10


def test_publishing_again_changes_nothing(both_engines: Built, published: str) -> None:
    before, runs = dump(published), publications(published)
    result = publish_cli(published, both_engines.warehouse.path)
    assert result.exit_code == 0, result.output
    after = dump(published)
    for dataset, frame in before.items():
        assert_same_rows(after[dataset], frame, ".".join(dataset))
    assert publications(published) == runs + 1


def test_a_failed_publish_leaves_the_previous_copy(
    both_engines: Built,
    published: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A mart the Spark build lacks, read after every other has been written: the transaction
    is rolled back, and the command says so in one line."""
    before, runs = dump(published), publications(published)
    marts = (*publishing.AGGREGATE_MARTS, "fct_not_built")
    monkeypatch.setattr(publishing, "AGGREGATE_MARTS", marts)
    error = refused(published, both_engines.warehouse.path, capsys)
    assert "tapelens_marts.fct_not_built is not in the Spark warehouse" in error
    assert "the previous copy is unchanged" in error
    after = dump(published)
    for dataset, frame in before.items():
        assert_same_rows(after[dataset], frame, ".".join(dataset))
    assert publications(published) == runs


def test_a_database_with_a_catalog_loaded_on_postgres_is_refused(
    both_engines: Built, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = read_frame(both_engines.dsn, "select count(*) as n from tapelens.ingest_runs")
    error = refused(both_engines.dsn, both_engines.warehouse.path, capsys)
    assert "holds a catalog loaded on PostgreSQL" in error
    after = read_frame(both_engines.dsn, "select count(*) as n from tapelens.ingest_runs")
    assert after["n"][0] == runs["n"][0] > 0
