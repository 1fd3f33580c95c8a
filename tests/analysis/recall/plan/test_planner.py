"""The recall planner on hand-made catalogs: copies, forward passes, drives, baselines, bounds."""

from __future__ import annotations

from dataclasses import replace

import polars as pl
import pytest

from tapelens.analysis.recall.baselines.direct import DirectSubmission
from tapelens.analysis.recall.baselines.newest import newest_copies
from tapelens.analysis.recall.plan.planner import plan_recall
from tapelens.analysis.recall.requests.lists import parse_requests, requests_frame
from tapelens.analysis.throughput.model import MB, default_params
from tests.fixtures.plan_catalogs import GB, catalog, copy, options, tape

PARAMS = default_params()


def stray_copies_catalog() -> pl.DataFrame:
    """Dataset D on A1 and A2; six of its files retried onto S1 and S2 (newer copies) which
    otherwise hold dataset X; dataset Y on A3 is not asked for."""
    rows = tape("A1", "D", 40) + tape("A2", "D", 40) + tape("A3", "Y", 30)
    rows += tape("S1", "X", 20) + tape("S2", "X", 20, first=100)
    for i, (volume, position) in enumerate([("S1", 50), ("S1", 51), ("S2", 300)] * 2):
        source = "A1" if i < 3 else "A2"
        rows.append(
            copy(f"D-{source}-{i}", volume, position + i, dataset="D", copy_no=2, days_later=3)
        )
    return catalog(rows)


def test_stray_newer_copies_mount_only_the_dataset_tapes() -> None:
    cat = stray_copies_catalog()
    plan = plan_recall(requests_frame(["D"], "dataset"), cat, PARAMS, options("LTO8:2"))
    assert set(plan.schedule.tapes["volume"]) == {"A1", "A2"}
    assert plan.files.height == 80
    assert plan.baselines["newest_copy"].mounts == 4
    newest = newest_copies(plan.resolution.copies)
    assert set(newest["volume"]) == {"A1", "A2", "S1", "S2"}
    assert plan.summary["speedups"]["newest_copy"] > 1.0
    assert plan.summary["baselines"]["fifo"]["mounts"] >= 4


def test_one_forward_pass_per_tape_and_each_aggregate_read_once() -> None:
    rows = [
        copy("late", "T1", 9),
        copy("m2", "T1", 3, offset_bytes=2 * GB, size_bytes=GB),
        copy("solo", "T1", 5),
        copy("m0", "T1", 3, offset_bytes=0, size_bytes=GB),
        copy("m1", "T1", 3, offset_bytes=GB, size_bytes=GB),
    ]
    asked = requests_frame([f"/store/ds/{f}" for f in ("late", "m2", "solo", "m0", "m1")])
    plan = plan_recall(asked, catalog(rows), PARAMS, options("LTO8:1"))
    files = plan.files.sort("order")
    assert files["file_id"].to_list() == ["m0", "m1", "m2", "solo", "late"]
    assert files["kind"].to_list() == ["first", "member", "member", "read_through", "read_through"]
    assert files.filter(pl.col("kind") == "member")["overhead_s"].to_list() == [0.0, 0.0]
    assert (files["start_s"].diff().drop_nulls() > 0).all()
    assert plan.summary["mounts"] == 1


def test_every_file_read_once_and_drive_timelines_never_overlap() -> None:
    rows = []
    for t in range(6):
        rows += tape(f"T{t}", f"d{t % 2}", 5 + 3 * t, step=2)
    cat = catalog(rows)
    plan = plan_recall(requests_frame(["d0", "d1"], "dataset"), cat, PARAMS, options("LTO8:2"))
    assert plan.files["file_id"].n_unique() == plan.files.height == cat.height
    assert sorted(plan.files["order"].to_list()) == list(range(1, cat.height + 1))
    for _, events in plan.schedule.timeline.group_by("drive"):
        ordered = events.sort("start_s")
        assert (ordered["start_s"].shift(-1).drop_nulls() >= ordered["end_s"][:-1] - 1e-9).all()
    # Every read lies between the end of the mount and the start of the rewind, and a mount's
    # events follow each other: mount, position, read, rewind, dismount.
    events = plan.schedule.timeline
    per_mount = events.group_by("drive", "volume", maintain_order=True).agg(
        pl.col("event"), pl.col("start_s").min().alias("from_s"), pl.col("end_s").max()
    )
    assert set(map(tuple, per_mount["event"].to_list())) == {
        ("mount", "position", "read", "rewind", "dismount")
    }
    mounted = events.filter(pl.col("event") == "position").select("drive", "volume", "start_s")
    rewound = events.filter(pl.col("event") == "rewind").select("drive", "volume", "start_s")
    within = plan.files.join(mounted, on=["drive", "volume"], suffix="_mounted").join(
        rewound, on=["drive", "volume"], suffix="_rewind"
    )
    assert (within["start_s"] >= within["start_s_mounted"] - 1e-6).all()
    assert (within["end_s"] <= within["start_s_rewind"] + 1e-6).all()
    assert (per_mount["end_s"] - per_mount["from_s"] > 0).all()


