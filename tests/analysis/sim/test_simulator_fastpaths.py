"""The simulator's fast paths give the very results of the plain ones they stand in for: read
times of a whole list at once, batches of new requests placed at once, the by-demand heap, the
checks a run skips until a request is sent or pooled a second time, shared value objects."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import polars as pl
import pytest

from tapelens.analysis.recall.schedule.policies import TapeQueue
from tapelens.analysis.sim import admit as sim_admit
from tapelens.analysis.sim import events as sim_engine
from tapelens.analysis.sim import inputs as sim_inputs
from tapelens.analysis.sim import simulator as sim_simulator
from tapelens.analysis.sim import state as sim_state
from tapelens.analysis.sim.inputs import pass_timer, prepare, read_timer
from tapelens.analysis.sim.simulator import (
    Fault,
    Library,
    RetryPolicy,
    SimConfig,
    SimResult,
    scattered_requests,
    simulate,
)
from tapelens.analysis.sim.state import BACKLOG, POOL, SimState
from tapelens.analysis.throughput.model import default_params

PARAMS = default_params()
LIBRARY = Library.from_counts({"LTO-8": 3, "LTO-9": 1}, robots=2)


def recall(seed: int, tapes: int = 12) -> pl.DataFrame:
    """Tapes of both media, aggregates (repeated positions), byte addresses on some tapes,
    three requesters submitting over time."""
    rng = np.random.default_rng(seed)
    frames = []
    for t in range(tapes):
        n = int(rng.integers(20, 120))
        suffix, media = ("L7", "LTO-7") if t % 3 else ("L8", "LTO-8")
        positions = np.sort(rng.integers(1, 600, n))
        frames.append(
            pl.DataFrame(
                {
                    "volume": f"V{t:04d}{suffix}",
                    "media_type": media,
                    "position": positions,
                    "offset_bytes": (np.arange(n) * 10**8) if t % 4 else [None] * n,
                    "start_bytes": positions * 3 * 10**9 if t % 5 == 0 else [None] * n,
                    "size_bytes": rng.integers(10**6, 4 * 10**9, n),
                    "requester": rng.choice(["a", "b", "c"], n),
                    "submit_s": np.where(rng.random(n) < 0.5, 0.0, rng.exponential(2000.0, n)),
                },
                schema_overrides={"offset_bytes": pl.Int64, "start_bytes": pl.Int64},
            )
        )
    return (
        pl.concat(frames)
        .with_row_index("i")
        .with_columns(pl.format("/f{}", "i").alias("path"))
        .drop("i")
        .sample(fraction=1.0, shuffle=True, seed=seed)
    )


def run(requests: pl.DataFrame, **config: Any) -> SimResult:
    return simulate(requests, LIBRARY, PARAMS, SimConfig(**config), np.random.default_rng(3))


def assert_same(a: SimResult, b: SimResult) -> None:
    assert a.summary == b.summary
    assert a.events.equals(b.events)
    assert a.requests.equals(b.requests)


CONFIGS = [
    {},
    {"order": "rao", "window": 40},
    {"policy": "by-demand", "window": 40},
    {"policy": "equal", "window": 25},
    {"scheduler": "fifo"},
    {
        "window": 60,
        "faults": (Fault("drive", 3000.0, 4000.0, "LTO-8#2"), Fault("network", 5000.0, 3000.0)),
        "retry": RetryPolicy("immediate"),
    },
]


def assert_lists_time_as_reads(
    p: sim_inputs.Prepared,
    read_s: Callable[[int, int], float],
    times: Callable[[list[int], int], list[float]],
) -> list[list[int]]:
    """A list's times at once equal its reads' one by one: each tape in position order and
    shuffled, and a list across tapes. Returns the lists tried."""
    rng = np.random.default_rng(0)
    tried = []
    for t in range(len(p.volumes)):
        on_tape = [r for r in range(len(p.tape)) if p.tape[r] == t]
        for w in (on_tape, [int(r) for r in rng.permutation(on_tape)]):
            got = times(w, 2)
            assert got[:2] == [0.0, 0.0]
            assert got[2:] == [read_s(w[k - 1], w[k]) for k in range(2, len(w))]
            tried.append(w)
    mixed = [int(r) for r in rng.permutation(len(p.tape))[:200]]  # across tapes too
    assert times(mixed, 1)[1:] == [read_s(mixed[k - 1], mixed[k]) for k in range(1, 200)]
    return tried


def test_list_read_times_equal_read_by_read_ones() -> None:
    p = prepare(recall(1), PARAMS, [])
    assert_lists_time_as_reads(p, read_timer(p), pass_timer(p))


def test_list_read_times_by_geometry_equal_read_by_read_ones() -> None:
    # simulate --order rao: the same one price of a move as position order, in any order.
    p = prepare(recall(1), PARAMS, [])
    geo = sim_inputs.geometric(p)
    read_s = sim_inputs.geometric_read_timer(p, geo)
    tried = assert_lists_time_as_reads(p, read_s, sim_inputs.geometric_pass_timer(p, geo))
    plain = read_timer(p)
    differ = sum(
        read_s(w[k - 1], w[k]) != plain(w[k - 1], w[k]) for w in tried for k in range(1, len(w))
    )
    assert differ == 0  # one price of a move, whatever the read order


@pytest.mark.parametrize("config", CONFIGS)
def test_list_read_times_leave_results_unchanged(
    config: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    requests = recall(2)
    monkeypatch.setattr(sim_engine, "PASS_MIN_READS", 10**9)  # every read timed alone
    alone = run(requests, **config)
    monkeypatch.setattr(sim_engine, "PASS_MIN_READS", 2)  # nearly every list at once
    assert_same(run(requests, **config), alone)


@pytest.mark.parametrize("config", CONFIGS)
def test_batches_placed_at_once_leave_results_unchanged(
    config: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    requests = recall(3)
    monkeypatch.setattr(sim_admit, "BULK_MIN_REQUESTS", 10**9)  # one by one, via the backlog
    one_by_one = run(requests, **config)
    monkeypatch.setattr(sim_admit, "BULK_MIN_REQUESTS", 1)
    assert_same(run(requests, **config), one_by_one)


@pytest.mark.slow
@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("flag", ["repeats", "count_bytes"])
def test_skipped_checks_leave_results_unchanged(
    config: dict[str, Any], flag: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """repeats: every backlog and queue entry checked from the start; count_bytes: pooled
    bytes summed whatever the policy (no file of these is empty: left to itself, a run
    would not)."""
    requests = recall(4)
    shortcut = run(requests, **config)
    new_state = sim_state.new_state

    def checking_all(*args: Any) -> SimState:
        s = new_state(*args)
        setattr(s.front if flag == "repeats" else s.pool, flag, True)
        return s

    monkeypatch.setattr(sim_simulator, "new_state", checking_all)
    assert_same(run(requests, **config), shortcut)


class ScanQueue(TapeQueue):
    """The policy's choice as a pass over every tape in line, no heaps: fairness between
    owners, then the smallest key, the lowest tape among equals."""

    def choose(
        self,
        media: Iterable[int],
        busy_requester: Sequence[float],
        busy_group: Sequence[float],
        usable: Callable[[int], bool] | None = None,
        allowed: Callable[[int], bool] | None = None,
        prefer: Callable[[int], bool] | None = None,
    ) -> int:
        readable = set(media)
        found = [
            (line, key, t)
            for line, key, t in self.waiting()
            if line[2] in readable and (usable is None or usable(t))
        ]
        if not found:
            return -1
        if self.policy in ("equal", "group", "weighted"):
            least = min(self.share(line, busy_requester, busy_group) for line, _, _ in found)
            found = [f for f in found if self.share(f[0], busy_requester, busy_group) == least]
        return min((key, t) for _, key, t in found)[1]


@pytest.mark.parametrize("policy", ["by-demand", "time-slider", "equal"])
@pytest.mark.parametrize("window", [None, 30])
def test_the_line_of_tapes_picks_what_a_scan_picks(
    window: int | None, policy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    requests = pl.concat(
        [
            scattered_requests(np.random.default_rng(5), 40, 25, 200, requester="x"),
            recall(5, tapes=6).select(
                "volume", "media_type", "position", "size_bytes", "requester", "submit_s", "path"
            ),
        ],
        how="diagonal_relaxed",
    )
    heap = run(requests, policy=policy, window=window)
    monkeypatch.setattr(sim_state, "TapeQueue", ScanQueue)
    assert_same(run(requests, policy=policy, window=window), heap)


def test_batch_placement_matches_admission_one_by_one() -> None:
    """The state place_new() leaves is what admit() leaves, entry for entry (pending lists
    as sets: their order is never read)."""
    p = prepare(recall(6), PARAMS, [d.name for d in LIBRARY.drives])
    readable = [[True] * len(p.media) for _ in LIBRARY.drives]
    batch = [int(r) for r in np.random.default_rng(6).permutation(len(p.tape))]
    engines = []
    for bulk in (False, True):
        e = sim_engine.bind(
            sim_state.new_state(p, LIBRARY, readable, SimConfig(), np.random.default_rng(0))
        )
        for r in batch:
            e.req.gen[r] = 1
            e.req.st[r] = BACKLOG
        if bulk:
            assert sim_admit.place_new(e, batch, 5.0)
        else:
            e.front.backlog.extend(e.n + r for r in batch)
            e.idle.clear()  # no drive acts: the placement alone
            e.admit(5.0)
        engines.append(e)
    one, bulk = engines
    assert bulk.req.st == one.req.st and all(s == POOL for s in bulk.req.st)
    assert bulk.req.adm == one.req.adm and bulk.req.admit_s == one.req.admit_s
    assert bulk.front.adm_next == one.front.adm_next
    assert bulk.front.window_used == one.front.window_used
    assert [sorted(x) for x in bulk.pool.pending] == [sorted(x) for x in one.pool.pending]
    assert bulk.pool.line.waiting() == one.pool.line.waiting()


def test_shared_values_are_equal_and_one_object_each(monkeypatch: pytest.MonkeyPatch) -> None:
    values = [10**6 + x for x in (3, 1, 3, 2, 1)] + [0.5 + x for x in (1, 1)]
    got = sim_inputs.shared(values)
    assert got == values
    assert got[0] is got[2] and got[1] is got[4] and got[5] is got[6]
    requests = recall(7)
    with_shared = run(requests)
    monkeypatch.setattr(sim_inputs, "shared", lambda v: v)
    assert_same(run(requests), with_shared)
