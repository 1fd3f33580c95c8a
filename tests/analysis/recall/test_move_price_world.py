"""Plans priced by the one price of a move, replayed in the synthetic world's own physics.

The product's parameters are what calibration recovers from the world's logs: the world's
effective rate, overhead, read-through threshold and rewind, and the locate terms and scale the
product's calibration fits (fit_locate_terms, fit_locate_scale) on located reads the world
times, with its noise. Each plan is ordered and timed by the engine (in_read_order,
file_times); the world (world/physics.py, independent of the product) times the same order.
bench/bench_move_price.py prints the same comparison for more media and requests.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from tapelens.analysis.recall.schedule.read_order import OrderCache, in_read_order
from tapelens.analysis.throughput.locate import fit_locate_scale, fit_locate_terms
from tapelens.analysis.throughput.model import ModelParams, file_times
from tapelens.media import BY_NAME
from tapelens.world.physics import (
    PhysicsParams,
    default_physics,
    lognormal_multiplier,
    read_timeline,
    time_read_order,
)

FILE_BYTES = 500_000_000
FILES = 20_000


def one_tape(n: int = FILES) -> pl.DataFrame:
    pos = np.arange(1, n + 1)
    return pl.DataFrame(
        {
            "position": pos,
            "offset_bytes": pl.Series([None] * n, dtype=pl.Int64),
            "size_bytes": np.full(n, FILE_BYTES),
            "start_bytes": (pos - 1) * FILE_BYTES,
        }
    )


def calibrated(media: str, world: PhysicsParams, seed: int) -> ModelParams:
    """The product's parameters fitted on the world's located reads of position-order
    requests of several densities."""
    rng = np.random.default_rng(seed)
    params = ModelParams.from_media(
        BY_NAME[media],
        rate_mb_s=world.rate_mb_s,
        overhead_s=world.overhead_s,
        read_through_max_gap=world.read_through_max_gap,
        rewind_s=world.rewind_s,
    )
    frames = []
    for k in (20, 50, 200, 1_000, 3_000):
        for _ in range(2):
            pos = np.sort(rng.choice(FILES, k, replace=False)) + 1
            start = (pos - 1) * FILE_BYTES
            size = np.full(k, FILE_BYTES)
            rate = lognormal_multiplier(world.rate_noise, rng.standard_normal(k))
            locate = lognormal_multiplier(world.locate_noise, rng.standard_normal(k))
            line = read_timeline(world, pos, start, start, size, rate, locate)
            frames.append(
                pl.DataFrame(
                    {
                        "gap": np.concatenate(([np.nan], np.diff(pos))),
                        "position": pos,
                        "start_bytes": start,
                        "size_bytes": size,
                        "observed_s": line.duration_s,
                    }
                ).with_columns(pl.col("gap").fill_nan(None).cast(pl.Int64))
            )
    logs = pl.concat(frames)
    params, _ = fit_locate_terms(logs, params, FILE_BYTES)
    params, _ = fit_locate_scale(logs, params, FILE_BYTES)
    return params


def predicted_and_world(
    wanted: pl.DataFrame, media: str, params: ModelParams, order: str, world: PhysicsParams
) -> tuple[float, float]:
    lean = wanted.with_columns(
        pl.lit(1, pl.Int64).alias("vid"),
        pl.lit(media).alias("media_type"),
        pl.lit(float(FILE_BYTES)).alias("avg_object_bytes"),
    )
    ordered = in_read_order(lean, order, {media: params}, cache=OrderCache())
    timed = file_times(ordered, {media: params}, key=("vid",))
    start = timed["start_bytes"].to_numpy()
    in_world = time_read_order(
        world, timed["position"].to_numpy(), start, timed["size_bytes"].to_numpy()
    )
    return float(timed["duration_s"].sum()) + params.rewind_s, in_world.total_s


@pytest.mark.parametrize("media", ["LTO-8", "LTO-9"])
def test_scattered_plans_in_both_orders_come_within_ten_percent_of_the_world(
    media: str,
) -> None:
    world = default_physics(BY_NAME[media])
    params = calibrated(media, world, seed=1)
    pick = np.sort(np.random.default_rng(2).choice(FILES, 1_000, replace=False))
    wanted = one_tape()[pick]
    times = {o: predicted_and_world(wanted, media, params, o, world) for o in ("position", "rao")}
    for order, (predicted, in_world) in times.items():
        assert predicted == pytest.approx(in_world, rel=0.10), order
    # RAO's gain by the one price, and in the world: at least a quarter of the whole time.
    (pos_p, pos_w), (rao_p, rao_w) = times["position"], times["rao"]
    assert rao_p <= 0.75 * pos_p
    assert rao_w <= 0.75 * pos_w


def test_a_contiguous_request_is_never_slower_in_rao_order() -> None:
    world = default_physics(BY_NAME["LTO-8"])
    params = calibrated("LTO-8", world, seed=3)
    wanted = one_tape()[5_000:6_000]
    pos_p, pos_w = predicted_and_world(wanted, "LTO-8", params, "position", world)
    rao_p, rao_w = predicted_and_world(wanted, "LTO-8", params, "rao", world)
    assert rao_p <= pos_p + 1e-6
    assert rao_w <= pos_w + 1e-6
    assert pos_p == pytest.approx(pos_w, rel=0.10)
