"""The write policy collocate-by-hint on hand-built write streams, in closed form."""

from __future__ import annotations

import polars as pl

from tapelens.analysis.whatif.families import REST, FamilyPolicy, families
from tapelens.analysis.whatif.replay import WhatIfParams, replay_families

GB = 1_000_000_000
DAY = 86_400.0


def stream(rows: list[tuple[str, str | None, float]]) -> pl.DataFrame:
    """One 1 GB file per (dataset, level-3 group, arrival day); levels 0-2 shared by all."""
    return pl.DataFrame(
        {
            "file_id": [f"f{i}" for i in range(len(rows))],
            "path": [f"/exp/{d}/file{i:03d}" for i, (d, _, _) in enumerate(rows)],
            "dataset": [f"/exp/{d}" for d, _, _ in rows],
            "dataset_type": ["AOD"] * len(rows),
            "pool": ["exp"] * len(rows),
            "size_bytes": [GB] * len(rows),
            "arrived_at": [t * DAY for _, _, t in rows],
            "group_0": ["AOD"] * len(rows),
            "group_1": ["AOD | p"] * len(rows),
            "group_2": ["AOD | p | v"] * len(rows),
            "group_3": [g for _, g, _ in rows],
        }
    )


PARAMS = WhatIfParams(window_s=DAY / 2, media=(("LTO-8", 0.0),), aggregate=False)


def policy(level: int, open_tapes: int) -> FamilyPolicy:
    return FamilyPolicy(level, (("exp", open_tapes),), min_family_bytes=1)


def test_one_open_tape_writes_each_family_together() -> None:
    interleaved = stream([(d, f"AOD | p | v | {d}", 0.01 * i) for i, d in enumerate("ABABAB")])
    placed, cost = replay_families(interleaved, PARAMS, policy(3, 1))
    placed = placed.sort("position")
    assert placed["volume"].n_unique() == 1
    assert placed["dataset"].to_list() == ["/exp/A"] * 3 + ["/exp/B"] * 3
    row = cost.frame.row(0, named=True)
    assert (row["tapes"], row["write_mounts"], row["partly_filled_tapes"]) == (1, 1, 1)


def test_each_family_its_own_open_tape_when_there_are_enough() -> None:
    interleaved = stream([(d, f"AOD | p | v | {d}", 0.01 * i) for i, d in enumerate("ABABAB")])
    placed, cost = replay_families(interleaved, PARAMS, policy(3, 2))
    tapes = placed.group_by("dataset").agg(pl.col("volume").unique())
    assert all(len(v) == 1 for v in tapes["volume"])
    assert placed["volume"].n_unique() == 2
    assert cost.frame["write_mounts"][0] == 2
    # Level 0 puts both datasets in one family: one tape, files in directory order.
    broad, _ = replay_families(interleaved, PARAMS, policy(0, 2))
    assert broad["volume"].n_unique() == 1


def test_the_least_recently_written_family_gives_up_its_tape() -> None:
    # Day 0: A and B; day 1: C (takes the tape of A, written before B in the day-0 migration),
    # then A again (takes the tape B held).
    rows = [("A", "A", 0.0), ("B", "B", 0.1), ("C", "C", 1.0), ("A", "A", 2.0)]
    placed, cost = replay_families(stream(rows), PARAMS, policy(3, 2))
    volume = dict(zip(placed["file_id"], placed["volume"], strict=True))
    assert volume["f2"] == volume["f0"]  # C on A's former tape
    assert volume["f3"] == volume["f1"]  # A back, on B's former tape
    assert cost.frame["write_mounts"][0] == 4


def test_small_groups_are_merged_upward() -> None:
    rows = [("A", "A", 0.0)] * 3 + [("B", "B", 0.0)] + [("N", None, 0.0)]
    unhinted = pl.col("dataset") == "/exp/N"
    frame = stream(rows).with_columns(
        pl.when(unhinted).then(None).otherwise(pl.col(f"group_{k}")).alias(f"group_{k}")
        for k in range(4)
    )
    fam = families(frame, 3, 2 * GB).to_list()
    assert fam[:3] == ["3: A"] * 3
    assert fam[3] == "2: AOD | p | v"  # B holds 1 GB: written with its parent
    assert fam[4] == REST  # no hints at all


def test_the_rest_family_holds_its_open_tape_as_any_other() -> None:
    # Day 0: the rest (files without hints) and A; day 1: the rest again; day 2: B, which takes
    # the tape of A, the family that wrote least recently, not the rest's.
    rows = [("N", None, 0.0), ("A", "A", 0.1), ("N", None, 1.0), ("B", "B", 2.0)]
    unhinted = pl.col("dataset") == "/exp/N"
    frame = stream(rows).with_columns(
        pl.when(unhinted).then(None).otherwise(pl.col(f"group_{k}")).alias(f"group_{k}")
        for k in range(4)
    )
    placed, _ = replay_families(frame, PARAMS, policy(3, 2))
    volume = dict(zip(placed["file_id"], placed["volume"], strict=True))
    assert volume["f0"] == volume["f2"] != volume["f1"]
    assert volume["f3"] == volume["f1"]


def test_level_4_families_are_atlas_parent_datasets_under_their_version() -> None:
    # ATLAS's AOD data (its policy package's AOD/data branch): level 3 the version, level 4 the
    # parent dataset; two datasets of one version are one family at 3, two at 4.
    rows = [("A", "AOD | p | v | r1", 0.0), ("B", "AOD | p | v | r1", 0.0)] * 2
    frame = stream(rows).with_columns(
        pl.format("{} | {}", pl.col("group_3"), pl.col("dataset")).alias("group_4")
    )
    assert set(families(frame, 3, 1).to_list()) == {"3: AOD | p | v | r1"}
    assert (
        families(frame, 4, 1).to_list()
        == [
            "4: AOD | p | v | r1 | /exp/A",
            "4: AOD | p | v | r1 | /exp/B",
        ]
        * 2
    )
    # A stream without the level-4 column names no level-4 group: level 3's families.
    assert families(stream(rows), 4, 1).to_list() == families(stream(rows), 3, 1).to_list()
