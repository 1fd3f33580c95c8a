"""Whatever the scheduler, window, faults and retries: every file arrives, a tape is in one
drive at a time, a drive does one thing at a time, and nothing is read on a drive that is down."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from tapelens.analysis.recall.engine import predict_recall
from tapelens.analysis.sim.simulator import (
    POLICIES,
    Fault,
    Library,
    RetryPolicy,
    SimConfig,
    SimResult,
    simulate,
)
from tapelens.analysis.throughput.model import default_params

PARAMS = default_params()


def workload(rng: np.random.Generator, planned: bool) -> tuple[pl.DataFrame, Library]:
    tapes = int(rng.integers(2, 9))
    frames = []
    for t in range(tapes):
        n = int(rng.integers(1, 30))
        media = "LTO-7" if t % 3 else "LTO-8"
        positions = np.sort(rng.integers(1, 400, n))  # repeats are aggregate members
        frames.append(
            pl.DataFrame(
                {
                    "volume": [f"V{t:05d}{'L7' if media == 'LTO-7' else 'L8'}"] * n,
                    "media_type": [media] * n,
                    "position": positions,
                    "offset_bytes": np.arange(n) * 10**8,
                    "size_bytes": rng.integers(10**6, 4 * 10**9, n),
                    "requester": rng.choice(["a", "b", "c"], n),
                    "submit_s": np.round(rng.exponential(600.0, n), 1),
                }
            )
        )
    requests = (
        pl.concat(frames)
        .with_row_index("i")
        .with_columns(pl.format("/f{}", "i").alias("path"))
        .drop("i")
    )
    counts = {"LTO-8": int(rng.integers(1, 4)), "LTO-9": int(rng.integers(0, 2))}
    library = Library.from_counts(counts, robots=int(rng.integers(1, 3)))
    if planned:
        plan = predict_recall(requests, {"LTO-8": counts["LTO-8"]}, PARAMS).files
        requests = plan.drop("order").sort("start_s").with_row_index("order")
    return requests.sample(fraction=1.0, shuffle=True, seed=int(rng.integers(1000))), library


def intervals_overlap(frame: pl.DataFrame, by: str) -> bool:
    """Whether two intervals of one value of `by` overlap (beyond rounding)."""
    before = pl.col("end_s").cum_max().shift(1).over(by)
    clash = (pl.col("start_s") < before - 1e-6).fill_null(False)
    return bool(frame.sort(by, "start_s", "end_s").select(clash.any()).item())


def check(result: SimResult, requests: pl.DataFrame) -> None:
    s = result.summary
    assert s.files_delivered == requests.height
    events = result.events.with_columns(pl.col("kind").cast(pl.String))
    reads = events.filter(pl.col("kind") == "read")
    purged = events.filter(pl.col("kind") == "purge")
    assert reads.height == requests.height + purged.height
    assert set(reads["path"].to_list()) == set(requests["path"].to_list())
    # A drive does one thing at a time.
    work = events.filter(pl.col("kind").is_in(["mount", "read", "unmount", "failed_read"]))
    assert not intervals_overlap(work, "drive")
    # A tape is in one drive at a time: its stays (mount start to unmount end) do not overlap.
    mounts = events.filter(pl.col("kind") == "mount").sort("drive", "start_s")
    unmounts = events.filter(pl.col("kind") == "unmount").sort("drive", "start_s")
    assert mounts.height == unmounts.height == s.mounts
    stays = mounts.select("drive", "volume", "start_s").with_columns(
        unmounts["end_s"], unmounts["volume"].alias("out")
    )
    assert (stays["volume"] == stays["out"]).all()
    assert not intervals_overlap(stays, "volume")
    # Nothing starts on a drive while it is down.
    for down in events.filter(pl.col("kind") == "drive_down").iter_rows(named=True):
        during = work.filter(
            (pl.col("drive") == down["drive"])
            & (pl.col("start_s") > down["start_s"] + 1e-9)
            & (pl.col("start_s") < down["end_s"] - 1e-9)
        )
        assert during.height == 0


@pytest.mark.parametrize("seed", range(24))
def test_invariants_hold_for_random_runs(seed: int) -> None:
    rng = np.random.default_rng(seed)
    scheduler = ["fifo", "sorted", "planned"][seed % 3]
    requests, library = workload(rng, scheduler == "planned")
    faults = []
    if rng.random() < 0.7:
        drive = library.drives[int(rng.integers(len(library.drives)))].name
        faults.append(
            Fault("drive", float(rng.uniform(0, 3000)), float(rng.uniform(10, 4000)), drive)
        )
    if rng.random() < 0.5:
        faults.append(Fault("network", float(rng.uniform(0, 3000)), float(rng.uniform(10, 3000))))
    config = SimConfig(
        scheduler=scheduler,
        policy=POLICIES[int(rng.integers(len(POLICIES)))],
        window=None if rng.random() < 0.4 else int(rng.integers(1, 40)),
        faults=tuple(faults),
        retry=RetryPolicy("immediate") if rng.random() < 0.5 else RetryPolicy("cycle", 1800.0),
        jitter=0.1 if rng.random() < 0.3 else 0.0,
    )
    check(simulate(requests, library, PARAMS, config, rng), requests)
