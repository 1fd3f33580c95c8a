"""Direct submission on hand-made request lists with closed-form answers, and its invariants."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tapelens.analysis.recall.baselines.direct import DirectSubmission, serve_direct
from tapelens.analysis.recall.engine import candidate_bounds
from tapelens.analysis.recall.schedule.drives import readable_by_catalog
from tapelens.analysis.throughput.model import MB, ModelParams, default_params
from tapelens.analysis.throughput.moves import from_load_point_s, move_s, rewind_s
from tapelens.errors import InputError
from tests.props import examples

PARAMS = default_params()
READERS = readable_by_catalog()
GB = 1_000_000_000
LTO8 = PARAMS["LTO-8"]


def requests(
    rows: list[tuple[str, int]],
    *,
    media: str = "LTO-8",
    size: int = GB,
    submit: list[float] | None = None,
) -> pl.DataFrame:
    """(volume, position) per request, in submission order; fids 1, 2, ..."""
    frame = pl.DataFrame(
        {
            "fid": list(range(1, len(rows) + 1)),
            "volume": [v for v, _ in rows],
            "media_type": [media] * len(rows),
            "position": [p for _, p in rows],
            "offset_bytes": [None] * len(rows),
            "size_bytes": [size] * len(rows),
            "avg_object_bytes": [float(size)] * len(rows),
        },
        schema_overrides={"offset_bytes": pl.Int64},
    )
    if submit is not None:
        frame = frame.with_columns(pl.Series("submit_s", submit))
    return frame


def first_s(p: ModelParams, position: int, size: int = GB) -> float:
    """A file read first on a mount: the one price of the move from the load point to the
    position - 1 objects before it, overhead, stream."""
    before = float((position - 1) * size)
    return (
        float(from_load_point_s(p, np.array([before]))[0])
        + p.overhead_s
        + size / (p.rate_mb_s * MB)
    )


def locate_back_s(p: ModelParams, after: int, position: int, size: int = GB) -> float:
    """A file reached from the end of the file at `after` by locating back (backwards: always
    a locate), priced by the one price of a move; then overhead and stream."""
    end, start = float(after * size), float((position - 1) * size)
    locate = float(move_s(p, np.array([end]), np.array([start]), position - after)[0])
    return locate + p.overhead_s + size / (p.rate_mb_s * MB)


def dismount_s(p: ModelParams, last: int, size: int = GB) -> float:
    """A mount's end after its last read, of the file at position `last`: the rewind from where
    that read ends, by the one price of a move, and the unload."""
    return float(rewind_s(p, np.array([float(last * size)]))[0]) + p.unload_s


def order_of_reads(result_reads: pl.DataFrame) -> list[int]:
    return result_reads.sort("start_s")["fid"].to_list()


def test_one_tape_in_reverse_position_order_locates_back_for_every_read() -> None:
    result = serve_direct(
        requests([("A", 30), ("A", 20), ("A", 10)]), {"LTO-8": 1}, PARAMS, READERS
    )
    back = locate_back_s(LTO8, 30, 20) + locate_back_s(LTO8, 20, 10)
    expected = LTO8.mount_s + first_s(LTO8, 30) + back + dismount_s(LTO8, 10)
    assert result.mounts == 1
    assert result.makespan_s == pytest.approx(expected)
    assert order_of_reads(result.reads) == [1, 2, 3]  # arrival order, not position order
    events = result.timeline["event"].to_list()
    assert events == [
        "mount",
        "position",
        "read",
        "position",
        "read",
        "position",
        "read",
        "rewind",
        "dismount",
    ]


def test_two_tapes_one_drive_serve_the_oldest_request_first_and_queue_behind_a_mounted_tape() -> (
    None
):
    asked = requests([("B", 5), ("A", 1), ("A", 2), ("B", 6)])
    result = serve_direct(asked, {"LTO-8": 1}, PARAMS, READERS)
    # B holds the oldest request, so it is mounted first; B's second request has arrived by the
    # time its first is read, so it is read on the same mount; then A.
    assert order_of_reads(result.reads) == [1, 4, 2, 3]
    assert result.mounts == 2
    mounts = result.timeline.filter(pl.col("event") == "mount")["volume"].to_list()
    assert mounts == ["B", "A"]
    b = first_s(LTO8, 5) + LTO8.overhead_s + GB / (LTO8.rate_mb_s * MB)  # gap 1: no skipped bytes
    a = first_s(LTO8, 1) + LTO8.overhead_s + GB / (LTO8.rate_mb_s * MB)
    ends = dismount_s(LTO8, 6) + dismount_s(LTO8, 2)
    assert result.makespan_s == pytest.approx(2 * LTO8.mount_s + ends + a + b)


def test_a_request_after_the_idle_dismount_remounts_its_tape() -> None:
    options = DirectSubmission(idle_dismount_s=900.0)
    one_read = LTO8.mount_s + first_s(LTO8, 10)
    late = serve_direct(
        requests([("A", 10), ("A", 11)], submit=[0.0, one_read + 901.0]),
        {"LTO-8": 1},
        PARAMS,
        READERS,
        options,
    )
    assert late.mounts == 2
    assert late.remounts == 1
    rewinds = late.timeline.filter(pl.col("event") == "rewind")["start_s"].to_list()
    assert rewinds[0] == pytest.approx(one_read + 900.0)  # the retention ran out
    # The second read is the first of its mount: timed from the load point.
    second = late.reads.filter(pl.col("fid") == 2).row(0, named=True)
    assert second["end_s"] - second["start_s"] == pytest.approx(first_s(LTO8, 11))
    # It came while the tape was rewinding and unloading: the remount waits for that.
    left = one_read + 900.0 + dismount_s(LTO8, 10)
    remounted = LTO8.mount_s + first_s(LTO8, 11) + dismount_s(LTO8, 11)
    assert late.makespan_s == pytest.approx(left + remounted)

    soon = serve_direct(
        requests([("A", 10), ("A", 11)], submit=[0.0, one_read + 899.0]),
        {"LTO-8": 1},
        PARAMS,
        READERS,
        options,
    )
    assert soon.mounts == 1  # still mounted: read on where the head is


def test_an_idle_tape_gives_its_drive_to_a_waiting_request_unless_told_to_keep_it() -> None:
    asked = requests([("A", 10), ("B", 10)])
    read = first_s(LTO8, 10)
    taken = serve_direct(asked, {"LTO-8": 1}, PARAMS, READERS, DirectSubmission(window=1))
    # A's only request is read; B's request arrives as it completes and takes the drive at once.
    assert taken.makespan_s == pytest.approx(2 * (LTO8.mount_s + read + dismount_s(LTO8, 10)))
    kept = serve_direct(
        asked,
        {"LTO-8": 1},
        PARAMS,
        READERS,
        DirectSubmission(window=1, idle_dismount_s=600.0, preempt_idle=False),
    )
    assert kept.makespan_s == pytest.approx(taken.makespan_s + 600.0)


def test_window_one_serialises_requests_even_with_free_drives() -> None:
    asked = requests([("A", 10), ("B", 10)])
    read = first_s(LTO8, 10)
    serial = serve_direct(asked, {"LTO-8": 2}, PARAMS, READERS, DirectSubmission(window=1))
    b = serial.reads.filter(pl.col("fid") == 2).row(0, named=True)
    assert b["arrive_s"] == pytest.approx(LTO8.mount_s + read)
    assert serial.makespan_s == pytest.approx(2 * (LTO8.mount_s + read) + dismount_s(LTO8, 10))
    parallel = serve_direct(asked, {"LTO-8": 2}, PARAMS, READERS, DirectSubmission(window=2))
    assert parallel.makespan_s == pytest.approx(LTO8.mount_s + read + dismount_s(LTO8, 10))
    assert set(parallel.reads["drive"]) == {"LTO-8#1", "LTO-8#2"}


def test_tapes_go_only_to_drive_generations_that_read_them() -> None:
    asked = pl.concat(
        [
            requests([("N1", 5), ("N2", 5)], media="LTO-8"),
            requests([("O1", 5)], media="LTO-6").with_columns(pl.lit(3, pl.Int64).alias("fid")),
        ]
    )
    result = serve_direct(asked, {"LTO-7": 1, "LTO-8": 1}, PARAMS, READERS)
    drive_of = dict(result.reads.select("volume", "drive").iter_rows())
    assert drive_of == {"N1": "LTO-8#1", "N2": "LTO-8#1", "O1": "LTO-7#1"}
    # An LTO-7 tape both types read: the older generation takes it, the newer stays free.
    seven = serve_direct(
        requests([("S", 5)], media="LTO-7"), {"LTO-7": 1, "LTO-8": 1}, PARAMS, READERS
    )
    assert seven.reads["drive"].to_list() == ["LTO-7#1"]
    with pytest.raises(InputError, match="LTO-6"):
        serve_direct(requests([("O", 5)], media="LTO-6"), {"LTO-8": 2}, PARAMS, READERS)


def test_bad_windows_and_empty_lists() -> None:
    with pytest.raises(InputError, match="window"):
        serve_direct(
            requests([("A", 1)]), {"LTO-8": 1}, PARAMS, READERS, DirectSubmission(window=0)
        )
    empty = serve_direct(requests([]), {"LTO-8": 1}, PARAMS, READERS)
    assert (empty.makespan_s, empty.mounts, empty.files) == (0.0, 0, 0)


@st.composite
def recalls(draw: st.DrawFn) -> tuple[pl.DataFrame, dict[str, int], DirectSubmission]:
    n_tapes = draw(st.integers(1, 5))
    n = draw(st.integers(1, 25))
    tapes = draw(st.lists(st.integers(0, n_tapes - 1), min_size=n, max_size=n))
    positions = draw(st.lists(st.integers(1, 3000), min_size=n, max_size=n, unique=True))
    sizes = draw(st.lists(st.integers(1, 20), min_size=n, max_size=n))
    media = draw(st.lists(st.sampled_from(["LTO-7", "LTO-8"]), min_size=n_tapes, max_size=n_tapes))
    gaps = draw(st.lists(st.floats(0, 2000), min_size=n, max_size=n))
    submit = [sum(gaps[: i + 1]) for i in range(n)]
    frame = pl.DataFrame(
        {
            "fid": list(range(n)),
            "volume": [f"T{t}" for t in tapes],
            "media_type": [media[t] for t in tapes],
            "position": positions,
            "offset_bytes": [None] * n,
            "size_bytes": [s * GB for s in sizes],
            "submit_s": submit,
        },
        schema_overrides={"offset_bytes": pl.Int64},
    )
    drives = {"LTO-8": draw(st.integers(1, 3)), "LTO-7": draw(st.integers(0, 2))}
    options = DirectSubmission(
        window=draw(st.none() | st.integers(1, n + 2)),
        idle_dismount_s=draw(st.sampled_from([0.0, 300.0, 900.0, 3600.0])),
        preempt_idle=draw(st.booleans()),
    )
    return frame, drives, options


@settings(max_examples=examples(30))
@given(recalls())
def test_every_file_read_once_never_faster_than_the_bound(
    case: tuple[pl.DataFrame, dict[str, int], DirectSubmission],
) -> None:
    asked, drives, options = case
    result = serve_direct(asked, drives, PARAMS, READERS, options)
    assert sorted(result.reads["fid"].to_list()) == sorted(asked["fid"].to_list())
    assert result.files == asked.height
    assert result.mounts >= asked["volume"].n_unique()
    assert (result.reads["start_s"] >= result.reads["arrive_s"] - 1e-9).all()
    copies = asked.with_columns(pl.col("volume").rank("dense").cast(pl.Int64).alias("vid"))
    wanted = asked.select("fid", pl.lit("g").alias("group"))
    bound = candidate_bounds(copies, wanted, PARAMS, drives)["lower_bound_s"]
    assert result.makespan_s >= bound - 1e-6
    # A drive does one thing at a time.
    for _, events in result.timeline.group_by("drive"):
        ordered = events.sort("start_s", "end_s")
        assert (ordered["start_s"].shift(-1).drop_nulls() >= ordered["end_s"][:-1] - 1e-6).all()


@pytest.mark.slow
def test_a_hundred_thousand_files_take_seconds() -> None:
    import random
    import time

    rng = random.Random(7)
    n = 100_000
    big = pl.DataFrame(
        {
            "fid": list(range(n)),
            "volume": [f"T{rng.randrange(400):04d}" for _ in range(n)],
            "media_type": ["LTO-8"] * n,
            "position": [rng.randrange(5000) for _ in range(n)],
            "offset_bytes": [None] * n,
            "size_bytes": [2 * GB] * n,
        },
        schema_overrides={"offset_bytes": pl.Int64},
    )
    started = time.perf_counter()
    result = serve_direct(big, {"LTO-8": 20}, PARAMS, READERS, DirectSubmission(window=500))
    assert time.perf_counter() - started < 20.0
    assert result.files == n
