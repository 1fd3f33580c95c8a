"""RAO: the exact solver equals brute force, the order is never slower than position order
(property), the time budget holds, aggregate members stay together."""

from __future__ import annotations

import itertools
import time

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tapelens.analysis.geometry.locate import rewind_s
from tapelens.analysis.geometry.media import geometry
from tapelens.analysis.geometry.place import Places, places, start_bytes_from_positions
from tapelens.analysis.geometry.rao import (
    exact_order,
    greedy_order,
    or_opt,
    order,
    order_reads,
    path_s,
    plan_order,
    position_order_cost,
)
from tests.props import examples


def scattered(media: str, k: int, seed: int, object_bytes: float = 3e8) -> Places:
    g = geometry(media)
    rng = np.random.default_rng(seed)
    n = int(0.95 * g.capacity_bytes / object_bytes)
    pick = np.sort(rng.choice(n, size=min(k, n), replace=False))
    return places(pick * object_bytes, np.full(len(pick), object_bytes), g)


def brute_force(p: Places, media: str) -> float:
    g = geometry(media)
    return min(path_s(p, np.array(perm), g) for perm in itertools.permutations(range(len(p))))


@pytest.mark.parametrize("k", [1, 2, 3, 5, 7])
@pytest.mark.parametrize("media", ["LTO-8", "3592-JE"])
def test_exact_solver_equals_brute_force(media: str, k: int) -> None:
    g = geometry(media)
    for seed in range(3):
        p = scattered(media, k, seed)
        got = path_s(p, exact_order(p, g), g)
        assert got == pytest.approx(brute_force(p, media))
        assert sorted(exact_order(p, g).tolist()) == list(range(k))


offsets = st.lists(st.tuples(st.floats(0.0, 0.999), st.floats(1e6, 5e9)), min_size=1, max_size=60)


@pytest.mark.slow
@settings(max_examples=examples(60))
@given(objects=offsets, media=st.sampled_from(["LTO-7", "LTO-8", "LTO-9", "3592-JF"]))
def test_rao_is_never_slower_than_position_order(
    objects: list[tuple[float, float]], media: str
) -> None:
    g = geometry(media)
    share, size = (np.array(c) for c in zip(*objects, strict=True))
    p = places(share * g.capacity_bytes, size, g)
    result = plan_order(p, g, budget_s=0.2)
    assert sorted(result.order.tolist()) == list(range(len(p)))
    assert result.total_s <= position_order_cost(p, g) + 1e-6
    assert result.total_s == pytest.approx(path_s(p, result.order, g))
    indices, total = order(p, g, budget_s=0.2)
    assert total == pytest.approx(result.total_s) and len(indices) == len(p)


def test_local_search_never_makes_an_order_worse() -> None:
    g = geometry("LTO-9")
    p = scattered("LTO-9", 300, 7)
    greedy, complete = greedy_order(p, g, time.perf_counter() + 10)
    assert complete
    improved, moves = or_opt(p, g, greedy, time.perf_counter() + 10)
    assert sorted(improved.tolist()) == list(range(300))
    assert path_s(p, improved, g) <= path_s(p, greedy, g) + 1e-6
    assert moves > 0


def test_scattered_reads_gain_what_cta_reports() -> None:
    """By the engine's own costs, a few hundred scattered reads take about half the time."""
    g = geometry("LTO-8")
    result = plan_order(scattered("LTO-8", 200, 11), g)
    assert result.saving > 0.4


def test_the_time_budget_holds_for_large_sets() -> None:
    g = geometry("LTO-8")
    p = scattered("LTO-8", 20_000, 2, object_bytes=2e8)
    started = time.perf_counter()
    result = plan_order(p, g, budget_s=0.5)
    elapsed = time.perf_counter() - started
    # the budget, plus costing the candidate orders once each
    assert elapsed < 0.5 + 1.0
    assert sorted(result.order.tolist()) == list(range(len(p)))
    assert result.total_s <= result.position_s


def test_greedy_past_its_deadline_completes_in_the_fallback_order() -> None:
    g = geometry("LTO-8")
    p = scattered("LTO-8", 500, 3)
    route, complete = greedy_order(p, g, time.perf_counter() - 1)
    assert not complete
    assert route.tolist() == list(range(500))  # position order: the places were made sorted


def test_order_reads_keeps_aggregate_members_together() -> None:
    g = geometry("LTO-8")
    rng = np.random.default_rng(9)
    positions = rng.choice(np.arange(1, 30_000), size=40, replace=False)
    rows = []
    for pos in positions.tolist():
        members = 3 if pos % 4 == 0 else 1
        for m in range(members):
            offset = m * 1_000_000 if members > 1 else None
            rows.append({"position": pos, "offset_bytes": offset, "size_bytes": 1_000_000})
    files = pl.DataFrame(rows).sample(fraction=1.0, shuffle=True, seed=1)
    out = order_reads(files.with_columns(avg_object_bytes=pl.lit(3e8)), g)
    assert out["read_rank"].to_list() == list(range(files.height))
    runs = out["position"].rle()
    assert runs.struct.field("len").sum() == files.height
    assert len(runs) == len(positions)  # each object read in one go
    for pos in positions.tolist():
        offsets = out.filter(pl.col("position") == pos)["offset_bytes"].drop_nulls().to_list()
        assert offsets == sorted(offsets)
    assert order_reads(files.clear(), g).height == 0


def test_order_reads_says_what_reaching_each_object_costs() -> None:
    g = geometry("LTO-8")
    files = pl.DataFrame(
        {
            "position": [10, 10, 500, 9_000],
            "offset_bytes": [0, 1_000_000, None, None],
            "size_bytes": [1_000_000, 1_000_000, 2_000_000_000, 2_000_000_000],
            "avg_object_bytes": [2e9] * 4,
        }
    )
    out = order_reads(files, g)
    objects = out.filter(pl.col("reach_s") > 0)
    assert objects.height == 3  # the aggregate's second member is read on from the first
    # The reads' own costs add up to the order's time less streaming and the rewind.
    start = start_bytes_from_positions(np.array([10, 500, 9_000]), 2e9)
    where = places(start, np.array([2e6, 2e9, 2e9]), g)
    chosen = plan_order(where, g)
    streamed = float(((where.end_bytes - where.start_bytes) / (g.rate_mb_s * 1e6)).sum())
    rewound = float(rewind_s(where.end_x_m[chosen.order[-1]], g))
    assert out["reach_s"].sum() == pytest.approx(chosen.total_s - streamed - rewound)
