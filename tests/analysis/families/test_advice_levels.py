"""The families advice over hand-built write streams: a level that names no group of a level of
its own is the placement of the level below it, priced once."""

from __future__ import annotations

import polars as pl

from tapelens.analysis.families.advice import AdviceOptions, advise
from tapelens.analysis.throughput.model import default_params
from tapelens.analysis.whatif.replay import WhatIfParams, replay
from tapelens.analysis.whatif.stats import RecallSetup

GB = 1_000_000_000
DAY = 86_400.0
PARAMS = WhatIfParams(window_s=DAY / 2, media=(("LTO-8", 0.0),), aggregate=False)
RECALL = RecallSetup({"LTO-8": 2}, {"LTO-8": default_params()["LTO-8"]})


def site(with_level_4: bool) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Three datasets of 8 files, interleaved as they arrive over two days, each recalled
    whole: the write stream, its FIFO placement as the recorded one, and the campaigns."""
    names = [f"d{i % 3}" for i in range(24)]
    stream = pl.DataFrame(
        {
            "file_id": [f"f{i:02d}" for i in range(24)],
            "path": [f"/exp/{d}/file{i:02d}" for i, d in enumerate(names)],
            "dataset": [f"/exp/{d}" for d in names],
            "dataset_type": ["AOD"] * 24,
            "pool": ["exp"] * 24,
            "size_bytes": [20 * GB] * 24,
            "arrived_at": [i * DAY / 12 for i in range(24)],
            "group_0": ["AOD_data"] * 24,
            "group_1": ["AOD_data | physics_Main"] * 24,
            "group_2": ["AOD_data | physics_Main | data24"] * 24,
            "group_3": [f"AOD_data | physics_Main | data24 | r{i % 3}" for i in range(24)],
        }
    )
    if with_level_4:
        stream = stream.with_columns(
            pl.format("{} | {}", pl.col("group_3"), pl.col("dataset")).alias("group_4")
        )
    copies = replay(stream, PARAMS).select(
        "file_id", "dataset", "dataset_type", "size_bytes", "volume", "position",
        "offset_bytes", "aggregate_id", "start_bytes", "media_type", "written_at",
    )  # fmt: skip
    campaigns = stream.select(pl.col("dataset").alias("campaign"), "file_id")
    return stream, copies, campaigns


def test_a_level_naming_no_group_of_its_own_is_priced_as_the_level_below() -> None:
    said: list[str] = []
    stream, copies, campaigns = site(with_level_4=False)
    options = AdviceOptions(open_families=3, min_family_bytes=GB, levels=(3, 4))
    advice = advise(copies, stream, campaigns, RECALL, PARAMS, options, said.append)
    figures = [c for c in advice.table.columns if c not in ("placement", "level", "advised")]
    three = advice.table.filter(pl.col("level") == 3).select(figures)
    four = advice.table.filter(pl.col("level") == 4).select(figures)
    assert three.equals(four)
    assert "hint level 4 makes the families of level 3: the same placement" in said
    assert sum("replaying" in m for m in said) == 1
    # The interleaved datasets recall from 12 mounts as recorded, 3 collocated; level 3 and 4
    # tie, and the broader one is advised.
    assert advice.table["recall_mounts"].to_list() == [12, 3, 3]
    assert advice.table.filter(pl.col("advised"))["level"].to_list() == [3]


def test_a_level_4_of_its_own_is_replayed() -> None:
    said: list[str] = []
    stream, copies, campaigns = site(with_level_4=True)
    options = AdviceOptions(open_families=3, min_family_bytes=GB, levels=(3, 4))
    advice = advise(copies, stream, campaigns, RECALL, PARAMS, options, said.append)
    assert sum("replaying" in m for m in said) == 2
    four = advice.table.filter(pl.col("level") == 4).row(0, named=True)
    assert four["families"] == 3  # the three parent datasets
