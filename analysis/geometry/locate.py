"""What moving the head between two estimated places costs, in seconds.

From the end of one read (byte a, place A) to the start of the next (byte b, place B) the drive
either streams on (b ahead of a: the bytes in between at the native rate, plus a turnaround at
each wrap end crossed) or locates:

    locate = base + |x_B - x_A| / locate speed
             + wrap change   (wrap_A != wrap_B)
             + band change   (band_A != band_B)
             + direction change (the two wraps run opposite ways)
             + step back     (B lies behind the head in B's own direction: the drive overshoots
                              and comes back to read B in its direction)

and takes the cheaper. The terms are those of CTA's LTO cost heuristic (media.py); the distance
term uses the media's locate speed. The load point is a place too: x = 0, wrap 0, forward, byte 0.
A rewind travels from the head back to the load point at locate speed.

Everything is vectorised over numpy arrays and broadcasts, so one call prices a row (one place to
many), a column or a whole k x k matrix; `gap_s` is the same cost for consecutive reads given by
byte addresses, the form the throughput model can use for the gap between two reads.
"""

from __future__ import annotations

import numpy as np

from tapelens.analysis.geometry.media import MB, Geometry
from tapelens.analysis.geometry.place import Places, place_of

Array = np.ndarray


def move_s(
    geometry: Geometry,
    a_bytes: Array,
    a_wrap: Array,
    a_band: Array,
    a_x: Array,
    a_dir: Array,
    b_bytes: Array,
    b_wrap: Array,
    b_band: Array,
    b_x: Array,
    b_dir: Array,
) -> Array:
    """The cost of moving from places A (where a read ended) to places B (where the next read
    starts); all arguments broadcast against each other."""
    g = geometry
    dx = b_x - a_x
    locate = (
        g.locate_base_s
        + np.abs(dx) / g.locate_speed_m_s
        + g.wrap_change_s * (a_wrap != b_wrap)
        + g.band_change_s * (a_band != b_band)
        + g.direction_change_s * (a_dir != b_dir)
        + g.step_back_s * (dx * b_dir < 0)
    )
    gap = b_bytes - a_bytes
    stream = gap / (g.rate_mb_s * MB) + g.turnaround_s * np.maximum(b_wrap - a_wrap, 0)
    return np.where(gap >= 0, np.minimum(stream, locate), locate)


def between(src: Places, dst: Places, geometry: Geometry) -> Array:
    """Cost matrix: from the end of each object of `src` (rows) to the start of each object of
    `dst` (columns)."""
    return move_s(
        geometry,
        src.end_bytes[:, None],
        src.end_wrap[:, None],
        src.end_band[:, None],
        src.end_x_m[:, None],
        src.end_direction[:, None],
        dst.start_bytes[None, :],
        dst.start_wrap[None, :],
        dst.start_band[None, :],
        dst.start_x_m[None, :],
        dst.start_direction[None, :],
    )


def from_load_point(dst: Places, geometry: Geometry) -> Array:
    """Cost from the load point (a freshly loaded tape) to the start of each object."""
    zero = np.zeros(1, dtype=np.int64)
    return move_s(
        geometry,
        np.zeros(1),
        zero,
        zero,
        np.zeros(1),
        np.ones(1, dtype=np.int64),
        dst.start_bytes,
        dst.start_wrap,
        dst.start_band,
        dst.start_x_m,
        dst.start_direction,
    )


def rewind_s(x_m: Array | float, geometry: Geometry) -> Array:
    """From a longitudinal position back to the load point."""
    return geometry.locate_base_s + np.asarray(x_m, dtype=np.float64) / geometry.locate_speed_m_s


def consecutive(places: Places, order: Array, geometry: Geometry) -> Array:
    """Per read in `order`: the cost of reaching it (from the load point for the first)."""
    idx = np.asarray(order, dtype=np.int64)
    if len(idx) == 0:
        return np.zeros(0)
    p = places.take(idx)
    first = from_load_point(p.take(np.arange(1)), geometry)
    rest = move_s(
        geometry,
        p.end_bytes[:-1],
        p.end_wrap[:-1],
        p.end_band[:-1],
        p.end_x_m[:-1],
        p.end_direction[:-1],
        p.start_bytes[1:],
        p.start_wrap[1:],
        p.start_band[1:],
        p.start_x_m[1:],
        p.start_direction[1:],
    )
    return np.concatenate((first, rest))


def gap_s(prev_end_bytes: Array, next_start_bytes: Array, geometry: Geometry) -> Array:
    """The cost of the gap between consecutive reads on one tape, given where the previous read
    ended and the next one starts (bytes from the beginning of the tape; a null previous end,
    NaN, is the load point). For the throughput model's positioning time."""
    a = np.asarray(prev_end_bytes, dtype=np.float64)
    b = np.asarray(next_start_bytes, dtype=np.float64)
    fresh = np.isnan(a)
    a_safe = np.where(fresh, 0.0, a)
    aw, ab, ax, ad = place_of(np.maximum(a_safe - 1.0, 0.0), geometry)
    ax = np.where(fresh, 0.0, ax)
    ad = np.where(fresh, 1, ad)
    bw, bb, bx, bd = place_of(b, geometry)
    return move_s(geometry, a_safe, aw, ab, ax, ad, b, bw, bb, bx, bd)


__all__ = ["between", "consecutive", "from_load_point", "gap_s", "move_s", "rewind_s"]
