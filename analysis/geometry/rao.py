"""Recommended access order (RAO): the read order on one mounted tape that minimises the time
from the loaded tape to the rewound tape, by the locate costs of locate.py.

- k <= EXACT_MAX objects: exact, by dynamic programming over subsets (Held-Karp), O(2^k k^2).
- larger sets: greedy shortest-locate-time-first from the load point (each next read is the
  cheapest to reach from where the head is), the candidates taken from a window of longitudinal
  positions around the head that widens until nothing outside it can be cheaper (so the choice
  is the one a full scan would make); then or-opt, moving segments of 1-3 consecutive reads to
  a cheaper place among their longitudinal neighbours, worst-placed reads first, until no move
  improves or the time budget is spent. If the greedy pass itself runs out of budget (tapes with
  very many wanted objects) the reads not yet placed follow in position order: the denser the
  wanted objects, the more of them the drive streams through in that order anyway.
- whatever the method, position order (bytes on the tape, the order the engine reads in without
  RAO) and a serpentine sweep (forward wraps' reads by increasing place along the tape, then
  backward wraps' reads by decreasing place) are costed too and the cheapest order is returned:
  RAO is never slower than position order by the same cost function.

An object is what the drive locates to: a file, or a small-file aggregate with the members wanted
from it (`order_reads` groups members so that they stay together, read by offset).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import polars as pl

from tapelens.analysis.geometry.locate import consecutive, from_load_point, move_s, rewind_s
from tapelens.analysis.geometry.media import MB, Geometry
from tapelens.analysis.geometry.media import geometry as as_geometry
from tapelens.analysis.geometry.place import Places, places, start_bytes_from_positions

Array = np.ndarray

# Sets up to this size are ordered exactly (12 objects: 4,096 subsets, a few tens of ms).
EXACT_MAX = 12
# Default time budget for one tape's order: the greedy pass and the improvement step together.
BUDGET_S = 1.5
# The greedy pass looks first at a window holding about this many objects around the head.
WINDOW_OBJECTS = 256
# Or-opt tries to put a segment next to this many neighbours on each side, by longitudinal place
# among reads of the same direction.
NEIGHBOURS = 6
SEGMENT_MAX = 3
EPS_S = 1e-9


@dataclass(frozen=True)
class Ordered:
    """An order for the objects of one mount and what it costs (seconds from the loaded tape to
    the rewound tape: positioning, streaming the objects, the final rewind)."""

    order: Array  # indices into the places, in read order
    total_s: float
    position_s: float  # the same objects in position (byte) order
    method: str  # exact | greedy | greedy+or-opt | sweep | position

    @property
    def saving(self) -> float:
        """Share of the position order's time saved."""
        return 1 - self.total_s / self.position_s if self.position_s > 0 else 0.0


def path_s(p: Places, order: Array, geometry: Geometry | str, *, rewind: bool = True) -> float:
    """Time of reading the objects in `order` from the loaded tape: positioning before each,
    streaming each, and (rewind=True) the rewind after the last. `geometry`: a Geometry or a
    media type's name (also for the functions below)."""
    geometry = as_geometry(geometry)
    idx = np.asarray(order, dtype=np.int64)
    if len(idx) == 0:
        return 0.0
    total = float(consecutive(p, idx, geometry).sum())
    total += float(((p.end_bytes - p.start_bytes) / (geometry.rate_mb_s * MB)).sum())
    if rewind:
        total += float(rewind_s(p.end_x_m[idx[-1]], geometry))
    return total


def position_order(p: Places) -> Array:
    """Position order: by the byte where each object starts (ties keep their order)."""
    return np.argsort(p.start_bytes, kind="stable")


def position_order_cost(p: Places, geometry: Geometry | str, *, rewind: bool = True) -> float:
    """path_s of position order."""
    return path_s(p, position_order(p), geometry, rewind=rewind)


def sweep_order(p: Places) -> Array:
    """Forward wraps' objects by increasing place along the tape, then backward wraps' by
    decreasing place: two passes of the tape, each object approached in its own direction."""
    forward = p.start_direction > 0
    key = np.where(forward, p.start_x_m, 2 * p.start_x_m.max(initial=0.0) + 1 - p.start_x_m)
    return np.lexsort((p.start_bytes, key, ~forward))


def order(
    p: Places, geometry: Geometry | str, *, budget_s: float = BUDGET_S, rewind: bool = True
) -> tuple[Array, float]:
    """(indices in read order, total seconds): the best order found within the budget, never
    slower than position order."""
    result = plan_order(p, geometry, budget_s=budget_s, rewind=rewind)
    return result.order, result.total_s


