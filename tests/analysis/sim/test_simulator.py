"""The library simulator against closed forms and the throughput model it shares with plans."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pytest

from tapelens.analysis.recall.baselines.direct import DirectSubmission, serve_direct
from tapelens.analysis.recall.engine import Policy, predict_recall
from tapelens.analysis.recall.schedule.drives import readable_by_catalog
from tapelens.analysis.sim.simulator import (
    Fault,
    Library,
    RetryPolicy,
    SimConfig,
    SimResult,
    parse_duration,
    parse_fault,
    parse_retry,
    simulate,
)
from tapelens.analysis.throughput.model import default_params, predict_tape
from tapelens.analysis.throughput.moves import from_load_point_s, rewind_s
from tapelens.errors import InputError

PARAMS = default_params()
LTO7 = PARAMS["LTO-7"]
GB2 = 2_000_000_000
STREAM_2GB_S = GB2 / (LTO7.rate_mb_s * 1e6)
# LTO-7 defaults (media.py, throughput.py): robot 11 s, load 13 s, unload 22 s, 1 s per file;
# the rewind is a move from where the mount's last read ends (moves.rewind_s).
MOUNT_S = 11 + 13
UNLOAD_S = 22


def dismount_s(head_bytes: float) -> float:
    """Rewind from where the last read left the head, then unload."""
    return float(rewind_s(LTO7, np.array([head_bytes]))[0]) + UNLOAD_S


# The first move of a mount, by the one price of a move: to mid-tape, and to the first file.
FIRST_MID_S = float(from_load_point_s(LTO7, np.array([3e12]))[0])
FIRST_START_S = float(from_load_point_s(LTO7, np.array([0.0]))[0])


def files(volume: str, positions: list[int], **columns: object) -> pl.DataFrame:
    n = len(positions)
    base = {
        "volume": [volume] * n,
        "media_type": ["LTO-7"] * n,
        "position": positions,
        "size_bytes": [GB2] * n,
        "path": [f"/{volume}/{p}" for p in positions],
    }
    base.update({k: v if isinstance(v, list) else [v] * n for k, v in columns.items()})
    return pl.DataFrame(base)


def run(
    requests: pl.DataFrame, drives: int = 1, robots: int = 1, seed: int = 0, **config: Any
) -> SimResult:
    library = Library.from_counts({"LTO-8": drives}, robots=robots)
    return simulate(requests, library, PARAMS, SimConfig(**config), np.random.default_rng(seed))


def test_one_file_on_one_tape_costs_mount_locate_read_and_dismount() -> None:
    one = files("A00001L7", [500], start_bytes=3 * 10**12)  # mid-tape
    result = run(one)
    expected = MOUNT_S + FIRST_MID_S + 1.0 + STREAM_2GB_S + dismount_s(3e12 + GB2)
    assert result.summary.makespan_s == pytest.approx(expected)
    assert result.summary.makespan_s == pytest.approx(predict_tape(one, LTO7).total_s)
    kinds = result.events["kind"].cast(pl.String).to_list()
    assert kinds == ["mount", "read", "unmount"]
    read = result.events.row(1, named=True)
    assert (read["start_s"], read["end_s"]) == pytest.approx(
        (24.0, 24.0 + FIRST_MID_S + 1.0 + STREAM_2GB_S)
    )
    assert result.summary.mounts == 1
    assert result.summary.drive_busy_share["LTO-8#1"] == pytest.approx(1.0)


def test_n_adjacent_files_stream_after_one_locate() -> None:
    n = 40
    adjacent = files("A00002L7", list(range(1, n + 1)), start_bytes=[i * GB2 for i in range(n)])
    result = run(adjacent.sample(fraction=1.0, shuffle=True, seed=3), scheduler="sorted")
    expected = MOUNT_S + FIRST_START_S + n * (1.0 + STREAM_2GB_S) + dismount_s(n * GB2)
    assert result.summary.makespan_s == pytest.approx(expected)
    reads = result.events.filter(pl.col("kind") == "read")
    assert reads["path"].to_list() == adjacent["path"].to_list()  # position order
    assert result.summary.rate_mb_s == pytest.approx(n * GB2 / 1e6 / expected)


@pytest.mark.parametrize(("robots", "extra_s"), [(1, 11.0), (2, 0.0)])
def test_two_tapes_on_one_drive(robots: int, extra_s: float) -> None:
    """One robot brings the first tape back before it fetches the second; two overlap."""
    both = pl.concat([files(v, [500], start_bytes=3 * 10**12) for v in ("A00003L7", "A00004L7")])
    result = run(both, robots=robots)
    per_tape = MOUNT_S + FIRST_MID_S + 1.0 + STREAM_2GB_S + dismount_s(3e12 + GB2)
    assert result.summary.makespan_s == pytest.approx(2 * per_tape + extra_s)
    assert result.summary.mounts == 2
    second = result.events.filter(pl.col("kind") == "mount").row(1, named=True)
    assert second["volume"] == "A00004L7"
    assert second["end_s"] - second["start_s"] == pytest.approx(MOUNT_S + extra_s)


@pytest.mark.parametrize("addresses", [True, False])
def test_reads_are_timed_as_the_throughput_model_times_them(addresses: bool) -> None:
    """Read-through, locates, aggregate members and the first locate: a tape read in position
    order takes what predict_tape says, read by read."""
    rng = np.random.default_rng(11)
    positions = np.sort(rng.choice(3000, 120, replace=False)).tolist()
    positions[10:14] = [positions[10]] * 4  # an aggregate of four members
    sizes = rng.integers(10**6, 8 * 10**9, len(positions)).tolist()
    offsets: list[int | None] = [None] * len(positions)
    offsets[10:14] = [0, sizes[10], sizes[10] + sizes[11] + 5000, 10**9 * 9]
    extra: dict[str, object] = {"size_bytes": sizes, "offset_bytes": offsets}
    if addresses:
        extra["start_bytes"] = [p * 3 * 10**9 for p in positions]
    else:
        extra["avg_object_bytes"] = 2.5e9
    tape = files("A00005L7", positions, **extra)
    predicted = predict_tape(tape, LTO7)
    result = run(tape)
    assert result.summary.makespan_s == pytest.approx(predicted.total_s, rel=1e-12)
    simulated = result.events.filter(pl.col("kind") == "read")["end_s"].to_numpy()
    np.testing.assert_allclose(simulated, predicted.files["end_s"].to_numpy(), rtol=1e-12)


def test_a_plan_simulates_to_its_prediction() -> None:
    rng = np.random.default_rng(5)
    frames = []
    for t in range(24):
        positions = np.sort(rng.choice(3000, 40, replace=False)).tolist()
        frames.append(
            files(
                f"B{t:05d}L7",
                positions,
                size_bytes=rng.integers(10**8, 5 * 10**9, 40).tolist(),
            )
        )
    recall = pl.concat(frames)
    predicted = predict_recall(recall, {"LTO-8": 4}, PARAMS)
    plan = (
        predicted.files.drop("order").sort("start_s").with_row_index("order")
    )  # as the planner orders
    result = run(plan, drives=4, robots=4, scheduler="planned")
    assert result.summary.makespan_s == pytest.approx(predicted.makespan_s)
    assert result.summary.mounts == 24
    reads = result.events.filter(pl.col("kind") == "read")
    for drive, part in reads.group_by("drive"):
        assert part["path"].to_list() == plan.filter(pl.col("drive") == drive[0])["path"].to_list()
    # A drive asks for a tape's files when it mounts the tape: a window that holds the files of
    # the tapes mounted at once changes nothing; a smaller one makes drives wait for places.
    roomy = run(plan, drives=4, robots=4, scheduler="planned", window=4 * 40)
    assert roomy.summary.makespan_s == pytest.approx(predicted.makespan_s)
    tight = run(plan, drives=4, robots=4, scheduler="planned", window=50).summary
    assert tight.files_delivered == plan.height and tight.mounts == 24
    assert tight.makespan_s > 1.05 * predicted.makespan_s


def test_fifo_queues_per_tape_and_remounts_behind_a_small_window() -> None:
    """Requests alternating between two tapes, one drive. With the whole list at the tape
    system, fifo queues them per tape: the tape of the oldest request is mounted and every
    request for it read in arrival order, then the other tape (two mounts). A front end that
    lets one request through at a time makes every switch a mount; sorted mounts each tape
    once either way."""
    a, b = files("C00001L7", [30, 20, 10]), files("C00002L7", [10, 20, 30])
    alternating = pl.concat([a[0], b[0], a[1], b[1], a[2], b[2]])
    fifo = run(alternating, scheduler="fifo")
    assert fifo.summary.mounts == 2
    reads = fifo.events.filter(pl.col("kind") == "read")["path"].to_list()
    # Tape C00001's requests in arrival order (positions 30, 20, 10: back and forth), then
    # C00002's.
    assert reads == pl.concat([a, b])["path"].to_list()
    narrow = run(alternating, scheduler="fifo", window=1)
    assert narrow.summary.mounts == 6
    assert narrow.events.filter(pl.col("kind") == "read")["path"].to_list() == (
        alternating["path"].to_list()
    )
    assert run(alternating, scheduler="sorted").summary.mounts == 2
    # With a drive per tape, fifo keeps each tape mounted and queues the next requests to it.
    assert run(alternating, drives=2, robots=2, scheduler="fifo").summary.mounts == 2


def test_requests_behind_the_head_wait_for_one_more_pass() -> None:
    first = files("D00001L7", [100, 200, 300])
    late = files("D00001L7", [50, 250], submit_s=[60.0, 60.0])
    result = run(pl.concat([first.with_columns(submit_s=pl.lit(0.0)), late]))
    reads = result.events.filter(pl.col("kind") == "read")["path"].to_list()
    # 250 is still ahead of the head at 60 s and joins the pass; 50 is read after it.
    assert reads == [
        "/D00001L7/100",
        "/D00001L7/200",
        "/D00001L7/250",
        "/D00001L7/300",
        "/D00001L7/50",
    ]
    assert result.summary.mounts == 1


def test_drive_compatibility() -> None:
    lto6 = files("E00001L6", [5], media_type="LTO-6")
    with pytest.raises(InputError, match="no drive of the library reads LTO-6"):
        run(lto6)
    library = Library.from_counts({"LTO-7": 1, "LTO-8": 1})
    both = pl.concat([lto6, files("E00002L7", [5])])
    result = simulate(both, library, PARAMS, SimConfig(), np.random.default_rng(0))
    mounts = result.events.filter(pl.col("kind") == "mount")
    assert dict(zip(mounts["volume"], mounts["drive"], strict=True))["E00001L6"] == "LTO-7#1"


def test_drive_fault_fails_the_read_and_the_retry_comes_back() -> None:
    tape = files("F00001L7", list(range(1, 201)), start_bytes=[i * GB2 for i in range(200)])
    clean = run(tape)
    down_s = 1800.0
    faulty = run(
        tape,
        faults=(Fault("drive", 200.0, down_s, "LTO-8#1"),),
        retry=RetryPolicy("cycle", cycle_s=3600.0),
    )
    s = faulty.summary
    assert s.files_delivered == 200 and s.failed_reads == 1 and s.retries == 1
    events = faulty.events
    failed = events.filter(pl.col("kind") == "failed_read").row(0, named=True)
    assert failed["end_s"] == 200.0
    retry = events.filter(pl.col("kind") == "retry").row(0, named=True)
    assert (retry["start_s"], retry["end_s"]) == (200.0, 3600.0)  # the next cycle
    reads = events.filter(pl.col("kind") == "read")
    assert reads.filter(pl.col("start_s").is_between(200.0, 200.0 + down_s - 1e-9)).height == 0
    assert reads.filter(pl.col("path") == failed["path"]).height == 1
    assert s.makespan_s > clean.summary.makespan_s + down_s


def test_same_seed_same_history_other_seed_other_history() -> None:
    rng = np.random.default_rng(2)
    requests = pl.concat(
        [
            files(f"G{t:05d}L7", np.sort(rng.choice(2000, 30, replace=False)).tolist())
            for t in range(12)
        ]
    ).sample(fraction=1.0, shuffle=True, seed=1)
    config = {
        "scheduler": "sorted",
        "window": 100,
        "jitter": 0.1,
        "faults": (Fault("network", 3600.0, 3600.0),),
        "retry": RetryPolicy("immediate"),
    }
    first = run(requests, drives=3, robots=2, seed=42, **config)
    again = run(requests, drives=3, robots=2, seed=42, **config)
    other = run(requests, drives=3, robots=2, seed=43, **config)
    assert first.events.equals(again.events)
    assert first.summary == again.summary
    assert not first.events.equals(other.events)
    assert first.summary.retries > 0


def test_parsing_of_options() -> None:
    assert parse_duration("90") == 90.0
    assert parse_duration("2h") == 7200.0
    assert parse_duration("1.5m") == 90.0
    assert parse_fault("drive:LTO-8#2:1h:30m") == Fault("drive", 3600.0, 1800.0, "LTO-8#2")
    assert parse_fault("network:600:2h") == Fault("network", 600.0, 7200.0)
    assert parse_retry("cycle:6").cycle_s == 6 * 3600
    assert parse_retry("immediate").kind == "immediate"
    for bad in ("drive:1h:2h", "disk:1:2", "network:soon:1h"):
        with pytest.raises(InputError):
            parse_fault(bad)
    for bad in ("cycle:0", "cycle:x", "later"):
        with pytest.raises(InputError, match="--retry"):
            parse_retry(bad)


def test_bad_inputs_are_refused_with_a_reason() -> None:
    with pytest.raises(InputError, match="lack column"):
        run(files("H00001L7", [1]).drop("position"))
    with pytest.raises(InputError, match="no throughput parameters"):
        run(files("H00001L7", [1], media_type="LTO-99"))
    with pytest.raises(InputError, match="names drive 'LTO-8#7'"):
        run(files("H00001L7", [1]), faults=(parse_fault("drive:LTO-8#7:1:1"),))
    with pytest.raises(InputError, match="needs a plan"):
        run(files("H00001L7", [1]), scheduler="planned")
    with pytest.raises(InputError, match="scheduler"):
        SimConfig(scheduler="lifo")


@pytest.mark.parametrize(("window", "idle_s"), [(None, 900.0), (1, 900.0), (3, 0.0), (3, 1e9)])
def test_fifo_mounts_as_the_direct_submission_baseline_does(
    window: int | None, idle_s: float
) -> None:
    # The planner's direct-submission baseline runs this scheduler with robots enough that none
    # waits for another: on an interleaved list, with or without a front-end window, whatever
    # the dismount delay, it reports the mounts a library with enough robots makes.
    parts = [files(f"E0000{t}L7", [10 * (i + 1) for i in range(4)]) for t in range(3)]
    interleaved = pl.concat([parts[t][i] for i in range(4) for t in range(3)])
    simulated = run(
        interleaved, drives=2, robots=4, scheduler="fifo", window=window, idle_dismount_s=idle_s
    )
    requests = interleaved.with_row_index("fid").with_columns(
        pl.col("fid").cast(pl.Int64), pl.lit(None, pl.Int64).alias("offset_bytes")
    )
    direct = serve_direct(
        requests,
        {"LTO-8": 2},
        PARAMS,
        readable_by_catalog(),
        DirectSubmission(window=window, idle_dismount_s=idle_s),
    )
    assert simulated.summary.mounts == direct.mounts


@pytest.mark.parametrize("window", [None, 1, 3, 7])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fifo_reads_every_request_when_and_where_direct_submission_does(
    window: int | None, seed: int
) -> None:
    # The planner's direct-submission baseline runs the simulator's fifo scheduler (robots
    # enough, drives listed oldest generation first): what it reads off the run, each request
    # on its drive at its time, the mounts and the makespan, is what the simulator reports.
    rng = np.random.default_rng(seed)
    parts = []
    for t in range(4):
        positions = np.sort(rng.choice(np.arange(1, 200), 5, replace=False)).tolist()
        parts.append(
            files(f"F0000{t}L8", positions, media_type="LTO-8").with_columns(
                ((pl.col("position") - 1) * GB2).alias("start_bytes")
            )
        )
    shuffled = pl.concat(parts).sample(fraction=1.0, shuffle=True, seed=seed)
    simulated = run(shuffled, drives=2, robots=4, scheduler="fifo", window=window)
    requests = shuffled.with_row_index("fid").with_columns(
        pl.col("fid").cast(pl.Int64), pl.lit(None, pl.Int64).alias("offset_bytes")
    )
    direct = serve_direct(
        requests, {"LTO-8": 2}, PARAMS, readable_by_catalog(), DirectSubmission(window=window)
    )
    assert simulated.summary.mounts == direct.mounts
    assert simulated.summary.makespan_s == pytest.approx(direct.makespan_s)
    sim_reads = simulated.events.filter(pl.col("kind") == "read").select(
        "path", "drive", "start_s", "end_s"
    )
    direct_reads = direct.reads.join(requests.select("fid", "path"), on="fid").select(
        "path", "drive", "start_s", "end_s"
    )
    both = direct_reads.join(sim_reads, on="path", suffix="_sim")
    assert both.height == shuffled.height
    assert both["drive"].to_list() == both["drive_sim"].to_list()
    assert both["start_s"].to_list() == pytest.approx(both["start_s_sim"].to_list())
    assert both["end_s"].to_list() == pytest.approx(both["end_s_sim"].to_list())


@pytest.mark.parametrize(("gap_s", "mounts"), [(899.0, 1), (901.0, 2)])
def test_fifo_dismounts_a_tape_left_idle_for_the_dismount_delay(gap_s: float, mounts: int) -> None:
    # A request that comes after its tape has been idle for the delay finds it gone: a remount.
    # The direct-submission baseline says the same.
    first = MOUNT_S + FIRST_START_S + 1.0 + STREAM_2GB_S  # one read from the load point
    two = files("G00001L7", [1, 2], submit_s=[0.0, first + gap_s])
    simulated = run(two, scheduler="fifo", idle_dismount_s=900.0)
    assert simulated.summary.mounts == mounts
    direct = serve_direct(
        two.with_row_index("fid").with_columns(
            pl.col("fid").cast(pl.Int64), pl.lit(None, pl.Int64).alias("offset_bytes")
        ),
        {"LTO-8": 1},
        PARAMS,
        readable_by_catalog(),
        DirectSubmission(idle_dismount_s=900.0),
    )
    assert direct.mounts == mounts


def test_a_plan_in_rao_order_simulates_to_its_prediction() -> None:
    # plan recall --order rao, replayed by simulate --order rao: the same order, the same
    # geometry pricing every move, the same makespan.
    rng = np.random.default_rng(6)
    frames = [
        files(
            f"R{t:05d}L7",
            np.sort(rng.choice(20_000, 40, replace=False)).tolist(),
            size_bytes=rng.integers(10**8, 5 * 10**9, 40).tolist(),
            avg_object_bytes=2.5e9,
        )
        for t in range(12)
    ]
    recall = pl.concat(frames)
    predicted = predict_recall(recall, {"LTO-8": 4}, PARAMS, policy=Policy(order="rao"))
    plan = predicted.files.drop("order").sort("start_s").with_row_index("order")
    replayed = run(plan, drives=4, robots=4, scheduler="planned", order="rao")
    assert replayed.summary.makespan_s == pytest.approx(predicted.makespan_s, rel=1e-9)
    # Without the option the replay prices every move with the same one price.
    by_position = run(plan, drives=4, robots=4, scheduler="planned")
    assert by_position.summary.makespan_s == pytest.approx(predicted.makespan_s, rel=1e-9)


def test_sorted_scheduling_in_rao_order_reads_a_tape_as_the_engine_orders_it() -> None:
    rng = np.random.default_rng(8)
    positions = np.sort(rng.choice(20_000, 60, replace=False)).tolist()
    tape = files("S00001L7", positions, avg_object_bytes=2.5e9)
    predicted = predict_recall(tape, {"LTO-8": 1}, PARAMS, policy=Policy(order="rao"))
    result = run(tape, order="rao")
    reads = result.events.filter(pl.col("kind") == "read").sort("end_s")
    assert reads["path"].to_list() == predicted.files.sort("start_s")["path"].to_list()
    assert reads["path"].to_list() != tape["path"].to_list()  # not position order
    assert result.summary.makespan_s == pytest.approx(predicted.makespan_s, rel=1e-9)
