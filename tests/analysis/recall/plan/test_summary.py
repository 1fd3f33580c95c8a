"""The plan summary names what each figure is: the bound that explains the makespan (over the
plan's own mounts, by the part that decides it, the makespan's ratio to it), the bound no plan
can beat, both as h:mm:ss; drives that read none of the requested media do not shrink either;
the drive time is every drive's busy time added; the whole datasets' placement cost is quoted."""

from __future__ import annotations

import re

import polars as pl
import pytest

from tapelens.analysis.recall.plan.planner import plan_recall, with_placement_costs
from tapelens.analysis.recall.plan.summary import summary_text
from tapelens.analysis.recall.requests.lists import requests_frame
from tapelens.analysis.throughput.model import default_params
from tests.fixtures.plan_catalogs import catalog, options, tape

PARAMS = default_params()
CLOCK = re.compile(r"\d+:\d\d:\d\d")


def one_long_tape() -> pl.DataFrame:
    # One tape of 200 files and two of 2: the long tape decides any schedule on 3 drives.
    return catalog(tape("BIG", "d", 200) + tape("S1", "d", 2) + tape("S2", "d", 2))


def test_a_plan_at_its_schedule_bound_is_not_called_far_off() -> None:
    plan = plan_recall(requests_frame(["d"], "dataset"), one_long_tape(), PARAMS, options("LTO8:3"))
    summary = plan.summary
    assert summary["schedule_bound_by"] == "longest_tape_s"
    assert summary["makespan_over_schedule_bound"] == pytest.approx(1.0, abs=1e-3)
    text = summary_text(summary)
    (bound, floor) = [
        line for line in text.splitlines() if "for this plan" in line or "any" in line
    ]
    assert "the longest tape, for this plan's mounts: makespan is 1.000 x it" in bound
    assert "x the lower bound" not in text
    assert CLOCK.search(bound) and CLOCK.search(floor) and " s " not in bound + floor
    assert "for any copies" in floor


def test_drives_that_read_none_of_the_media_do_not_shrink_the_bounds() -> None:
    requests = requests_frame(["d"], "dataset")
    alone = plan_recall(requests, one_long_tape(), PARAMS, options("LTO8:3")).summary
    # LTO-6 drives read LTO-5 and LTO-6 only: they cannot share the work of LTO-8 tapes.
    phantom = plan_recall(requests, one_long_tape(), PARAMS, options("LTO8:3,LTO6:9")).summary
    assert phantom["lower_bound"] == alone["lower_bound"]
    assert phantom["schedule_bound"] == alone["schedule_bound"]
    assert phantom["makespan_s"] == alone["makespan_s"]


def test_drive_time_is_the_busy_time_of_every_drive_and_the_placement_cost_is_quoted() -> None:
    plan = plan_recall(requests_frame(["d"], "dataset"), one_long_tape(), PARAMS, options("LTO8:3"))
    busy = sum(d["busy_s"] for d in plan.summary["drive_use"].values())
    assert plan.summary["drive_time_s"] == pytest.approx(busy, abs=0.01)
    assert plan.summary["drive_time_s"] > plan.summary["makespan_s"]  # three drives busy
    costs = pl.DataFrame(
        {
            "dataset": ["d"],
            "placement_cost_s": [600.0],
            "drive_s": [plan.summary["drive_time_s"]],
            "live_files": [204],
            "readable_files": [204],
        }
    )
    quoted = with_placement_costs(plan, costs).summary
    assert quoted["placement"]["by_dataset"]["d"]["placement_cost_s"] == 600.0
    text = summary_text(quoted)
    assert "placement  1 whole dataset: 0:10:00 of drive time beyond ideal placement" in text
    assert "placement" not in summary_text(with_placement_costs(plan, None).summary).split()
