"""Plans priced by the one price of a move, replayed in the synthetic world's own physics.

The calibration, the requests and the two timings are bench/bench_move_price.py's own
functions, so the comparison the benchmark prints is the one held to its targets here: the
product's parameters are what calibration recovers from the world's logs (the world's effective
rate, overhead and read-through threshold, and the locate terms and scale the product's
calibration fits on located reads the world times, with its noise); each plan is ordered and
timed by the engine (in_read_order, file_times, tape_times: the final rewind priced from where
the last read ends); the world (world/physics.py, independent of the product) times the same
order from the loaded tape to the rewound tape.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from tapelens.media import BY_NAME
from tapelens.world.physics import default_physics

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
import bench_move_price as bench  # noqa: E402


@pytest.mark.parametrize("media", ["LTO-8", "LTO-9"])
def test_scattered_plans_in_both_orders_come_within_ten_percent_of_the_world(
    media: str,
) -> None:
    world = default_physics(BY_NAME[media])
    params = bench.calibrated(media, world, np.random.default_rng(1))
    wanted = bench.request(bench.tape_of(media, False), "scattered", np.random.default_rng(2))
    times = {o: bench.timed(wanted, media, params, o, world) for o in ("position", "rao")}
    for order, (predicted, in_world) in times.items():
        assert predicted == pytest.approx(in_world, rel=0.10), order
    # RAO's gain by the one price, and in the world: at least a quarter of the whole time.
    (pos_p, pos_w), (rao_p, rao_w) = times["position"], times["rao"]
    assert rao_p <= 0.75 * pos_p
    assert rao_w <= 0.75 * pos_w


def test_an_aggregate_heavy_request_in_rao_order_comes_within_ten_percent_of_the_world() -> None:
    """RAO ends such a request near the load point: the world rewinds from there, and so must
    the price (the media's average rewind put it 10.9% over the world on LTO-9)."""
    world = default_physics(BY_NAME["LTO-9"])
    params = bench.calibrated("LTO-9", world, np.random.default_rng(1))
    tape = bench.tape_of("LTO-9", True)
    wanted = bench.request(tape, "aggregate", np.random.default_rng(3))
    for order in ("position", "rao"):
        predicted, in_world = bench.timed(wanted, "LTO-9", params, order, world)
        assert predicted == pytest.approx(in_world, rel=0.10), order


def test_a_contiguous_request_is_never_slower_in_rao_order() -> None:
    world = default_physics(BY_NAME["LTO-8"])
    params = bench.calibrated("LTO-8", world, np.random.default_rng(3))
    wanted = bench.tape_of("LTO-8", False)[5_000:6_000]
    pos_p, pos_w = bench.timed(wanted, "LTO-8", params, "position", world)
    rao_p, rao_w = bench.timed(wanted, "LTO-8", params, "rao", world)
    assert rao_p <= pos_p + 1e-6
    assert rao_w <= pos_w + 1e-6
    assert pos_p == pytest.approx(pos_w, rel=0.10)
