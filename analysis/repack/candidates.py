"""What the repack screens share: the live copies they read (CopyReader), the files left
unavailable, the queries they frame, and a dataset candidate's row.

Every query here and in the screens is written once, in SQL that PostgreSQL and Spark both run,
and read through the engine's FrameReader (tapelens.frames): the few forms the engines spell
differently (a list parameter unnested, the float type, the markers) come from its Dialect.
Rows come back typed by a schema of their own, so that either engine's frames are the same.

Its own module so that every screen, store.py's and hint_groups.py's, uses them without
importing the advisor's store (which lists the screens).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from tapelens.analysis.dedup.store import COPY_ORDER, live_copies_sql
from tapelens.analysis.dedup.store import SCHEMA as COPIES
from tapelens.dbt_runs import MARTS_SCHEMA
from tapelens.frames import Dialect, FrameReader
from tapelens.media import fill_media_from_labels

UNAVAILABLE = {"path": pl.String, "file_id": pl.String, "size_bytes": pl.Int64, "reason": pl.String}


def in_list(d: Dialect, column: str, n: int) -> str:
    """SQL that `column` is one of the n-th parameter's elements (a list bound as one array)."""
    return f"{column} in (select {d.unnest(d.param(n))})"


def frame(
    read: FrameReader, query: str, schema: Mapping[str, pl.DataType], params: Sequence[Any] = ()
) -> pl.DataFrame:
    """The rows of `query`, its columns named and typed by `schema` in their order."""
    rows = read(query, params)
    named = zip(rows.columns, schema.items(), strict=True)
    return rows.select(pl.col(got).cast(dtype).alias(name) for got, (name, dtype) in named)


def live_copies(
    read: FrameReader, *, datasets: Sequence[str] = (), volumes: Sequence[str] = ()
) -> pl.DataFrame:
    """Live copies of the given datasets and on the given volumes (either), as plan dedup
    reads its copies (analysis.dedup.store.live_copies_sql: byte address, media type, tape
    state, checksum), in a set order."""
    params: list[Any] = []
    wanted = []
    for column, keys in (("dataset", datasets), ("volume", volumes)):
        if keys:
            params.append(sorted(set(keys)))
            wanted.append(in_list(read.dialect, column, len(params)))
    if not wanted:
        return pl.DataFrame(schema=COPIES)
    query = live_copies_sql(read, f"({' or '.join(wanted)})")
    return fill_media_from_labels(frame(read, query, COPIES, params).sort(COPY_ORDER))


@dataclass
class CopyReader:
    """The candidates' live copies as the screens read them, those on media no given drive
    reads set aside: the recall engine could not time their recall, and a repack is weighed
    on what the drives read. A file none of whose copies is readable is unavailable, named
    and with its reason as plan recall names its own."""

    readable: frozenset[str]
    kept: list[pl.DataFrame] = field(default_factory=list)
    lost: list[pl.DataFrame] = field(default_factory=list)

    def __call__(
        self, read: FrameReader, *, datasets: Sequence[str] = (), volumes: Sequence[str] = ()
    ) -> pl.DataFrame:
        copies = live_copies(read, datasets=datasets, volumes=volumes)
        can = pl.col("media_type").is_in(list(self.readable))
        self.kept.append(copies.filter(can).select("file_id"))
        self.lost.append(copies.filter(~can))
        return copies.filter(can)

    def unavailable(self) -> pl.DataFrame:
        if not self.lost:
            return pl.DataFrame(schema=UNAVAILABLE)
        lost = pl.concat(self.lost, how="vertical_relaxed")
        kept = pl.concat(self.kept, how="vertical_relaxed") if self.kept else lost.clear()
        unknown = pl.col("media_type").is_null() | (pl.col("media_type") == "unknown")
        return (
            lost.join(kept.select("file_id"), on="file_id", how="anti")
            .with_columns(
                pl.when(unknown)
                .then(pl.lit("unknown media type"))
                .otherwise(pl.format("no drive reads {}", pl.col("media_type")))
                .alias("reason")
            )
            .group_by("file_id")
            .agg(
                pl.col("path").first(),
                pl.col("size_bytes").first().cast(pl.Int64),
                pl.col("reason").unique().sort().str.join("; "),
            )
            .select(*UNAVAILABLE)
            .sort("path")
        )


def tapes_only_of(read: FrameReader, copies: pl.DataFrame) -> pl.DataFrame:
    """Per (dataset, volume) of `copies`: whether the dataset's copies are all the volume's
    live copies (repacking the dataset away empties the cartridge)."""
    volumes = sorted(copies["volume"].unique().to_list())
    schema = {"volume": pl.String(), "_files": pl.Int64(), "_capacity": pl.Int64()}
    totals = pl.DataFrame(schema=schema)
    if volumes:
        totals = frame(
            read,
            f"select volume, files, capacity_bytes from {MARTS_SCHEMA}.fct_tape_occupancy"
            f" where {in_list(read.dialect, 'volume', 1)}",
            schema,
            [volumes],
        )
    return (
        copies.group_by("dataset", "volume")
        .agg(pl.len().alias("_mine"))
        .join(totals, on="volume", how="left")
        .with_columns((pl.col("_mine") >= pl.col("_files")).alias("_only"))
    )


def datasets_on(read: FrameReader, volumes: Sequence[str]) -> list[str]:
    """The datasets with a live copy on any of `volumes`, by name."""
    if not volumes:
        return []
    found = frame(
        read,
        "select distinct dataset from tapelens.tape_files"
        f" where removed_at is null and {in_list(read.dialect, 'volume', 1)}",
        {"dataset": pl.String()},
        [sorted(set(volumes))],
    )
    return sorted(found["dataset"].drop_nulls().to_list())


def dataset_candidates(
    found: pl.DataFrame,
    kind: str,
    evidence: pl.Expr,
    copies: pl.DataFrame,
    freed: pl.DataFrame,
) -> pl.DataFrame:
    """One candidate row per dataset found by a screen: its kind, evidence, the tapes its
    repack would empty (tapes_only_of) and the volumes it sits on."""
    per_dataset = (
        freed.group_by("dataset")
        .agg(
            pl.col("_only").sum().cast(pl.Float64).alias("tapes_freed"),
            pl.col("_capacity").filter(pl.col("_only")).sum().alias("capacity_reclaimed_bytes"),
        )
        .join(
            copies.group_by("dataset").agg(pl.col("volume").unique().sort().alias("volumes")),
            on="dataset",
            how="left",
        )
    )
    return (
        found.with_columns(
            pl.format("{}:{}", pl.lit(kind), pl.col("target")).alias("cand"),
            pl.lit(kind).alias("kind"),
            evidence.alias("evidence"),
        )
        .join(per_dataset, left_on="target", right_on="dataset", how="left")
        .select(
            "cand",
            "kind",
            "target",
            "evidence",
            "files",
            "bytes",
            "tapes_freed",
            "capacity_reclaimed_bytes",
            "volumes",
        )
    )


__all__ = [
    "UNAVAILABLE",
    "CopyReader",
    "dataset_candidates",
    "datasets_on",
    "frame",
    "in_list",
    "live_copies",
    "tapes_only_of",
]
