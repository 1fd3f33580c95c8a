"""Recall requests resolved against the catalog of live copies.

The files they name, their readable copies, and what is not found or cannot be read.

Resolution against a frame of live copies is pure: entries the catalog does not know are
`not_found`; files whose every copy sits on a tape that cannot be read are `unavailable`, with the
reason: the tape is disabled or repacked (tapelens.tape_states.NOT_RECALLABLE), its media type is
unknown (the inventory does not type it and its label does not say), or no given drive reads its
media. A tape in state `unknown` of a known media type counts as readable. Nothing is ever dropped
silently.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import numpy as np
import polars as pl

from tapelens.analysis.recall.requests.lists import KEY_COLUMNS
from tapelens.tape_states import NOT_RECALLABLE

UNKNOWN_MEDIA = "unknown"

# What resolution needs of each live copy (the catalog read, analysis.recall.store.catalog, loads
# these, with start_bytes and avg_object_bytes for the throughput model).
CATALOG_COLUMNS = (
    "file_id",
    "path",
    "dataset",
    "size_bytes",
    "volume",
    "position",
    "offset_bytes",
    "aggregate_id",
    "copy_no",
    "written_at",
    "media_type",
    "tape_state",
)


@dataclass(frozen=True)
class Resolution:
    """A request list resolved against the catalog of live copies.

    Files are identified by `fid`, a dense integer code of file_id (joins and sorts on integers
    keep a million-file plan fast); file_id itself is kept alongside.
    """

    demand: pl.DataFrame  # one row per (request, file): who wants what, in which order
    wanted: pl.DataFrame  # one row per requested file: its first request (the owner)
    copies: pl.DataFrame  # readable copies of wanted files (the copy-choice candidates)
    not_found: pl.DataFrame  # requests the catalog does not know (request_no, line_no, kind, key)
    unavailable: pl.DataFrame  # wanted files without a readable copy (file_id, path, reason)


def resolve(
    requests: pl.DataFrame,
    catalog: pl.DataFrame,
    readable_media: Collection[str] | None = None,
) -> Resolution:
    """Match requests to files and files to readable copies.

    `catalog` holds live copies (CATALOG_COLUMNS) on every tape, readable or not, so that a file
    whose copies are all on disabled tapes is told apart from one the catalog never had.
    `readable_media`, when given, are the media types some available drive reads.
    """
    coded = catalog.with_columns(pl.col("file_id").rank("dense").cast(pl.Int64).alias("fid"))
    # One row per file and name for matching: copies of a file normally share path and dataset.
    names = ["fid", "file_id", "path", "dataset"]
    first = pl.col("fid").is_first_distinct()
    files = coded.filter(first).select(names)
    named = files.select("fid", pl.col("path").alias("p0"), pl.col("dataset").alias("d0"))
    renamed_copies = (
        coded.filter(~first)
        .select(names)
        .join(named, on="fid")
        .filter((pl.col("path") != pl.col("p0")) | (pl.col("dataset") != pl.col("d0")))
        .select(names)
        .unique()
    )
    renamed = renamed_copies.height > 0  # some file has copies under another name
    if renamed:
        files = pl.concat([files, renamed_copies])
    matches = []
    for kind in KEY_COLUMNS:
        asked = requests.filter(pl.col("kind") == kind).select("request_no", "key")
        if asked.height:
            found = files.select(pl.col(kind).alias("_key"), "fid", "file_id", "path")
            matches.append(asked.join(found, left_on="key", right_on="_key").drop("key"))
    empty = {"request_no": pl.Int64(), "fid": pl.Int64(), "file_id": pl.String()}
    matched = pl.concat(matches) if matches else pl.DataFrame(schema={**empty, "path": pl.String()})
    if renamed:
        matched = matched.unique(["request_no", "fid"], keep="first", maintain_order=True)
    hit = _mask(matched["request_no"], requests["request_no"])
    not_found = (
        requests.filter(~hit)
        .select("request_no", "line_no", "kind", "key", "requester")
        .sort("request_no")
    )
    demand = _demand(requests, matched)
    if demand["fid"].n_unique() == demand.height:  # every file asked for once
        wanted = demand.with_columns(pl.lit(1, pl.UInt32).alias("requests"))
    else:
        wanted = demand.group_by("fid", maintain_order=True).agg(  # demand is in rank order
            pl.col("file_id").first(),
            pl.col("path").first(),
            pl.col("request_no").first(),
            pl.col("requester").first(),
            pl.col("group").first(),
            pl.col("rank").first(),
            pl.col("fifo_rank").min(),
            pl.len().alias("requests"),
        )
    owner = ["file_id", "path", "request_no", "requester", "group", "rank", "fifo_rank"]
    wanted = wanted.select("fid", *owner, "requests")
    copies, unavailable = _readable(wanted, coded, readable_media)
    return Resolution(demand, wanted, copies, not_found, unavailable)


def _mask(hits: pl.Series, of: pl.Series) -> pl.Series:
    """For each value of `of` (small non-negative integers), whether it is among `hits`."""
    values, marked = of.to_numpy(), hits.to_numpy()
    size = int(max(values.max(initial=0), marked.max(initial=0))) + 1
    flags = np.zeros(size, dtype=bool)
    flags[marked] = True
    return pl.Series(flags[values])


def _demand(requests: pl.DataFrame, matched: pl.DataFrame) -> pl.DataFrame:
    """Per (request, file): the request's attributes and two orders over all requested files.

    fifo_rank is submission order (submitted_at, then list order; a dataset's files by path);
    rank adds priority first (higher first): the order of "oldest request first" policies.
    """
    frame = matched.join(
        requests.select("request_no", "kind", "requester", "group", "priority", "submitted_at"),
        on="request_no",
    )
    many = frame.filter(pl.col("kind") == "dataset")
    if many.height:
        # Only a dataset names several files: order them by path within their request.
        many = many.sort(["request_no", "path"]).with_columns(
            pl.int_range(pl.len(), dtype=pl.Int64).over("request_no").alias("within")
        )
        frame = pl.concat(
            [
                frame.filter(pl.col("kind") != "dataset").with_columns(
                    pl.lit(0, pl.Int64).alias("within")
                ),
                many,
            ]
        )
    else:
        frame = frame.with_columns(pl.lit(0, pl.Int64).alias("within"))
    fifo = ["submitted_at", "request_no", "within"]
    frame = frame.sort(fifo, nulls_last=True).with_columns(
        pl.int_range(pl.len(), dtype=pl.Int64).alias("fifo_rank")
    )
    if frame["priority"].n_unique() > 1:
        frame = frame.sort("priority", descending=True, maintain_order=True)
    return frame.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias("rank")).drop(
        "kind", "within"
    )


def _readable(
    wanted: pl.DataFrame, catalog: pl.DataFrame, readable_media: Collection[str] | None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    copies = catalog.filter(_mask(wanted["fid"], catalog["fid"]))
    reason = (
        pl.when(pl.col("tape_state").is_in(list(NOT_RECALLABLE)))
        .then(pl.format("tape {}", pl.col("tape_state")))
        .when(pl.col("media_type").is_null() | (pl.col("media_type") == UNKNOWN_MEDIA))
        .then(pl.lit("unknown media type"))
    )
    if readable_media is not None:
        reason = reason.when(~pl.col("media_type").is_in(list(readable_media))).then(
            pl.format("no drive reads {}", pl.col("media_type"))
        )
    copies = copies.with_columns(reason.otherwise(None).alias("reason"))
    readable = copies.filter(pl.col("reason").is_null()).drop("reason")
    lost = copies.filter(pl.col("reason").is_not_null())
    unavailable = (
        lost.filter(~_mask(readable["fid"], lost["fid"]))
        .group_by("fid")
        .agg(
            pl.col("file_id").first(),
            pl.col("path").first(),
            pl.col("size_bytes").first(),
            pl.col("reason").unique().sort().str.join("; "),
        )
        .sort("path")
    )
    return readable, unavailable
