"""Properties every plan has, on small random catalogs, request lists, drives and policies."""

from __future__ import annotations

from typing import Any

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from tapelens.analysis.recall.plan.planner import plan_recall
from tapelens.analysis.recall.requests.lists import parse_requests
from tapelens.analysis.recall.schedule.drives import readable_by_catalog
from tapelens.analysis.recall.schedule.policies import POLICIES
from tapelens.analysis.throughput.model import default_params
from tests.fixtures.plan_catalogs import GB, catalog, copy, options
from tests.props import examples

PARAMS = default_params()
READERS = readable_by_catalog()
TAPES = [f"T{i}" for i in range(5)]


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    media = {t: draw(st.sampled_from(["LTO-7", "LTO-8"])) for t in TAPES}
    state = {t: draw(st.sampled_from(["full", "full", "full", "disabled"])) for t in TAPES}
    n_files = draw(st.integers(1, 20))
    rows = []
    taken: dict[str, set[int]] = {t: set() for t in TAPES}
    for i in range(n_files):
        volumes = draw(st.lists(st.sampled_from(TAPES), min_size=1, max_size=3, unique=True))
        for k, volume in enumerate(volumes):
            free = sorted(set(range(1, 61)) - taken[volume])
            position = draw(st.sampled_from(free))
            taken[volume].add(position)
            rows.append(
                copy(
                    f"f{i}",
                    volume,
                    position,
                    dataset=f"d{i % 3}",
                    size_bytes=draw(st.sampled_from([GB // 10, GB, 5 * GB])),
                    copy_no=k + 1,
                    days_later=float(k),
                    media_type=media[volume],
                    tape_state=state[volume],
                )
            )
    lines = ["path,dataset,requester,group"]
    for i in draw(st.lists(st.integers(0, n_files - 1), max_size=12)):
        lines.append(f"/store/d{i % 3}/f{i},,{draw(st.sampled_from('ab'))},g{i % 2}")
    for d in draw(st.lists(st.sampled_from(["d0", "d1", "d2", "nope"]), max_size=2)):
        lines.append(f",{d},c,g0")
    return {
        "catalog": catalog(rows),
        "requests": parse_requests(lines),
        "drives": draw(st.sampled_from(["LTO8:1", "LTO7:1", "LTO8:2,LTO7:1", "LTO7:2"])),
        "policy": draw(st.sampled_from(POLICIES)),
        "max_drives_per_group": draw(st.sampled_from([None, 1])),
        "requester_limit": draw(st.sampled_from([None, 2])),
    }


@settings(max_examples=examples(40))
@given(case=scenarios())
def test_plans_mount_once_read_once_and_respect_drives_and_limits(case: dict[str, Any]) -> None:
    cat: pl.DataFrame = case["catalog"]
    opts = options(
        case["drives"],
        policy=case["policy"],
        max_drives_per_group=case["max_drives_per_group"],
        requester_limit=case["requester_limit"],
        group_weights=(("g0", 2.0),),
    )
    plan = plan_recall(case["requests"], cat, PARAMS, opts)
    tapes, files = plan.schedule.tapes, plan.files

    # Every tape is mounted at most once.
    assert tapes["volume"].n_unique() == tapes.height == plan.summary["mounts"]
    # Every wanted file is read exactly once, or reported unavailable; never both, never lost.
    wanted = set(plan.resolution.wanted["file_id"])
    read = files["file_id"].to_list()
    assert len(read) == len(set(read))
    unavailable = set(plan.unavailable["file_id"])
    assert set(read) | unavailable == wanted
    assert not set(read) & unavailable
    # Each file is read from a real, readable copy, on a tape of the plan.
    copies = set(cat.select("file_id", "volume", "position").iter_rows())
    assert set(files.select("file_id", "volume", "position").iter_rows()) <= copies
    assert set(files["volume"]) == set(tapes["volume"])
    states = files.join(cat.select("volume", "tape_state").unique(), on="volume")["tape_state"]
    assert (states != "disabled").all()
    # Drives read only the media they can, one mount at a time.
    for media, drive_type in tapes.select("media_type", "drive_type").iter_rows():
        assert drive_type in READERS[media]
    for _, mine in tapes.group_by("drive"):
        ordered = mine.sort("start_s")
        assert (ordered["start_s"][1:] >= ordered["end_s"][:-1] - 1e-6).all()
    # Group limits hold at every moment.
    limit = case["max_drives_per_group"]
    if limit is not None:
        for _, mine in tapes.group_by("group"):
            for t in mine["start_s"].to_list():
                running = mine.filter((pl.col("start_s") <= t) & (pl.col("end_s") > t))
                assert running.height <= limit
    # No plan beats its lower bounds (over every choice of copies, and over every ordering of
    # its own mounts); requests the catalog lacks are listed.
    if tapes.height:
        assert plan.summary["makespan_s"] >= plan.summary["lower_bound_s"] - 1e-3
        assert plan.summary["makespan_s"] >= plan.summary["schedule_bound_s"] - 1e-3
    # With makespan first, a plan is never slower than the newest-copy baseline, which reads
    # other copies with the same ordering and sharing.
    newest = plan.baselines.get("newest_copy")
    if newest is not None and tapes.height:
        assert plan.summary["makespan_s"] <= newest.makespan_s + 1e-3
    asked_missing = "nope" in case["requests"]["key"].to_list()
    assert asked_missing == any(e["key"] == "nope" for e in plan.summary["not_found"])
