"""Sharing policies and limits: who gets the drives, and when."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import polars as pl
import pytest

from tapelens.analysis.recall.plan.planner import RecallPlan, plan_recall
from tapelens.analysis.recall.requests.lists import parse_requests
from tapelens.analysis.recall.schedule.policies import Sharing, parse_group_weights
from tapelens.analysis.throughput.model import default_params
from tapelens.errors import InputError
from tests.fixtures.plan_catalogs import SCHEMA, WRITTEN, catalog, options, tape

PARAMS = default_params()
BIG_FILES = 100_000
BIG_TAPES = 20


@pytest.fixture(scope="module")
def big_and_lone() -> tuple[pl.DataFrame, pl.DataFrame]:
    """A 100k-file dataset over 20 tapes asked for first, then one file on a tape of its own."""
    i = pl.int_range(BIG_FILES, dtype=pl.Int64, eager=True)
    big = pl.DataFrame({"i": i}).select(
        pl.format("big-{}", pl.col("i")).alias("file_id"),
        pl.format("/store/big/f{}", pl.col("i")).alias("path"),
        pl.lit("big").alias("dataset"),
        pl.lit(100_000_000, pl.Int64).alias("size_bytes"),
        pl.format("B{}", pl.col("i") // (BIG_FILES // BIG_TAPES)).alias("volume"),
        (pl.col("i") % (BIG_FILES // BIG_TAPES) + 1).alias("position"),
        pl.lit(None, pl.Int64).alias("offset_bytes"),
        pl.lit(None, pl.String).alias("aggregate_id"),
        pl.lit(1, pl.Int32).alias("copy_no"),
        pl.lit(WRITTEN).alias("written_at"),
        pl.lit("LTO-8").alias("media_type"),
        pl.lit("full").alias("tape_state"),
        pl.lit(None, pl.String).alias("other_volumes"),
    )
    lone = catalog(tape("ISO", "lone", 1, first=700))
    cat = pl.concat([big.cast(SCHEMA), lone])  # type: ignore[arg-type]
    start = datetime(2024, 5, 1, tzinfo=UTC)
    asked = parse_requests(
        [
            "dataset,path,requester,submitted_at",
            f"big,,campaign,{start.isoformat()}",
            f",/store/lone/lone-ISO-0,user,{(start + timedelta(hours=1)).isoformat()}",
        ]
    )
    return asked, cat


def completion(plan: RecallPlan) -> dict[str, float]:
    return {k: v["completion_s"] for k, v in plan.summary["requesters"].items()}


@pytest.mark.parametrize(
    ("policy", "limit"), [("equal", None), ("time-slider", 1000), ("group", None)]
)
def test_a_lone_request_does_not_starve_behind_a_big_one(
    big_and_lone: tuple[pl.DataFrame, pl.DataFrame], policy: str, limit: int | None
) -> None:
    asked, cat = big_and_lone
    if policy == "group":
        asked = asked.with_columns(pl.col("requester").alias("group"))
    plan = plan_recall(
        asked, cat, PARAMS, options("LTO8:2", policy=policy, requester_limit=limit, baselines=False)
    )
    done = completion(plan)
    assert plan.summary["files"] == BIG_FILES + 1
    assert done["user"] < 0.05 * done["campaign"]


def test_fifo_makes_the_lone_request_wait_for_the_big_one(
    big_and_lone: tuple[pl.DataFrame, pl.DataFrame],
) -> None:
    asked, cat = big_and_lone
    plan = plan_recall(asked, cat, PARAMS, options("LTO8:2", policy="fifo", baselines=False))
    done = completion(plan)
    assert done["user"] > 0.85 * done["campaign"]


def most_at_once(tapes: pl.DataFrame) -> int:
    return max(
        tapes.filter((pl.col("start_s") <= t) & (pl.col("end_s") > t)).height
        for t in tapes["start_s"].to_list()
    )


def busy_at(plan: RecallPlan, column: str) -> int:
    """The most drives busy at once for one value of `column` (group or requester)."""
    return max(most_at_once(mine) for _, mine in plan.schedule.tapes.group_by(column))


def two_groups(n: int = 6) -> tuple[pl.DataFrame, pl.DataFrame]:
    rows = []
    for k in range(n):
        rows += tape(f"A{k}", f"a{k}", 5 + k) + tape(f"C{k}", f"c{k}", 5 + k)
    lines = ["dataset,requester,group"]
    lines += [f"a{k},ann,atlas" for k in range(n)] + [f"c{k},cid,cms" for k in range(n)]
    return parse_requests(lines), catalog(rows)


def test_max_drives_per_group_is_respected_and_bounds_the_makespan() -> None:
    asked, cat = two_groups()
    plan = plan_recall(asked, cat, PARAMS, options("LTO8:4", max_drives_per_group=1))
    assert busy_at(plan, "group") == 1
    bound = plan.summary["lower_bound"]["group_limit_s"]
    assert plan.summary["makespan_s"] >= bound - 1e-6
    free = plan_recall(asked, cat, PARAMS, options("LTO8:4"))
    assert busy_at(free, "group") > 1


def test_weighted_groups_share_drives_by_weight() -> None:
    asked, cat = two_groups(8)
    weights = parse_group_weights("atlas=3,cms=1")
    plan = plan_recall(
        asked, cat, PARAMS, options("LTO8:4", policy="weighted", group_weights=weights)
    )
    first = plan.schedule.tapes.filter(pl.col("start_s") == 0.0)
    assert first["group"].value_counts().sort("group").rows() == [("atlas", 3), ("cms", 1)]
    even = plan_recall(asked, cat, PARAMS, options("LTO8:4", policy="group"))
    first = even.schedule.tapes.filter(pl.col("start_s") == 0.0)
    assert first["group"].value_counts().sort("group").rows() == [("atlas", 2), ("cms", 2)]


def test_by_demand_mounts_the_most_wanted_bytes_first() -> None:
    rows = tape("S", "small", 3) + tape("L", "large", 30) + tape("M", "mid", 10)
    asked = parse_requests(["dataset", "small", "large", "mid"])
    plan = plan_recall(asked, catalog(rows), PARAMS, options("LTO8:1", policy="by-demand"))
    assert plan.schedule.tapes.sort("mount_order")["volume"].to_list() == ["L", "M", "S"]
    fifo = plan_recall(asked, catalog(rows), PARAMS, options("LTO8:1", policy="fifo"))
    assert fifo.schedule.tapes.sort("mount_order")["volume"].to_list() == ["S", "L", "M"]


def test_time_slider_serves_priority_then_oldest_pulling_in_the_tape() -> None:
    rows = tape("T1", "a", 4) + tape("T2", "b", 4) + tape("T3", "c", 4)
    asked = parse_requests(
        [
            "path,priority,submitted_at",
            "/store/b/b-T2-0,0,2024-01-02T00:00:00Z",
            "/store/a/a-T1-0,0,2024-01-01T00:00:00Z",
            "/store/c/c-T3-0,9,2024-01-03T00:00:00Z",
            "/store/a/a-T1-3,0,2024-01-04T00:00:00Z",
        ]
    )
    plan = plan_recall(asked, catalog(rows), PARAMS, options("LTO8:1", policy="time-slider"))
    assert plan.schedule.tapes.sort("mount_order")["volume"].to_list() == ["T3", "T1", "T2"]
    on_t1 = plan.files.filter(pl.col("volume") == "T1")
    assert on_t1["file_id"].to_list() == ["a-T1-0", "a-T1-3"]  # pulled in, one mount


def test_requester_limit_caps_files_in_flight() -> None:
    rows = []
    for k in range(4):
        rows += tape(f"A{k}", f"a{k}", 30) + tape(f"U{k}", f"u{k}", 2)
    lines = ["dataset,requester"] + [f"a{k},ann" for k in range(4)]
    lines += [f"u{k},ugo" for k in range(4)]
    cat = catalog(rows)
    ann = pl.col("requester") == "ann"
    free = plan_recall(parse_requests(lines), cat, PARAMS, options("LTO8:4", policy="time-slider"))
    assert most_at_once(free.schedule.tapes.filter(ann)) > 1
    capped = plan_recall(
        parse_requests(lines),
        cat,
        PARAMS,
        options("LTO8:4", policy="time-slider", requester_limit=40),
    )
    # 30 files a tape against a limit of 40: one of ann's tapes at a time.
    assert most_at_once(capped.schedule.tapes.filter(ann)) == 1
    assert most_at_once(capped.schedule.tapes.filter(~ann)) > 1


def test_bad_sharing_options_are_refused() -> None:
    with pytest.raises(InputError, match="unknown policy"):
        Sharing(policy="lifo")
    with pytest.raises(InputError, match="at least 1"):
        Sharing(max_drives_per_group=0)
    with pytest.raises(InputError, match="GROUP=WEIGHT"):
        parse_group_weights("atlas:3")


def test_drives_lent_to_older_media_leave_room_for_media_only_they_read() -> None:
    # LTO-7 tapes (more bytes, so first by demand) can go to either drive type; LTO-8 tapes only
    # to LTO-8 drives. Quotas from the fractional split keep the LTO-8 drives for them.
    rows = []
    for k in range(8):
        rows += tape(f"S{k}", f"s{k}", 40, media_type="LTO-7")
    for k in range(6):
        rows += tape(f"E{k}", f"e{k}", 30)
    asked = parse_requests(["dataset"] + [f"s{k}" for k in range(8)] + [f"e{k}" for k in range(6)])
    plan = plan_recall(asked, catalog(rows), PARAMS, options("LTO8:2,LTO7:2", baselines=False))
    assert plan.summary["makespan_s"] <= 1.1 * plan.summary["schedule_bound_s"]
    placed = plan.schedule.tapes
    assert set(placed.filter(pl.col("media_type") == "LTO-8")["drive_type"]) == {"LTO-8"}
