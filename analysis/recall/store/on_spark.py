"""The catalog read of a recall plan on Spark: the same copies, addresses and media as on
PostgreSQL (analysis.recall.store.catalog), read from the Delta tables by Spark SQL.

The requested paths, file ids and datasets go to Spark as a small table of their own (through
Arrow); one query joins the catalog against it, so that Spark reads only the copies of the
requested files (the join runs on the cluster, the requests broadcast to it), adds each copy's
byte address and its tape's media and state, and hands the rows back through Arrow. Byte
addresses come from the marts (plan_tape_objects, plan_tape_layouts, built by dbt-spark) for
the tapes the last build has seen as they are, and are summed from the catalog by the marts'
own SQL (macros/tape_objects.sql) for the others, as on PostgreSQL. The planner that then runs
on the frame is the one every engine uses.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import polars as pl
import pyarrow as pa
from pyspark import StorageLevel
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from tapelens.analysis.recall.datasets.placement_cost import DATASET_COLUMNS, TAPE_COLUMNS
from tapelens.analysis.recall.datasets.stored import (
    DATASETS,
    TAPES,
    frame_schema,
    price,
    spark_column_type,
)
from tapelens.analysis.recall.plan.planner import PlanOptions, RecallPlan, plan_recall
from tapelens.analysis.recall.store.addresses import Addressing, stale_volumes, tape_objects_sql
from tapelens.analysis.recall.store.catalog import _COPY_COLUMNS, CATALOG_SCHEMA
from tapelens.analysis.throughput.model import ModelParams
from tapelens.catalog import file_identity
from tapelens.dbt_runs import MARTS_SCHEMA
from tapelens.errors import DatabaseError
from tapelens.frames import SPARK, FrameReader
from tapelens.media import MEDIA_TYPES, MediaType, fill_media_from_labels
from tapelens.spark.read import in_utc, spark_error, spark_frame, spark_sql

REQUESTS_VIEW = "tapelens_plan_requests"
M = MARTS_SCHEMA

# The live copies of every file the requests name: those named by path or dataset, then every
# live copy of their files and of the files named by id (a file's copies may sit under
# another path, CTA's archive id naming them all).
_COPIES = f"""
hits as (
    select {_COPY_COLUMNS} from tapelens.tape_files f
    join {REQUESTS_VIEW} r on r.kind = 'path' and f.path = r.key where f.removed_at is null
    union
    select {_COPY_COLUMNS} from tapelens.tape_files f
    join {REQUESTS_VIEW} r on r.kind = 'dataset' and f.dataset = r.key where f.removed_at is null
),
files as (
    select file_id from hits
    union
    select key as file_id from {REQUESTS_VIEW} where kind = 'file_id'
),
copies as (
    select {_COPY_COLUMNS} from tapelens.tape_files f
    left semi join files w on {file_identity("f")} = w.file_id
    where f.removed_at is null
)"""

# Every object of the tapes to address from the catalog (removed copies keep their bytes on
# the tape until it is repacked, so the macro sees every copy of the volume).
_FROM_CATALOG = tape_objects_sql(
    "(select o.volume, o.position, o.size_bytes from tapelens.tape_files o"
    " left semi join unaddressed u on u.volume = o.volume) as on_tape",
    average=True,
    spark=True,
)

_SELECT = """
select c.file_id, c.path, c.dataset, c.size_bytes, c.volume, c.position, c.offset_bytes,
       c.aggregate_id, c.copy_no, c.written_at,
       cast({start} + coalesce(c.offset_bytes, 0) as bigint) as start_bytes,
       {average} as avg_object_bytes,
       coalesce(t.media_type, 'unknown') as media_type,
       coalesce(t.state, 'unknown') as tape_state, c.other_volumes,
       a.volume is not null as summed