def plan_order(
    p: Places,
    geometry: Geometry | str,
    *,
    budget_s: float = BUDGET_S,
    rewind: bool = True,
    exact_max: int = EXACT_MAX,
) -> Ordered:
    """The order, its time, position order's time and the method that won."""
    geometry = as_geometry(geometry)
    deadline = time.perf_counter() + budget_s
    n = len(p)
    by_position = position_order(p)
    position_s = path_s(p, by_position, geometry, rewind=rewind)
    candidates: list[tuple[str, Array]] = [("position", by_position)]
    if 1 < n <= exact_max:
        candidates.append(("exact", exact_order(p, geometry, rewind=rewind)))
    elif n > exact_max:
        candidates.append(("sweep", sweep_order(p)))
        greedy, complete = greedy_order(p, geometry, deadline, fallback=by_position)
        improved, moves = or_opt(p, geometry, greedy, deadline, rewind=rewind)
        method = ("greedy" if complete else "greedy+position") + ("+or-opt" if moves else "")
        candidates.append((method, improved))
    best_method, best = candidates[0]
    best_s = position_s
    for method, candidate in candidates[1:]:
        cost = path_s(p, candidate, geometry, rewind=rewind)
        if cost < best_s - EPS_S:
            best_method, best, best_s = method, candidate, cost
    return Ordered(np.asarray(best, dtype=np.int64), best_s, position_s, best_method)


# -- exact ---------------------------------------------------------------------------------------


def cost_matrix(p: Places, geometry: Geometry, *, rewind: bool = True) -> Array:
    """(n + 1) x (n + 1) costs with node n the load point: C[i, j] from the end of i to the start
    of j plus streaming j; C[n, j] from the load point; C[i, n] the rewind (0 without)."""
    from tapelens.analysis.geometry.locate import between

    n = len(p)
    stream = (p.end_bytes - p.start_bytes) / (geometry.rate_mb_s * MB)
    c = np.zeros((n + 1, n + 1))
    c[:n, :n] = between(p, p, geometry) + stream[None, :]
    c[n, :n] = from_load_point(p, geometry) + stream
    c[:n, n] = rewind_s(p.end_x_m, geometry) if rewind else 0.0
    np.fill_diagonal(c, np.inf)
    return c


def exact_order(p: Places, geometry: Geometry, *, rewind: bool = True) -> Array:
    """The optimal order by Held-Karp dynamic programming (use for small sets only)."""
    n = len(p)
    if n <= 1:
        return np.arange(n, dtype=np.int64)
    c = cost_matrix(p, geometry, rewind=rewind)
    full = 1 << n
    dp = np.full((full, n), np.inf)
    parent = np.full((full, n), -1, dtype=np.int64)
    for j in range(n):
        dp[1 << j, j] = c[n, j]
    bits = 1 << np.arange(n)
    for mask in range(1, full):
        members = np.flatnonzero(mask & bits).tolist()
        if len(members) < 2:
            continue
        for j in members:
            prev = mask ^ (1 << j)
            options = dp[prev] + c[:n, j]
            i = int(np.argmin(options))
            dp[mask, j] = options[i]
            parent[mask, j] = i
    last = int(np.argmin(dp[full - 1] + c[:n, n]))
    route = [last]
    mask = full - 1
    while True:
        prev = int(parent[mask, route[-1]])
        if prev < 0:
            break
        mask ^= 1 << route[-1]
        route.append(prev)
    return np.asarray(route[::-1], dtype=np.int64)


# -- greedy shortest-locate-time-first -----------------------------------------------------------


def greedy_order(
    p: Places, geometry: Geometry, deadline: float, *, fallback: Array | None = None
) -> tuple[Array, bool]:
    """Shortest locate time first from the load point: (order, completed within the deadline).
    Past the deadline the objects not yet placed follow `fallback` (default: position order)."""
    g = geometry
    n = len(p)
    by_x = np.argsort(p.start_x_m, kind="stable")
    xs = p.start_x_m[by_x]
    taken = np.zeros(n, dtype=bool)
    route = np.empty(n, dtype=np.int64)
    sb, sw, sband, sx, sd = (
        p.start_bytes,
        p.start_wrap,
        p.start_band,
        p.start_x_m,
        p.start_direction,
    )
    head = (0.0, 0, 0, 0.0, 1)  # the load point: byte, wrap, band, x, direction
    span = g.tape_length_m
    v, vs, base = g.locate_speed_m_s, g.stream_speed_m_s, g.locate_base_s
    for step in range(n):
        if step % 64 == 0 and time.perf_counter() > deadline:
            rest = fallback if fallback is not None else position_order(p)
            rest = rest[~taken[rest]]
            route[step:] = rest
            return route, False
        remaining = n - step
        w = span * WINDOW_OBJECTS / (2 * remaining)
        while True:
            lo = int(np.searchsorted(xs, head[3] - w, "left"))
            hi = int(np.searchsorted(xs, head[3] + w, "right"))
            cand = by_x[lo:hi]
            cand = cand[~taken[cand]]
            whole = lo == 0 and hi == n
            if len(cand):
                costs = move_s(g, *head, sb[cand], sw[cand], sband[cand], sx[cand], sd[cand])
                k = int(np.argmin(costs))
                best = float(costs[k])
                # Anything outside the window travels more than w metres: by locate or by stream.
                if whole or best <= min(base + w / v, w / vs):
                    break
                w = max(2 * w, (best - base) * v, best * vs)
            else:
                w *= 2
        j = int(cand[k])
        taken[j] = True
        route[step] = j
        head = (
            float(p.end_bytes[j]),
            int(p.end_wrap[j]),
            int(p.end_band[j]),
            float(p.end_x_m[j]),
            int(p.end_direction[j]),
        )
    return route, True


