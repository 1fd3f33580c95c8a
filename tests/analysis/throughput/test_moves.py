"""The one price of a move on a tape (analysis/throughput/moves.py): its rule, and that the
calibrated terms and scale apply to locates only."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from tapelens.analysis.geometry import geometry
from tapelens.analysis.geometry.locate import gap_s
from tapelens.analysis.throughput.model import ModelParams
from tapelens.analysis.throughput.moves import least_first_s, move_s, priced_geometry
from tapelens.media import BY_NAME

LTO8 = ModelParams.from_media(BY_NAME["LTO-8"])
GB = 1_000_000_000


def test_a_read_through_streams_the_bytes_in_between_at_the_model_rate() -> None:
    slow = replace(LTO8, rate_mb_s=200.0)
    priced = move_s(slow, np.array([10 * GB]), np.array([13 * GB]), np.array([3.0]))
    assert priced[0] == pytest.approx(3 * GB / (200 * 1e6))  # same wrap: no turnaround
    given = move_s(slow, np.array([10 * GB]), np.array([13 * GB]), np.array([3.0]), 2 * GB)
    assert given[0] == pytest.approx(2 * GB / (200 * 1e6))


def test_beyond_the_threshold_the_drive_locates_even_where_streaming_is_cheaper() -> None:
    a, b = np.array([10 * GB]), np.array([10 * GB + 50_000_000])
    located = move_s(LTO8, a, b, np.array([LTO8.read_through_max_gap + 1.0]))
    unknown = move_s(LTO8, a, b)
    assert unknown[0] == pytest.approx(50_000_000 / (LTO8.rate_mb_s * 1e6))
    assert located[0] > geometry("LTO-8").locate_base_s > unknown[0]


def test_unfitted_price_is_the_bare_geometry() -> None:
    rng = np.random.default_rng(1)
    a, b = np.sort(rng.uniform(0, LTO8.capacity_bytes, (2, 500)), axis=0)[::-1]
    # Backwards: always a locate, whatever the rates.
    assert move_s(LTO8, a, b, 1e9) == pytest.approx(gap_s(a, b, geometry("LTO-8")))
    # A first read locates from the load point, even to the tape's first byte.
    g = geometry("LTO-8")
    assert least_first_s(LTO8) == pytest.approx(
        g.locate_base_s + g.data_start_m / g.locate_speed_m_s
    )


def test_factors_and_scale_multiply_each_locate_term() -> None:
    fitted = replace(LTO8, locate_scale=2.0, wrap_change_factor=0.5, step_back_factor=0.0)
    g, f = geometry("LTO-8"), priced_geometry(fitted)
    assert f is not None
    assert f.locate_base_s == pytest.approx(2 * g.locate_base_s)
    assert f.wrap_change_s == pytest.approx(g.wrap_change_s)
    assert f.step_back_s == 0.0
    assert f.locate_speed_m_s == pytest.approx(g.locate_speed_m_s / 2)
    assert f.rate_mb_s == LTO8.rate_mb_s  # streaming is the model's, never scaled
    rng = np.random.default_rng(2)
    a, b = rng.uniform(0, LTO8.capacity_bytes, (2, 300))
    scaled = replace(LTO8, locate_scale=1.5)
    assert move_s(scaled, a, b, 1e9) == pytest.approx(1.5 * move_s(LTO8, a, b, 1e9))


def test_media_without_a_geometry_keep_the_locate_curve() -> None:
    curve = replace(LTO8, media_type="LTO-0")
    assert priced_geometry(curve) is None
    far = move_s(curve, np.array([0.0]), np.array([curve.capacity_bytes / 4]), np.array([50.0]))
    assert far[0] == pytest.approx(min(curve.locate_base_s + curve.locate_slope_s / 4,
                                       curve.locate_max_s))  # fmt: skip