def test_tapes_only_go_to_drives_that_read_them() -> None:
    rows = tape("N1", "new", 10) + tape("N2", "new", 10)
    rows += tape("O1", "old", 10, media_type="LTO-7") + tape("O2", "old", 10, media_type="LTO-7")
    rows += tape("G6", "older", 4, media_type="LTO-6")
    plan = plan_recall(
        requests_frame(["new", "old", "older"], "dataset"),
        catalog(rows),
        PARAMS,
        options("LTO8:1,LTO7:1"),
    )
    placed = dict(plan.schedule.tapes.select("volume", "drive_type").iter_rows())
    assert placed["N1"] == placed["N2"] == "LTO-8"
    assert placed["G6"] == "LTO-7"
    assert {placed["O1"], placed["O2"]} <= {"LTO-7", "LTO-8"}
    assert plan.summary["makespan_s"] >= plan.summary["lower_bound_s"] - 1e-6


def test_media_no_given_drive_reads_is_unavailable_not_dropped() -> None:
    rows = tape("N1", "new", 3) + tape("L9", "newest", 2, media_type="LTO-9")
    plan = plan_recall(
        requests_frame(["new", "newest"], "dataset"), catalog(rows), PARAMS, options("LTO8:1")
    )
    assert plan.files.height == 3
    assert plan.summary["unavailable"] == {
        "files": 2,
        "bytes": 4 * GB,
        "by_reason": {"no drive reads LTO-9": 2},
    }


def test_lower_bound_parts_and_makespan() -> None:
    rows = tape("BIG", "d", 200) + tape("S1", "d", 2) + tape("S2", "d", 2)
    plan = plan_recall(requests_frame(["d"], "dataset"), catalog(rows), PARAMS, options("LTO8:3"))
    # Over this plan's mounts: the longest tape decides, and the plan reaches it.
    parts = plan.summary["schedule_bound"]
    longest = plan.schedule.tapes["total_s"].max()
    assert parts["longest_tape_s"] == pytest.approx(longest, abs=1e-3)
    assert plan.summary["schedule_bound_s"] == pytest.approx(longest, abs=1e-3)
    assert plan.summary["makespan_s"] == pytest.approx(longest, abs=1e-3)
    # Over every choice of copies: below the plan, and below any single file's own recall
    # plus the others' streaming: BIG's 200 files cannot be read faster than streaming them.
    bound = plan.summary["lower_bound"]
    assert plan.summary["lower_bound_s"] <= plan.summary["makespan_s"] + 1e-6
    assert bound["work_over_drives_s"] >= 204 * 2 * GB / (PARAMS["LTO-8"].rate_mb_s * MB) / 3
    assert plan.summary["lower_bound_s"] == max(bound.values())


def test_fifo_direct_submission_remounts_interleaved_requests_behind_a_small_window() -> None:
    # Interleaved requests for three tapes, one drive. With the whole list at the tape system,
    # its per-tape queues gather each tape's requests: three mounts. A front end that lets one
    # request through at a time makes every request a mount of its own.
    rows = [copy(f"t{t}-{i}", f"T{t}", 1 + i) for t in range(3) for i in range(4)]
    interleaved = [f"/store/ds/t{t}-{i}" for i in range(4) for t in range(3)]
    asked, cat = requests_frame(interleaved), catalog(rows)
    plan = plan_recall(asked, cat, PARAMS, options("LTO8:1"))
    assert plan.summary["mounts"] == 3
    assert plan.baselines["fifo"].mounts == 3
    one_at_a_time = replace(options("LTO8:1"), direct=DirectSubmission(window=1))
    narrow = plan_recall(asked, cat, PARAMS, one_at_a_time)
    assert narrow.baselines["fifo"].mounts == 12
    assert narrow.summary["speedups"]["fifo"] > 3


def test_fifo_equals_the_plan_for_one_tape_asked_in_position_order() -> None:
    rows = tape("T1", "d", 8, step=3)
    asked = requests_frame([r["path"] for r in rows])
    plan = plan_recall(asked, catalog(rows), PARAMS, options("LTO8:1"))
    assert plan.baselines["fifo"].mounts == 1
    assert plan.baselines["fifo"].makespan_s == pytest.approx(plan.schedule.makespan_s)
    assert plan.baselines["newest_copy"].makespan_s == pytest.approx(plan.schedule.makespan_s)


