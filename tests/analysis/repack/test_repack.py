"""The repack advisor's pure parts: placements after a repack, and how candidates are weighed."""

from __future__ import annotations

import polars as pl
import pytest

from tapelens.analysis.repack import scenarios
from tapelens.analysis.repack.advisor import COLUMNS, RepackOptions, empty_ranking, weigh
from tapelens.analysis.throughput.model import default_params

GB = 1_000_000_000
PARAMS = default_params()
DRIVES = (("LTO-8", 2),)


def copies(rows: list[tuple[str, str, int, int, int | None, str | None]]) -> pl.DataFrame:
    """(dataset, volume, position, size, offset, aggregate_id) -> live copies on LTO-8."""
    frame = pl.DataFrame(
        rows,
        schema={
            "dataset": pl.String,
            "volume": pl.String,
            "position": pl.Int64,
            "size_bytes": pl.Int64,
            "offset_bytes": pl.Int64,
            "aggregate_id": pl.String,
        },
        orient="row",
    )
    return frame.with_columns(
        pl.format("{}/{}/{}", "volume", "position", pl.col("offset_bytes").fill_null(-1)).alias(
            "file_id"
        ),
        pl.lit("LTO-8").alias("media_type"),
        pl.lit(1, pl.Int32).alias("copy_no"),
        pl.lit(0.0).alias("written_at"),
        (pl.col("position") * 3 * GB + pl.col("offset_bytes").fill_null(0)).alias("start_bytes"),
    )


def test_containers_pack_loose_small_files_and_leave_aggregates_and_big_files() -> None:
    files = copies(
        [("d", "V1", p, 300_000_000, None, None) for p in range(1, 8)]
        + [("d", "V1", 20, 5 * GB, None, None)]
        + [("d", "V2", 3, 100_000_000, o * 100_000_000, "V2:3") for o in range(3)]
    )
    packed = scenarios.containers(files, GB, GB)
    boxes = packed.filter(pl.col("volume").str.starts_with("container-"))
    assert boxes.height == 7
    # 7 x 300 MB in containers of 1 GB: 3 containers of at most 3 files, offsets contiguous.
    per_box = boxes.group_by("aggregate_id").agg(
        pl.col("size_bytes").sum(), pl.col("offset_bytes").sort()
    )
    assert per_box.height == 3 and (per_box["size_bytes"] <= 1.2 * GB).all()
    for offsets in per_box["offset_bytes"].to_list():
        assert offsets == [i * 300_000_000 for i in range(len(offsets))]
    untouched = packed.filter(~pl.col("volume").str.starts_with("container-"))
    assert sorted(untouched["volume"].to_list()) == ["V1", "V2", "V2", "V2"]


