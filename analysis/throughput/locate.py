"""Fitting the locate curves: between files, and from the load point to a mount's first file.

Both are lines in the distance (whole tapes) with a shared bound: locate = min(base + slope x
distance, bound). First locates reach far along the tape and pin the bound that short
between-file locates cannot. Robust (soft-L1) fits of log residuals, like the rest of the
calibration (analysis/throughput/calibrate.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import polars as pl
from scipy.optimize import least_squares, nnls

from tapelens.analysis.geometry import GEOMETRIES
from tapelens.analysis.geometry.place import start_address
from tapelens.analysis.throughput.model import MB, ModelParams
from tapelens.analysis.throughput.moves import TERM_FACTORS, move_s, term_features

Vector = np.ndarray
Residuals = Callable[[Vector], Vector]

# Below this many points a sub-fit keeps the default parameters (too few to fit 2-3 values).
MIN_FIT_READS = 10
# The geometry's locate terms are fitted from this many locates with known places, each term
# from the locates that pay it when at least MIN_TERM_READS do.
MIN_TERMS_FIT_READS = 200
MIN_TERM_READS = 20
# No locate takes longer than this (a generous bound: a full-length LTO or 3592 locate takes
# about two minutes, vendor datasheets). It keeps a locate curve from posing as a read-through.
LOCATE_BOUND_S = 600.0
# First reads must spread over at least this share of the tape (10th to 90th percentile) for
# the first-locate line to be fitted rather than scaled.
MIN_FIRST_SPREAD = 0.2
# Fits minimise a soft-L1 loss of log residuals (log predicted - log observed): noise on tape
# times is multiplicative, and errors beyond ~10% count linearly, not squared (outliers).
ROBUST_SCALE = 0.1
# Durations and predictions below this are taken as this, to keep logarithms finite.
TIME_FLOOR_S = 1e-3
# Locate times derived by subtraction can come out near zero from noise; below this they are
# taken as this, so that one of them cannot dominate a log-residual fit.
LOCATE_FLOOR_S = 1.0


def robust_fit(
    fun: Residuals,
    jac: Callable[[Vector], Vector],
    x0: Sequence[float],
    lower: Sequence[float],
    upper: Sequence[float],
) -> Vector:
    """Bounded soft-L1 least squares; returns the parameters."""
    lo, hi = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
    start = np.clip(np.asarray(x0, dtype=float), lo, hi)
    result = least_squares(
        fun, start, jac=jac, bounds=(lo, hi), loss="soft_l1", f_scale=ROBUST_SCALE
    )
    return np.asarray(result.x, dtype=float)


def fit_locate(
    distance: Vector, locate_s: Vector, start: ModelParams
) -> tuple[float, float, float]:
    """(base_s, slope_s, max_s) of locate = min(base + slope x distance, max), distance in tapes."""
    obs = np.maximum(locate_s, 0.0)
    log_obs = np.log(np.maximum(obs, LOCATE_FLOOR_S))

    def predicted(p: Vector) -> Vector:
        return np.maximum(np.minimum(p[0] + p[1] * distance, p[2]), TIME_FLOOR_S)

    def fun(p: Vector) -> Vector:
        return np.log(predicted(p)) - log_obs

    def jac(p: Vector) -> Vector:
        below = (p[0] + p[1] * distance) < p[2]
        inv = 1 / predicted(p)
        return np.column_stack([below * inv, below * distance * inv, ~below * inv])

    cap0 = float(np.quantile(obs, 0.95)) if obs.size else start.locate_max_s
    x = robust_fit(
        fun,
        jac,
        [start.locate_base_s, start.locate_slope_s, max(cap0, start.locate_base_s)],
        [0.0, 0.0, 0.0],
        [LOCATE_BOUND_S] * 3,
    )
    base, slope, cap = (float(v) for v in x)
    return base, slope, min(cap, base + slope)


@dataclass(frozen=True)
class Locates:
    """Observed locate times and their distance (in whole tapes; for a first read, from the
    load point to the file)."""

    distance: Vector
    observed_s: Vector

    @property
    def spread(self) -> float:
        """Spread of the known distances (10th to 90th percentile); 0 with too few of them."""
        known = self.distance[~np.isnan(self.distance)]
        if known.size < MIN_FIT_READS:
            return 0.0
        return float(np.ptp(np.quantile(known, [0.1, 0.9])))

    def known(self) -> Locates:
        keep = ~np.isnan(self.distance)
        return Locates(self.distance[keep], self.observed_s[keep])


def locate_observations(
    frame: pl.DataFrame, params: ModelParams, avg_object_bytes: float
) -> tuple[Locates, Locates]:
    """(between-file locates, first locates) with the fitted overhead and streaming removed;
    a logged locate_s is used as it is."""

    def own(reads: pl.DataFrame) -> Vector:
        rest = (
            reads["observed_s"] - params.overhead_s - reads["size_bytes"] / (params.rate_mb_s * MB)
        )
        if "locate_s" in reads.columns:
            rest = reads["locate_s"].fill_null(rest)
        return np.maximum(rest.to_numpy(), 0.0)

    far = (pl.col("gap") > params.read_through_max_gap) | (pl.col("gap") < 0)
    between = frame.filter(far)
    place = start_address(frame.columns, avg_object_bytes)
    first = frame.filter(pl.col("gap").is_null()).with_columns(
        (place / params.capacity_bytes).clip(0.0, 1.0).alias("_place")
    )
    return (
        Locates(
            np.clip(np.abs(between["_skipped"].to_numpy()) / params.capacity_bytes, 0, 1),
            own(between),
        ),
        Locates(first["_place"].fill_null(np.nan).to_numpy().astype(float), own(first)),
    )


def fit_locates(
    between: Locates, first: Locates, params: ModelParams
) -> tuple[ModelParams, list[str]]:
    """Both locate lines and their shared bound in one robust fit: the first locates of mounts
    reach far along the tape and pin the bound that short between-file locates cannot."""
    notes = []
    fit_between = between.distance.size >= MIN_FIT_READS
    fit_first = first.spread >= MIN_FIRST_SPREAD
    placed = first.known()
    if not fit_between:
        notes.append(f"locate curve: default ({between.distance.size} locate reads)")
    full = np.array(
        [
            params.locate_base_s,
            params.locate_slope_s,
            params.first_locate_base_s,
            params.first_locate_slope_s,
            params.locate_max_s,
        ]
    )
    free = np.array([fit_between, fit_between, fit_first, fit_first, fit_between or fit_first])
    d = np.concatenate(
        [between.distance if fit_between else [], placed.distance if fit_first else []]
    )
    obs = np.concatenate(
        [between.observed_s if fit_between else [], placed.observed_s if fit_first else []]
    )
    is_first = np.arange(d.size) >= (between.distance.size if fit_between else 0)
    log_obs = np.log(np.maximum(obs, LOCATE_FLOOR_S))

    def expand(x: Vector) -> Vector:
        values = full.copy()
        values[free] = x
        return values

    def line(p: Vector) -> Vector:
        return np.where(is_first, p[2] + p[3] * d, p[0] + p[1] * d)

    def fun(x: Vector) -> Vector:
        p = expand(x)
        return np.log(np.maximum(np.minimum(line(p), p[4]), TIME_FLOOR_S)) - log_obs

    def jac(x: Vector) -> Vector:
        p = expand(x)
        below = line(p) < p[4]
        inv = 1 / np.maximum(np.minimum(line(p), p[4]), TIME_FLOOR_S)
        cols = [
            below * ~is_first * inv,
            below * ~is_first * d * inv,
            below * is_first * inv,
            below * is_first * d * inv,
            ~below * inv,
        ]
        return np.column_stack([c for c, f in zip(cols, free, strict=True) if f])

    if d.size:
        start = full.copy()
        start[4] = max(float(np.quantile(obs, 0.95)), start[0], start[2])
        full = expand(
            robust_fit(
                fun, jac, start[free], [0.0] * int(free.sum()), [LOCATE_BOUND_S] * int(free.sum())
            )
        )
    base, slope, first_base, first_slope, cap = (float(v) for v in full)
    reach = max(base + slope, first_base + first_slope)
    capped = int((np.maximum(line(full), 0) >= cap).sum()) if d.size else 0
    if capped < MIN_FIT_READS:
        if d.size:
            notes.append("locate bound: not reached by the data, set to a full-tape locate")
        cap = reach
    if not fit_first and first.observed_s.size >= MIN_FIT_READS:
        place = np.where(np.isnan(first.distance), 0.5, first.distance)
        default = np.minimum(first_base + first_slope * place, cap)
        factor = float(np.median(first.observed_s) / max(float(np.median(default)), 1e-9))
        first_base, first_slope = first_base * factor, first_slope * factor
        notes.append("first locate: default shape scaled to the observed median (places too alike)")
    elif not fit_first:
        notes.append(f"first locate: default ({first.observed_s.size} first reads)")
    return (
        replace(
            params,
            locate_base_s=base,
            locate_slope_s=slope,
            first_locate_base_s=first_base,
            first_locate_slope_s=first_slope,
            locate_max_s=min(cap, reach),
        ),
        notes,
    )


def _located(
    frame: pl.DataFrame, params: ModelParams, avg_object_bytes: float
) -> pl.DataFrame | None:
    """Per observed read: located (a locate between files, or first on its mount, with a
    known place), start (its address), prev_end (where the previous read left the head, null
    for a first read), gap. None when the reads have no places."""
    if "position" not in frame.columns and "start_bytes" not in frame.columns:
        return None
    avg = float(avg_object_bytes)
    # Without byte addresses the previous read ended (gap - 1) objects before this one.
    estimated = start_address([c for c in frame.columns if c != "start_bytes"], avg)
    prev_end = estimated - (pl.col("gap") - 1).cast(pl.Float64) * avg
    address = start_address(frame.columns, avg)
    if "start_bytes" in frame.columns and "gap_bytes" in frame.columns:
        exact = pl.col("start_bytes").cast(pl.Float64) - pl.col("gap_bytes").cast(pl.Float64)
        prev_end = pl.coalesce(exact, prev_end)
    far = (pl.col("gap") > params.read_through_max_gap) | (pl.col("gap") < 0)
    return frame.select(
        ((far | pl.col("gap").is_null()) & address.is_not_null()).alias("located"),
        address.alias("start"),
        pl.when(pl.col("gap").is_null()).then(None).otherwise(prev_end).alias("prev_end"),
        pl.col("gap").cast(pl.Float64),
    )


def geometry_positioning(
    frame: pl.DataFrame, params: ModelParams, avg_object_bytes: float
) -> pl.Series | None:
    """Per observed read (gap, and position or start_bytes; gap_bytes where known): what the
    one price of a move (moves.move_s) charges its positioning before `locate_scale`, for reads
    reached by a locate (gap beyond the read-through threshold, or backwards) or first on
    their mount, where the read's place is known; null for the others. None when the media
    type has no geometry or the reads have no places."""
    if params.media_type not in GEOMETRIES:
        return None
    places = _located(frame, params, avg_object_bytes)
    if places is None:
        return None
    priced = move_s(
        replace(params, locate_scale=1.0),
        places["prev_end"].fill_null(np.nan).to_numpy(),
        places["start"].fill_null(np.nan).to_numpy(),
        places["gap"].fill_null(np.nan).to_numpy(),
    )
    usable = places["located"].to_numpy()
    return pl.Series("geometry_positioning_s", np.where(usable, priced, np.nan)).fill_nan(None)


def _own_positioning(frame: pl.DataFrame, params: ModelParams) -> pl.Series:
    """Each read's observed positioning: a logged positioning time where the log has one,
    else its duration less the fitted overhead and streaming."""
    own = pl.col("observed_s") - params.overhead_s - pl.col("size_bytes") / (params.rate_mb_s * MB)
    if "locate_s" in frame.columns:
        own = pl.coalesce(pl.col("locate_s"), own)
    return frame.select(own.alias("own")).to_series()


def fit_locate_terms(
    frame: pl.DataFrame, params: ModelParams, avg_object_bytes: float
) -> tuple[ModelParams, list[str]]:
    """Factors of the geometry's locate terms (fixed part, travel, wrap change, band change,
    change of direction, step back) fitted to the site's locates whose places are known: non-
    negative least squares of the observed positioning on the terms each locate pays, refitted
    once without the reads it explains worst (reads that waited on something else). A term
    that fewer than MIN_TERM_READS locates pay keeps factor 1; with fewer than
    MIN_TERMS_FIT_READS locates all keep 1."""
    shape = GEOMETRIES.get(params.media_type)
    if shape is None:
        return params, []
    places = _located(frame, params, avg_object_bytes)
    if places is None:
        return params, ["locate terms: default (reads without positions)"]
    own = _own_positioning(frame, params).cast(pl.Float64).fill_null(np.nan).to_numpy()
    keep = places["located"].to_numpy() & ~np.isnan(own)
    if int(keep.sum()) < MIN_TERMS_FIT_READS:
        return params, [f"locate terms: default ({int(keep.sum())} locates with known places)"]
    x = term_features(
        shape,
        places["prev_end"].fill_null(np.nan).to_numpy()[keep],
        places["start"].fill_null(np.nan).to_numpy()[keep],
    )
    y = np.maximum(own[keep], 0.0)
    free = (x > 0).sum(axis=0) >= MIN_TERM_READS
    free[0] = True  # every locate pays the fixed part
    fixed = x[:, ~free].sum(axis=1)
    factors = np.ones(x.shape[1])
    use = np.ones(len(y), dtype=bool)
    for _ in range(2):
        coef, _ = nnls(x[use][:, free], y[use] - fixed[use])
        factors[free] = coef
        residual = np.abs(x @ factors - y)
        use = residual <= max(3.0 * float(np.median(residual)), LOCATE_FLOOR_S)
    notes = []
    if not free.all():
        named = ", ".join(n for n, f in zip(TERM_FACTORS, free, strict=True) if not f)
        notes.append(f"locate terms: {named} default (too few locates pay them)")
    base, travel, wrap, band, direction, back = (float(f) for f in factors)
    return (
        replace(
            params,
            locate_base_factor=base,
            locate_travel_factor=travel,
            wrap_change_factor=wrap,
            band_change_factor=band,
            direction_change_factor=direction,
            step_back_factor=back,
        ),
        notes,
    )


def fit_locate_scale(
    frame: pl.DataFrame, params: ModelParams, avg_object_bytes: float
) -> tuple[ModelParams, list[str]]:
    """The factor by which the site's own positioning times differ from what the one price of
    a move charges them before the scale (geometry_positioning, with the fitted term factors):
    the median ratio, in logs, over the locates between files and the first reads of mounts
    whose places are known. Media types without a geometry keep 1."""
    if params.media_type not in GEOMETRIES:
        return params, []
    priced = geometry_positioning(frame, params, avg_object_bytes)
    if priced is None:
        return params, ["locate scale: default (reads without positions)"]
    picked = pl.DataFrame({"own": _own_positioning(frame, params), "priced": priced})
    picked = picked.filter(pl.col("priced").is_not_null() & pl.col("own").is_not_null())
    if picked.height < MIN_FIT_READS:
        return params, [f"locate scale: default ({picked.height} locates with known places)"]
    observed = np.maximum(picked["own"].to_numpy(), LOCATE_FLOOR_S)
    ratio = np.log(observed) - np.log(np.maximum(picked["priced"].to_numpy(), LOCATE_FLOOR_S))
    return replace(params, locate_scale=float(np.exp(np.median(ratio)))), []
