"""Placement statistics per dataset type: gaps, tapes per dataset, predicted recall rate.

Gap conventions of the published analysis (docs/domain.md, "Positional gap", and the truth README
of world/truth_files.py): on one volume, a dataset's copies in position order (then
offset inside an aggregate); posdiff = position minus the previous copy's. The first copy of a
dataset on a volume has no gap; aggregate members (offset or aggregate id set, or posdiff 0)
are left out of the statistics, every member, after the posdiffs are taken over all copies;
posdiff >= 100 is a locate, counted apart and not in n, mean or sigma. The same code serves a
replayed placement and the site's own catalog, so both are measured alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from tapelens.analysis.recall.datasets.prediction import choose_copies, recall_per_dataset
from tapelens.analysis.throughput.model import MB, ModelParams

LOCATE_POSDIFF = 100  # docs/domain.md: posdiff >= 100 is a locate, reported apart
ALL_TYPES = "all"  # the row over every dataset type
ALL_PERIODS = "all"


@dataclass(frozen=True)
class RecallSetup:
    """What the throughput model needs to predict a dataset recall: drives per drive type,
    parameters per media type, which drive types read which media."""

    drives: Mapping[str, int]
    params_by_media: Mapping[str, ModelParams]
    readable_by: Mapping[str, tuple[str, ...]] | None = None


def seconds_of(frame: pl.DataFrame, name: str) -> pl.Expr:
    """Seconds since the epoch of a column holding datetimes (any time zone) or epoch seconds."""
    if frame.schema[name].is_temporal():
        return pl.col(name).dt.epoch("us").cast(pl.Float64) / 1e6
    return pl.col(name).cast(pl.Float64)


def file_gaps(copies: pl.DataFrame) -> pl.DataFrame:
    """Every copy with its posdiff (null for the first of its dataset on the volume) and
    gap_class: first | counted | locate | aggregate_member, as the marts class them (a counted
    gap is a posdiff of 1 to 99; "read-through" names the throughput model's gap only)."""
    frame = copies
    for name in ("offset_bytes", "aggregate_id"):
        if name not in frame.columns:
            frame = frame.with_columns(pl.lit(None, pl.Int64).alias(name))
    previous = pl.col("position").shift(1).over("volume", "dataset")
    posdiff = (pl.col("position") - previous).alias("posdiff")
    member = (
        pl.col("offset_bytes").is_not_null()
        | pl.col("aggregate_id").is_not_null()
        | (pl.col("posdiff") == 0)
    )
    gap_class = (
        pl.when(member)
        .then(pl.lit("aggregate_member"))
        .when(pl.col("posdiff").is_null())
        .then(pl.lit("first"))
        .when(pl.col("posdiff") < LOCATE_POSDIFF)
        .then(pl.lit("counted"))
        .otherwise(pl.lit("locate"))
    )
    return (
        frame.sort("volume", "dataset", "position", "offset_bytes", nulls_last=False)
        .with_columns(posdiff)
        .with_columns(gap_class.alias("gap_class"))
    )


def _period(seconds: pl.Expr, split_at_s: float | None) -> pl.Expr:
    if split_at_s is None:
        return pl.lit(ALL_PERIODS)
    return pl.when(seconds >= split_at_s).then(pl.lit("after")).otherwise(pl.lit("before"))


def _type_stats(gaps: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    counted = pl.col("gap_class") == "counted"
    per_dataset = gaps.group_by(*keys, "dataset").agg(pl.col("volume").n_unique().alias("_tapes"))
    tapes = per_dataset.group_by(keys).agg(
        pl.len().alias("datasets"),
        pl.col("_tapes").mean().alias("tapes_per_dataset_mean"),
        pl.col("_tapes").median().alias("tapes_per_dataset_median"),
    )
    stats = gaps.group_by(keys).agg(
        pl.len().alias("files"),
        pl.col("volume").n_unique().alias("tapes"),
        counted.sum().alias("n"),
        pl.col("posdiff").filter(counted).cast(pl.Float64).mean().alias("mean_gap"),
        pl.col("posdiff").filter(counted).cast(pl.Float64).std(ddof=1).alias("sigma"),
        (pl.col("gap_class") == "locate").sum().alias("locates"),
        (pl.col("gap_class") == "aggregate_member").sum().alias("aggregate_members"),
    )
    return stats.join(tapes, on=keys, how="left")


def _recall_per_dataset(gaps: pl.DataFrame, recall: RecallSetup) -> pl.DataFrame:
    """The files of each dataset in each period recalled on their own on all the drives:
    dataset_type, period, bytes, now_s per (dataset, period). Copies on tapes of a media type
    without throughput parameters are left out."""
    columns = ["volume", "media_type", "position", "size_bytes"]
    optional = ("file_id", "offset_bytes", "aggregate_id", "start_bytes")
    files = gaps.filter(pl.col("media_type").is_in(list(recall.params_by_media))).select(
        pl.concat_str("dataset", "period", separator="\x1f").alias("_key"),
        "dataset_type",
        "period",
        *columns,
        *[c for c in optional if c in gaps.columns],
    )
    if files.height == 0:
        return pl.DataFrame(
            schema={
                "dataset_type": pl.String,
                "period": pl.String,
                "bytes": pl.Float64,
                "now_s": pl.Float64,
            }
        )
    keys = files.select("_key", "dataset_type", "period").unique("_key")
    chosen = choose_copies(files.drop("dataset_type", "period").rename({"_key": "dataset"}))
    recalled = recall_per_dataset(
        chosen, recall.drives, recall.params_by_media, recall.readable_by, "now"
    )
    # The bytes of the tapes the drives can read: the rate's own numerator.
    return (
        recalled.select(
            pl.col("dataset").alias("_key"),
            (pl.col("now_rate_mb_s") * pl.col("now_s") * MB).alias("bytes"),
            "now_s",
        )
        .join(keys, on="_key")
        .drop("_key")
    )


def _recall_rate(per_dataset: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """Bytes over the summed recall times: the rate of recalling the datasets one by one."""
    return per_dataset.group_by(keys).agg(
        (pl.col("bytes").sum() / MB / pl.col("now_s").sum()).alias("recall_rate_mb_s")
    )


def summarise(
    copies: pl.DataFrame,
    time_column: str,
    split_at_s: float | None = None,
    recall: RecallSetup | None = None,
    dataset_types: Sequence[str] | None = None,
) -> pl.DataFrame:
    """Per dataset type (and 'all') and period: files, datasets, tapes, n, mean_gap, sigma,
    locates, aggregate_members, tapes per dataset (mean, median) and, with `recall`, the
    predicted recall rate (each dataset's files of the period recalled on their own, the
    type's bytes over the summed recall times). A copy's period is that of `time_column`
    (before/after `split_at_s`, else 'all').
    Copies that carry posdiff and gap_class already (file_gaps of a larger set, e.g. every copy
    on the tapes) are taken as they are."""
    seconds = seconds_of(copies, time_column)
    gaps = copies if "gap_class" in copies.columns else file_gaps(copies)
    gaps = gaps.with_columns(_period(seconds, split_at_s).alias("period"))
    if dataset_types:
        gaps = gaps.filter(pl.col("dataset_type").is_in(list(dataset_types)))
    keys = ["dataset_type", "period"]
    everything = gaps.with_columns(pl.lit(ALL_TYPES).alias("dataset_type"))
    out = pl.concat([_type_stats(gaps, keys), _type_stats(everything, keys)])
    if recall is not None and gaps.height:
        per_dataset = _recall_per_dataset(gaps, recall)
        everyone = per_dataset.with_columns(pl.lit(ALL_TYPES).alias("dataset_type"))
        rates = pl.concat([_recall_rate(per_dataset, keys), _recall_rate(everyone, keys)])
        out = out.join(rates, on=keys, how="left")
    order = pl.when(pl.col("dataset_type") == ALL_TYPES).then(1).otherwise(0)
    period_order = pl.col("period").replace_strict(
        {"before": 0, "after": 1, ALL_PERIODS: 2}, return_dtype=pl.Int8
    )
    return out.sort(order, "dataset_type", period_order)


def ordered_gap_figures(
    group: np.ndarray,
    volume: np.ndarray,
    dataset: np.ndarray,
    position: np.ndarray,
    member: np.ndarray,
    datasets: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Per group (e.g. pool) the mean tapes per dataset and the mean counted gap, as summarise
    measures them, of copies given as integer arrays already in gap order (by volume, dataset,
    position, then offset with the unaggregated first): no sort, so a replay that knows its
    files' order on tape pays none. `member`: offset or aggregate id set; `datasets`: the
    datasets of each group (a dataset code names one dataset within its group). NaN where a
    group has no dataset or no counted gap."""
    n_groups = datasets.shape[0]
    same = np.zeros(volume.shape[0], dtype=bool)
    same[1:] = (volume[1:] == volume[:-1]) & (dataset[1:] == dataset[:-1])
    posdiff = np.zeros(volume.shape[0], dtype=np.int64)
    posdiff[1:] = position[1:] - position[:-1]
    # posdiff 0 is an aggregate member too, as file_gaps classes it.
    counted = same & ~member & (posdiff != 0) & (posdiff < LOCATE_POSDIFF)
    n = np.bincount(group[counted], minlength=n_groups)
    total = np.bincount(group[counted], weights=posdiff[counted], minlength=n_groups)
    pairs = np.bincount(group[~same], minlength=n_groups)
    with np.errstate(invalid="ignore", divide="ignore"):
        tapes_per_dataset = np.where(datasets > 0, pairs / np.maximum(datasets, 1), np.nan)
        mean_gap = np.where(n > 0, total / np.maximum(n, 1), np.nan)
    return tapes_per_dataset, mean_gap
