"""Fitting the throughput model to a site's own reads and mounts.

Per media type: the effective rate and the per-object overhead by robust linear least squares on
read-through reads (duration = overhead + (size + skipped bytes) / rate); the read-through
threshold by scanning candidate gaps and keeping the one whose split into read-through and locate
reads explains the durations best; the locate curve (base + slope x distance, bounded) on locate
reads (kept for media types without a geometry); the first locate, mount and dismount times from
first reads and the mount log (the unload as what is left after the rewind priced from the
last read's place); the factors of the tape geometry's locate terms and the scale
between the site's positioning times and what the one price of a move charges for them
(analysis/throughput/moves.py: every order, baseline and prediction prices moves with them).
Parameters the data cannot pin down keep their defaults, and the fit says so in its notes.

Reads: media_type, gap (posdiff from the previous read on the mount, null for the first),
gap_bytes (skipped bytes, when known), size_bytes, duration_s, started_at, and optionally
locate_s, volume, position, start_bytes. Mounts: volume, media_type, requested_at, mounted_at,
dismounted_at. Pure: frames in, frozen records out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

import numpy as np
import polars as pl

from tapelens.analysis.geometry.place import start_address
from tapelens.analysis.throughput.locate import (
    LOCATE_BOUND_S,
    MIN_FIT_READS,
    TIME_FLOOR_S,
    Vector,
    fit_locate,
    fit_locate_scale,
    fit_locate_terms,
    fit_locates,
    locate_observations,
    robust_fit,
)
from tapelens.analysis.throughput.model import MB, ModelParams, predict_reads
from tapelens.analysis.throughput.moves import priced_geometry, rewind_s
from tapelens.analysis.throughput.observations import attach_mounts, derive_gaps, prepare_reads
from tapelens.errors import InputError

__all__ = [
    "DEFAULT_MIN_MOUNTS",
    "DEFAULT_MIN_READS",
    "MIN_FIT_READS",
    "Fit",
    "attach_mounts",
    "calibrate",
    "calibrate_media",
    "decide",
    "derive_gaps",
    "fit_rate_overhead",
    "prepare_reads",
    "quality",
    "refusal",
]

# Below this many mounts the mount and dismount times keep their defaults.
MIN_FIT_MOUNTS = 5
# Defaults of `tapelens throughput calibrate`: a fit on less data than this does not replace stored
# parameters unless forced.
DEFAULT_MIN_READS = 200
DEFAULT_MIN_MOUNTS = 20
# The threshold scan refits on a sample of at most this many reads per candidate.
SCAN_SAMPLE_READS = 20_000
# Thresholds beyond this many objects are not scanned: the published analysis already counts
# posdiff >= 100 as a locate (docs/domain.md, "Positional gap").
MAX_THRESHOLD_SCANNED = 200
COARSE_CANDIDATES = 20
# Quantile of the request-to-mount times taken as robot + load, and of what the last read's end
# to the dismount leaves after the priced rewind taken as the unload: queueing for a robot and a
# tape left mounted while idle only lengthen them.
MOUNT_QUANTILE = 0.25


@dataclass(frozen=True)
class Fit:
    """Fitted parameters of one media type and how well they explain the reads."""

    media_type: str
    params: ModelParams
    n_reads: int
    n_mounts: int
    r2: float | None  # of per-read durations
    median_abs_pct_error: float | None  # of per-read rates, in percent
    data_from: datetime | None
    data_until: datetime | None
    notes: tuple[str, ...] = ()


def fit_rate_overhead(
    stream_mb: Vector, observed_s: Vector, start: ModelParams
) -> tuple[float, float, bool]:
    """(overhead_s, rate_mb_s, overhead_fitted) for observed = overhead + stream_mb / rate.

    With too little spread in the bytes read, overhead and rate cannot be told apart: the
    overhead stays at its start value and only the rate is fitted.
    """
    log_obs = np.log(np.maximum(observed_s, TIME_FLOOR_S))
    spread = float(np.quantile(stream_mb, 0.9) / max(np.quantile(stream_mb, 0.1), 1e-9))
    if spread >= 1.5:
        design = np.column_stack([np.ones_like(stream_mb), stream_mb])
        x = robust_fit(
            lambda p: np.log(np.maximum(design @ p, TIME_FLOOR_S)) - log_obs,
            lambda p: design / np.maximum(design @ p, TIME_FLOOR_S)[:, None],
            [start.overhead_s, 1 / start.rate_mb_s],
            [0.0, 1e-6],
            [LOCATE_BOUND_S, 1.0],
        )
        return float(x[0]), 1 / float(x[1]), True
    overhead = start.overhead_s
    column = stream_mb[:, None]
    x = robust_fit(
        lambda p: np.log(np.maximum(column @ p + overhead, TIME_FLOOR_S)) - log_obs,
        lambda p: column / np.maximum(column @ p + overhead, TIME_FLOOR_S)[:, None],
        [1 / start.rate_mb_s],
        [1e-6],
        [1.0],
    )
    return overhead, 1 / float(x[0]), False


def _abs_log_error(predicted: Vector, observed: Vector) -> float:
    ratio = np.maximum(predicted, 1e-9) / np.maximum(observed, 1e-9)
    return float(np.abs(np.log(ratio)).sum())


def _with_skipped(reads: pl.DataFrame, avg_object_bytes: float) -> pl.DataFrame:
    estimated = (pl.col("gap").abs() - 1).clip(0) * avg_object_bytes
    gap_bytes = pl.col("gap_bytes") if "gap_bytes" in reads.columns else pl.lit(None)
    return reads.with_columns(
        pl.coalesce(gap_bytes.cast(pl.Float64), estimated.cast(pl.Float64))
        .fill_null(0.0)
        .alias("_skipped")
    )


def avg_object_bytes(reads: pl.DataFrame) -> float:
    """Average tape object size: skipped bytes per skipped object, else the mean read size."""
    if "gap_bytes" in reads.columns:
        per_object = reads.filter((pl.col("gap") >= 2) & (pl.col("gap_bytes") > 0)).select(
            (pl.col("gap_bytes") / (pl.col("gap") - 1)).median()
        )
        value = per_object.item()
        if isinstance(value, int | float):
            return float(value)
    mean = reads["size_bytes"].cast(pl.Float64).mean()
    return float(mean) if isinstance(mean, int | float) else 0.0


def _candidates(gaps: Vector) -> list[int]:
    return [int(v) for v in np.unique(gaps[(gaps >= 1) & (gaps <= MAX_THRESHOLD_SCANNED)])]


@dataclass(frozen=True)
class _Split:
    threshold: int
    overhead_s: float
    rate_mb_s: float
    overhead_fitted: bool
    locate: tuple[float, float, float] | None
    score: float


def _fit_split(rest: pl.DataFrame, threshold: int, start: ModelParams) -> _Split | None:
    """Rate, overhead and locate curve when gaps up to `threshold` are read through."""
    through = rest.filter((pl.col("gap") >= 1) & (pl.col("gap") <= threshold))
    if through.height < MIN_FIT_READS:
        return None
    stream_mb = ((through["size_bytes"] + through["_skipped"].clip(0)) / MB).to_numpy()
    observed = through["observed_s"].to_numpy()
    overhead, rate, fitted = fit_rate_overhead(stream_mb, observed, start)
    score = _abs_log_error(overhead + stream_mb / rate, observed)
    locates = rest.filter((pl.col("gap") > threshold) | (pl.col("gap") < 0))
    curve = None
    if locates.height >= MIN_FIT_READS:
        own = (locates["observed_s"] - overhead - locates["size_bytes"] / (rate * MB)).to_numpy()
        if "locate_s" in locates.columns:
            known = locates["locate_s"].to_numpy()
            own = np.where(np.isnan(known), own, known)
        distance = np.clip(np.abs(locates["_skipped"].to_numpy()) / start.capacity_bytes, 0, 1)
        curve = fit_locate(distance, own, start)
        base, slope, cap = curve
        located = np.minimum(base + slope * distance, cap)
        predicted = located + overhead + locates["size_bytes"].to_numpy() / (rate * MB)
        score += _abs_log_error(predicted, locates["observed_s"].to_numpy())
    elif locates.height:
        score += _abs_log_error(
            np.full(locates.height, start.locate_base_s), locates["observed_s"].to_numpy()
        )
    return _Split(threshold, overhead, rate, fitted, curve, score)


def _scan(rest: pl.DataFrame, start: ModelParams) -> _Split | None:
    """The split (threshold) whose fits explain the durations best: a coarse pass over every
    few observed gaps, then every gap around the best coarse one."""
    sample = rest.sample(SCAN_SAMPLE_READS, seed=0) if rest.height > SCAN_SAMPLE_READS else rest
    values = _candidates(sample["gap"].to_numpy())
    step = max(1, -(-len(values) // COARSE_CANDIDATES))
    tried: dict[int, _Split | None] = {}

    def best_of(thresholds: Sequence[int]) -> _Split | None:
        for t in thresholds:
            if t not in tried:
                tried[t] = _fit_split(sample, t, start)
        found = [tried[t] for t in thresholds if tried[t] is not None]
        return min(found, key=lambda s: s.score) if found else None  # type: ignore[union-attr]

    coarse = best_of(values[::step])
    if coarse is None:
        return None
    at = values.index(coarse.threshold)
    best = best_of(values[max(0, at - step) : at + step + 1])
    assert best is not None
    return _fit_split(rest, best.threshold, start) if sample is not rest else best


def _seconds(delta: pl.Expr) -> pl.Expr:
    return delta.dt.total_microseconds() / 1e6


def _positive_seconds(frame: pl.DataFrame) -> Vector:
    values = frame["s"].drop_nulls().to_numpy()
    return np.asarray(values[values >= 0], dtype=float)


def _mount_times(
    reads: pl.DataFrame, mounts: pl.DataFrame, params: ModelParams
) -> tuple[ModelParams, list[str]]:
    """Robot + load from request to mount, split between its two parts in the default
    proportions (the logs cannot tell them); from the last read to dismount, what is left after
    the rewind the one price of a move charges from where that read ended (moves.rewind_s,
    with the locate terms already fitted) is the unload. Where the media type has no geometry,
    rewind + unload together, split in the default proportions. Waiting for a robot and idling
    before a dismount only add time, hence a low quantile."""
    notes = []
    waits = _positive_seconds(
        mounts.select(_seconds(pl.col("mounted_at") - pl.col("requested_at")).alias("s"))
    )
    if waits.size >= MIN_FIT_MOUNTS:
        factor = float(np.quantile(waits, MOUNT_QUANTILE)) / params.mount_s
        params = replace(params, robot_s=params.robot_s * factor, load_s=params.load_s * factor)
    else:
        notes.append(f"robot and load: default ({waits.size} mounts with request times)")
    tails, heads = _mount_tails(reads)
    if tails.size < MIN_FIT_MOUNTS:
        notes.append(f"rewind and unload: default ({tails.size} mounts matched to reads)")
    elif priced_geometry(params) is None:
        factor = float(np.quantile(tails, MOUNT_QUANTILE)) / params.dismount_s
        params = replace(
            params, rewind_s=params.rewind_s * factor, unload_s=params.unload_s * factor
        )
    else:
        # The rewind is a move, priced from the last read's place (the media average where
        # that place is not known): fitting it here as well would count it twice.
        left = tails - rewind_s(params, heads)
        params = replace(params, unload_s=max(float(np.quantile(left, MOUNT_QUANTILE)), 0.0))
    return params, notes


def _mount_tails(reads: pl.DataFrame) -> tuple[Vector, Vector]:
    """Per mount matched to its reads: the seconds from its last read's end to its dismount
    (where not negative), and where that read left the head (its address and size, bytes; NaN
    where neither start_bytes nor the position is known)."""
    if "mount_no" not in reads.columns or "dismounted_at" not in reads.columns:
        return np.zeros(0), np.zeros(0)
    end = pl.col("started_at") + pl.duration(microseconds=pl.col("duration_s") * 1e6)
    avg = pl.col("avg_object_bytes") if "avg_object_bytes" in reads.columns else pl.lit(None)
    into = (
        pl.col("offset_bytes").fill_null(0).cast(pl.Float64)
        if "offset_bytes" in reads.columns
        else pl.lit(0.0)
    )
    head = start_address(reads.columns, avg.cast(pl.Float64)) + into + pl.col("size_bytes")
    ends = (
        reads.filter(pl.col("mount_no").is_not_null())
        .with_columns(end.alias("_end"), head.cast(pl.Float64).alias("_head"))
        .group_by("mount_no")
        .agg(
            pl.col("dismounted_at").first(),
            pl.col("_end").max().alias("last_end"),
            pl.col("_head").sort_by("_end").last(),
        )
        .select(
            _seconds(pl.col("dismounted_at") - pl.col("last_end")).alias("s"),
            pl.col("_head").fill_null(float("nan")),
        )
        .drop_nulls("s")
        .filter(pl.col("s") >= 0)
    )
    return ends["s"].to_numpy().astype(float), ends["_head"].to_numpy().astype(float)


def quality(reads: pl.DataFrame, params: ModelParams) -> tuple[float | None, float | None]:
    """(R^2 of per-read durations, median absolute % error of per-read rates)."""
    if reads.height == 0:
        return None, None
    predicted = predict_reads(reads, {params.media_type: params})
    obs = predicted["observed_s"].to_numpy()
    pred = predicted["predicted_duration_s"].to_numpy()
    total = float(((obs - obs.mean()) ** 2).sum())
    r2 = 1 - float(((obs - pred) ** 2).sum()) / total if total > 0 else None
    pct = float(np.median(np.abs(obs / pred - 1))) * 100
    return r2, pct


def calibrate_media(reads: pl.DataFrame, mounts: pl.DataFrame, start: ModelParams) -> Fit:
    """Fit one media type's parameters, starting from (and falling back to) `start`.

    `reads` come from prepare_reads and are of this media type only; so are `mounts`.
    """
    notes: list[str] = []
    avg_object = avg_object_bytes(reads)
    if "avg_object_bytes" not in reads.columns:
        reads = reads.with_columns(avg_object_bytes=pl.lit(avg_object))
    frame = _with_skipped(reads, avg_object)
    rest = frame.filter(pl.col("gap").is_not_null() & (pl.col("gap") != 0))
    params = start
    split = _scan(rest, start) if rest.height >= MIN_FIT_READS else None
    if split is None:
        notes.append(
            f"rate, overhead, threshold, locate: default ({rest.height} reads after a gap)"
        )
    else:
        params = replace(
            params,
            rate_mb_s=split.rate_mb_s,
            overhead_s=split.overhead_s,
            read_through_max_gap=split.threshold,
        )
        if not split.overhead_fitted:
            notes.append("overhead: default (file sizes too alike to separate it from the rate)")
    params, locate_notes = fit_locates(*locate_observations(frame, params, avg_object), params)
    notes += locate_notes
    params, term_notes = fit_locate_terms(frame, params, avg_object)
    notes += term_notes
    params, scale_notes = fit_locate_scale(frame, params, avg_object)
    notes += scale_notes
    params, mount_notes = _mount_times(frame, mounts, params)
    notes += mount_notes
    r2, pct = quality(reads, params)
    started = reads["started_at"]
    return Fit(
        media_type=start.media_type,
        params=params,
        n_reads=reads.height,
        n_mounts=mounts.height,
        r2=r2,
        median_abs_pct_error=pct,
        data_from=started.min() if reads.height else None,  # type: ignore[arg-type]
        data_until=started.max() if reads.height else None,  # type: ignore[arg-type]
        notes=tuple(notes),
    )


def calibrate(
    reads: pl.DataFrame,
    mounts: pl.DataFrame,
    defaults: Mapping[str, ModelParams],
    media: Sequence[str] | None = None,
) -> dict[str, Fit]:
    """Fit every media type present in `reads` (or those named), starting from `defaults`.
    Reads of media types without defaults (unknown tapes) are left out."""
    prepared = prepare_reads(reads, mounts)
    present = sorted(set(prepared["media_type"].unique().to_list()) & set(defaults))
    wanted = list(media) if media else present
    unknown = [m for m in wanted if m not in defaults]
    if unknown:
        raise InputError(
            f"unknown media type(s) {', '.join(unknown)}; known: {', '.join(defaults)}"
        )
    has_media = "media_type" in mounts.columns
    fits = {}
    for name in wanted:
        own = prepared.filter(pl.col("media_type") == name)
        own_mounts = mounts.filter(pl.col("media_type") == name) if has_media else mounts.clear()
        fits[name] = calibrate_media(own, own_mounts, defaults[name])
    return fits


def refusal(fit: Fit, min_reads: int, min_mounts: int) -> str | None:
    """Why a fit must not replace stored parameters, or None when it has enough data."""
    short = []
    if fit.n_reads < min_reads:
        short.append(f"{fit.n_reads} reads (need {min_reads})")
    if fit.n_mounts < min_mounts:
        short.append(f"{fit.n_mounts} mounts (need {min_mounts})")
    if not short:
        return None
    return f"{fit.media_type}: fit on too little data, {' and '.join(short)}"


def decide(
    fit: Fit, min_reads: int, min_mounts: int, force: bool, kept: str = "the defaults"
) -> tuple[bool, str | None]:
    """(store it?, why not / what was overridden). `kept` names what stays in use on refusal."""
    reason = refusal(fit, min_reads, min_mounts)
    if reason is None:
        return True, None
    if force:
        return True, f"{reason}; stored anyway (--force)"
    return False, f"{reason}; keeping {kept} (--force stores it anyway)"
