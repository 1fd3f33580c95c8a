"""The one price of a move on a tape: what taking the head from where one read ended to where
the next one starts costs, in seconds.

Every user of the throughput model prices moves here: the engine's position order and RAO,
their baselines and bounds, the copy choice's costs, `predict`, direct submission, the
simulator, and the repack, duplicate and what-if figures that run through the engine. The rule:

- the first read of a mount: a locate from the load point;
- a read 1 to `read_through_max_gap` tape objects after the previous one: read through, the
  bytes in between streamed at the model's rate, plus a turnaround at each wrap end crossed;
- anything else (a larger gap, a step backwards, a gap not known): the tape geometry's move
  (analysis.geometry.locate), with the site's calibration applied: each locate term times its
  fitted factor, all of it times `locate_scale`, streaming at the model's rate
  (`priced_geometry`). Where the position gap is not known the cheaper of streaming on and a
  locate is taken, as the geometry does.

Media types without a geometry keep the model's locate curve (base + slope x distance in whole
tapes, bounded; from the load point, the first-locate line).

A mount ends with a rewind, a move too: from where its last read left the head back to the load
point at the priced geometry's locate speed, plus its fixed part (`rewind_s`). Where that place
is not known, or the media type has no geometry, the media type's average rewind stands in.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from tapelens.analysis.geometry.locate import move_s as geometry_move_s
from tapelens.analysis.geometry.locate import rewind_s as geometry_rewind_s
from tapelens.analysis.geometry.media import GEOMETRIES, MB, Geometry
from tapelens.analysis.geometry.place import place_of

if TYPE_CHECKING:
    from tapelens.analysis.throughput.model import ModelParams

Array = np.ndarray

# The factors calibration fits, one per locate term of the geometry, in the order of
# `term_features`' columns.
TERM_FACTORS = (
    "locate_base_factor",
    "locate_travel_factor",
    "wrap_change_factor",
    "band_change_factor",
    "direction_change_factor",
    "step_back_factor",
)


def priced_geometry(params: ModelParams) -> Geometry | None:
    """The geometry of `params`' media type as moves are priced: each locate term times its
    calibrated factor and `locate_scale`, streaming at the model's (effective) rate; None for a
    media type without a geometry."""
    shape = GEOMETRIES.get(params.media_type)
    if shape is None:
        return None
    s = params.locate_scale
    travel = max(params.locate_travel_factor * s, 1e-9)
    return replace(
        shape,
        rate_mb_s=params.rate_mb_s,
        locate_base_s=shape.locate_base_s * params.locate_base_factor * s,
        locate_speed_m_s=shape.locate_speed_m_s / travel,
        wrap_change_s=shape.wrap_change_s * params.wrap_change_factor * s,
        band_change_s=shape.band_change_s * params.band_change_factor * s,
        direction_change_s=shape.direction_change_s * params.direction_change_factor * s,
        step_back_s=shape.step_back_s * params.step_back_factor * s,
    )


def _head(prev_end_bytes: Array, shape: Geometry) -> tuple[Array, ...]:
    """(bytes, wrap, band, x, direction) of the head after reads ending at `prev_end_bytes`;
    NaN is the load point."""
    fresh = np.isnan(prev_end_bytes)
    a = np.where(fresh, 0.0, prev_end_bytes)
    wrap, band, x, direction = place_of(np.maximum(a - 1.0, 0.0), shape)
    return (
        a,
        np.where(fresh, 0, wrap),
        np.where(fresh, 0, band),
        np.where(fresh, 0.0, x),
        np.where(fresh, 1, direction),
    )


def move_s(
    params: ModelParams,
    prev_end_bytes: Array,
    start_bytes: Array,
    gap_objects: Array | None = None,
    skipped_bytes: Array | None = None,
) -> Array:
    """What moving the head costs, per move: from where the previous read ended
    (`prev_end_bytes`, bytes from the beginning of the tape; NaN for the load point) to where
    the next read starts (`start_bytes`), `gap_objects` tape objects further (NaN or None: not
    known). A read through streams `skipped_bytes` where given (the catalog's count of the
    bytes in between, or an estimate from the objects in between), else the bytes between the
    two addresses. Vectorised; every argument broadcasts."""
    a = np.asarray(prev_end_bytes, dtype=np.float64)
    b = np.asarray(start_bytes, dtype=np.float64)
    a, b = np.broadcast_arrays(a, b)
    gap = (
        np.full(a.shape, np.nan)
        if gap_objects is None
        else np.broadcast_to(np.asarray(gap_objects, dtype=np.float64), a.shape)
    )
    fresh = np.isnan(a)
    through = ~fresh & (gap >= 1) & (gap <= params.read_through_max_gap)
    known = ~np.isnan(gap)
    rate = params.rate_mb_s * MB
    skipped = np.maximum(b - np.where(fresh, 0.0, a), 0.0)
    if skipped_bytes is not None:
        given = np.broadcast_to(np.asarray(skipped_bytes, dtype=np.float64), a.shape)
        skipped = np.where(np.isnan(given), skipped, np.maximum(given, 0.0))
    shape = priced_geometry(params)
    if shape is None:
        first = params.first_locate_base_s + params.first_locate_slope_s * np.clip(
            b / params.capacity_bytes, 0.0, 1.0
        )
        distance = np.clip(np.abs(b - np.where(fresh, 0.0, a)) / params.capacity_bytes, 0.0, 1.0)
        locate = params.locate_base_s + params.locate_slope_s * distance
        moved = np.minimum(np.where(fresh, first, locate), params.locate_max_s)
        ahead = ~fresh & ~known & (b >= a)
        moved = np.where(ahead, np.minimum(moved, skipped / rate), moved)
        return np.where(through, skipped / rate, moved)
    ha, hw, hb, hx, hd = _head(a, shape)
    bw, bb, bx, bd = place_of(b, shape)
    turns = shape.turnaround_s * np.maximum(bw - hw, 0)
    located = geometry_move_s(shape, ha, hw, hb, hx, hd, b, bw, bb, bx, bd, stream=False)
    # Where the gap in objects is known and beyond the read-through threshold, the drive
    # locates: the cheaper of a locate and streaming on (as the geometry prices a move) is
    # only the estimate for moves whose gap is not known.
    ahead = ~fresh & ~known & (b >= ha)
    streamed = (b - ha) / rate + turns
    moved = np.where(ahead, np.minimum(streamed, located), located)
    return np.where(through, skipped / rate + turns, moved)


def from_load_point_s(params: ModelParams, start_bytes: Array) -> Array:
    """The price of the first read's move on a freshly loaded tape."""
    b = np.asarray(start_bytes, dtype=np.float64)
    return move_s(params, np.full(b.shape, np.nan), b)