from copies c
left join addressed a on a.volume = c.volume and a.position = c.position{marts}
left join tapelens.tapes t on t.volume = c.volume
order by c.volume, c.position, c.offset_bytes, c.file_id, c.copy_no"""
_FROM_MARTS = f"""
left join {M}.plan_tape_objects o on o.volume = c.volume and o.position = c.position
left join {M}.plan_tape_layouts l on l.volume = c.volume"""


def _tables(spark: SparkSession, database: str) -> set[str]:
    if not spark.catalog.databaseExists(database):
        return set()
    return {row.tableName for row in spark.sql(f"show tables in {database}").collect()}


def _catalog_query(spark: SparkSession) -> tuple[str, list[Any], bool, tuple[str, ...] | None]:
    """The catalog read of the requests in REQUESTS_VIEW, as Spark SQL and its parameters, with
    whether the marts hold byte addresses and the volumes they are stale for (addresses.
    stale_volumes, the rule the PostgreSQL read follows)."""
    # The committed tables: a load killed midway is never read.
    from_marts, stale = stale_volumes(committed_reader(spark))
    use_marts = from_marts and stale is not None
    params: list[Any] = []
    unaddressed = "select distinct volume from copies"
    if use_marts:
        # A volume a later catalog load changed, or one the marts lack, is summed here.
        unaddressed += f" where volume not in (select volume from {M}.plan_tape_layouts)"
        if stale:
            params.append(list(stale))
            unaddressed += " or array_contains(:p1, volume)"
    query = (
        f"with {_COPIES},\nunaddressed as ({unaddressed}),\n"
        "addressed as (select volume, position, start_bytes as object_start, avg_object_bytes"
        f" from ({_FROM_CATALOG}) as objects)\n"
        + _SELECT.format(
            start="coalesce(a.object_start, o.start_bytes)" if use_marts else "a.object_start",
            average="coalesce(a.avg_object_bytes, l.avg_object_bytes)"
            if use_marts
            else "a.avg_object_bytes",
            marts=_FROM_MARTS if use_marts else "",
        )
    )
    return query, params, from_marts, stale


def _typed_catalog(frame: pl.DataFrame) -> pl.DataFrame:
    """Copies as Spark hands them over, in the types and media of the PostgreSQL read."""
    typed = frame.with_columns(
        pl.col(name).cast(dtype)
        for name, dtype in CATALOG_SCHEMA.items()
        if name != "written_at" and name in frame.columns
    )
    return fill_media_from_labels(typed)


def load_catalog(
    spark: SparkSession, requests: pl.DataFrame, note: Callable[[str], None] | None = None
) -> pl.DataFrame:
    """Live copies of every file the requests name, as analysis.recall.store.catalog's
    load_catalog reads them from PostgreSQL, read from the Spark tables."""
    keys = requests.select(pl.col("kind").cast(pl.String), pl.col("key").cast(pl.String))
    spark.createDataFrame(keys.unique().to_arrow()).createOrReplaceTempView(REQUESTS_VIEW)
    query, params, from_marts, stale = _catalog_query(spark)
    frame = spark_frame(spark, query, params)
    summed = frame.filter(pl.col("summed"))["volume"].n_unique()
    said = Addressing(from_marts, stale, summed).note()
    if note is not None and said is not None:
        note(said)
    return _typed_catalog(frame.drop("summed"))


def load_datasets(
    spark: SparkSession, dataset: str | None = None, dataset_type: str | None = None
) -> pl.DataFrame:
    """The live copies of whole datasets with each dataset's type, as `predict datasets`
    reads them (catalog.load_datasets), from the Spark tables."""
    where = ["removed_at is null"]
    params: list[Any] = []
    for column, value in (("dataset", dataset), ("dataset_type", dataset_type)):
        if value is not None:
            params.append(value)
            where.append(f"{column} = :p{len(params)}")
    types = spark_frame(
        spark,
        "select dataset, min(dataset_type) as dataset_type from tapelens.tape_files"
        f" where {' and '.join(where)} group by dataset order by dataset",
        params,
    ).cast({"dataset": pl.String, "dataset_type": pl.String})
    requests = types.select(pl.lit("dataset").alias("kind"), pl.col("dataset").alias("key"))
    return load_catalog(spark, requests).join(types, on="dataset", how="left")


def media_catalog(spark: SparkSession) -> list[MediaType]:
    """The media types of the Spark table tapelens.media_types, else media.py's."""
    names = list(MediaType.__dataclass_fields__)
    frame = spark_frame(
        spark, f"select {', '.join(names)} from tapelens.media_types order by media_type"
    )
    if frame.height == 0:
        return list(MEDIA_TYPES)
    out = []
    for row in frame.iter_rows(named=True):
        row["readable_by"] = tuple(row["readable_by"] or ())
        row["writable_by"] = tuple(row["writable_by"] or ())
        out.append(MediaType(**row))
    return out


