"""Which copy of each file to recall, so that the whole recall takes the least predicted time.

Mounts dominate a recall's cost (docs/domain.md: ~180 s of overhead per mount against seconds of
reading), so the choice is an uncapacitated facility location problem: opening a tape costs its
mount (robot, load, the first move to mid-tape by the one price of a move, rewind, unload) and
each file costs the read of the copy chosen (engine.tape_costs, engine.copy_costs). Files with a
single readable copy force their tapes open; a file with a copy on a tape that is open anyway
keeps that copy unless another tape reads it cheaper. What remains is solved exactly (HiGHS
MILP) when small enough, otherwise by a greedy weighted set cover with local improvement, whose
lower bound comes from the LP relaxation. The choice reports its method and that bound.
"""

from __future__ import annotations

import heapq
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import highspy
import numpy as np
import numpy.typing as npt
import polars as pl

from tapelens.errors import InputError

# The exact solver takes instances up to this many candidate copies (after files with a single
# copy and copies dominated by an open tape are removed); HiGHS solves such UFL models in seconds.
EXACT_LIMIT = 20_000
# The LP relaxation is solved for a bound of the greedy choice up to this many candidates.
LP_LIMIT = 200_000
SOLVER_TIME_LIMIT_S = 10.0
# Relative optimality gap asked of the MILP (the default 1e-4 would leave seconds on the table).
MIP_REL_GAP = 1e-6

Ints = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]


@dataclass(frozen=True)
class CopyChoice:
    """The chosen copies (one row of the candidates per file) and what the choice proves."""

    chosen: pl.DataFrame
    method: str  # single (nothing to choose) | milp | greedy
    objective_s: float  # predicted open + read cost of the choice
    bound_s: float  # no choice can cost less
    bound_kind: str  # exact | milp_dual_bound | lp_relaxation | shared_mounts
    candidates: int  # copies left to decide after the reductions
    files_decided: int  # files that had a real choice to make
    tapes: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "bound": round(self.bound_s, 3),
            "bound_kind": self.bound_kind,
            "objective_s": round(self.objective_s, 3),
            "gap": round(self.objective_s / self.bound_s - 1, 6) if self.bound_s > 0 else 0.0,
            "candidates": self.candidates,
            "files_decided": self.files_decided,
            "tapes": self.tapes,
        }


def choose_copies(
    candidates: pl.DataFrame,
    tape_costs: pl.DataFrame,
    *,
    file_col: str = "file_id",
    tape_col: str = "volume",
    exact_limit: int = EXACT_LIMIT,
    lp_limit: int = LP_LIMIT,
    time_limit_s: float = SOLVER_TIME_LIMIT_S,
) -> CopyChoice:
    """One copy per file minimising sum(open_s of tapes used) + sum(cost_s of copies chosen).

    `candidates`: the file and tape columns, cost_s, and any other columns (returned for the
    chosen rows). Between copies of equal cost on tapes that are open, the earlier row wins: order
    the rows by preference (e.g. oldest copy first). `tape_costs`: the tape column and open_s.
    """
    for column in (file_col, tape_col, "cost_s"):
        if column not in candidates.columns:
            raise InputError(f"copy candidates lack column {column}")
    if candidates.height == 0:
        return CopyChoice(candidates, "single", 0.0, 0.0, "exact", 0, 0, 0)
    rows = candidates.with_row_index("_row")
    coded = rows.select(
        pl.col(file_col).rank("dense").cast(pl.Int64).sub(1).alias("f"),
        pl.col(tape_col).rank("dense").cast(pl.Int64).sub(1).alias("t"),
        pl.col("cost_s").cast(pl.Float64),
    )
    f = coded["f"].to_numpy()
    t = coded["t"].to_numpy()
    c = coded["cost_s"].to_numpy()
    tapes = (
        rows.select(tape_col)
        .with_columns(coded["t"])
        .unique("t")
        .join(tape_costs.select(tape_col, "open_s"), on=tape_col, how="left")
    )
    if tapes["open_s"].null_count():
        lost = tapes.filter(pl.col("open_s").is_null())[tape_col].to_list()
        raise InputError(f"no mount cost for tape(s) {', '.join(map(str, lost[:5]))}")
    open_cost = np.zeros(int(t.max()) + 1)
    open_cost[tapes["t"].to_numpy()] = tapes["open_s"].cast(pl.Float64).to_numpy()
    rows_left = _distinct_tapes(f, t, c)
    pick, method, bound, kind, n_sub, n_files = _solve(
        f[rows_left], t[rows_left], c[rows_left], open_cost, exact_limit, lp_limit, time_limit_s
    )
    pick = rows_left[pick]
    chosen = rows[np.sort(pick)].drop("_row")
    used = np.unique(t[pick])
    objective = float(c[pick].sum() + open_cost[used].sum())
    return CopyChoice(
        chosen, method, objective, min(bound, objective), kind, n_sub, n_files, len(used)
    )


