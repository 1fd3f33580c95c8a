"""The same recall planned under several drive-sharing policies, side by side.

One catalog read, one plan per policy (analysis/recall/plan/planner.py), and per policy: makespan,
mounts, rate, when the first, median and last requester is served, and how evenly the drives'
work was shared among requesters: Jain's fairness index over the requesters' throughputs
(bytes asked / time to their last file), 1 when every requester is served at the same rate,
1/n when one is served and the rest wait. Pure: frames in, frames out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import polars as pl

from tapelens.analysis.recall.plan.planner import PlanOptions, plan_recall
from tapelens.analysis.recall.schedule.policies import POLICIES, Sharing
from tapelens.analysis.throughput.model import ModelParams

COMPARISON_COLUMNS = (
    "policy",
    "makespan_s",
    "mounts",
    "fairness",
    "first_requester_done_s",
    "median_requester_done_s",
    "last_requester_done_s",
    "rate_mb_s",
    "requesters",
    "files_read",
)


@dataclass(frozen=True)
class Comparison:
    """table: one row per policy (COMPARISON_COLUMNS); served: one per policy and requester
    (files, bytes, completion_s); not_found and unavailable: what every plan left out, the
    same under every policy (the requests the catalog does not know, with their cause; the
    files without a copy the drives can read, with the reason), so that a comparison never
    counts fewer files than were asked without saying which."""

    table: pl.DataFrame
    served: pl.DataFrame
    not_found: pl.DataFrame
    unavailable: pl.DataFrame


def default_policies(sharing: Sharing) -> tuple[str, ...]:
    """Every policy; weighted only when weights are given."""
    return tuple(p for p in POLICIES if p != "weighted" or sharing.group_weights)


def jain_index(values: Sequence[float]) -> float | None:
    """(sum x)^2 / (n sum x^2): 1 when all equal, 1/n when one takes everything."""
    xs = [float(v) for v in values]
    square = sum(x * x for x in xs)
    if not xs or square == 0:
        return None
    return sum(xs) ** 2 / (len(xs) * square)


def compare_policies(
    requests: pl.DataFrame,
    catalog: pl.DataFrame,
    params_by_media: Mapping[str, ModelParams],
    options: PlanOptions,
    policies: Sequence[str],
    readable_by: Mapping[str, tuple[str, ...]] | None = None,
) -> Comparison:
    """The plans of the same requests under each policy, side by side (Comparison). The
    baselines are left out: they do not depend on the policy."""
    rows, served = [], []
    not_found = unavailable = pl.DataFrame()
    for policy in policies:
        sharing = replace(options.sharing, policy=policy)
        chosen = replace(options, sharing=sharing, baselines=False)
        plan = plan_recall(requests, catalog, params_by_media, chosen, readable_by)
        not_found, unavailable = plan.not_found, plan.unavailable
        who = plan.requesters.filter(pl.col("completion_s").is_not_null())
        done = who["completion_s"]
        rates = [b / t for b, t in who.select("bytes", "completion_s").rows() if t and t > 0]
        rows.append(
            {
                "policy": policy,
                "makespan_s": plan.summary["makespan_s"],
                "mounts": plan.summary["mounts"],
                "fairness": jain_index(rates),
                "first_requester_done_s": done.min() if who.height else None,
                "median_requester_done_s": done.median() if who.height else None,
                "last_requester_done_s": done.max() if who.height else None,
                "rate_mb_s": plan.summary["rate_mb_s"],
                "requesters": who.height,
                "files_read": plan.summary["files"],
            }
        )
        served.append(plan.requesters.select(pl.lit(policy).alias("policy"), pl.all()))
    table = pl.DataFrame(
        rows,
        schema={
            "policy": pl.String,
            "makespan_s": pl.Float64,
            "mounts": pl.Int64,
            "fairness": pl.Float64,
            "first_requester_done_s": pl.Float64,
            "median_requester_done_s": pl.Float64,
            "last_requester_done_s": pl.Float64,
            "rate_mb_s": pl.Float64,
            "requesters": pl.Int64,
            "files_read": pl.Int64,
        },
    )
    return Comparison(
        table,
        pl.concat(served, how="vertical_relaxed") if served else pl.DataFrame(),
        not_found,
        unavailable,
    )