def planning_inputs(
    spark: SparkSession,
    requests: pl.DataFrame,
    note: Callable[[str], None] | None = None,
    progress: Callable[[str], None] | None = None,
) -> tuple[pl.DataFrame, dict[str, ModelParams], dict[str, tuple[str, ...]]]:
    """What a plan of `requests` needs from the Spark tables: the catalog of their copies and
    model_inputs."""
    catalog = load_catalog(spark, requests, note)
    if progress is not None:
        progress(f"read {catalog.height:,} copies from the Spark tables")
    return catalog, *model_inputs(spark)


def model_inputs(
    spark: SparkSession,
) -> tuple[dict[str, ModelParams], dict[str, tuple[str, ...]]]:
    """The model parameters per media type (the media catalog's: fits are stored on
    PostgreSQL, where `throughput calibrate` runs) and which drive types read each one."""
    media = media_catalog(spark)
    params = {m.media_type: ModelParams.from_media(m) for m in media}
    return params, {m.media_type: m.readable_by for m in media}


def plan_from_spark(
    spark: SparkSession,
    requests: pl.DataFrame,
    options: PlanOptions,
    note: Callable[[str], None] | None = None,
    progress: Callable[[str], None] | None = None,
) -> tuple[RecallPlan, dict[str, ModelParams]]:
    """Plan `requests` against the Spark tables' catalog, as plan_from_database does against
    PostgreSQL's: the same planner on the same frame."""
    catalog, params, readers = planning_inputs(spark, requests, note, progress)
    plan = plan_recall(requests, catalog, params, options, readers, progress)
    return with_not_found_causes(spark, plan), params


def with_not_found_causes(spark: SparkSession, plan: RecallPlan) -> RecallPlan:
    """The plan with a `cause` for each request the live catalog does not know, as
    not_found.with_not_found_causes gives it on PostgreSQL."""
    missing = plan.not_found
    if missing.height == 0:
        return plan
    named = {"path": "f.path", "file_id": file_identity("f"), "dataset": "f.dataset"}
    found = []
    for kind, column in named.items():
        keys = missing.filter(pl.col("kind") == kind)["key"].unique().to_list()
        if not keys:
            continue
        removed = spark_frame(
            spark,
            f"select {column} as key, max(f.removed_at) as at from tapelens.tape_files f"
            f" where f.removed_at is not null and array_contains(:p1, {column})"
            f" group by {column}",
            [keys],
        )
        found.append(
            removed.select(
                pl.lit(kind).alias("kind"),
                pl.col("key").cast(pl.String),
                pl.format(
                    "removed from the catalog ({})", pl.col("at").dt.strftime("%Y-%m-%d")
                ).alias("cause"),
            )
        )
    schema = {"kind": pl.String, "key": pl.String, "cause": pl.String}
    when = pl.concat(found) if found else pl.DataFrame(schema=schema)
    caused = missing.join(when, on=["kind", "key"], how="left").with_columns(
        pl.col("cause").fill_null("not in the catalog")
    )
    return replace(plan, resolution=replace(plan.resolution, not_found=caused))