def test_compacted_tape_drops_dead_space_and_keeps_order() -> None:
    files = copies(
        [("a", "V", 2, GB, None, None), ("b", "V", 9, 2 * GB, None, None)]
        + [("a", "V", 5, GB // 2, o * (GB // 2), "V:5") for o in range(2)]
    )
    moved = scenarios.compacted(files, "NEW").sort("position", "offset_bytes")
    assert moved["position"].to_list() == [1, 2, 2, 3]
    assert moved["start_bytes"].to_list() == [0, GB, GB + GB // 2, 2 * GB]
    assert set(moved["volume"].to_list()) == {"NEW"}


def weigh_one(scenario: scenarios.Scenario, cand: str, kind: str) -> pl.DataFrame:
    candidates = pl.DataFrame(
        {
            "cand": [cand],
            "kind": [kind],
            "target": [cand.split(":", 1)[1]],
            "evidence": ["e"],
            "files": [10],
            "bytes": [10 * GB],
            "tapes_freed": [0.0],
            "capacity_reclaimed_bytes": [0],
            "volumes": [["V"]],
        }
    )
    options = RepackOptions(drives=DRIVES)
    return weigh(
        candidates,
        scenario.now,
        scenario.after,
        scenario.read,
        scenario.write,
        PARAMS,
        options,
    )


def test_a_dataset_spread_one_file_a_tape_gains_and_pays_back() -> None:
    spread = copies([("d", f"V{i}", 500 + i, 2 * GB, None, None) for i in range(10)])
    ranked = weigh_one(
        scenarios.collocated("scattered-dataset:d", spread, PARAMS),
        "scattered-dataset:d",
        "scattered-dataset",
    )
    row = ranked.row(0, named=True)
    assert ranked.columns == COLUMNS
    assert row["mounts_now"] == 10 and row["mounts_after"] == 1
    assert row["saving_per_recall_drive_h"] > 0 and row["recall_after_h"] < row["recall_now_h"]
    assert row["payback_recalls"] == pytest.approx(
        row["repack_cost_h"] / row["saving_per_recall_drive_h"]
    )
    horizon = RepackOptions(drives=DRIVES).recalls_over_horizon
    assert row["net_gain_h"] == pytest.approx(
        horizon * row["saving_per_recall_drive_h"] - row["repack_cost_h"]
    )


def test_a_collocated_dataset_gains_nothing() -> None:
    tidy = copies([("d", "V", p, 2 * GB, None, None) for p in range(1, 11)]).with_columns(
        ((pl.col("position") - 1) * 2 * GB).alias("start_bytes")
    )
    row = weigh_one(
        scenarios.collocated("scattered-dataset:d", tidy, PARAMS), "scattered-dataset:d", "x"
    ).row(0, named=True)
    assert row["saving_per_recall_drive_h"] == pytest.approx(0, abs=1e-6)
    assert row["net_gain_h"] < 0 and row["payback_recalls"] is None


def test_stray_copies_retired_spare_the_tape_clients_extra_mounts() -> None:
    main = copies([("d", "M", p, 2 * GB, None, None) for p in range(1, 11)])
    # Retries of three files, newer, on a tape of their own: the tape client reads those.
    retries = main.head(3).with_columns(
        pl.lit("S").alias("volume"),
        pl.lit(100.0).alias("written_at"),
        pl.lit(2, pl.Int32).alias("copy_no"),
    )
    files = pl.concat([main, retries])
    plan = files.with_columns(
        pl.when(pl.col("volume") == "S")
        .then(pl.lit("retire"))
        .otherwise(pl.lit("keep"))
        .alias("action")
    ).with_columns((pl.col("volume") == "S").alias("stray"))
    plan = plan.filter(pl.col("file_id").is_in(retries["file_id"].to_list()))
    scenario = scenarios.strays_retired("stray-copies:S", "S", files, plan)
    row = weigh_one(scenario, "stray-copies:S", "stray-copies").row(0, named=True)
    assert row["mounts_now"] == 2 and row["mounts_after"] == 1
    assert row["saving_per_recall_drive_h"] > 0
    # Nothing moves: the clean-up only verifies the three kept copies.
    assert scenario.write.height == 0 and scenario.read.height == 3


def test_only_stray_copies_are_retired_from_the_tape() -> None:
    main = copies([("d", "M", p, 2 * GB, None, None) for p in range(1, 11)])
    retries = main.head(2).with_columns(
        pl.lit("S").alias("volume"),
        pl.lit(100.0).alias("written_at"),
        pl.lit(2, pl.Int32).alias("copy_no"),
    )
    files = pl.concat([main, retries])
    # dedup would retire both copies on S, but calls only the first stray (say the second
    # sits with its dataset): the scenario leaves the second where it is.
    plan = retries.with_columns(
        pl.lit("retire").alias("action"), (pl.col("position") == 1).alias("stray")
    )
    plan = pl.concat(
        [
            plan,
            main.head(2).with_columns(pl.lit("keep").alias("action"), pl.lit(False).alias("stray")),
        ]
    )
    scenario = scenarios.strays_retired("stray-copies:S", "S", files, plan)
    assert scenario.after.filter(pl.col("volume") == "S").height == 1
    assert scenario.read.height == 1


def test_no_candidates_give_an_empty_ranking_with_every_column() -> None:
    assert empty_ranking().columns == COLUMNS and empty_ranking().height == 0