# -- or-opt --------------------------------------------------------------------------------------


def _scalar_cost(p: Places, geometry: Geometry, rewind: bool) -> Callable[[int, int], float]:
    """cost(i, j) for one pair, node len(p) the load point; plain Python for the local search."""
    g = geometry
    n = len(p)
    eb, ew, eband, ex, ed = (
        p.end_bytes.tolist(),
        p.end_wrap.tolist(),
        p.end_band.tolist(),
        p.end_x_m.tolist(),
        p.end_direction.tolist(),
    )
    sb, sw, sband, sx, sd = (
        p.start_bytes.tolist(),
        p.start_wrap.tolist(),
        p.start_band.tolist(),
        p.start_x_m.tolist(),
        p.start_direction.tolist(),
    )
    eb.append(0.0), ew.append(0), eband.append(0), ex.append(0.0), ed.append(1)
    rate = g.rate_mb_s * MB
    v, base = g.locate_speed_m_s, g.locate_base_s
    wc, bc, dc, sc, tc = (
        g.wrap_change_s,
        g.band_change_s,
        g.direction_change_s,
        g.step_back_s,
        g.turnaround_s,
    )

    def cost(i: int, j: int) -> float:
        if j == n:
            return base + ex[i] / v if rewind else 0.0
        dx = sx[j] - ex[i]
        t = base + (dx if dx >= 0 else -dx) / v
        if ew[i] != sw[j]:
            t += wc
        if eband[i] != sband[j]:
            t += bc
        if ed[i] != sd[j]:
            t += dc
        if dx * sd[j] < 0:
            t += sc
        gap = sb[j] - eb[i]
        if gap >= 0:
            s = gap / rate + tc * max(sw[j] - ew[i], 0)
            if s < t:
                return s
        return t

    return cost


def or_opt(
    p: Places, geometry: Geometry, route: Array, deadline: float, *, rewind: bool = True
) -> tuple[Array, int]:
    """Improve `route` by moving segments of 1..SEGMENT_MAX consecutive reads next to one of
    their longitudinal neighbours, while that saves time and the deadline allows: (route, moves
    made)."""
    n = len(route)
    if n < 3 or time.perf_counter() > deadline:
        return route, 0
    cost = _scalar_cost(p, geometry, rewind)
    depot = n
    seq = [depot, *route.tolist()]
    nxt = [0] * (n + 1)
    prv = [0] * (n + 1)
    for a, b in zip(seq, seq[1:] + [depot], strict=True):
        nxt[a], prv[b] = b, a
    sweep = sweep_order(p).tolist()
    rank = [0] * n
    for r, node in enumerate(sweep):
        rank[node] = r
    moves = 0
    improved = True
    while improved and time.perf_counter() < deadline:
        improved = False
        # Worst-placed reads first: the largest cost of the edges around them.
        around = np.array([cost(prv[u], u) + cost(u, nxt[u]) for u in range(n)])
        for count, u in enumerate(np.argsort(-around, kind="stable").tolist()):
            if count % 32 == 0 and time.perf_counter() > deadline:
                break
            neighbours = [
                sweep[r]
                for r in range(max(rank[u] - NEIGHBOURS, 0), min(rank[u] + NEIGHBOURS + 1, n))
                if sweep[r] != u
            ]
            segment = [u]
            for _ in range(SEGMENT_MAX):
                v = segment[-1]
                a0, b0 = prv[u], nxt[v]
                removed = cost(a0, u) + cost(v, b0) - cost(a0, b0)
                if removed > EPS_S and _reinsert(
                    cost, nxt, prv, segment, a0, b0, removed, neighbours
                ):
                    moves += 1
                    improved = True
                    break
                if b0 == depot:
                    break
                segment.append(b0)
    out = np.empty(n, dtype=np.int64)
    node = nxt[depot]
    for i in range(n):
        out[i] = node
        node = nxt[node]
    return out, moves