def drives_or_inventory(spark: SparkSession, spec: str | None) -> dict[str, int]:
    """The drives a plan on Spark uses, from the Spark tables, by the rule both engines follow
    (analysis.recall.schedule.drives.site_drives); a drive assumed is said on stderr."""
    from tapelens.analysis.recall.schedule.drives import site_drives

    def online() -> dict[str, int]:
        rows = spark_frame(
            spark,
            "select drive_type, count(*) as drives from tapelens.drives where state = 'online'"
            " group by drive_type",
        )
        return {str(t): int(n) for t, n in rows.iter_rows()}

    def media_types() -> list[str]:
        rows = spark_frame(
            spark,
            "select distinct media_type from tapelens.tapes where media_type is not null",
        )
        return [str(m) for m in rows["media_type"]]

    return site_drives(spec, online, media_types, lambda note: print(note, file=sys.stderr))


def read_placement_costs(spark: SparkSession, datasets: list[str]) -> pl.DataFrame | None:
    """The stored per-dataset placement costs of `datasets` (stored.read_placement_costs, on
    the Spark tables); None when no marts build has stored them there."""
    if DATASETS not in _tables(spark, M):
        return None
    frame = spark_frame(
        spark,
        f"select {', '.join(DATASET_COLUMNS)} from {M}.{DATASETS}"
        " where array_contains(:p1, dataset) order by dataset",
        [datasets],
    )
    return frame.cast(frame_schema(DATASET_COLUMNS))  # type: ignore[arg-type]


# The pricing's one output, a row per dataset (kind 'dataset') or per dataset and tape ('tape'):
# one job prices both, since the tapes' costs are shares of their dataset's, and the few rows it
# gives (a dataset's, not its copies') are kept for the second table's write. Two jobs over a
# kept catalog would price every dataset twice and hold every copy between them.
PRICED_COLUMNS = ("kind", *DATASET_COLUMNS, *(c for c in TAPE_COLUMNS if c not in DATASET_COLUMNS))
PRICED_SCHEMA = ", ".join(
    f"{c} {'string' if c == 'kind' else spark_column_type(c)}" for c in PRICED_COLUMNS
)
# The catalog's order (load_catalog's `order by`): each group is priced in it, so that every
# dataset meets its copies in the order the whole catalog read gives them.
CATALOG_ORDER = ("volume", "position", "offset_bytes", "file_id", "copy_no")
# Spark takes back exactly the Arrow types of its schema (Polars gives large strings).
_ARROW_TYPES = {"string": pa.string(), "double": pa.float64(), "bigint": pa.int64()}
_ARROW_PRICED = pa.schema(
    [(c, _ARROW_TYPES["string" if c == "kind" else spark_column_type(c)]) for c in PRICED_COLUMNS]
)
GROUP = "_pricing_group"
# Copies priced in one Python call on an executor: many small datasets at once, and few enough
# that a worker holds them and their pricing's frames in a few hundred MB.
COPIES_PER_GROUP = 100_000


def price_group(
    table: pa.Table, params: dict[str, ModelParams], readers: dict[str, tuple[str, ...]]
) -> pa.Table:
    """The placement costs of the datasets of one group of copies, on an executor: the group's
    copies (load_datasets's columns) priced by stored.price, the datasets' and tapes' rows as
    one table of PRICED_SCHEMA."""
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    copies = _typed_catalog(in_utc(frame.drop(GROUP))).sort(CATALOG_ORDER, nulls_last=False)
    costs = price(copies, params, readers)
    rows = pl.concat(
        [
            costs.datasets.with_columns(pl.lit("dataset").alias("kind")),
            costs.tapes.with_columns(pl.lit("tape").alias("kind")),
        ],
        how="diagonal_relaxed",
    )
    schema = frame_schema(PRICED_COLUMNS[1:])
    typed = rows.select(pl.col("kind"), *(pl.col(c).cast(t) for c, t in schema.items()))
    return typed.to_arrow().cast(_ARROW_PRICED)


