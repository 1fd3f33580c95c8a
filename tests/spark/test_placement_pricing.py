"""The placement costs a Spark marts build stores are PostgreSQL's, priced on the executors.

`marts build --engine spark` prices every dataset (analysis/recall/store/on_spark.py,
write_placement_costs) by grouping the catalog's live copies by dataset and pricing each group
where it is, with the function the PostgreSQL path prices the whole catalog with: the stored
tables are the same, row for row (seconds to a relative 1e-9), and the driver never receives
the catalog, so that a driver whose results are capped far below the catalog's size still
prices it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from tapelens.analysis.recall.datasets.placement_cost import DATASET_COLUMNS, TAPE_COLUMNS
from tapelens.analysis.recall.datasets.stored import DATASETS, TAPES, frame_schema, price_site
from tapelens.analysis.recall.store.catalog import load_datasets
from tapelens.db import connection
from tapelens.dbt_runs import MARTS_SCHEMA
from tapelens.frames import read_frame
from tests.fixtures.generated_site import load_site
from tests.spark.conftest import MASTER, SMALL, Built, copy_to_spark, generate_site

pytest.importorskip("pyspark")
pytest.importorskip("delta")

pytestmark = pytest.mark.slow

KEYS = {DATASETS: ("dataset",), TAPES: ("dataset", "volume")}
COLUMNS = {DATASETS: (*DATASET_COLUMNS, "experiment"), TAPES: TAPE_COLUMNS}
# A driver that takes at most this much of any one job's results: far less than the catalog.
RESULT_CAP = "64k"
CAP_BYTES = 64 * 1024
CAPPED_FILES = 1500
CAPPED_SEED = 5
REL = 1e-9
# A cost that is a difference of two equal drive times: 0 on one engine, 6e-14 on the other.
ABS_S = 1e-9


def stored(read: Any, name: str) -> pl.DataFrame:
    """A stored table of placement costs in its key's order, in the frames' types."""
    columns = COLUMNS[name]
    frame = read(
        f"select {', '.join(columns)} from {MARTS_SCHEMA}.{name} order by {', '.join(KEYS[name])}"
    )
    return frame.cast(frame_schema(columns))


def same_figures(what: str, postgres: pl.DataFrame, spark: pl.DataFrame) -> None:
    """Row for row in key order: names and counts equal, seconds to REL relative or ABS_S (sums
    taken in another order differ in their last bits, as in the engines' other comparisons)."""
    assert spark.columns == postgres.columns, f"{what}: columns {spark.columns}"
    assert spark.height == postgres.height, f"{what}: {spark.height} rows, {postgres.height}"
    for name in postgres.columns:
        a, b = postgres[name], spark[name]
        if a.dtype == pl.Float64:
            near = REL * pl.max_horizontal(a.abs(), b.abs()) + ABS_S
            off = ((a - b).abs() > near).fill_null(True)
            differ = off & ~(a.is_null() & b.is_null())
        else:
            differ = ~a.eq_missing(b)
        bad = pl.DataFrame({"postgres": a, "spark": b}).filter(differ)
        assert bad.height == 0, f"{what}.{name}: {bad.height} rows differ: {bad.head(3).rows()}"


def on_spark(spark: Any) -> Any:
    def read(query: str) -> pl.DataFrame:
        frame = pl.from_arrow(spark.sql(query).toArrow())
        assert isinstance(frame, pl.DataFrame)
        return frame

    return read


@pytest.mark.parametrize("name", [DATASETS, TAPES])
def test_the_stored_costs_are_those_of_postgres(both_engines: Built, name: str) -> None:
    """Both tables, after each engine's build of the session's site, equal."""
    postgres = stored(lambda q: read_frame(both_engines.dsn, q), name)
    spark = stored(on_spark(both_engines.spark), name)
    assert postgres.height > 0
    same_figures(name, postgres, spark)


@pytest.fixture
def capped(dsn: str, tmp_path: Path) -> Iterator[Any]:
    """A site's catalog, tapes and media on PostgreSQL and on Spark, whose session's driver
    refuses any job whose results exceed RESULT_CAP; the session is stopped at the end."""
    from tapelens.spark.session import spark_session, stop_session

    site = tmp_path / "site"
    generate_site(site, CAPPED_FILES, CAPPED_SEED)
    load_site(dsn, site, {"tapes", "catalog"})
    spark = spark_session(
        MASTER, tmp_path / "warehouse", conf={**SMALL, "spark.driver.maxResultSize": RESULT_CAP}
    )
    try:
        copy_to_spark(dsn, spark, ("tape_files", "tapes", "media_types"))
        # The marts a build leaves (the pricing runs only after one): the datasets' experiments.
        spark.sql(f"create database if not exists {MARTS_SCHEMA}")
        spark.sql(
            f"create table {MARTS_SCHEMA}.dim_datasets using delta as"
            " select dataset, concat('exp-', substr(dataset, 1, 3)) as experiment"
            " from tapelens.tape_files where dataset is not null group by dataset"
        )
        yield spark
    finally:
        stop_session()


@pytest.mark.timeout(2400)
def test_a_catalog_larger_than_the_driver_takes_is_priced_on_the_executors(
    dsn: str, capped: Any
) -> None:
    """The driver takes 64 KiB of a job's results, the catalog is many times that: it is priced
    all the same, and as PostgreSQL prices it (read back through the cap would be refused)."""
    from py4j.protocol import Py4JJavaError

    from tapelens.analysis.recall.store.on_spark import write_placement_costs

    with connection(dsn) as conn:
        catalog = load_datasets(conn)
    with connection(dsn) as conn:
        want = price_site(conn)
    assert catalog.estimated_size() > 4 * CAP_BYTES, "the catalog fits in the driver's cap"
    with pytest.raises(Py4JJavaError, match="maxResultSize"):
        capped.table("tapelens.tape_files").toArrow()  # the cap holds

    priced = write_placement_costs(capped)

    assert priced == want.datasets.height > 0
    # The stored figures (a row per dataset and per dataset and tape) fit under the cap.
    spark = capped
    dim = on_spark(spark)(f"select dataset, experiment from {MARTS_SCHEMA}.dim_datasets")
    datasets = want.datasets.join(dim, on="dataset", how="left").sort("dataset")
    for name, frame in ((DATASETS, datasets), (TAPES, want.tapes.sort("dataset", "volume"))):
        expected = frame.cast(frame_schema(COLUMNS[name]))  # type: ignore[arg-type]
        same_figures(name, expected, stored(on_spark(spark), name))
