"""Hold-out validation of the throughput model, and the observed-vs-predicted figure.

The newest part of the logs is held out; parameters are fitted on the rest and predict the
held-out reads. Errors are per-read rate errors (|predicted - observed| / observed), summarised
by media type and gap class (first | read_through | locate): the question a planner asks is "how
far off is a predicted recall", and reads of each kind fail in their own way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import polars as pl
from matplotlib.figure import Figure

from tapelens.analysis.throughput.calibrate import (
    MIN_FIT_READS,
    calibrate_media,
    prepare_reads,
)
from tapelens.analysis.throughput.model import GAP_CLASSES, ModelParams, predict_reads
from tapelens.errors import InputError

DEFAULT_HOLDOUT = 0.2
# Below this many training reads a media type is predicted with its default parameters.
MIN_TRAIN_READS = 5 * MIN_FIT_READS


@dataclass(frozen=True)
class Validation:
    cutoff: datetime  # reads started at or after it are held out
    train_reads: int
    test_reads: int
    # media_type, gap_class, reads, median_abs_pct_error, p90_abs_pct_error; every move priced
    # by the one price of a move (analysis/throughput/moves.py)
    errors: pl.DataFrame
    sources: dict[str, str]  # media type -> where its parameters came from


def holdout_cutoff(started_at: pl.Series, holdout_fraction: float) -> datetime:
    """The start time from which the newest `holdout_fraction` of the reads lie."""
    if not 0 < holdout_fraction < 1:
        raise InputError(f"--holdout must be between 0 and 1, got {holdout_fraction}")
    if started_at.len() < 2:
        raise InputError("validation needs at least two observed reads")
    value = started_at.sort().to_physical().quantile(1 - holdout_fraction, "lower")
    cutoff: datetime = pl.Series([value]).cast(started_at.dtype).item()
    return cutoff


def abs_pct_error() -> pl.Expr:
    """Per-read rate error in percent: |obs/pred - 1| of durations is |rate_pred/rate_obs - 1|."""
    return ((pl.col("observed_s") / pl.col("predicted_duration_s")) - 1).abs() * 100


def error_table(predicted: pl.DataFrame) -> pl.DataFrame:
    """Median and 90th-percentile abs % rate error by media type and gap class, plus 'all'."""
    err = predicted.with_columns(abs_pct_error().alias("_err"))
    by_class = err.group_by("media_type", "gap_class").agg(
        pl.len().alias("reads"),
        pl.col("_err").median().alias("median_abs_pct_error"),
        pl.col("_err").quantile(0.9).alias("p90_abs_pct_error"),
    )
    overall = err.group_by("media_type").agg(
        pl.lit("all").alias("gap_class"),
        pl.len().alias("reads"),
        pl.col("_err").median().alias("median_abs_pct_error"),
        pl.col("_err").quantile(0.9).alias("p90_abs_pct_error"),
    )
    order = {c: i for i, c in enumerate((*GAP_CLASSES, "all"))}
    return (
        pl.concat([by_class, overall.select(by_class.columns)])
        .with_columns(
            pl.col("gap_class").replace_strict(order, default=99, return_dtype=pl.Int32).alias("_o")
        )
        .sort("media_type", "_o")
        .drop("_o")
    )


def validate(
    reads: pl.DataFrame,
    mounts: pl.DataFrame,
    defaults: Mapping[str, ModelParams],
    holdout_fraction: float = DEFAULT_HOLDOUT,
) -> Validation:
    """Fit on all but the newest `holdout_fraction` of the reads, predict those, report errors."""
    prepared = prepare_reads(reads, mounts)
    prepared = prepared.filter(pl.col("media_type").is_in(list(defaults)))
    if prepared.height == 0:
        raise InputError("no observed reads of a known media type to validate on")
    cutoff = holdout_cutoff(prepared["started_at"], holdout_fraction)
    train = prepared.filter(pl.col("started_at") < cutoff)
    test = prepared.filter(pl.col("started_at") >= cutoff)
    train_mounts = mounts.filter(pl.col("mounted_at") < cutoff) if mounts.height else mounts
    params: dict[str, ModelParams] = {}
    sources: dict[str, str] = {}
    for media in sorted(set(test["media_type"].to_list())):
        own = train.filter(pl.col("media_type") == media)
        if own.height < MIN_TRAIN_READS:
            params[media] = defaults[media]
            sources[media] = f"default ({own.height} training reads)"
            continue
        own_mounts = (
            train_mounts.filter(pl.col("media_type") == media)
            if "media_type" in train_mounts.columns
            else train_mounts.clear()
        )
        params[media] = calibrate_media(own, own_mounts, defaults[media]).params
        sources[media] = f"fitted on {own.height} reads"
    errors = error_table(predict_reads(test, params))
    return Validation(
        cutoff=cutoff,
        train_reads=train.height,
        test_reads=test.height,
        errors=errors,
        sources=sources,
    )


def fit_figure(predicted: pl.DataFrame, title: str = "") -> Figure:
    """Observed and predicted per-read rate against gap and against file size.

    `predicted` is predict_reads output over observed reads (observed_s, size_bytes, gap,
    predicted_rate_mb_s, media_type).
    """
    frame = predicted.with_columns(
        (pl.col("size_bytes") / 1e6 / pl.col("observed_s")).alias("observed_rate_mb_s"),
        pl.col("gap").fill_null(0).clip(-1, None).alias("_gap"),
    )
    figure = Figure(figsize=(12, 5), layout="constrained")
    by_gap, by_size = figure.subplots(1, 2)
    for media in sorted(frame["media_type"].unique().to_list()):
        own = frame.filter(pl.col("media_type") == media)
        shown = own.filter(pl.col("_gap") >= 1)
        points = by_gap.scatter(
            shown["_gap"], shown["observed_rate_mb_s"], s=4, alpha=0.3, label=f"{media} observed"
        )
        line = shown.group_by("_gap").agg(pl.col("predicted_rate_mb_s").median()).sort("_gap")
        by_gap.plot(
            line["_gap"], line["predicted_rate_mb_s"], color=points.get_facecolor()[0][:3], lw=2
        )
        gb = own["size_bytes"].to_numpy() / 1e9
        by_size.scatter(gb, own["observed_rate_mb_s"], s=4, alpha=0.3, label=f"{media} observed")
        order = np.argsort(gb)
        by_size.plot(
            gb[order],
            own["predicted_rate_mb_s"].to_numpy()[order],
            ".",
            ms=2,
            color=points.get_facecolor()[0][:3],
            label=f"{media} predicted",
        )
    by_gap.set_xscale("log")
    by_gap.set_xlabel("gap (tape objects since the previous read)")
    by_gap.set_ylabel("rate (MB/s)")
    by_gap.set_title("rate against gap (line: median predicted)")
    by_size.set_xscale("log")
    by_size.set_xlabel("file size (GB)")
    by_size.set_ylabel("rate (MB/s)")
    by_size.set_title("rate against file size")
    by_size.legend(fontsize="small", markerscale=3)
    if title:
        figure.suptitle(title)
    return figure