def _pricer(
    params: dict[str, ModelParams], readers: dict[str, tuple[str, ...]]
) -> Callable[[pa.Table], pa.Table]:
    """price_group with the model's parameters and readers (plain values, pickled with it to
    the executors); typed, as Spark reads from the hints that it takes and gives a whole table."""

    def priced(table: pa.Table) -> pa.Table:
        return price_group(table, params, readers)

    return priced


def dataset_copies(spark: SparkSession) -> DataFrame:
    """Every live copy of whole datasets with its dataset's type, as load_datasets reads them,
    as a Spark DataFrame: the same query, never collected."""
    live = "select dataset from tapelens.tape_files where removed_at is null"
    spark.sql(
        f"select distinct 'dataset' as kind, dataset as key from ({live}) where dataset is not null"
    ).createOrReplaceTempView(REQUESTS_VIEW)
    query, params, _, _ = _catalog_query(spark)
    types = spark.sql(
        "select dataset, min(dataset_type) as dataset_type from tapelens.tape_files"
        " where removed_at is null group by dataset"
    )
    copies = spark_sql(spark, query, params).drop("summed")
    return copies.join(types, on="dataset", how="left").select(*copies.columns, "dataset_type")


def write_placement_costs(spark: SparkSession) -> int | None:
    """Price every dataset from the Spark tables (stored.price, on the executors) and replace
    the two Delta tables of the marts with the result, as stored.write_placement_costs does on
    PostgreSQL; the datasets priced, or None, and nothing written, where no build has made the
    marts yet. Each table is replaced in one commit (Delta commits a table at a time): a reader
    sees either figures whole.

    A dataset's price depends on its own copies alone, so the copies are grouped by a hash of
    their dataset, a group of many datasets to each Python call, and priced where they are:
    neither the catalog nor the priced rows pass through the driver."""
    tables = _tables(spark, M)
    if not tables:
        return None
    params, readers = model_inputs(spark)
    copies = dataset_copies(spark)
    live = spark.sql("select count(*) from tapelens.tape_files where removed_at is null")
    copies_n = int(live.collect()[0][0])
    groups = max(spark.sparkContext.defaultParallelism, -(-copies_n // COPIES_PER_GROUP))
    priced = (
        copies.withColumn(GROUP, F.pmod(F.xxhash64("dataset"), F.lit(groups)))
        .groupBy(GROUP)
        .applyInArrow(_pricer(params, readers), schema=PRICED_SCHEMA)
        .persist(StorageLevel.MEMORY_AND_DISK)
    )
    try:
        datasets = priced.where(F.col("kind") == "dataset").select(*DATASET_COLUMNS)
        if "dim_datasets" in tables:
            experiments = spark.table(f"{M}.dim_datasets").select("dataset", "experiment")
            datasets = datasets.join(experiments, on="dataset", how="left")
        else:
            datasets = datasets.withColumn("experiment", F.lit(None).cast("string"))
        tapes = priced.where(F.col("kind") == "tape").select(*TAPE_COLUMNS)
        for name, frame in ((DATASETS, datasets), (TAPES, tapes)):
            (
                frame.selectExpr(
                    *(f"cast({c} as {spark_column_type(c)}) as {c}" for c in frame.columns)
                )
                .write.format("delta")
                .mode("overwrite")
                .option("overwriteSchema", "true")
                .saveAsTable(f"{M}.{name}")
            )
        return priced.where(F.col("kind") == "dataset").count()
    except PySparkException as exc:
        raise DatabaseError(spark_error(exc)) from None
    finally:
        priced.unpersist()


def committed_reader(spark: SparkSession) -> FrameReader:
    """A FrameReader of the Spark tables as the committed loads left them: a load killed
    midway is rolled back first, as before the planner's catalog read."""
    from tapelens.spark.load import roll_back_killed

    if "ingest_runs" in _tables(spark, "tapelens"):
        roll_back_killed(spark)
    return FrameReader(SPARK, lambda query, params: spark_frame(spark, query, params))
