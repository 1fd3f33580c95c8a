"""Reads on a mounted tape in RAO order: ordered by the tape's geometry in the engine and timed,
as position order is, by the one price of a move, in the plan, the prediction and the FIFO
baseline."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from tapelens.analysis.geometry.place import start_bytes_from_positions
from tapelens.analysis.recall.engine import Policy, engine_inputs, recall
from tapelens.analysis.recall.plan.planner import PlanOptions, plan_recall
from tapelens.analysis.recall.requests.lists import parse_requests
from tapelens.analysis.recall.schedule.drives import readable_by_catalog
from tapelens.analysis.recall.schedule.read_order import OrderCache, in_read_order
from tapelens.analysis.throughput.model import ModelParams, default_params
from tapelens.analysis.throughput.moves import move_s
from tapelens.media import BY_NAME

GB = 1_000_000_000
AVG = 2.0 * GB


def tape(positions: list[int], volume: str = "A00001L8", size: int = GB) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "volume": volume,
            "media_type": "LTO-8",
            "position": positions,
            "size_bytes": size,
            "avg_object_bytes": AVG,
            "file_id": [f"{volume}/{p}" for p in positions],
        }
    )


def scattered(n: int, seed: int) -> list[int]:
    rng = np.random.default_rng(seed)
    return sorted(rng.choice(np.arange(1, 6_000), size=n, replace=False).tolist())


def plan(files: pl.DataFrame, order: str, drives: int = 1) -> pl.DataFrame:
    copies, wanted = engine_inputs(files)
    done = recall(
        copies,
        wanted,
        default_params(),
        {"LTO-8": drives},
        readable_by_catalog(),
        Policy(order=order),
    )
    return done.schedule.files.sort("order")


def priced(timed: pl.DataFrame) -> float:
    """The positioning of a mount's reads in the order they were timed, by the one price of a
    move (moves.move_s) from where each read left the head."""
    p = default_params()["LTO-8"]
    start = start_bytes_from_positions(timed["position"].to_numpy(), AVG)
    end = start + timed["size_bytes"].to_numpy()
    prev_end = np.concatenate(([np.nan], end[:-1]))
    gap = np.concatenate(([np.nan], np.diff(timed["position"].to_numpy()).astype(float)))
    # Objects read through are skipped as the objects in between of the average size.
    return float(move_s(p, prev_end, start, gap, (gap - 1) * AVG).sum())


def test_scattered_reads_are_read_in_the_geometrys_order_and_timed_by_one_price() -> None:
    positions = scattered(60, seed=4)
    rao = plan(tape(positions), "rao")
    by_position = plan(tape(positions), "position")
    assert rao["position"].to_list() != positions  # not a forward pass
    assert sorted(rao["position"].to_list()) == positions
    # Both orders are timed by the same price of a move, read after read.
    assert rao["positioning_s"].sum() == pytest.approx(priced(rao), rel=1e-9)
    assert by_position["positioning_s"].sum() == pytest.approx(priced(by_position), rel=1e-9)
    assert rao["positioning_s"].sum() < 0.8 * by_position["positioning_s"].sum()
    # Every read's time is its positioning, the per-object overhead and its streaming.
    p = default_params()["LTO-8"]
    expected = rao["positioning_s"] + p.overhead_s + rao["size_bytes"] / (p.rate_mb_s * 1e6)
    assert (rao["duration_s"] - expected).abs().max() < 1e-6


def test_a_contiguous_dataset_is_never_slower_than_in_position_order() -> None:
    # Adjacent objects over two wraps: one forward pass streams through them all.
    positions = list(range(1_000, 1_060))
    rao = plan(tape(positions, size=int(AVG)), "rao")
    by_position = plan(tape(positions, size=int(AVG)), "position")
    assert sorted(rao["position"].to_list()) == positions
    assert rao["positioning_s"].sum() <= by_position["positioning_s"].sum() + 1e-6


def test_aggregate_members_stay_together_and_are_read_by_offset() -> None:
    files = pl.DataFrame(
        {
            "volume": "A00001L8",
            "media_type": "LTO-8",
            "position": [5_000, 5_000, 5_000, 10, 2_500],
            "offset_bytes": [2 * GB // 10, 0, GB // 10, None, None],
            "size_bytes": GB // 10,
            "avg_object_bytes": AVG,
            "file_id": ["m2", "m0", "m1", "a", "b"],
        }
    )
    rao = plan(files, "rao")
    members = rao.filter(pl.col("position") == 5_000)
    assert members["file_id"].to_list() == ["m0", "m1", "m2"]
    first_member = rao["file_id"].to_list().index("m0")
    assert rao["file_id"].to_list()[first_member : first_member + 3] == ["m0", "m1", "m2"]
    assert members["kind"].to_list()[1:] == ["member", "member"]


def test_the_calibrated_scale_multiplies_the_located_moves() -> None:
    files = tape(scattered(30, seed=7))
    scaled = {"LTO-8": ModelParams.from_media(BY_NAME["LTO-8"], locate_scale=1.5)}
    timed = plan(files, "position")
    copies, wanted = engine_inputs(files)
    slow = recall(
        copies, wanted, scaled, {"LTO-8": 1}, readable_by_catalog(), Policy(order="position")
    ).schedule.files.sort("order")
    located = pl.col("kind").is_in(["first", "locate"])
    assert slow.filter(located)["positioning_s"].sum() == pytest.approx(
        1.5 * timed.filter(located)["positioning_s"].sum()
    )
    through = pl.col("kind") == "read_through"
    assert slow.filter(through)["positioning_s"].sum() == pytest.approx(
        timed.filter(through)["positioning_s"].sum()
    )


def test_position_order_is_unchanged_by_the_option() -> None:
    files = tape(scattered(40, seed=2))
    default = plan(files, "position")
    assert default["position"].to_list() == sorted(default["position"].to_list())
    assert "reach_s" not in default.columns or default["reach_s"].is_null().all()


def test_a_plan_in_rao_order_beats_its_fifo_baseline_timed_the_same_way() -> None:
    positions = scattered(80, seed=11)
    files = pl.concat(
        [tape(positions[::2], "A00001L8"), tape(positions[1::2], "A00002L8")]
    ).with_columns(
        pl.col("file_id").alias("path"),
        pl.lit("D").alias("dataset"),
        pl.lit(None, pl.Int64).alias("offset_bytes"),
        pl.lit(None, pl.String).alias("aggregate_id"),
        pl.lit(1, pl.Int32).alias("copy_no"),
        pl.lit(0.0).alias("written_at"),
        pl.lit("full").alias("tape_state"),
        pl.lit(None, pl.String).alias("other_volumes"),
    )
    # Requests in an order unrelated to the tapes: as a list arrives at a tape system.
    asked = files.sample(fraction=1.0, shuffle=True, seed=3)["path"].to_list()
    requests = parse_requests(asked, "asked.txt")
    # Forty reads spread over 208 wraps: each move changes wrap whatever the order, and position
    # order is no better than arrival order there; the geometry's order is.
    result = plan_recall(
        requests, files, default_params(), PlanOptions(drives=(("LTO-8", 1),), order="rao")
    )
    fifo = result.baselines["fifo"]
    assert result.schedule.makespan_s <= fifo.makespan_s
    assert result.summary["read_order"] == "rao"
    # The plan names what RAO gains over position order in the same physics, and never loses.
    by_position = result.baselines["position_order"]
    assert by_position.mounts == result.schedule.mounts
    assert result.schedule.makespan_s < by_position.makespan_s
    assert result.summary["speedups"]["position_order"] > 1.0


def test_a_recall_orders_each_tape_once_within_one_budget() -> None:
    files = pl.concat([tape(scattered(200, seed=s), f"A0000{s}L8") for s in range(3)])
    lean = files.with_columns(
        pl.col("volume").rank("dense").cast(pl.Int64).alias("vid"),
        pl.lit(None, pl.Int64).alias("offset_bytes"),
    ).sort("vid", "position")
    cache = OrderCache(budget_s=5.0)
    first = in_read_order(lean, "rao", default_params(), cache=cache)
    spent = cache.spent_s
    assert len(cache.orders) == 3 and 0 < spent <= 5.0 + 1.0
    again = in_read_order(lean, "rao", default_params(), cache=cache)
    assert cache.spent_s == spent  # every tape's order came from the cache
    assert again.equals(first)
    # A tape whose reads changed is ordered anew; the others are not.
    fewer = lean.filter(~((pl.col("vid") == 2) & (pl.col("position") == lean["position"][250])))
    in_read_order(fewer, "rao", default_params(), cache=cache)
    assert len(cache.orders) == 4
