"""The order of the reads on one mounted tape.

- `position`: one forward pass in position order (aggregate members by offset), timed by the
  throughput model, which prices a gap by the objects and bytes between two reads. What tape
  systems do when they sort a tape's requests, and what tapelens did before tape geometry.
- `rao`: recommended access order from the tape's serpentine geometry (analysis.geometry): the
  order that minimises positioning on that tape (greedy shortest-locate-time-first, improved,
  exact for a dozen objects or fewer, never slower than position order by the same cost), each
  read's positioning timed by the same geometry (where the previous read ended to where this
  one starts: the head's travel along the tape, wrap and band changes, or streaming on when
  that is cheaper). Tapes of a media type without a geometry keep position order.

Positioning from geometry is scaled by the media type's `locate_scale` (1 by default;
`tapelens throughput calibrate` fits it to a site's own per-read positioning times).
"""

from __future__ import annotations

import time
from collections.abc import Mapping

import numpy as np
import polars as pl

from tapelens.analysis.geometry import GEOMETRIES, order_reads
from tapelens.analysis.throughput.model import ModelParams

ORDERS = ("position", "rao")
# Position order with every move priced by the geometry, as rao prices its own: what a plan in
# RAO order is compared with (the plan's position_order baseline).
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
        # (order, (media type, what the tape holds)) -> (rows in read order, reach_s)
        self.orders: dict[tuple[str, tuple[str, bytes]], tuple[np.ndarray, np.ndarray]] = {}

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
    `rao`, with read_rank (the order on each mount) and reach_s (the positioning before each
    read), which throughput.file_times then follows; for `position`, as they are. `cache`
    keeps orders and the ordering budget across calls of one recall."""
    if order not in (*ORDERS, POSITION_BY_GEOMETRY):
        raise ValueError(f"read order {order!r} is not one of {ORDERS}")
    if order == "position" or files.height == 0:
        return files
    cache = cache if cache is not None else OrderCache()
    tapes = files.partition_by(key, maintain_order=True)
    content = {i: _content(t, str(t["media_type"][0])) for i, t in enumerate(tapes)}
    # The reads still to order, among which the budget left is shared.
    left_rows = sum(
        t.height
        for i, t in enumerate(tapes)
        if content[i][0] in GEOMETRIES and (order, content[i]) not in cache.orders
    )
    parts = []
    for i, tape in enumerate(tapes):
        media = content[i][0]
        shape = GEOMETRIES.get(media)
        if shape is None:
            parts.append(
                tape.with_columns(
                    pl.int_range(pl.len(), dtype=pl.Int64).alias("read_rank"),
                    pl.lit(None, pl.Float64).alias("reach_s"),
                )
            )
            continue
        known = cache.orders.get((order, content[i]))
        if known is None:
            share = cache.left_s() * tape.height / max(left_rows, 1)
            budget = min(PER_TAPE_BUDGET_S, max(share, MIN_TAPE_BUDGET_S))
            if tape["position"].n_unique() >= DENSE_PER_WRAP * shape.wraps:
                budget = MIN_TAPE_BUDGET_S
            started = time.perf_counter()
            # Orders are weighed on positioning alone: the engine charges every mount the
            # media type's rewind, so an order that ends nearer the load point gains it nothing,
            # and with this cost an order is never slower in the engine than position order.
            ranked = order_reads(
                tape.with_row_index("_given"),
                shape,
                budget_s=budget,
                rewind=False,
                search=order == "rao",
            )
            cache.spent_s += time.perf_counter() - started
            left_rows -= tape.height
            known = (ranked["_given"].to_numpy(), ranked["reach_s"].to_numpy())
            cache.orders[(order, content[i])] = known
        rows, reach = known
        scale = params_by_media[media].locate_scale if media in params_by_media else 1.0
        parts.append(
            tape[rows].with_columns(
                pl.int_range(pl.len(), dtype=pl.Int64).alias("read_rank"),
                pl.Series("reach_s", reach * scale),
            )
        )
    return pl.concat(parts, how="vertical_relaxed")
