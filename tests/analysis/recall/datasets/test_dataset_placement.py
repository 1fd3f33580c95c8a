"""The cost of a dataset's placement is measured against the better of two ideal layouts, so
it is never negative: packed onto the fewest tapes, or left on its own tapes without gaps; the
elapsed prediction likewise never finds today's placement faster than the ideal."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from tapelens.analysis.recall.datasets.placement_cost import with_placement_costs
from tapelens.analysis.recall.datasets.prediction import adjacent_on_own_tapes, predict_datasets
from tapelens.analysis.throughput.model import default_params

GB = 1_000_000_000
PARAMS = default_params()


def predict_placement(files: pl.DataFrame, drives: dict[str, int]) -> pl.DataFrame:
    """What `predict datasets` prints: the prediction with the placement costs beside it."""
    return with_placement_costs(predict_datasets(files, drives, PARAMS), files, PARAMS)


def scattered(seed: int) -> pl.DataFrame:
    """Datasets of 2-40 files scattered over 1-4 LTO-8 tapes among other data."""
    rng = np.random.default_rng(seed)
    rows = []
    for d in range(6):
        n = int(rng.integers(2, 41))
        tapes = int(rng.integers(1, 5))
        for f in range(n):
            rows.append(
                {
                    "dataset": f"d{d}",
                    "file_id": f"d{d}/f{f}",
                    "volume": f"V{d}{int(rng.integers(tapes))}",
                    "media_type": "LTO-8",
                    "position": int(rng.integers(1, 3000)),
                    "size_bytes": int(rng.integers(1, 20)) * GB // 4,
                }
            )
    return pl.DataFrame(rows).unique(["volume", "position"], keep="first")


@pytest.mark.slow
def test_no_dataset_shows_a_negative_placement_cost() -> None:
    for seed in range(8):
        for drives in ({"LTO-8": 1}, {"LTO-8": 4}):
            table = predict_placement(scattered(seed), drives)
            assert table["placement_cost_s"].min() >= 0.0, (seed, drives)
            assert (table["placement_cost_s"] <= table["drive_s"]).all()
            assert (table["ideal_s"] <= table["now_s"] + 1e-6).all()


def test_two_tapes_on_two_drives_beat_one_packed_tape() -> None:
    # 20 files of 5 GB, adjacent, half on each of two tapes: two drives read both at once,
    # which one packed tape cannot; the ideal is the dataset's own tapes and costs nothing.
    files = pl.DataFrame(
        {
            "dataset": ["d"] * 20,
            "file_id": [f"f{i}" for i in range(20)],
            "volume": ["A"] * 10 + ["B"] * 10,
            "media_type": ["LTO-8"] * 20,
            "position": list(range(1, 11)) * 2,
            "size_bytes": [5 * GB] * 20,
        }
    )
    (row,) = predict_placement(files, {"LTO-8": 2}).to_dicts()
    assert row["ideal_layout"] == "own tapes" and row["ideal_tapes"] == 2
    assert row["now_s"] == pytest.approx(row["ideal_s"], abs=1.0)
    # In drive time the second tape is a mount more than packed onto one: that is its cost.
    second_mount = row["drive_s"] - row["ideal_drive_s"]
    assert row["placement_cost_s"] == pytest.approx(second_mount)
    assert 0 < row["placement_cost_s"] < row["drive_s"] / 2
    one_tape = files.with_columns(
        pl.lit("A").alias("volume"), pl.int_range(1, 21).alias("position")
    )
    (row,) = predict_placement(one_tape, {"LTO-8": 2}).to_dicts()
    assert row["placement_cost_s"] == 0.0  # contiguous on one tape: nothing to gain
    (alone,) = predict_datasets(files, {"LTO-8": 1}, PARAMS).to_dicts()
    assert alone["ideal_tapes"] == 1  # one drive: packing saves the second mount


def test_own_tapes_keep_each_tapes_files_from_its_start() -> None:
    files = pl.DataFrame(
        {
            "dataset": ["d"] * 4,
            "volume": ["A", "A", "A", "B"],
            "media_type": ["LTO-8"] * 4,
            "position": [900, 40, 40, 7],
            "offset_bytes": [None, 0, 3, None],
            "size_bytes": [5, 3, 2, 8],
        },
        schema_overrides={"offset_bytes": pl.Int64},
    )
    laid = adjacent_on_own_tapes(files).sort("volume", "position", "offset_bytes")
    assert laid["position"].to_list() == [1, 1, 2, 1]  # the aggregate at 40 is object 1
    assert laid["offset_bytes"].to_list() == [0, 3, 0, 0]
    assert laid["start_bytes"].to_list() == [0, 3, 5, 0]
