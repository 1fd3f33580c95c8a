"""The same recall under several policies side by side: one row per policy, the requesters'
completions and Jain's fairness index."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tapelens.analysis.recall.plan.policy_comparison import (
    COMPARISON_COLUMNS,
    compare_policies,
    default_policies,
    jain_index,
)
from tapelens.analysis.recall.requests.lists import parse_requests
from tapelens.analysis.recall.schedule.policies import Sharing
from tapelens.analysis.throughput.model import default_params
from tests.fixtures.plan_catalogs import catalog, options, tape

PARAMS = default_params()


def test_jain_index_closed_forms() -> None:
    assert jain_index([5.0, 5.0, 5.0]) == pytest.approx(1.0)
    assert jain_index([9.0, 0.0, 0.0]) == pytest.approx(1 / 3)
    assert jain_index([1.0, 3.0]) == pytest.approx(16 / 20)
    assert jain_index([]) is None


def test_a_late_small_request_is_served_sooner_under_fair_sharing() -> None:
    # A campaign over four tapes asked for first, then one file on a tape of its own; two
    # drives: first come takes both under fifo, equal shares gives the analyst one.
    rows = [r for v in ("C1", "C2", "C3", "C4") for r in tape(v, "camp", 30)]
    rows += tape("U1", "user", 1, first=500)
    start = datetime(2024, 5, 1, tzinfo=UTC)
    asked = parse_requests(
        [
            "dataset,requester,submitted_at",
            f"camp,campaign,{start.isoformat()}",
            f"user,analyst,{(start + timedelta(minutes=5)).isoformat()}",
        ]
    )
    chosen = ("fifo", "equal")
    compared = compare_policies(asked, catalog(rows), PARAMS, options("LTO8:2"), chosen)
    table, served = compared.table, compared.served
    assert compared.not_found.height == 0 and compared.unavailable.height == 0
    assert table.columns == list(COMPARISON_COLUMNS)
    assert table["policy"].to_list() == list(chosen)
    assert table["files_read"].to_list() == [121, 121] and table["requesters"].to_list() == [2, 2]
    done = {(p, r): t for p, r, t in served.select("policy", "requester", "completion_s").rows()}
    assert done[("equal", "analyst")] < done[("fifo", "analyst")]
    fifo, equal = (
        table.rows_by_key("policy", named=True)["fifo"][0],
        table.rows_by_key("policy", named=True)["equal"][0],
    )
    assert equal["first_requester_done_s"] < fifo["first_requester_done_s"]
    assert equal["fairness"] > fifo["fairness"]


def test_weighted_is_compared_only_with_weights() -> None:
    assert "weighted" not in default_policies(Sharing())
    assert "weighted" in default_policies(Sharing(group_weights=(("a", 1.0),)))