def _several(f: Ints) -> npt.NDArray[np.bool_]:
    """Rows of files that have more than one row."""
    return np.bincount(f)[f] > 1


def _distinct_tapes(f: Ints, t: Ints, c: Floats) -> Ints:
    """Row numbers left when a file's copies on one tape are reduced to the cheapest (first among
    equals). Only files with several rows are sorted: most files of a recall have one copy."""
    multi = np.flatnonzero(_several(f))
    order = multi[np.lexsort((multi, c[multi], t[multi], f[multi]))]
    first = np.ones(order.size, dtype=bool)
    first[1:] = (f[order][1:] != f[order][:-1]) | (t[order][1:] != t[order][:-1])
    return np.sort(np.concatenate([np.flatnonzero(~_several(f)), order[first]]))


def _solve(
    f: Ints,
    t: Ints,
    c: Floats,
    open_cost: Floats,
    exact_limit: int,
    lp_limit: int,
    time_limit_s: float,
) -> tuple[Ints, str, float, str, int, int]:
    """Indices of the chosen rows (one per file), method, bound, bound kind, sizes."""
    n_files = int(f.max()) + 1
    single = ~_several(f)
    is_open = np.zeros(len(open_cost), dtype=bool)
    is_open[t[single]] = True
    # Files with several copies: their cheapest copy on an open tape (first row among equals),
    # and the copies on closed tapes that are cheaper still.
    multi = np.flatnonzero(~single)
    order = multi[np.lexsort((multi, c[multi], ~is_open[t[multi]], f[multi]))]
    first_of_file = np.ones(order.size, dtype=bool)
    first_of_file[1:] = f[order][1:] != f[order][:-1]
    lead = order[first_of_file]  # per file, its best open copy if any, else its cheapest copy
    has_open = is_open[t[lead]]
    best_open = np.full(n_files, np.inf)
    best_open[f[lead[has_open]]] = c[lead[has_open]]
    keep = single.copy()
    keep[multi] = ~is_open[t[multi]] & (c[multi] < best_open[f[multi]])
    keep[lead[has_open]] = True
    left = np.bincount(f[keep], minlength=n_files)
    settled = np.flatnonzero(keep & (left[f] == 1))
    sub = np.flatnonzero(keep & (left[f] > 1))
    fixed = float(c[settled].sum() + open_cost[is_open].sum())
    if sub.size == 0:
        return settled, "single", fixed, "exact", 0, 0
    sub_files = np.unique(f[sub], return_inverse=True)[1]
    model = _Model(sub_files, t[sub], c[sub], open_cost, is_open)
    greedy = model.greedy()
    if sub.size <= exact_limit:
        local, bound, kind = model.milp(greedy, time_limit_s)
        method = "milp"
    else:
        local, method = greedy, "greedy"
        bound, kind = model.shared_mounts(), "shared_mounts"
        lp = model.lp_bound(time_limit_s) if sub.size <= lp_limit else None
        if lp is not None and lp > bound:
            bound, kind = lp, "lp_relaxation"
    pick = np.concatenate([settled, sub[local]])
    return pick, method, fixed + bound, kind, int(sub.size), int(model.n_files)


