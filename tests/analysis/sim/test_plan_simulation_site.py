"""A recall planned on the synthetic site simulates to within 5% of its predicted makespan.

End to end: a generated bnl site is ingested, a few of its largest datasets are planned as the
CLI plans them (the catalog and model parameters from the database), and the plan is run by the
library simulator with the same model parameters, following the plan, without faults or jitter.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import psycopg
import pytest

from tapelens.analysis.recall.plan.planner import PlanOptions, RecallPlan
from tapelens.analysis.recall.requests.lists import requests_frame
from tapelens.analysis.recall.store.catalog import plan_from_database
from tapelens.analysis.sim.io import load_plan
from tapelens.analysis.sim.simulator import DEFAULT_ROBOTS, Library, SimConfig, SimResult, simulate
from tapelens.analysis.throughput.model import ModelParams
from tapelens.world import generate, site_params
from tests.fixtures.generated_site import load_site

# The site's media are LTO-6 to LTO-9; each LTO drive reads its own and the previous generation.
DRIVES = {"LTO-7": 1, "LTO-8": 2, "LTO-9": 2}
DATASETS = 4
TOLERANCE = 0.05  # simulated makespan within 5% of the plan's prediction


@pytest.fixture
def planned(dsn: str, tmp_path: Path) -> tuple[RecallPlan, dict[str, ModelParams]]:
    site = tmp_path / "site"
    generate(site, site_params("bnl", files=15_000, seed=11, history=False))
    load_site(dsn, site, {"tapes", "catalog"})
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "select dataset from tapelens.tape_files where removed_at is null"
            " group by dataset order by count(*) desc, dataset limit %s",
            [DATASETS],
        ).fetchall()
        datasets = [r[0] for r in rows]
        options = PlanOptions(drives=tuple(DRIVES.items()))
        plan, params = plan_from_database(conn, requests_frame(datasets, "dataset"), options)
    assert plan.not_found.height == 0 and plan.unavailable.height == 0
    return plan, params


def run_plan(plan: RecallPlan, params: dict[str, ModelParams], robots: int) -> SimResult:
    source = load_plan(None, plan.files)
    library = Library.from_counts(DRIVES, robots=robots)
    config = SimConfig(scheduler="planned", jitter=0.0)
    return simulate(source.requests, library, params, config, np.random.default_rng(0))


# One robot per drive is what the planner assumes (a mount never waits for a robot); the
# simulator's default of two robots adds robot contention, which must not break the 5% either.
@pytest.mark.parametrize("robots", [sum(DRIVES.values()), DEFAULT_ROBOTS])
def test_simulated_makespan_of_a_site_plan_is_within_5_percent_of_its_prediction(
    planned: tuple[RecallPlan, dict[str, ModelParams]], robots: int
) -> None:
    plan, params = planned
    predicted_s = plan.schedule.makespan_s
    result = run_plan(plan, params, robots)
    simulated_s = result.summary.makespan_s
    assert plan.files.height > 1_000 and plan.schedule.mounts > len(DRIVES)
    # The plan carries the catalog's byte addresses, so the simulation times read-through and
    # locates as the prediction did; what remains is robot contention and the event order.
    ratio = simulated_s / predicted_s
    assert abs(ratio - 1) <= TOLERANCE, (
        f"simulated {simulated_s:.0f} s, predicted {predicted_s:.0f} s"
    )

    reads = result.events.filter(pl.col("kind") == "read")
    assert sorted(reads["path"].to_list()) == sorted(plan.files["path"].to_list())
    assert result.summary.files_delivered == plan.files.height
    mounts = result.events.filter(pl.col("kind") == "mount")["volume"]
    assert mounts.n_unique() == mounts.len() == plan.schedule.mounts
    assert set(mounts.to_list()) == set(plan.files["volume"].to_list())