def test_per_requester_completion_is_their_last_file() -> None:
    rows = tape("T1", "a", 5) + tape("T2", "b", 50)
    asked = parse_requests(["dataset,requester", "a,alice", "b,bob"])
    plan = plan_recall(asked, catalog(rows), PARAMS, options("LTO8:2"))
    done = plan.summary["requesters"]
    assert set(done) == {"alice", "bob"}
    last = plan.files.group_by("requester").agg(pl.col("end_s").max())
    for name, end in last.iter_rows():
        assert done[name]["completion_s"] == pytest.approx(end, abs=1e-3)
    assert done["alice"]["completion_s"] < done["bob"]["completion_s"]


def test_summary_has_the_documented_keys() -> None:
    rows = tape("T1", "a", 3)
    asked = requests_frame(["a", "missing"], "dataset")
    summary = plan_recall(asked, catalog(rows), PARAMS, options("LTO8:1")).summary
    for key in (
        "files",
        "bytes",
        "tapes",
        "mounts",
        "makespan_s",
        "rate_mb_s",
        "lower_bound_s",
        "copy_choice",
        "not_found",
        "unavailable",
        "baselines",
        "speedups",
    ):
        assert key in summary
    assert set(summary["copy_choice"]) >= {"method", "bound"}
    assert set(summary["baselines"]["fifo"]) >= {"makespan_s", "mounts"}
    assert set(summary["baselines"]["newest_copy"]) >= {"makespan_s", "mounts"}
    assert summary["not_found"] == [{"line": 2, "kind": "dataset", "key": "missing"}]
    assert summary["rate_mb_s"] == pytest.approx(6000 / summary["makespan_s"], rel=1e-3)


def test_idle_drives_read_stray_copies_rather_than_one_long_home_tape() -> None:
    # One dataset whole on its home tape, and newer second copies of half its files on five
    # other tapes: the cheapest choice reads everything from the home tape on one drive while
    # nine wait. With the makespan first, the plan must not be slower than reading the newest
    # copies in parallel, and it says which copy set it took.
    rows = [copy(f"f{i}", "HOME", i + 1, dataset="d") for i in range(300)]
    rows += [
        copy(f"f{i}", f"S{i % 5}", i // 5 + 1, dataset="d", copy_no=2, days_later=30)
        for i in range(0, 300, 2)
    ]
    asked = requests_frame(["d"], "dataset")
    plan = plan_recall(asked, catalog(rows), PARAMS, options("LTO8:10"))
    assert plan.summary["copy_set"] != "cheapest"
    for name, baseline in plan.baselines.items():
        # The summary gives the makespan to the millisecond.
        assert plan.summary["makespan_s"] <= round(baseline.makespan_s, 3), name
    assert plan.summary["mounts"] > 1
    # Favouring drive time keeps the one-tape plan: fewer mounts, longer wait.
    frugal = plan_recall(asked, catalog(rows), PARAMS, options("LTO8:10", objective="drive-time"))
    assert frugal.summary["mounts"] == 1
    assert frugal.summary["makespan_s"] > plan.summary["makespan_s"]


def test_a_copy_on_several_cartridges_mounts_them_all() -> None:
    # An HPSS copy listed with one position and two volumes needs both cartridges: the plan
    # mounts both, reads a share of the file from each, and the time counts both mounts.
    rows = tape("T1", "d", 3)
    big = copy("big", "T1", 10, dataset="d", size_bytes=30 * GB)
    rows.append({**big, "other_volumes": "T9"})
    cat = catalog(rows)
    plan = plan_recall(requests_frame(["d"], "dataset"), cat, PARAMS, options("LTO8:2"))
    assert set(plan.schedule.tapes["volume"]) == {"T1", "T9"}
    parts = plan.files.filter(pl.col("file_id") == "big").sort("part")
    assert parts.select("volume", "part", "size_bytes").rows() == [
        ("T1", 1, 15 * GB),
        ("T9", 2, 15 * GB),
    ]
    alone = plan_recall(
        requests_frame(["d"], "dataset"), catalog(rows[:-1] + [big]), PARAMS, options("LTO8:2")
    )
    assert alone.summary["mounts"] == 1 and plan.summary["mounts"] == 2
    # Both baselines mount the second cartridge too, and count the file once.
    for name, baseline in plan.baselines.items():
        assert baseline.mounts == 2, name
        assert baseline.files == 4, name