class _Model:
    """The undecided part: files with two or more candidate copies, tapes open or closed."""

    def __init__(self, f: Ints, t: Ints, c: Floats, open_cost: Floats, is_open: npt.NDArray[Any]):
        self.f, self.c = f, c
        self.n_files = int(f.max()) + 1
        tapes, self.y_of_row = np.unique(t, return_inverse=True)
        self.n_tapes = len(tapes)
        self.tape_open = is_open[tapes]
        self.tape_cost = np.where(self.tape_open, 0.0, open_cost[tapes])

    def shared_mounts(self) -> float:
        """A bound without a solver: each file pays at least its copy's read plus its share of
        the tape's open cost, the share being largest if every candidate of the tape is read
        from it: sum over files of min over copies (cost + open_s / candidates on the tape)."""
        per_tape = np.bincount(self.y_of_row, minlength=self.n_tapes)
        share = self.c + self.tape_cost[self.y_of_row] / per_tape[self.y_of_row]
        best = np.full(self.n_files, np.inf)
        np.minimum.at(best, self.f, share)
        return float(best.sum())

    def _highs(
        self, integer: bool, time_limit_s: float, start: Ints | None = None
    ) -> highspy.Highs:
        n_x = len(self.f)
        linked = np.flatnonzero(~self.tape_open[self.y_of_row])
        n_links = len(linked)
        link_rows = self.n_files + np.arange(n_links)
        # Columns: x (one per candidate copy), then y (one per tape). Rows: each file is read
        # once (sum x = 1); a copy on a closed tape needs the tape open (x - y <= 0).
        cols = np.concatenate([np.arange(n_x), linked, n_x + self.y_of_row[linked]])
        rows = np.concatenate([self.f, link_rows, link_rows])
        values = np.concatenate([np.ones(n_x + n_links), -np.ones(n_links)])
        order = np.lexsort((rows, cols))
        n_cols = n_x + self.n_tapes
        lp = highspy.HighsLp()
        lp.num_col_ = n_cols
        lp.num_row_ = self.n_files + n_links
        lp.col_cost_ = np.concatenate([self.c, self.tape_cost])
        lp.col_lower_ = np.zeros(n_cols)
        lp.col_upper_ = np.concatenate([np.ones(n_x), np.where(self.tape_open, 0.0, 1.0)])
        lp.row_lower_ = np.concatenate([np.ones(self.n_files), np.full(n_links, -np.inf)])
        lp.row_upper_ = np.concatenate([np.ones(self.n_files), np.zeros(n_links)])
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_ = np.searchsorted(cols[order], np.arange(n_cols + 1)).astype(np.int32)
        lp.a_matrix_.index_ = rows[order].astype(np.int32)
        lp.a_matrix_.value_ = values[order]
        if integer:
            # x may stay continuous: once the open tapes are fixed, reading each file from its
            # cheapest open copy is optimal, so an integral y gives an integral x.
            lp.integrality_ = [highspy.HighsVarType.kContinuous] * n_x + [
                highspy.HighsVarType.kInteger
            ] * self.n_tapes
        with _no_banner():
            solver = highspy.Highs()
        solver.silent()
        solver.passModel(lp)
        solver.setOptionValue("time_limit", float(time_limit_s))
        solver.setOptionValue("mip_rel_gap", MIP_REL_GAP)
        if start is not None:
            x = np.zeros(n_x)
            x[start] = 1.0
            y = self.tape_open.astype(float)
            y[self.y_of_row[start]] = 1.0
            y[self.tape_open] = 0.0
            solver.setSolution(n_cols, np.arange(n_cols, dtype=np.int32), np.concatenate([x, y]))
        solver.run()
        return solver

    def milp(self, start: Ints, time_limit_s: float) -> tuple[Ints, float, str]:
        """The exact choice, HiGHS starting from `start` (the greedy choice); when time runs
        out, the better of the two and the solver's dual bound.

        The choice is only called exact when its cost meets the solver's proven dual bound: the
        columns HiGHS hands back after a warm start can be the start itself while it reports a
        better objective, so the values are checked, and solved again cold when they disagree.
        """
        best, bound = start, self.shared_mounts()
        for warm in (start, None):
            solver = self._highs(True, time_limit_s, warm)
            status = solver.getModelStatus()
            values = np.asarray(solver.getSolution().col_value)
            solved = status in (
                highspy.HighsModelStatus.kOptimal,
                highspy.HighsModelStatus.kTimeLimit,
            )
            if not solved or values.size < len(self.f) + self.n_tapes:
                continue
            local = self._improve((values[len(self.f) :] > 0.5) | self.tape_open)
            if self._cost(local) < self._cost(best):
                best = local
            dual = float(solver.getInfo().mip_dual_bound)
            if np.isfinite(dual):
                bound = max(bound, dual)
            if status == highspy.HighsModelStatus.kOptimal and self._proven(best, bound):
                return best, min(bound, self._cost(best)), "exact"
        return best, min(bound, self._cost(best)), "milp_dual_bound"

    def _proven(self, local: Ints, bound: float) -> bool:
        """Whether the choice costs no more than the proven bound (up to the solver's gap)."""
        cost = self._cost(local)
        return cost <= bound + max(1e-9, MIP_REL_GAP * abs(cost))

    def lp_bound(self, time_limit_s: float) -> float | None:
        solver = self._highs(False, time_limit_s)
        if solver.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            return None
        return float(solver.getInfo().objective_function_value)

    def _cost(self, local: Ints) -> float:
        used = np.unique(self.y_of_row[local])
        return float(self.c[local].sum() + self.tape_cost[used].sum())

    def _ranked(self, opened: npt.NDArray[np.bool_]) -> tuple[Ints, Ints]:
        """Per file, its best and second-best copy on opened tapes (-1 when there is none)."""
        usable = np.flatnonzero(opened[self.y_of_row])
        order = usable[np.lexsort((usable, self.c[usable], self.f[usable]))]
        files = self.f[order]
        first = np.ones(len(order), dtype=bool)
        first[1:] = files[1:] != files[:-1]
        best = np.full(self.n_files, -1, dtype=np.int64)
        best[files[first]] = order[first]
        second_at = np.flatnonzero(first) + 1
        ok = second_at < len(order)
        ok[ok] = files[second_at[ok]] == files[second_at[ok] - 1]
        second = np.full(self.n_files, -1, dtype=np.int64)
        second[files[second_at[ok] - 1]] = order[second_at[ok]]
        return best, second

    def greedy(self) -> Ints:
        """Weighted set cover, lazily re-evaluated, then closing tapes that do not pay."""
        y = self.y_of_row
        by_tape = np.argsort(y, kind="stable")
        starts = np.searchsorted(y[by_tape], np.arange(self.n_tapes + 1))
        files_of = [
            self.f[by_tape[starts[j] : starts[j + 1]]].tolist() for j in range(self.n_tapes)
        ]
        costs_of = [
            self.c[by_tape[starts[j] : starts[j + 1]]].tolist() for j in range(self.n_tapes)
        ]
        opened = self.tape_open.copy()
        covered = np.zeros(self.n_files, dtype=bool)
        covered[self.f[self.tape_open[y]]] = True
        cov = covered.tolist()

        def ratio(j: int) -> float:
            n, total = 0, float(self.tape_cost[j])
            for i, cost in zip(files_of[j], costs_of[j], strict=True):
                if not cov[i]:
                    n += 1
                    total += cost
            return total / n if n else np.inf

        heap = [(ratio(j), j) for j in range(self.n_tapes) if not opened[j]]
        heapq.heapify(heap)
        while heap:
            _, j = heapq.heappop(heap)
            current = ratio(j)
            if current == np.inf:
                continue
            if heap and current > heap[0][0] + 1e-9:
                heapq.heappush(heap, (current, j))
                continue
            opened[j] = True
            for i in files_of[j]:
                cov[i] = True
        return self._improve(opened)

    def _improve(self, opened: npt.NDArray[np.bool_]) -> Ints:
        """Close opened tapes whose files read as cheaply elsewhere, pass after pass.

        Closing tape j saves its open cost plus, for each file read from j, the difference to
        the file's second-best opened copy. Within a pass, a tape is only closed if none of its
        files was touched by an earlier closing of the same pass, so every saving is exact.
        """
        opened = opened.copy()
        while True:
            best, second = self._ranked(opened)
            tape_of_best = self.y_of_row[best]
            alt = np.where(second >= 0, self.c[np.maximum(second, 0)], np.inf)
            delta = alt - self.c[best]
            saving = self.tape_cost.copy()
            np.subtract.at(saving, tape_of_best, delta)
            candidates = np.flatnonzero((saving > 1e-9) & opened & ~self.tape_open)
            if candidates.size == 0:
                return best
            touched = np.zeros(self.n_files, dtype=bool)
            on_tape = np.argsort(self.y_of_row, kind="stable")
            starts = np.searchsorted(self.y_of_row[on_tape], np.arange(self.n_tapes + 1))
            closed_any = False
            for j in candidates[np.argsort(-saving[candidates], kind="stable")]:
                # Every file with a copy on j, not only those read from it: a file read from a
                # tape closed earlier in this pass may have counted on j as its second best.
                on_j = self.f[on_tape[starts[j] : starts[j + 1]]]
                if touched[on_j].any():
                    continue
                opened[j] = False
                closed_any = True
                touched[on_j] = True
            if not closed_any:
                return best


@contextmanager
def _no_banner() -> Iterator[None]:
    """HiGHS prints its copyright banner on the process's standard output when a solver is
    made, before any option can silence it. stdout carries tapelens's data (a plan summary,
    CSV) and stderr what tapelens itself says, so the banner goes to neither."""
    sys.stdout.flush()
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)