def least_first_s(params: ModelParams) -> float:
    """The cheapest first move of any mount (to the first byte of the tape): what a bound may
    charge every mount."""
    return float(from_load_point_s(params, np.zeros(1))[0])


def rewind_s(params: ModelParams, end_bytes: Array) -> Array:
    """The price of a mount's final rewind, per mount: from where its last read left the head
    (`end_bytes`, bytes from the beginning of the tape to the end of that read) back to the
    load point, by the priced geometry (its fixed part and locate speed, as the geometry
    prices any rewind). NaN (the place is not known), and media types without a geometry:
    the media type's average rewind, `params.rewind_s`."""
    end = np.asarray(end_bytes, dtype=np.float64)
    shape = priced_geometry(params)
    if shape is None:
        return np.full(end.shape, params.rewind_s)
    unknown = np.isnan(end)
    # The head rests after the last byte read, as _head places it.
    _, _, x, _ = place_of(np.maximum(np.where(unknown, 0.0, end) - 1.0, 0.0), shape)
    return np.where(unknown, params.rewind_s, geometry_rewind_s(x, shape))


def least_rewind_s(params: ModelParams) -> float:
    """The cheapest final rewind of any mount (from the beginning of the data area): what a
    bound may charge every mount."""
    if priced_geometry(params) is None:
        return params.rewind_s
    return float(rewind_s(params, np.ones(1))[0])


def mean_rewind_s(params: ModelParams) -> float:
    """The final rewind of a mount whose last read ends at a place not chosen yet, averaged
    over the length of the data area: what weighing a tape before its reads are known
    charges. Media types without a geometry: their average rewind."""
    shape = priced_geometry(params)
    if shape is None:
        return params.rewind_s
    x = shape.data_start_m + shape.data_length_m / 2
    return float(geometry_rewind_s(x, shape))


def term_features(shape: Geometry, prev_end_bytes: Array, start_bytes: Array) -> Array:
    """Per locate, the unscaled seconds of each of the geometry's locate terms (columns in the
    order of TERM_FACTORS: fixed part, travel, wrap change, band change, change of direction,
    step back): their sum is the geometry's locate; calibration fits a factor per column."""
    a = np.asarray(prev_end_bytes, dtype=np.float64)
    b = np.asarray(start_bytes, dtype=np.float64)
    _, hw, hb, hx, hd = _head(a, shape)
    bw, bb, bx, bd = place_of(b, shape)
    dx = bx - hx
    return np.column_stack(
        [
            np.full(dx.shape, shape.locate_base_s),
            np.abs(dx) / shape.locate_speed_m_s,
            shape.wrap_change_s * (hw != bw),
            shape.band_change_s * (hb != bb),
            shape.direction_change_s * (hd != bd),
            shape.step_back_s * (dx * bd < 0),
        ]
    )


__all__ = [
    "TERM_FACTORS",
    "from_load_point_s",
    "least_first_s",
    "least_rewind_s",
    "mean_rewind_s",
    "move_s",
    "priced_geometry",
    "rewind_s",
    "term_features",
]
