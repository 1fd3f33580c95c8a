"""The world's serpentine physics: places along the tape, locates that follow wraps and
distance, the catalog's mean locate, scalar and vector forms equal, and timing a read order."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from tapelens.media import BY_NAME
from tapelens.world.physics import (
    MB,
    WORLD_LAYOUT,
    PhysicsParams,
    default_physics,
    mean_locate_s,
    read_timeline,
    time_read_order,
)

GB = 1_000_000_000


def quiet(media: str) -> PhysicsParams:
    return replace(default_physics(BY_NAME[media]), rate_noise=0.0, locate_noise=0.0)


@pytest.mark.parametrize("media", sorted(WORLD_LAYOUT))
def test_mean_locate_from_the_load_point_is_the_catalogs(media: str) -> None:
    p = default_physics(BY_NAME[media])
    assert p.serpentine and p.wraps == WORLD_LAYOUT[media][1]
    assert mean_locate_s(p, p.capacity_bytes) == pytest.approx(BY_NAME[media].locate_avg_s, 0.01)


def test_without_the_layout_locates_follow_the_byte_distance() -> None:
    p = default_physics(BY_NAME["LTO-8"], serpentine=False)
    assert not p.serpentine
    d = np.array([0.0, 1 * GB, 3000 * GB])
    assert p.locate_between_s(5 * GB, 5 * GB + d) == pytest.approx(p.locate_s(d))
    assert p.rewind_from_s(5 * GB) == p.rewind_s
    assert p.turnarounds_s(0, 100 * GB) == 0


def test_places_along_the_tape() -> None:
    p = quiet("LTO-8")
    per_wrap = p.capacity_bytes / p.wraps
    wrap, x, direction = p.place(np.array([0, 0.5, 1.0, 1.5, 2.0]) * per_wrap)
    assert wrap.tolist() == [0, 0, 1, 1, 2]
    assert direction.tolist() == [1, 1, -1, -1, 1]
    start, end = p.data_start_m, p.data_start_m + p.data_length_m
    assert x == pytest.approx([start, (start + end) / 2, end, (start + end) / 2, start])


def test_locates_follow_wraps_and_distance() -> None:
    p = quiet("LTO-8")
    per_wrap = p.capacity_bytes / p.wraps
    per_band = p.wraps // p.bands
    here = 0.5 * per_wrap  # middle of wrap 0 (forward)
    same_place_next_wrap = 2.5 * per_wrap  # middle of wrap 2: same x, same direction
    other_band = (2 * per_band + 0.5) * per_wrap  # an even wrap of band 2
    ahead = 0.6 * per_wrap
    behind = 0.4 * per_wrap
    t = {
        name: float(p.locate_between_s(here, b))
        for name, b in {
            "wrap": same_place_next_wrap,
            "band": other_band,
            "ahead": ahead,
            "behind": behind,
        }.items()
    }
    travel = t["ahead"] - p.locate_base_s
    assert t["wrap"] == pytest.approx(p.locate_base_s + p.wrap_step_s, abs=0.01)
    assert t["band"] == pytest.approx(p.locate_base_s + p.band_switch_s, abs=0.01)
    assert t["behind"] == pytest.approx(p.locate_base_s + travel + p.backhitch_s)
    # Far along: a byte neighbour across the wrap end sits a whole tape length away.
    end_of_wrap, start_of_next = per_wrap - GB, per_wrap + GB
    far = float(p.locate_between_s(0.0, end_of_wrap, from_load_point=True))
    assert far > p.data_length_m / p.locate_speed_m_s
    # ... while across the wrap end the head only steps (and backhitches to read backwards)
    near = float(p.locate_between_s(end_of_wrap, start_of_next))
    assert near <= p.locate_base_s + p.wrap_step_s + p.backhitch_s + 0.1


def test_scalar_and_vector_locates_agree() -> None:
    rng = np.random.default_rng(2)
    for media in ("LTO-7", "LTO-9", "3592-JE"):
        p = default_physics(BY_NAME[media])
        a = rng.integers(0, p.capacity_bytes, 500)
        b = rng.integers(0, p.capacity_bytes, 500)
        for fresh in (False, True):
            vector = p.locate_between_s(a, b, fresh)
            pairs = zip(a.tolist(), b.tolist(), strict=True)
            scalar = [p.locate_between_one_s(x, y, fresh) for x, y in pairs]
            assert vector == pytest.approx(scalar)


def test_streaming_across_a_wrap_end_costs_a_turnaround() -> None:
    p = quiet("LTO-8")
    per_wrap = int(p.capacity_bytes / p.wraps)
    size = GB
    starts = np.array([per_wrap - 3 * size, per_wrap - 2 * size, per_wrap + size])
    tl = read_timeline(p, np.array([1, 2, 4]), starts, starts, np.full(3, size))
    assert not tl.located[1:].any()
    assert tl.positioning_s[1] == pytest.approx(0.0)
    assert tl.positioning_s[2] == pytest.approx(2 * size / (p.rate_mb_s * MB) + p.turnaround_s)


def test_time_read_order_of_a_mount() -> None:
    p = quiet("LTO-9")
    rng = np.random.default_rng(4)
    sizes = rng.integers(GB // 10, 3 * GB, 2000)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    pick = np.sort(rng.choice(2000, 50, replace=False))
    pos, obj, size = pick + 1, starts[pick], sizes[pick]
    in_order = time_read_order(p, pos, obj, size)
    shuffled = time_read_order(p, pos, obj, size, rng.permutation(50))
    assert in_order.read_s == pytest.approx(shuffled.read_s)  # the same bytes either way
    assert in_order.overhead_s == pytest.approx(50 * p.overhead_s)
    tl = read_timeline(p, pos, obj, obj, size)
    assert in_order.positioning_s == pytest.approx(float(tl.positioning_s.sum()))
    assert in_order.rewind_s == pytest.approx(p.rewind_from_s(int(obj[-1] + size[-1])))
    assert in_order.total_s == pytest.approx(
        in_order.positioning_s + in_order.overhead_s + in_order.read_s + in_order.rewind_s
    )
    # Contiguous files stream: one locate, to the first.
    run = time_read_order(p, np.arange(1, 11), starts[:10], sizes[:10])
    assert run.locates == 1
    noisy = time_read_order(p, pos, obj, size, rng=np.random.default_rng(1))
    assert noisy.total_s == pytest.approx(in_order.total_s, rel=0.3)
