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
# A place's coordinates: arrays, or one place's plain numbers.
Coordinate = np.ndarray | float | int

# Rows of a cost matrix computed at once: the temporaries of one block stay near 100 MB at
# 10,000 columns.
BLOCK_ROWS = 256


def move_s(
    geometry: Geometry,
    a_bytes: Coordinate,
    a_wrap: Coordinate,
    a_band: Coordinate,
    a_x: Coordinate,
    a_dir: Coordinate,
    b_bytes: Coordinate,
    b_wrap: Coordinate,
    b_band: Coordinate,
    b_x: Coordinate,
    b_dir: Coordinate,
    *,
    stream: bool = True,
) -> Array:
    """The cost of moving from places A (where a read ended) to places B (where the next read
    starts); all arguments broadcast against each other. Without `stream`, always a locate
    (the drive does not read through: the gap in objects is beyond the read-through
    threshold)."""
    g = geometry
    dx = np.subtract(b_x, a_x)
    locate = (
        g.locate_base_s
        + np.abs(dx) / g.locate_speed_m_s
        + g.wrap_change_s * np.not_equal(a_wrap, b_wrap)
        + g.band_change_s * np.not_equal(a_band, b_band)
        + g.direction_change_s * np.not_equal(a_dir, b_dir)
        + g.step_back_s * (dx * b_dir < 0)
    )
    if not stream:
        return np.asarray(locate, dtype=np.float64)
    gap = np.subtract(b_bytes, a_bytes)
    crossed = np.maximum(np.subtract(b_wrap, a_wrap), 0)
    streamed = gap / (g.rate_mb_s * MB) + g.turnaround_s * crossed
    return np.where(gap >= 0, np.minimum(streamed, locate), locate)


def between(
    src: Places,
    dst: Places,
    geometry: Geometry,
    *,
    dtype: type[np.floating] = np.float64,
    block_rows: int = BLOCK_ROWS,
) -> Array:
    """Cost matrix: from the end of each object of `src` (rows) to the start of each object of
    `dst` (columns), the same costs as move_s. dtype=np.float32 halves the result (10,000 x
    10,000: 400 MB) and the work.

    The wrap, band and direction terms depend on the pair of wraps alone and come from a
    wraps x wraps table; streaming can only beat a locate for targets less than the longest
    locate's worth of bytes ahead, found by bisection in byte order, so it is priced for those
    pairs only. Rows are done a block at a time so that temporaries stay small."""
    g = geometry
    out = np.empty((len(src), len(dst)), dtype=dtype)
    if out.size == 0:
        return out
    wraps = np.arange(g.wraps)
    band = np.minimum(wraps // g.wraps_per_band, g.bands - 1)
    table = (
        g.locate_base_s
        + g.wrap_change_s * (wraps[:, None] != wraps[None, :])
        + g.band_change_s * (band[:, None] != band[None, :])
        + g.direction_change_s * ((wraps[:, None] % 2) != (wraps[None, :] % 2))
    ).astype(dtype)
    by_target_wrap = table[:, dst.start_wrap]  # (wraps, columns)
    bx = dst.start_x_m.astype(dtype)
    bd = dst.start_direction.astype(dtype)
    inv_v = dtype(1.0 / g.locate_speed_m_s)
    for lo in range(0, len(src), block_rows):
        view = out[lo : lo + block_rows]
        dx = bx[None, :] - src.end_x_m[lo : lo + block_rows, None].astype(dtype)
        behind = (dx * bd[None, :]) < 0
        np.abs(dx, out=dx)
        np.multiply(dx, inv_v, out=view)
        view += by_target_wrap[src.end_wrap[lo : lo + block_rows]]
        view += behind * dtype(g.step_back_s)
    # Streaming: only targets ahead by less than the longest possible locate's worth of bytes.
    rate = g.rate_mb_s * MB
    longest = float(out.max()) if out.size else 0.0
    order = np.argsort(dst.start_bytes, kind="stable")
    starts = dst.start_bytes[order]
    lo_col = np.searchsorted(starts, src.end_bytes, "left")
    hi_col = np.searchsorted(starts, src.end_bytes + longest * rate, "right")
    for i in np.flatnonzero(hi_col > lo_col).tolist():
        cols = order[lo_col[i] : hi_col[i]]
        gap = dst.start_bytes[cols] - src.end_bytes[i]
        crossed = np.maximum(dst.start_wrap[cols] - src.end_wrap[i], 0)
        stream = gap / rate + g.turnaround_s * crossed
        out[i, cols] = np.minimum(out[i, cols], stream)
    return out


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