def _reinsert(
    cost: Callable[[int, int], float],
    nxt: list[int],
    prv: list[int],
    segment: list[int],
    a0: int,
    b0: int,
    removed: float,
    neighbours: list[int],
) -> bool:
    """Move `segment` (linked between a0 and b0) between a neighbour and its successor or
    predecessor where that costs less than `removed`; True if moved."""
    u, v = segment[0], segment[-1]
    inside = set(segment)
    for c in neighbours:
        if c in inside:
            continue
        for x, y in ((c, nxt[c]), (prv[c], c)):
            if x in inside or y in inside:
                continue
            added = cost(x, u) + cost(v, y) - cost(x, y)
            if added < removed - EPS_S:
                nxt[a0], prv[b0] = b0, a0
                nxt[x], prv[u] = u, x
                nxt[v], prv[y] = y, v
                return True
    return False


# -- frames --------------------------------------------------------------------------------------


def order_reads(
    files: pl.DataFrame,
    geometry: Geometry | str,
    *,
    budget_s: float = BUDGET_S,
    rewind: bool = True,
    search: bool = True,
) -> pl.DataFrame:
    """The reads of one mount in RAO order, with `read_rank` (0 first) and `reach_s`, the time
    to reach each object from where the previous one ended (from the load point for the first;
    0 for the further members of an aggregate, read on from the first).

    `files`: position, size_bytes, and optionally start_bytes (bytes before the object on the
    tape), offset_bytes (a member's offset inside its aggregate), avg_object_bytes. Objects are
    positions: members of one aggregate share a position, stay together and are read by offset.
    Without start_bytes an object starts after (position - 1) objects of the average size.
    `rewind`: whether the rewind after the last read counts in the order's cost. Without
    `search`, the objects keep position order, reach_s then pricing that order's moves.
    """
    geometry = as_geometry(geometry)
    if files.height == 0:
        return files.with_columns(
            pl.lit(0, dtype=pl.Int64).alias("read_rank"), pl.lit(0.0).alias("reach_s")
        ).clear()
    frame = files.with_row_index("_row")
    added = [] if "offset_bytes" in frame.columns else ["offset_bytes"]
    if added:
        frame = frame.with_columns(pl.lit(None, dtype=pl.Int64).alias("offset_bytes"))
    offset = pl.col("offset_bytes").fill_null(0).cast(pl.Float64)
    objects = (
        frame.group_by("position")
        .agg(
            (pl.col("start_bytes").min() if "start_bytes" in frame.columns else pl.lit(None))
            .cast(pl.Float64)
            .alias("start"),
            offset.min().alias("first"),
            (offset + pl.col("size_bytes")).max().alias("last"),
            (
                pl.col("avg_object_bytes").first()
                if "avg_object_bytes" in frame.columns
                else pl.lit(None)
            )
            .cast(pl.Float64)
            .alias("avg"),
        )
        .sort("position")
    )
    avg = objects["avg"].drop_nulls().to_numpy()
    sizes = files["size_bytes"].cast(pl.Float64).to_numpy()
    avg_bytes = float(avg[0]) if len(avg) else float(np.nanmean(sizes))
    estimated = start_bytes_from_positions(objects["position"].to_numpy(), avg_bytes)
    known = objects["start"].to_numpy()
    start = np.where(np.isnan(known), estimated, known) + objects["first"].to_numpy()
    size = objects["last"].to_numpy() - objects["first"].to_numpy()
    where = places(start, size, geometry)
    if search:
        ordered = plan_order(where, geometry, budget_s=budget_s, rewind=rewind)
    else:
        by_position = position_order(where)
        cost = path_s(where, by_position, geometry, rewind=rewind)
        ordered = Ordered(by_position, cost, cost, "position")
    rank = pl.DataFrame(
        {
            "position": objects["position"].gather(ordered.order),
            "_object_rank": np.arange(len(ordered.order), dtype=np.int64),
            "_reach_s": consecutive(where, ordered.order, geometry),
        }
    )
    first_of_object = pl.col("_object_rank") != pl.col("_object_rank").shift(1)
    return (
        frame.join(rank, on="position", how="left")
        .sort("_object_rank", "offset_bytes", "_row", nulls_last=False)
        .with_columns(
            pl.int_range(pl.len(), dtype=pl.Int64).alias("read_rank"),
            pl.when(first_of_object.fill_null(True))
            .then(pl.col("_reach_s"))
            .otherwise(0.0)
            .alias("reach_s"),
        )
        .drop("_row", "_object_rank", "_reach_s", *added)
    )


__all__ = [
    "BUDGET_S",
    "EXACT_MAX",
    "Ordered",
    "cost_matrix",
    "exact_order",
    "greedy_order",
    "or_opt",
    "order",
    "order_reads",
    "path_s",
    "plan_order",
    "position_order",
    "position_order_cost",
    "sweep_order",
]
