"""What the repack screens share: the live copies they read (CopyReader), the files left
unavailable, the catalog queries they frame, and a dataset candidate's row.

Its own module so that every screen, store.py's and hint_groups.py's, uses them without
importing the advisor's store (which lists the screens).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import polars as pl
import psycopg
from psycopg import sql

from tapelens.analysis.throughput.inputs import fetch, read_live_copies
from tapelens.dbt_runs import MARTS_SCHEMA

UNAVAILABLE = {"path": pl.String, "file_id": pl.String, "size_bytes": pl.Int64, "reason": pl.String}


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
        self, conn: psycopg.Connection, *, datasets: Sequence[str] = (), volumes: Sequence[str] = ()
    ) -> pl.DataFrame:
        copies = read_live_copies(conn, datasets=datasets, volumes=volumes)
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


def frame(conn: psycopg.Connection, query: sql.Composable, names: list[str]) -> pl.DataFrame:
    """The rows of `query` as a frame with the given column names."""
    rows = fetch(conn, query)
    return pl.DataFrame(rows, schema=names, orient="row", infer_schema_length=None)


def tapes_only_of(conn: psycopg.Connection, copies: pl.DataFrame) -> pl.DataFrame:
    """Per (dataset, volume) of `copies`: whether the dataset's copies are all the volume's
    live copies (repacking the dataset away empties the cartridge)."""
    volumes = copies["volume"].unique().to_list()
    rows = fetch(
        conn,
        sql.SQL(
            "select volume, files, capacity_bytes from {}.fct_tape_occupancy where volume = any(%s)"
        ).format(sql.Identifier(MARTS_SCHEMA)),
        (volumes,),
    )
    totals = pl.DataFrame(
        rows, schema=["volume", "_files", "_capacity"], orient="row", infer_schema_length=None
    )
    return (
        copies.group_by("dataset", "volume")
        .agg(pl.len().alias("_mine"))
        .join(totals, on="volume", how="left")
        .with_columns((pl.col("_mine") >= pl.col("_files")).alias("_only"))
    )


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


__all__ = ["UNAVAILABLE", "CopyReader", "dataset_candidates", "frame", "tapes_only_of"]
