"""Tape geometry: places in closed form, the locate costs' symmetries and limits, the accuracy
statement, and the catalog's figures."""

from __future__ import annotations

import numpy as np
import pytest

from tapelens.analysis.geometry.locate import (
    between,
    consecutive,
    from_load_point,
    gap_s,
    move_s,
    rewind_s,
)
from tapelens.analysis.geometry.media import GEOMETRIES, MB, geometry
from tapelens.analysis.geometry.place import (
    POSITION_SOURCES,
    accuracy,
    accuracy_statement,
    place_of,
    places,
    start_bytes_from_positions,
    start_bytes_from_sizes,
)
from tapelens.errors import InputError
from tapelens.media import BY_NAME

LTO8 = geometry("LTO-8")


def test_every_catalog_media_type_has_a_geometry() -> None:
    assert set(GEOMETRIES) == set(BY_NAME)
    for name in ("LTO-5", "LTO-6", "LTO-7", "LTO-7M", "LTO-8", "LTO-9"):
        g = GEOMETRIES[name]
        assert not g.approximate and g.bands == 4
        assert g.wraps % g.bands == 0
        # streaming is slower than a high-speed locate, and a wrap streams in minutes
        assert 2 < g.stream_speed_m_s < g.locate_speed_m_s < 20
        assert 60 < g.wrap_stream_s < 300
    assert (LTO8.tape_length_m, LTO8.wraps, LTO8.wraps_per_band) == (960.0, 208, 52)
    assert geometry(BY_NAME["LTO-9"]).wraps == 280
    with pytest.raises(InputError):
        geometry("DLT-4")


@pytest.mark.parametrize("name", sorted(GEOMETRIES))
def test_mean_locate_from_the_load_point_is_the_catalogs(name: str) -> None:
    g = GEOMETRIES[name]
    grid = np.linspace(0, g.capacity_bytes - 1, 20_001)
    mean = float(from_load_point(places(grid, np.ones_like(grid), g), g).mean())
    target = BY_NAME[name].locate_avg_s
    assert mean == pytest.approx(target, rel=0.05 if g.approximate else 0.01)


def test_places_in_closed_form() -> None:
    g = LTO8
    per_wrap = g.bytes_per_wrap
    start, end = g.data_start_m, g.data_start_m + g.data_length_m
    shares = np.array([0.0, 0.5, 1.0, 1.25, 52.0])
    addresses = np.append(shares * per_wrap, 10 * g.capacity_bytes)
    wrap, band, x, direction = place_of(addresses, g)
    assert wrap.tolist() == [0, 0, 1, 1, 52, 207]
    assert band.tolist() == [0, 0, 0, 0, 1, 3]
    assert direction.tolist() == [1, 1, -1, -1, 1, -1]
    quarter_back = end - 0.25 * g.data_length_m
    assert x[:5] == pytest.approx([start, (start + end) / 2, end, quarter_back, start])
    assert x[5] == pytest.approx(start)  # beyond the capacity: the end of the last (backward) wrap
    # A file that ends exactly at a wrap's end stays on that wrap; the next one starts the next.
    p = places(np.array([0.0, per_wrap]), np.array([per_wrap, 1e9]), g)
    assert p.end_wrap.tolist() == [0, 1] and p.start_wrap.tolist() == [0, 1]
    assert p.end_x_m[0] == pytest.approx(end, abs=1e-6)


def test_start_bytes_from_sizes_and_positions() -> None:
    # positions 3, 1, 2 and an aggregate at position 2: two members, the object their sum
    got = start_bytes_from_sizes(np.array([3, 1, 2, 2]), np.array([5, 10, 7, 4]))
    assert got.tolist() == [21.0, 0.0, 10.0, 10.0]
    assert start_bytes_from_positions(np.array([1, 4]), 2.5).tolist() == [0.0, 7.5]


