"""Copy choice: the exact solver matches brute force, the greedy respects its bound."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tapelens.analysis.recall.copies.copy_choice import choose_copies
from tapelens.errors import InputError
from tests.props import examples

ROOT = Path(__file__).resolve().parents[4]


def instance(
    copies: list[tuple[str, str, float]], open_s: dict[str, float]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    candidates = pl.DataFrame(
        copies,
        schema={"file_id": pl.String, "volume": pl.String, "cost_s": pl.Float64},
        orient="row",
    ).with_row_index("row")
    tapes = pl.DataFrame({"volume": list(open_s), "open_s": list(open_s.values())})
    return candidates, tapes


def brute_force(copies: list[tuple[str, str, float]], open_s: dict[str, float]) -> float:
    by_file: dict[str, list[tuple[str, float]]] = {}
    for f, t, c in copies:
        by_file.setdefault(f, []).append((t, c))
    best = float("inf")
    for pick in itertools.product(*by_file.values()):
        cost = sum(c for _, c in pick) + sum(open_s[t] for t in {t for t, _ in pick})
        best = min(best, cost)
    return best


def test_single_copies_need_no_choice() -> None:
    cands, tapes = instance([("a", "T1", 5.0), ("b", "T2", 7.0)], {"T1": 100.0, "T2": 50.0})
    choice = choose_copies(cands, tapes)
    assert choice.method == "single"
    assert choice.objective_s == choice.bound_s == 162.0
    assert choice.bound_kind == "exact"
    assert sorted(choice.chosen["file_id"].to_list()) == ["a", "b"]


def test_a_copy_on_a_tape_open_anyway_wins_over_a_stray_tape() -> None:
    # b is on T1 (forced open by a) and on a stray tape T9: T9 must stay closed.
    cands, tapes = instance(
        [("a", "T1", 5.0), ("b", "T9", 5.0), ("b", "T1", 5.0)], {"T1": 150.0, "T9": 150.0}
    )
    choice = choose_copies(cands, tapes)
    assert dict(choice.chosen.select("file_id", "volume").iter_rows()) == {"a": "T1", "b": "T1"}
    assert choice.tapes == 1


def test_set_cover_needs_the_solver() -> None:
    # Every file has two copies; T2 alone covers them all, no single-copy file forces anything.
    copies = [("a", "T1", 1.0), ("a", "T2", 1.0), ("b", "T3", 1.0), ("b", "T2", 1.0)]
    copies += [("c", "T1", 1.0), ("c", "T2", 1.5)]
    open_s = {"T1": 100.0, "T2": 120.0, "T3": 100.0}
    cands, tapes = instance(copies, open_s)
    exact = choose_copies(cands, tapes)
    assert exact.method == "milp"
    assert exact.bound_kind == "exact"
    assert exact.objective_s == pytest.approx(brute_force(copies, open_s))
    assert set(exact.chosen["volume"]) == {"T2"}
    greedy = choose_copies(cands, tapes, exact_limit=0)
    assert greedy.method == "greedy"
    assert greedy.bound_kind in ("lp_relaxation", "shared_mounts")
    assert greedy.bound_s <= exact.objective_s + 1e-6 <= greedy.objective_s + 1e-6


def test_equal_costs_on_open_tapes_keep_the_earlier_row() -> None:
    both = [("b", "T1", 1.0), ("c", "T2", 1.0)]  # T1 and T2 are open either way
    open_s = {"T1": 10.0, "T2": 10.0}
    cands, tapes = instance([("a", "T1", 1.0), ("a", "T2", 1.0), *both], open_s)
    assert choose_copies(cands, tapes).chosen["volume"].to_list()[0] == "T1"
    flipped, _ = instance([("a", "T2", 1.0), ("a", "T1", 1.0), *both], open_s)
    assert choose_copies(flipped, tapes).chosen["volume"].to_list()[0] == "T2"


def test_other_columns_come_back_with_the_chosen_rows() -> None:
    cands, tapes = instance([("a", "T1", 1.0), ("a", "T2", 3.0)], {"T1": 10.0, "T2": 10.0})
    chosen = choose_copies(cands, tapes).chosen
    assert chosen.columns == cands.columns
    assert chosen["row"].to_list() == [0]


def test_missing_mount_cost_is_refused() -> None:
    cands, _ = instance([("a", "T1", 1.0)], {})
    with pytest.raises(InputError, match="no mount cost for tape"):
        choose_copies(cands, pl.DataFrame({"volume": ["T2"], "open_s": [1.0]}))


copy_lists = st.lists(
    st.tuples(
        st.sampled_from("abcdef"),
        st.sampled_from(["T1", "T2", "T3", "T4"]),
        st.sampled_from([1.0, 2.0, 5.0, 30.0]),
    ),
    min_size=1,
    max_size=12,
    unique_by=lambda x: (x[0], x[1]),
)
open_costs = st.fixed_dictionaries(
    {t: st.sampled_from([0.0, 10.0, 60.0, 200.0]) for t in ("T1", "T2", "T3", "T4")}
)


@settings(max_examples=examples(60))
@given(copies=copy_lists, open_s=open_costs)
def test_exact_is_optimal_and_greedy_is_bounded(
    copies: list[tuple[str, str, float]], open_s: dict[str, float]
) -> None:
    cands, tapes = instance(copies, open_s)
    optimum = brute_force(copies, open_s)
    for limit in (10_000, 0):
        choice = choose_copies(cands, tapes, exact_limit=limit)
        files = choice.chosen["file_id"].to_list()
        assert sorted(files) == sorted({f for f, _, _ in copies}), "one copy per file"
        chosen = set(choice.chosen.select("file_id", "volume").iter_rows())
        assert chosen <= {(f, t) for f, t, _ in copies}
        assert choice.bound_s <= optimum + 1e-6 <= choice.objective_s + 1e-6
        if limit:
            assert choice.objective_s == pytest.approx(optimum)


def seeded_instances(count: int) -> list[tuple[list[tuple[str, str, float]], dict[str, float]]]:
    """Small instances drawn from fixed seeds: zero opening costs, ties and forced tapes."""
    out = []
    for seed in range(count):
        rng = np.random.default_rng(seed)
        n_files, n_tapes = int(rng.integers(1, 6)), int(rng.integers(1, 5))
        tapes = [f"T{j}" for j in range(n_tapes)]
        open_s = {t: float(rng.choice([0.0, 0.0, 5.0, 10.0, 60.0, 200.0])) for t in tapes}
        copies = []
        for i in range(n_files):
            held = rng.choice(n_tapes, size=int(rng.integers(1, n_tapes + 1)), replace=False)
            for j in held:
                copies.append((f"f{i}", tapes[int(j)], float(rng.choice([0.0, 1.0, 2.0, 30.0]))))
        out.append((copies, open_s))
    return out


@pytest.mark.parametrize("limit", [10_000, 0], ids=["exact", "greedy"])
def test_many_small_instances_against_brute_force(limit: int) -> None:
    wrong = []
    for copies, open_s in seeded_instances(400):
        cands, tapes = instance(copies, open_s)
        optimum = brute_force(copies, open_s)
        choice = choose_copies(cands, tapes, exact_limit=limit)
        picked = choice.chosen.select("file_id", "volume", "cost_s").rows()
        cost = sum(c for _, _, c in picked) + sum(open_s[t] for t in {t for _, t, _ in picked})
        honest = choice.bound_s <= optimum + 1e-6 and cost == pytest.approx(choice.objective_s)
        exact_ok = choice.bound_kind != "exact" or choice.objective_s == pytest.approx(optimum)
        if not (honest and exact_ok and choice.objective_s >= optimum - 1e-6):
            wrong.append((copies, open_s, optimum, choice.as_dict()))
        if limit:
            assert choice.bound_kind == "exact" or choice.method == "single", choice.as_dict()
    assert not wrong, wrong[:3]


def test_the_solver_prints_nothing_on_standard_output() -> None:
    # Standard output carries data (a plan summary with --summary -, CSV): the MILP solver's
    # banner must not land in it, whatever the solver version prints; stderr carries what
    # tapelens says, and no third-party copyright line either.
    code = (
        "from tests.analysis.recall.copies.test_copy_choice import instance;"
        "from tapelens.analysis.recall.copies.copy_choice import choose_copies;"
        "c, t = instance([('a','T1',1.0),('a','T2',1.0),('b','T3',1.0),('b','T2',1.0)],"
        " {'T1': 100.0, 'T2': 120.0, 'T3': 100.0});"
        "print(choose_copies(c, t).method)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout == "milp\n"
    assert "HiGHS" not in out.stderr and "licence" not in out.stderr  # nor on stderr
