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

import polars as pl

from tapelens.analysis.geometry import GEOMETRIES, order_reads
from tapelens.analysis.throughput.model import ModelParams

ORDERS = ("position", "rao")
# Seconds of ordering a whole recall may spend, shared out among its tapes by their reads; no
# tape gets more than PER_TAPE_BUDGET_S (10,000 reads take about 1.5 s).
TOTAL_BUDGET_S = 60.0
PER_TAPE_BUDGET_S = 1.5
MIN_TAPE_BUDGET_S = 0.01


def in_read_order(
    files: pl.DataFrame,
    order: str,
    params_by_media: Mapping[str, ModelParams],
    key: str = "vid",
) -> pl.DataFrame:
    """`files` (one mount per value of `key`: media_type, position, offset_bytes, size_bytes,
    optionally start_bytes and avg_object_bytes) in read order. For `rao`, with read_rank (the
    order on each mount) and reach_s (the positioning before each read), which
    throughput.file_times then follows; for `position`, sorted by position."""
    if order not in ORDERS:
        raise ValueError(f"read order {order!r} is not one of {ORDERS}")
    if order == "position" or files.height == 0:
        return files
    left_rows = files.height
    parts = []
    started = time.perf_counter()
    for tape in files.partition_by(key, maintain_order=True):
        media = str(tape["media_type"][0])
        shape = GEOMETRIES.get(media)
        if shape is None:
            ranked = tape.sort("position", "offset_bytes", nulls_last=False).with_columns(
                pl.int_range(pl.len(), dtype=pl.Int64).alias("read_rank"),
                pl.lit(None, pl.Float64).alias("reach_s"),
            )
        else:
            left_s = max(TOTAL_BUDGET_S - (time.perf_counter() - started), 0.0)
            share = left_s * tape.height / left_rows
            budget = min(PER_TAPE_BUDGET_S, max(share, MIN_TAPE_BUDGET_S))
            ranked = order_reads(tape, shape, budget_s=budget)
            scale = params_by_media[media].locate_scale if media in params_by_media else 1.0
            if scale != 1.0:
                ranked = ranked.with_columns(pl.col("reach_s") * scale)
        parts.append(ranked)
        left_rows -= tape.height
    return pl.concat(parts, how="vertical_relaxed")
