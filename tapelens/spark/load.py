"""The loader on Spark: input files into the Delta tables, with the PostgreSQL loader's promises.

The readers (tapelens.ingest.formats) and the loader's steps on a batch (checks, conform, the
row digest, datasets from the path, the shrink guard, the rejects' reasons) are the PostgreSQL
loader's own; what differs is how rows reach the tables:

- **All or nothing across tables.** Delta Lake commits one table at a time, atomically. A load
  writes its run as `running` first, recording each table's version before it writes; then its
  refused lines, its copies (one MERGE), the volumes it names; and last the run's change to
  `loaded`, the commit that makes the load count. Every commit of the load carries its run id
  in the table history (`userMetadata`). A load whose process died before that last commit is
  rolled back by the next load, or by `db status`: each table it wrote is restored
  (`RESTORE TABLE ... TO VERSION AS OF`) to its version before the load, after checking that
  every later commit is that load's, and the run is marked failed.
- **A newer dump** is one MERGE on the copy's key (source, copy_id, written_at): copies new or
  whose row digest differs are written, those the dump no longer lists marked removed
  (`removed_at`, never deleted), the others left untouched (their files are not rewritten
  unless they share one with a changed copy).
- **The shrink guard** counts the copies the dump would retire before anything is written.
- **The same dump again** is `unchanged` from the runs table alone: no commit to any table.

Loads on one warehouse run one at a time (a site's loads are one job, as with the PostgreSQL
path's lock); a load on another host than a killed one's rolls it back all the same.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

import polars as pl
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from tapelens.errors import DatabaseError, InputError, ParseError
from tapelens.ingest import canonical
from tapelens.ingest.datasets import DatasetRules, with_datasets
from tapelens.ingest.formats import Format
from tapelens.ingest.formats.base import LINE_DIGEST, ParseOptions, Reject, aggregate_at
from tapelens.ingest.load.catalog_diff import KEY, RANKED, row_digests
from tapelens.ingest.load.guard import ShrinkGuard, check_shrink
from tapelens.ingest.load.pipeline import checked, file_id_where_not_path
from tapelens.ingest.load.runs import IngestResult, sha256_of
from tapelens.media import media_from_barcode
from tapelens.spark.after_load import AFTER_LOAD
from tapelens.spark.tables import (
    BUCKET,
    TABLES,
    bucket_of,
    create_tables,
    sql_literal,
    table_versions,
)

METADATA = "spark.databricks.delta.commitInfo.userMetadata"
RUN_TAG = "tapelens-run "
# What a load may write, so what a killed one may have to roll back.
WRITTEN = (
    "tape_files",
    "transfers",
    "mounts",
    "mount_pieces",
    "tapes",
    "write_hints",
    "ingest_rejects",
    "ingest_runs",
)
# The identity of a record, as the PostgreSQL tables' unique indexes have it (001_core.sql,
# 022_write_hints.sql).
KEYS: dict[str, tuple[str, ...]] = {
    "catalog": KEY,
    "transfers": ("source", "direction", "file_id", "path", "started_at"),
    "mounts": ("source", "volume", "mounted_at"),
    "tapes": ("volume",),
    "hints": ("source", "file_key", "written_at", "levels_digest"),
}
# Keys whose null is one value: a transfer's file id or path the log does not give.
NULL_IS_EMPTY = ("file_id", "path")


@dataclass
class _Parsed:
    """One input file read: its rows ready for the table, and what the summary says of it."""

    frame: pl.DataFrame
    listed: int = 0
    skipped: int = 0
    rejects: list[Reject] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def first_reject(self) -> Reject | None:
        return min(self.rejects, key=lambda r: r.line_no) if self.rejects else None


def refuse_unsupported(fmt: Format) -> None:
    """InputError naming a format the Spark loader cannot load as the PostgreSQL path does: a
    kind it has no table for, or a step after the load it has no Spark counterpart of."""
    if fmt.kind not in canonical.TABLES:
        raise InputError(f"--format {fmt.name}: the Spark engine does not load {fmt.kind}")
    if fmt.after_load is not None and fmt.after_load not in AFTER_LOAD:
        raise InputError(
            f"--format {fmt.name}: its load pairs records with earlier loads' ({fmt.after_load}),"
            " which the Spark engine does not do; use --engine postgres"
        )


def load_files(
    spark: SparkSession,
    fmt: Format,
    paths: Sequence[str | Path],
    options: ParseOptions,
    rules: DatasetRules | None = None,
    partial: bool | None = None,
    guard: ShrinkGuard | None = None,
) -> list[IngestResult]:
    """Load input files of one format and source into the Delta tables; one result per file.

    The files of a whole-catalog dump are one dump, loaded together; any other files load one
    by one. Each load is all or nothing (see the module's docstring)."""
    refuse_unsupported(fmt)
    rules = rules or DatasetRules()
    guard = guard or ShrinkGuard()
    per_volume = fmt.per_volume if partial is None else partial
    create_tables(spark)
    roll_back_killed(spark)
    files = []
    for p in paths:
        real = Path(p)
        if not real.is_file():
            raise InputError(f"{p}: no such file")
        files.append((str(p), real, sha256_of(real)))
    union = fmt.kind == "catalog" and not per_volume and len(files) > 1
    groups = [files] if union else [[f] for f in files]
    results: list[IngestResult] = []
    for group in groups:
        results += _load_group(spark, fmt, group, options, rules, per_volume, guard)
    return results


def _load_group(
    spark: SparkSession,
    fmt: Format,
    files: list[tuple[str, Path, str]],
    options: ParseOptions,
    rules: DatasetRules,
    per_volume: bool,
    guard: ShrinkGuard,
) -> list[IngestResult]:
    started = time.monotonic()
    source = options.source
    runs = current_runs(spark, fmt, source, [sha for _, _, sha in files], per_volume)
    if runs is not None:
        return [
            IngestResult(shown, fmt.kind, fmt.name, source, "unchanged", run)
            for (shown, _, _), run in zip(files, runs, strict=True)
        ]
    parsed = []
    for shown, real, sha in files:
        try:
            parsed.append(_parse(fmt, shown, real, options, rules))
        except ParseError as exc:
            _record_failure(spark, fmt, source, shown, sha, str(exc))
            raise
    dump = pl.concat([p.frame for p in parsed], how="vertical_relaxed")
    # A record listed twice keeps its first line, as the PostgreSQL load's `distinct on` and
    # `on conflict do nothing` do.
    dump = dump.unique(subset=list(KEYS[fmt.kind]), keep="first", maintain_order=True)
    if fmt.kind != "catalog":
        stage = _stage(spark, dump, fmt.kind)
        [run_id] = _start_runs(spark, fmt, source, files)
        with _tagged(spark, run_id):
            _write_rejects(spark, run_id, parsed[0].rejects)
            if fmt.kind == "tapes":
                _merge_tapes(spark, stage, run_id)
            else:
                stage = stage.withColumn("ingest_run_id", F.lit(run_id).cast("bigint"))
                _merge_events(spark, fmt.kind, stage)
            if fmt.after_load is not None:
                AFTER_LOAD[fmt.after_load](spark, source, run_id)
            _finish_runs(spark, [run_id], parsed, None)
        run_ids, removed = [run_id], 0
    else:
        run_ids, removed = _load_catalog(spark, fmt, files, source, parsed, dump, per_volume, guard)
    seconds = time.monotonic() - started
    return [
        IngestResult(
            shown,
            fmt.kind,
            fmt.name,
            source,
            "loaded",
            run_id,
            p.listed,
            len(p.rejects),
            p.skipped,
            removed if i == 0 else 0,
            seconds,
            p.first_reject,
            tuple(p.notes),
        )
        for i, ((shown, _, _), run_id, p) in enumerate(zip(files, run_ids, parsed, strict=True))
    ]


def _load_catalog(
    spark: SparkSession,
    fmt: Format,
    files: list[tuple[str, Path, str]],
    source: str,
    parsed: list[_Parsed],
    dump: pl.DataFrame,
    per_volume: bool,
    guard: ShrinkGuard,
) -> tuple[list[int], int]:
    """A catalog dump's load: the shrink guard, one MERGE, the volumes registered; its runs
    and the copies it retired."""
    volumes = sorted({v for v in dump["volume"].unique().to_list() if v})
    scope = volumes if per_volume else None
    if fmt.listing_ranks:
        dump = _placed(spark, dump, source)
    stage = _stage(spark, dump, "catalog")
    shown_all = ", ".join(shown for shown, _, _ in files)
    removed = _retired_count(spark, stage, source, scope)
    listed = sum(p.listed for p in parsed)
    if removed and not guard.allow:
        try:
            check_shrink(source, removed, listed, guard, shown_all)
        except InputError as exc:
            for shown, _, sha in files:
                _record_failure(spark, fmt, source, shown, sha, str(exc))
            raise
    run_ids = _start_runs(spark, fmt, source, files)
    with _tagged(spark, run_ids[-1]):
        for run_id, p in zip(run_ids, parsed, strict=True):
            _write_rejects(spark, run_id, p.rejects)
        stage = stage.withColumn("ingest_run_id", F.lit(run_ids[-1]).cast("bigint"))
        _merge_catalog(spark, stage, source, run_ids[-1], scope, fmt.listing_ranks)
        register_volumes(spark, volumes, run_ids[-1])
        _finish_runs(spark, run_ids, parsed, scope)
    return run_ids, removed


def _parse(
    fmt: Format, shown: str, real: Path, options: ParseOptions, rules: DatasetRules
) -> _Parsed:
    """Read one file with its format's reader, the rows prepared as the PostgreSQL loader
    prepares them (ingest/load/pipeline.py): checked (a value the tables would refuse is
    refused with its line); of a catalog, the row digest over the canonical values, datasets
    from the path and the file id only where it is not the path."""
    parse = fmt.parser()
    opts = replace(options, extra={**options.extra, "display_name": shown})
    catalog = fmt.kind == "catalog"
    schema = staged_schema(fmt.kind)
    out = _Parsed(pl.DataFrame(schema=schema))
    frames = [out.frame]
    for batch in parse(real, options=opts):
        out.rejects += batch.rejects
        out.skipped += batch.skipped
        out.notes += [n for n in batch.notes if n not in out.notes]
        if not batch.frame.height:
            continue
        frame, refused = checked(fmt.kind, batch.frame, rules, options.strict, shown)
        out.rejects += refused
        if catalog:
            digest = row_digests(frame, rules, fmt.listing_ranks)
            frame = frame.with_columns(digest.alias("row_digest"))
            frame = file_id_where_not_path(with_datasets(frame, rules) if frame.height else frame)
        frames.append(frame.select(*schema))
    out.frame = pl.concat(frames, how="vertical_relaxed")
    out.listed = out.frame.height
    out.rejects.sort(key=lambda r: r.line_no)
    return out


def staged_schema(kind: str) -> dict[str, pl.DataType]:
    """A file's rows as they reach Spark: the canonical columns, and a catalog's digests."""
    extra = {"row_digest": pl.Int64(), LINE_DIGEST: pl.Int64()} if kind == "catalog" else {}
    return {**canonical.SCHEMAS[kind], **extra}


def _stage(spark: SparkSession, dump: pl.DataFrame, kind: str) -> DataFrame:
    """The dump as a Spark DataFrame (through Arrow), with each row's volume bucket where its
    table is partitioned by it."""
    frame = spark.createDataFrame(dump.to_arrow())
    if not TABLES[canonical.TABLES[kind]].bucketed:
        return frame
    return frame.withColumn(BUCKET, bucket_of(F.col("volume")))


def _placed(spark: SparkSession, dump: pl.DataFrame, source: str) -> pl.DataFrame:
    """A listing whose positions are ranks (Format.listing_ranks) with the places the
    PostgreSQL loader gives it (ingest/load/catalog_diff.py, Known.changed): a stored copy
    keeps its place (the MERGE leaves it), and a copy new to a volume that this dump lists
    stored copies of goes after every place the volume's copies ever had (retired ones
    included), in listing order, the members of one aggregate sharing their place; on a volume
    none of whose stored copies is listed again, the ranks stand."""
    if not dump.height:
        return dump
    rows = dump.with_row_index("_row").with_columns(pl.col("_row").cast(pl.Int64))  # Spark: no u32
    keys = spark.createDataFrame(rows.select("_row", *KEY).to_arrow())
    live = _live(spark, source, None).select(*KEY)
    matched = {r[0] for r in keys.join(live, list(KEY), "left_semi").select("_row").collect()}
    listed = rows.with_columns(pl.col("_row").is_in(list(matched)).alias("_matched"))
    relisted = listed.filter("_matched")["volume"].unique().to_list()
    if not relisted:
        return dump
    ends = {
        str(r[0]): int(r[1])
        for r in spark.table(TABLES["tape_files"].qualified)
        .where((F.col("source") == source) & F.col("volume").isin(relisted))
        .groupBy("volume")
        .agg(F.max("position"))
        .collect()
    }
    new = listed.filter(~pl.col("_matched") & pl.col("volume").is_in(relisted))
    if not new.height:
        return dump
    # A new place wherever the rank changes from the volume's previous new copy.
    step = (pl.col("position") != pl.col("position").shift(1).over("volume")).fill_null(True)
    new = new.with_columns(
        (
            pl.col("volume").replace_strict(ends, default=0, return_dtype=pl.Int64)
            + step.cast(pl.Int64).cum_sum().over("volume")
        ).alias("_place")
    ).select("_row", "_place")
    out = rows.join(new, on="_row", how="left", maintain_order="left")
    moved = pl.col("_place").is_not_null()
    return (
        out.with_columns(
            pl.when(moved).then(pl.col("_place")).otherwise(pl.col("position")).alias("position")
        )
        .with_columns(
            pl.when(moved & pl.col("aggregate_id").is_not_null())
            .then(aggregate_at(pl.col("volume"), pl.col("position")))
            .otherwise(pl.col("aggregate_id"))
            .alias("aggregate_id")
        )
        .drop("_row", "_place")
    )


def _live(spark: SparkSession, source: str, volumes: list[str] | None) -> DataFrame:
    """The source's live copies, within the dump's scope (the listed volumes of a per-volume
    listing, else the whole source)."""
    live = spark.table(TABLES["tape_files"].qualified).where(
        (F.col("source") == source) & F.col("removed_at").isNull()
    )
    return live.where(F.col("volume").isin(volumes)) if volumes is not None else live


def _retired_count(
    spark: SparkSession, stage: DataFrame, source: str, volumes: list[str] | None
) -> int:
    """How many live copies the dump would retire: those of its scope no row of it lists."""
    keys = stage.select(*KEY)
    return int(_live(spark, source, volumes).join(keys, list(KEY), "left_anti").count())


def _merge_catalog(
    spark: SparkSession,
    stage: DataFrame,
    source: str,
    run_id: int,
    volumes: list[str] | None,
    keep_places: bool = False,
) -> None:
    """One MERGE: new copies inserted, changed ones (another row digest, or retired before)
    rewritten, copies of the scope the dump no longer lists retired; the rest untouched.
    `keep_places`: a stored copy keeps its place (positions are listing ranks)."""
    stage.createOrReplaceTempView("tapelens_stage")
    table = TABLES["tape_files"]
    on = " and ".join(f"t.{k} = s.{k}" for k in KEY)
    values = [c for c in stage.columns if c not in KEY and not (keep_places and c in RANKED)]
    # An exact size stays when a dump that prints sizes rounded lists the copy again with a
    # size its rounding allows, as on PostgreSQL (ingest/load/upserts.py).
    exact = (
        "s.size_bound_bytes is not null and t.size_bound_bytes is null"
        " and abs(s.size_bytes - t.size_bytes) <= s.size_bound_bytes"
    )
    sets = ", ".join(
        f"{c} = case when {exact} then t.{c} else s.{c} end"
        if c in ("size_bytes", "size_bound_bytes")
        else f"{c} = s.{c}"
        for c in values
    )
    inserted = [c for c in table.names if c not in ("removed_at", "removed_run_id")]
    ins_values = ", ".join(
        "current_timestamp()" if c == "last_seen_at" else f"s.{c}" for c in inserted
    )
    scope = f"t.source = {sql_literal(source)} and t.removed_at is null"
    if volumes is not None:
        scope += f" and t.volume in ({', '.join(sql_literal(v) for v in volumes) or 'null'})"
    spark.sql(
        f"MERGE INTO {table.qualified} t USING tapelens_stage s ON {on}"
        " WHEN MATCHED AND (t.removed_at is not null or not (t.row_digest <=> s.row_digest))"
        f" THEN UPDATE SET {sets}, last_seen_at = current_timestamp(), removed_at = null,"
        " removed_run_id = null"
        f" WHEN NOT MATCHED THEN INSERT ({', '.join(inserted)}) VALUES ({ins_values})"
        f" WHEN NOT MATCHED BY SOURCE AND {scope}"
        f" THEN UPDATE SET removed_at = current_timestamp(), removed_run_id = {int(run_id)}"
    )


def _merge_tapes(spark: SparkSession, stage: DataFrame, run_id: int) -> None:
    """An inventory into tapes, as on PostgreSQL (ingest/load/upserts.py): the inventory is the
    authority on what it states, so a volume it lists takes every value it gives."""
    table = TABLES["tapes"]
    stage.withColumns(
        {"updated_at": F.current_timestamp(), "updated_run_id": F.lit(run_id).cast("bigint")}
    ).createOrReplaceTempView("tapelens_stage")
    sets = ", ".join(f"{c} = s.{c}" for c in table.names if c != "volume")
    names = ", ".join(table.names)
    values = ", ".join(f"s.{c}" for c in table.names)
    spark.sql(
        f"MERGE INTO {table.qualified} t USING tapelens_stage s ON t.volume = s.volume"
        f" WHEN MATCHED THEN UPDATE SET {sets}"
        f" WHEN NOT MATCHED THEN INSERT ({names}) VALUES ({values})"
    )


def _merge_events(spark: SparkSession, kind: str, stage: DataFrame) -> None:
    """A log's records into their table, as on PostgreSQL (ingest/load/upserts.py): a transfer
    or a hint record already stored is kept as it is; a mount already stored takes the new
    record's drive, times, purpose and status."""
    table = TABLES[canonical.TABLES[kind]]
    stage.createOrReplaceTempView("tapelens_stage")
    on = " and ".join(
        f"coalesce(t.{k}, '') = coalesce(s.{k}, '')" if k in NULL_IS_EMPTY else f"t.{k} = s.{k}"
        for k in KEYS[kind]
    )
    names = ", ".join(table.names)
    values = ", ".join(f"s.{c}" for c in table.names)
    update = (
        " WHEN MATCHED THEN UPDATE SET drive = s.drive, requested_at = s.requested_at,"
        " dismounted_at = s.dismounted_at, purpose = s.purpose, status = s.status"
        if kind == "mounts"
        else ""
    )
    spark.sql(
        f"MERGE INTO {table.qualified} t USING tapelens_stage s ON {on}{update}"
        f" WHEN NOT MATCHED THEN INSERT ({names}) VALUES ({values})"
    )


def register_volumes(spark: SparkSession, volumes: list[str], run_id: int) -> None:
    """Add to tapes the volumes it does not name yet, with the media type their label names,
    else 'unknown', as the PostgreSQL loader does (ingest/load/upserts.py)."""
    tapes = TABLES["tapes"].qualified
    known = {r.volume for r in spark.table(tapes).select("volume").collect()}
    new = [v for v in volumes if v not in known]
    if not new:
        return
    rows = []
    for v in new:
        media = media_from_barcode(v)
        rows.append(
            (
                v,
                v if media else None,
                media.media_type if media else "unknown",
                None,
                None,
                None,
                "unknown",
                "barcode" if media else "unknown",
                None,
                run_id,
            )
        )
    schema = (
        "volume STRING, barcode STRING, media_type STRING, library STRING, pool STRING,"
        " capacity_bytes BIGINT, state STRING, media_from STRING, state_raw STRING,"
        " updated_run_id BIGINT"
    )
    frame = spark.createDataFrame(rows, schema=schema).withColumn(
        "updated_at", F.current_timestamp()
    )
    frame.select(*TABLES["tapes"].names).write.format("delta").mode("append").saveAsTable(tapes)


@contextmanager
def _tagged(spark: SparkSession, run_id: int) -> Iterator[None]:
    """Every Delta commit made inside carries the run id in its history."""
    spark.conf.set(METADATA, f"{RUN_TAG}{run_id}")
    try:
        yield
    finally:
        spark.conf.unset(METADATA)


def current_runs(
    spark: SparkSession, fmt: Format, source: str, shas: list[str], per_volume: bool
) -> list[int] | None:
    """The runs that loaded these files, when loading them again would change nothing: the
    same rule as the PostgreSQL loader's (a catalog file only while no later load of its
    source replaced it; for a per-volume listing, none covered any of its volumes)."""
    runs = spark.table(TABLES["ingest_runs"].qualified).where(
        (F.col("kind") == fmt.kind)
        & (F.col("format") == fmt.name)
        & (F.col("source") == source)
        & (F.col("status") == "loaded")
    )
    found: list[tuple[int, list[str] | None]] = []
    for sha in shas:
        rows = runs.where(F.col("sha256") == sha).orderBy(F.desc("run_id")).limit(1).collect()
        if not rows:
            return None
        found.append((int(rows[0]["run_id"]), rows[0]["volumes"]))
    if fmt.kind not in ("catalog", "tapes"):  # logs add events: once loaded, always a no-op
        return [r for r, _ in found]
    newest = max(r for r, _ in found)
    later = spark.table(TABLES["ingest_runs"].qualified).where(
        (F.col("kind") == fmt.kind)
        & (F.col("source") == source)
        & (F.col("status") == "loaded")
        & (F.col("run_id") > newest)
    )
    if per_volume:
        volumes = sorted({v for _, vols in found for v in (vols or [])})
        later = later.where(
            F.col("volumes").isNull() | F.arrays_overlap("volumes", F.array(*map(F.lit, volumes)))
        )
    return None if later.limit(1).count() else [r for r, _ in found]


def _next_run_id(spark: SparkSession) -> int:
    row = spark.table(TABLES["ingest_runs"].qualified).agg(F.max("run_id")).collect()[0]
    return int(row[0] or 0) + 1


def _start_runs(
    spark: SparkSession, fmt: Format, source: str, files: list[tuple[str, Path, str]]
) -> list[int]:
    """One `running` run per file, with each table's version before the load: one commit."""
    first = _next_run_id(spark)
    before = json.dumps(table_versions(spark, list(WRITTEN)))
    rows = [
        (
            first + i,
            fmt.kind,
            fmt.name,
            source,
            shown,
            sha,
            "running",
            socket.gethostname(),
            os.getpid(),
            before,
        )
        for i, (shown, _, sha) in enumerate(files)
    ]
    schema = (
        "run_id BIGINT, kind STRING, format STRING, source STRING, path STRING, sha256 STRING,"
        " status STRING, host STRING, pid BIGINT, versions_before STRING"
    )
    frame = spark.createDataFrame(rows, schema=schema).withColumns(
        {
            "started_at": F.current_timestamp(),
            "finished_at": F.lit(None).cast("timestamp"),
            "rows": F.lit(0).cast("bigint"),
            "rejects": F.lit(0).cast("bigint"),
            "message": F.lit(None).cast("string"),
            "volumes": F.lit(None).cast("array<string>"),
        }
    )
    with _tagged(spark, first + len(files) - 1):
        _append(frame, "ingest_runs")
    return [first + i for i in range(len(files))]


def _append(frame: DataFrame, table: str) -> None:
    frame.select(*TABLES[table].names).write.format("delta").mode("append").saveAsTable(
        TABLES[table].qualified
    )


def _write_rejects(spark: SparkSession, run_id: int, rejects: list[Reject]) -> None:
    """The refused lines with their reasons; a line refused twice keeps its first reason."""
    if not rejects:
        return
    seen: dict[int, Reject] = {}
    for r in rejects:
        seen.setdefault(r.line_no, r)
    rows = [
        (run_id, r.line_no, r.raw, r.reason) for r in sorted(seen.values(), key=lambda r: r.line_no)
    ]
    schema = "run_id BIGINT, line_no BIGINT, raw STRING, reason STRING"
    _append(spark.createDataFrame(rows, schema=schema), "ingest_rejects")


def _finish_runs(
    spark: SparkSession, run_ids: list[int], parsed: list[_Parsed], volumes: list[str] | None
) -> None:
    """The load's last commit: its runs `loaded`, with their counts. Before it, the load does
    not count; after it, it is whole."""
    counts = ", ".join(
        f"({r}, {p.listed}, {len(p.rejects)})" for r, p in zip(run_ids, parsed, strict=True)
    )
    vols = "null" if volumes is None else f"array({', '.join(sql_literal(v) for v in volumes)})"
    spark.sql(
        f"MERGE INTO {TABLES['ingest_runs'].qualified} t"
        f" USING (SELECT * FROM VALUES {counts} AS c(run_id, n_rows, n_rejects)) c"
        " ON t.run_id = c.run_id"
        " WHEN MATCHED THEN UPDATE SET status = 'loaded', rows = c.n_rows,"
        f" rejects = c.n_rejects, volumes = {vols}, finished_at = current_timestamp()"
    )


def _record_failure(
    spark: SparkSession, fmt: Format, source: str, path: str, sha: str, message: str
) -> None:
    """Keep a trace of a refused load: a `failed` run, no rows."""
    rows = [(_next_run_id(spark), fmt.kind, fmt.name, source, path, sha, "failed", message[:2000])]
    schema = (
        "run_id BIGINT, kind STRING, format STRING, source STRING, path STRING, sha256 STRING,"
        " status STRING, message STRING"
    )
    frame = spark.createDataFrame(rows, schema=schema).withColumns(
        {
            "started_at": F.current_timestamp(),
            "finished_at": F.current_timestamp(),
            "rows": F.lit(0).cast("bigint"),
            "rejects": F.lit(0).cast("bigint"),
            "volumes": F.lit(None).cast("array<string>"),
            "host": F.lit(socket.gethostname()),
            "pid": F.lit(os.getpid()).cast("bigint"),
            "versions_before": F.lit(None).cast("string"),
        }
    )
    _append(frame, "ingest_runs")


def _alive(host: str | None, pid: int | None) -> bool:
    """Whether the process of a running load may still be at work: on this host, its pid lives;
    on another host, it cannot be told, and loads are one at a time, so it is not."""
    if host != socket.gethostname() or pid is None:
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def roll_back_killed(spark: SparkSession) -> list[int]:
    """Roll back every load whose process died before its last commit; return their run ids.

    Each table the load wrote goes back to its version before the load, after checking that
    every commit since is that load's (anything else is an error naming the table, left as it
    is); the runs are then marked failed."""
    runs_table = TABLES["ingest_runs"].qualified
    running = (
        spark.table(runs_table)
        .where(F.col("status") == "running")
        .select("run_id", "host", "pid", "versions_before")
        .collect()
    )
    by_load: dict[str, list[int]] = {}
    dead = []
    for r in running:
        if r["pid"] == os.getpid() and r["host"] == socket.gethostname():
            continue
        if _alive(r["host"], r["pid"]):
            continue
        by_load.setdefault(r["versions_before"], []).append(int(r["run_id"]))
        dead.append(int(r["run_id"]))
    for before, run_ids in by_load.items():
        tags = {f"{RUN_TAG}{r}" for r in run_ids}
        for name, version in json.loads(before).items():
            if name == "ingest_runs":
                continue  # the runs stay, marked failed below
            _restore(spark, name, int(version), tags)
    if dead:
        ids = ", ".join(str(r) for r in dead)
        spark.sql(
            f"UPDATE {runs_table} SET status = 'failed', finished_at = current_timestamp(),"
            " message = 'killed before it committed; rolled back by the next load'"
            f" WHERE run_id IN ({ids})"
        )
    return dead


def _restore(spark: SparkSession, name: str, version: int, tags: set[str]) -> None:
    """Restore a table to `version` if every commit after it carries one of `tags`."""
    qualified = TABLES[name].qualified
    history = spark.sql(f"DESCRIBE HISTORY {qualified}").where(F.col("version") > version)
    later = history.select("version", "userMetadata").collect()
    if not later:
        return
    foreign = [int(r["version"]) for r in later if r["userMetadata"] not in tags]
    if foreign:
        raise DatabaseError(
            f"{qualified}: a killed load's commits are followed by others (version"
            f" {foreign[0]}); restore it by hand: RESTORE TABLE {qualified} TO VERSION AS OF"
            f" {version}"
        )
    spark.sql(f"RESTORE TABLE {qualified} TO VERSION AS OF {int(version)}")
