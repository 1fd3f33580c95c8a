"""The order of the reads on one mounted tape.

- `position`: one forward pass in position order (aggregate members by offset). What tape
  systems do when they sort a tape's requests.
- `rao`: recommended access order from the tape's serpentine geometry (analysis.geometry): the
  order that minimises positioning on that tape (greedy shortest-locate-time-first, improved,
  exact for a dozen objects or fewer), searched with the moves priced as the throughput model
  prices them (analysis.throughput.moves.priced_geometry: the geometry with the site's
  calibrated locate terms and scale). Tapes of a media type without a geometry, or whose
  geometry is approximate (its wraps not from a published source), keep position order.

Either way every read is then timed by throughput.file_times with the one price of a move
(analysis.throughput.moves.move_s), so the two orders are compared in one physics; a tape whose
RAO order the price does not find cheaper than position order keeps position order.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

import numpy as np
import polars as pl

from tapelens.analysis.geometry import order_reads
from tapelens.analysis.throughput.model import ModelParams, file_times, mount_rewinds
from tapelens.analysis.throughput.moves import priced_geometry

ORDERS = ("position", "rao")
# Position order, as the plan's position_order baseline names it: every order's moves have one
# price, so it is position order itself.
POSITION_BY_GEOMETRY = "position-geometry"
# Seconds of ordering a whole recall may spend, shared out among its tapes by their reads; no
# tape gets more than PER_TAPE_BUDGET_S (10,000 reads take about 1.5 s).
TOTAL_BUDGET_S = 60.0
PER_TAPE_BUDGET_S = 1.5
MIN_TAPE_BUDGET_S = 0.01
# With this many wanted objects a wrap or more, each read is a short hop along its own wrap and
# position order is as good as the search finds (bench/RESULTS.md, "RAO": nothing gained at 12
# and 48 a wrap): such a tape gets the least budget, enough to cost position order and a sweep.
DENSE_PER_WRAP = 10.0


class OrderCache:
    """The orders one recall has worked out, by what each tape holds, and the ordering time it
    has spent. The engine weighs several copy sets (cheapest, newest, relieved) that share most
    of their tapes: a tape read again with the same files takes its order from here, and the
    budget is the recall's, not each weighing's."""

    def __init__(self, budget_s: float = TOTAL_BUDGET_S) -> None:
        self.budget_s = budget_s
        self.spent_s = 0.0
        # (order, (media type, what the tape holds)) -> rows in read order
        self.orders: dict[tuple[str, tuple[str, bytes]], np.ndarray] = {}

    def left_s(self) -> float:
        return max(self.budget_s - self.spent_s, 0.0)


_CONTENT = ("position", "offset_bytes", "size_bytes", "start_bytes", "avg_object_bytes")


def _content(tape: pl.DataFrame, media: str) -> tuple[str, bytes]:
    """What a tape's order depends on: its media type and the places and sizes of its reads,
    in the order given (position order)."""
    columns = [c for c in _CONTENT if c in tape.columns]
    values = tape.select(pl.col(c).cast(pl.Float64).fill_null(float("nan")) for c in columns)
    return media, ",".join(columns).encode() + values.to_numpy().tobytes()


def in_read_order(
    files: pl.DataFrame,
    order: str,
    params_by_media: Mapping[str, ModelParams],
    key: str = "vid",
    cache: OrderCache | None = None,
) -> pl.DataFrame:
    """`files` (one mount per value of `key`, each in position order: media_type, position,
    offset_bytes, size_bytes, optionally start_bytes and avg_object_bytes) in read order. For
    `rao`, with read_rank (the order on each mount), which throughput.file_times then follows
    and prices; for `position`, as they are. `cache` keeps orders and the ordering budget
    across calls of one recall."""
    if order not in (*ORDERS, POSITION_BY_GEOMETRY):
        raise ValueError(f"read order {order!r} is not one of {ORDERS}")
    if order != "rao" or files.height == 0:
        return files
    cache = cache if cache is not None else OrderCache()
    tapes = files.partition_by(key, maintain_order=True)
    content = {i: _content(t, str(t["media_type"][0])) for i, t in enumerate(tapes)}
    # A geometry whose layout is not from a published source (3592, T10000: wraps assumed)
    # places reads on the wrong wraps far along the tape, where an order searched on it can
    # be slower on the real tape than position order: those tapes keep position order.
    shapes = {
        m: priced_geometry(params_by_media[m]) if m in params_by_media else None
        for m in {c[0] for c in content.values()}
    }
    shapes = {m: g if g is not None and not g.approximate else None for m, g in shapes.items()}
    # The reads still to order, among which the budget left is shared.
    left_rows = sum(
        t.height
        for i, t in enumerate(tapes)
        if shapes[content[i][0]] is not None and (order, content[i]) not in cache.orders
    )
    parts = []
    for i, tape in enumerate(tapes):
        media = content[i][0]
        shape = shapes[media]
        known = cache.orders.get((order, content[i])) if shape is not None else None
        if shape is not None and known is None:
            share = cache.left_s() * tape.height / max(left_rows, 1)
            budget = min(PER_TAPE_BUDGET_S, max(share, MIN_TAPE_BUDGET_S))
            if tape["position"].n_unique() >= DENSE_PER_WRAP * shape.wraps:
                budget = MIN_TAPE_BUDGET_S
            started = time.perf_counter()
            # Orders are weighed with their final rewind: the engine charges each mount the
            # rewind from where its last read ends, so an order ending nearer the load point
            # gains it.
            ranked = order_reads(tape.with_row_index("_given"), shape, budget_s=budget)
            cache.spent_s += time.perf_counter() - started
            left_rows -= tape.height
            known = ranked["_given"].to_numpy()
            cache.orders[(order, content[i])] = known
        rows = np.arange(tape.height) if known is None else known
        parts.append(
            tape[rows].with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias("read_rank"))
        )
    ranked_all = pl.concat(parts, how="vertical_relaxed")
    return _no_slower(files, ranked_all, params_by_media, key)


def _no_slower(
    by_position: pl.DataFrame,
    ranked: pl.DataFrame,
    params_by_media: Mapping[str, ModelParams],
    key: str,
) -> pl.DataFrame:
    """`ranked`, except that a tape whose reads and final rewind the one price of a move finds
    slower in their RAO order than in position order reads in position order (the search
    weighs moves by the geometry alone; the price also knows which gaps the drive reads
    through)."""
    as_given = by_position.with_columns(
        pl.int_range(pl.len(), dtype=pl.Int64).over(key).alias("read_rank")
    )

    def per_tape(frame: pl.DataFrame) -> pl.DataFrame:
        timed = file_times(frame, params_by_media, key=(key,))
        reads = timed.group_by(key).agg(pl.col("duration_s").sum())
        rewinds = mount_rewinds(timed, params_by_media, (key,))
        return reads.join(rewinds, on=key).select(
            key, (pl.col("duration_s") + pl.col("rewind_s")).alias("duration_s")
        )

    both = per_tape(as_given).join(per_tape(ranked), on=key, suffix="_rao")
    worse = both.filter(pl.col("duration_s_rao") > pl.col("duration_s") + 1e-9)[key]
    if worse.len() == 0:
        return ranked
    keep = pl.col(key).is_in(worse.implode())
    return pl.concat([ranked.filter(~keep), as_given.filter(keep)], how="vertical_relaxed").sort(
        key, maintain_order=True
    )