def test_locate_costs_limits_and_symmetries() -> None:
    g = LTO8
    rng = np.random.default_rng(3)
    s = np.sort(rng.uniform(0, g.capacity_bytes - 2e9, 400))
    p = places(s, np.full(400, 1e9), g)
    m = between(p, p, g)
    assert (m >= 0).all()
    bound = g.locate_base_s + g.tape_length_m / g.locate_speed_m_s
    bound += g.wrap_change_s + g.band_change_s + g.direction_change_s + g.step_back_s
    assert m.max() <= bound
    # Mirror symmetry: two places on the same wrap, the second ahead in the wrap's direction,
    # cost the same on a forward and on a backward wrap.
    per_wrap = g.bytes_per_wrap
    a = places(np.array([0.1, 2.1]) * per_wrap, np.ones(2), g)  # wraps 0 and 2 (forward)
    b = places(np.array([0.6, 2.6]) * per_wrap, np.ones(2), g)
    c = places(np.array([1.1, 3.1]) * per_wrap, np.ones(2), g)  # wraps 1 and 3 (backward)
    d = places(np.array([1.6, 3.6]) * per_wrap, np.ones(2), g)
    forward = np.diag(between(a, b, g))
    backward = np.diag(between(c, d, g))
    assert forward == pytest.approx(backward)
    # Straight on: the next object right after the end of the previous one costs nothing.
    q = places(np.array([0.0, 1e9]), np.array([1e9, 1e9]), g)
    assert between(q, q, g)[0, 1] == pytest.approx(0.0, abs=1e-9)
    # Stepping back behind the head on the same wrap costs a step back, forward does not.
    x = places(np.array([0.5, 0.4, 0.6]) * per_wrap, np.ones(3), g)
    ahead, behind = between(x, x, g)[0, 2], between(x, x, g)[0, 1]
    assert behind == pytest.approx(ahead + g.step_back_s)
    # Far along the same wrap the drive locates rather than streams: bounded by a locate.
    far = places(np.array([0.0, 0.9 * per_wrap]), np.array([1.0, 1.0]), g)
    locate = g.locate_base_s + abs(far.start_x_m[1] - far.end_x_m[0]) / g.locate_speed_m_s
    assert between(far, far, g)[0, 1] == pytest.approx(locate)
    # Streaming across a wrap end: the bytes in between plus a turnaround.
    edge = places(np.array([per_wrap - 2e8, per_wrap + 1e8]), np.array([1e8, 1e8]), g)
    assert between(edge, edge, g)[0, 1] == pytest.approx(2e8 / (g.rate_mb_s * MB) + g.turnaround_s)


def test_gap_cost_matches_the_matrix_and_the_load_point() -> None:
    g = geometry("LTO-9")
    rng = np.random.default_rng(4)
    s = np.sort(rng.uniform(0, g.capacity_bytes - 2e9, 50))
    z = rng.uniform(1e6, 2e9, 50)
    p = places(s, z, g)
    steps = consecutive(p, np.arange(50), g)
    prev_end = np.concatenate(([np.nan], (s + z)[:-1]))
    assert gap_s(prev_end, s, g) == pytest.approx(steps)
    assert steps[0] == pytest.approx(from_load_point(p, g)[0])
    assert float(rewind_s(0.0, g)) == pytest.approx(g.locate_base_s)


def test_the_accuracy_statement_orders_the_sources() -> None:
    g = LTO8
    kwargs = {"objects_before": 3000, "avg_object_bytes": 2e9}
    exact = accuracy("byte_offset", g, **kwargs)
    coarse = accuracy("tsm_rank", g, **kwargs)
    aggregate = accuracy("aggregate_no_offset", g, **kwargs)
    assert exact.useful_for_rao and not coarse.useful_for_rao
    assert exact.bytes_sd < coarse.bytes_sd < aggregate.bytes_sd
    assert accuracy("byte_offset", g, objects_before=0, avg_object_bytes=2e9).bytes_sd == 0
    # Many small objects: unknown sizes average out, the estimate stays within a wrap.
    small = accuracy("position_only", g, objects_before=100, avg_object_bytes=50e6)
    assert small.wraps_sd < 0.25
    # No estimate is worse than knowing nothing: the spread of a uniform place.
    assert coarse.x_sd_m <= g.data_length_m / np.sqrt(12) + 1e-9
    text = accuracy_statement(g)
    assert all(source in text for source in POSITION_SOURCES)
    with pytest.raises(ValueError):
        accuracy("guess", g, **kwargs)


@pytest.mark.parametrize("media", ["LTO-7", "LTO-9", "3592-JF"])
def test_the_cost_matrix_equals_the_pairwise_costs(media: str) -> None:
    g = geometry(media)
    rng = np.random.default_rng(6)
    dense = np.sort(rng.uniform(0, 0.01 * g.capacity_bytes, 150))  # many pairs stream
    spread = rng.uniform(0, g.capacity_bytes, 150)  # unsorted, across the tape
    for starts in (dense, spread):
        p = places(starts, rng.uniform(1e6, 2e9, len(starts)), g)
        q = p.take(rng.permutation(len(p))[:100])
        want = move_s(
            g,
            p.end_bytes[:, None],
            p.end_wrap[:, None],
            p.end_band[:, None],
            p.end_x_m[:, None],
            p.end_direction[:, None],
            q.start_bytes[None, :],
            q.start_wrap[None, :],
            q.start_band[None, :],
            q.start_x_m[None, :],
            q.start_direction[None, :],
        )
        assert between(p, q, g, block_rows=7) == pytest.approx(want, abs=1e-9)
        assert between(p, q, g, dtype=np.float32) == pytest.approx(want, abs=1e-3)
