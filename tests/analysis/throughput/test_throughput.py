"""The throughput model against closed forms and the published gap behaviour (docs/domain.md)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import polars as pl
import pytest

from tapelens.analysis.recall.engine import predict_recall
from tapelens.analysis.recall.schedule.drives import parse_drives
from tapelens.analysis.throughput.model import (
    MB,
    ModelParams,
    default_params,
    file_times,
    predict_reads,
    predict_tape,
)
from tapelens.analysis.throughput.moves import move_s
from tapelens.errors import InputError
from tapelens.media import BY_NAME

GB = 1_000_000_000
LTO7 = ModelParams.from_media(BY_NAME["LTO-7"])
# Round numbers so every closed form below is easy to check by hand; a media type without a
# tape geometry, whose moves the locate curve prices.
SIMPLE = ModelParams(
    media_type="LTO-0",
    capacity_bytes=10_000 * GB,
    rate_mb_s=200.0,
    robot_s=10.0,
    load_s=15.0,
    first_locate_base_s=20.0,
    first_locate_slope_s=80.0,
    overhead_s=2.0,
    read_through_max_gap=10,
    locate_base_s=12.0,
    locate_slope_s=100.0,
    locate_max_s=90.0,
    rewind_s=60.0,
    unload_s=20.0,
)


def tape(positions: list[int], sizes: list[int], **extra: list[int | None]) -> pl.DataFrame:
    return pl.DataFrame(
        {"volume": ["T1"] * len(positions), "position": positions, "size_bytes": sizes, **extra}
    )


def test_one_file_on_a_fresh_mount() -> None:
    size = 4 * GB
    start = 2_500 * GB  # a quarter of the tape from the load point
    result = predict_tape(tape([101], [size], start_bytes=[start]), SIMPLE)
    first_locate = 20.0 + 80.0 * 0.25
    stream = size / (200.0 * MB)
    expected = 10 + 15 + first_locate + 2.0 + stream + 60 + 20
    assert result.total_s == pytest.approx(expected)
    assert result.mount_s == pytest.approx(25.0)
    assert result.locate_s == pytest.approx(first_locate)
    assert result.read_through_s == 0
    assert result.overhead_s == pytest.approx(2.0)
    assert result.stream_s == pytest.approx(stream)
    assert (result.rewind_s, result.unload_s) == (60.0, 20.0)
    row = result.files.row(0, named=True)
    assert row["kind"] == "first"
    assert row["start_s"] == pytest.approx(25.0)
    assert row["end_s"] == pytest.approx(25.0 + first_locate + 2.0 + stream)
    assert row["rate_mb_s"] == pytest.approx(size / MB / (first_locate + 2.0 + stream))


def test_n_adjacent_files_stream_without_positioning() -> None:
    n, size = 7, 3 * GB
    starts = [i * size for i in range(n)]  # contiguous from the load point
    result = predict_tape(tape(list(range(1, n + 1)), [size] * n, start_bytes=starts), SIMPLE)
    stream = n * size / (200.0 * MB)
    assert result.locate_s == pytest.approx(20.0)  # the first file sits at the load point
    assert result.read_through_s == pytest.approx(0.0)
    assert result.overhead_s == pytest.approx(n * 2.0)
    assert result.total_s == pytest.approx(25 + 20 + n * 2.0 + stream + 80)
    kinds = result.files["kind"].to_list()
    assert kinds == ["first"] + ["read_through"] * (n - 1)
    ends = result.files["end_s"].to_list()
    assert ends[-1] == pytest.approx(25 + 20 + n * 2.0 + stream)
    assert all(b > a for a, b in zip(ends, ends[1:], strict=False))


def test_one_big_locate_is_bounded() -> None:
    size = 2 * GB
    near = predict_tape(
        tape([1, 500], [size, size], start_bytes=[0, 1_000 * GB]), SIMPLE
    ).files.row(1, named=True)
    assert near["kind"] == "locate"
    skipped = 1_000 * GB - size
    assert near["positioning_s"] == pytest.approx(12.0 + 100.0 * skipped / (10_000 * GB))
    far = predict_tape(tape([1, 9_000], [size, size], start_bytes=[0, 9_500 * GB]), SIMPLE)
    row = far.files.row(1, named=True)
    assert row["positioning_s"] == pytest.approx(90.0)  # 12 + 100 x 0.95 is past the bound
    assert far.locate_s == pytest.approx(20.0 + 90.0)
    assert far.total_s == pytest.approx(25 + 110 + 4 + 2 * size / (200 * MB) + 80)


def test_read_through_uses_catalog_gap_bytes_else_the_average_object() -> None:
    size = 2 * GB
    given = predict_tape(tape([1, 4], [size, size], gap_bytes=[None, 5 * GB]), SIMPLE)
    assert given.read_through_s == pytest.approx(5 * GB / (200 * MB))
    estimated = predict_tape(tape([1, 4], [size, size]), SIMPLE)
    assert estimated.read_through_s == pytest.approx(2 * size / (200 * MB))
    known_avg = predict_tape(tape([1, 4], [size, size], avg_object_bytes=[GB, GB]), SIMPLE)
    assert known_avg.read_through_s == pytest.approx(2 * GB / (200 * MB))


def test_aggregate_is_one_tape_object_read_once() -> None:
    # three wanted members of one aggregate at position 7, a 1 MB member skipped between them
    files = tape(
        [7, 7, 7],
        [10 * MB, 10 * MB, 10 * MB],
        offset_bytes=[20 * MB, 0, 11 * MB],
        aggregate_id=["a1", "a1", "a1"],
    )
    result = predict_tape(files, SIMPLE)
    assert result.files["offset_bytes"].to_list() == [0, 11 * MB, 20 * MB]
    assert result.files["kind"].to_list() == ["first", "member", "member"]
    assert result.overhead_s == pytest.approx(2.0)  # one object, one overhead
    assert result.read_through_s == pytest.approx(1 * MB / (200 * MB))


def test_predict_tape_refuses_several_volumes() -> None:
    files = pl.DataFrame({"volume": ["A", "B"], "position": [1, 2], "size_bytes": [1, 1]})
    with pytest.raises(InputError, match="one tape"):
        predict_tape(files, SIMPLE)


@pytest.mark.parametrize("gap", [1, 2, 3, 4, 5])
def test_default_lto7_rate_falls_as_native_rate_over_gap(gap: int) -> None:
    size = 8 * GB
    files = tape([1 + i * gap for i in range(12)], [size] * 12)
    rates = predict_tape(files, LTO7).files["rate_mb_s"].to_list()[1:]
    # within 7%: a read that crosses a wrap's end also pays a turnaround
    assert rates == pytest.approx([300.0 / gap] * 11, rel=0.07)


def test_default_lto7_rate_stops_falling_beyond_the_threshold() -> None:
    size = 8 * GB

    def rate(gap: int) -> float:
        files = tape([1, 1 + gap, 1 + 2 * gap], [size] * 3)
        return float(predict_tape(files, LTO7).files["rate_mb_s"][2])

    threshold = LTO7.read_through_max_gap
    at_threshold = rate(threshold)
    assert at_threshold == pytest.approx(300.0 / threshold, rel=0.05)
    # The longest locate the one price of a move charges anywhere on the tape.
    grid = np.linspace(0.0, LTO7.capacity_bytes, 301)
    longest = float(move_s(LTO7, grid[:, None], grid[None, :], 1e9).max())
    floor = size / MB / (size / (300.0 * MB) + LTO7.overhead_s + longest)
    beyond = [rate(g) for g in (threshold + 1, 20, 50, 100, 300)]  # 750 objects fill the tape
    assert all(r > at_threshold for r in beyond)
    assert all(r >= floor * 0.999 for r in beyond)
    assert beyond[-1] < 2 * floor  # flat: bounded by the longest locate
    # read-through continued would have fallen far below the floor
    assert floor > 300.0 / 100


def test_file_times_keep_groups_apart_and_order_by_position() -> None:
    files = pl.DataFrame(
        {
            "dataset": ["d1", "d1", "d2", "d2"],
            "volume": ["T", "T", "T", "T"],
            "media_type": ["LTO-0"] * 4,
            "position": [9, 3, 5, 4],
            "size_bytes": [GB] * 4,
        }
    )
    timed = file_times(files, {"LTO-0": SIMPLE}, ("dataset", "volume"))
    assert timed["position"].to_list() == [3, 9, 4, 5]
    assert timed["kind"].to_list() == ["first", "read_through", "first", "read_through"]
    assert timed["start_s"][2] == pytest.approx(25.0)  # each group is its own mount


def test_predict_reads_keeps_row_order_and_classes() -> None:
    reads = pl.DataFrame(
        {
            "media_type": ["LTO-0"] * 5,
            "gap": [3, None, 0, 50, -4],
            "size_bytes": [GB] * 5,
            "gap_bytes": [2 * GB, None, 0, 500 * GB, None],
        }
    )
    out = predict_reads(reads, {"LTO-0": SIMPLE})
    assert out["gap"].to_list() == [3, None, 0, 50, -4]
    assert out["gap_class"].to_list() == [
        "read_through",
        "first",
        "read_through",
        "locate",
        "locate",
    ]
    stream = GB / (200 * MB)
    assert out["predicted_duration_s"][0] == pytest.approx(2 * GB / (200 * MB) + 2 + stream)
    assert out["predicted_duration_s"][2] == pytest.approx(stream)  # aggregate member
    assert out["predicted_duration_s"][3] == pytest.approx(12 + 100 * 0.05 + 2 + stream)


def test_params_round_trip_and_missing_media() -> None:
    assert ModelParams.from_dict(LTO7.to_dict()) == LTO7
    partial = ModelParams.from_dict({"rate_mb_s": 250}, fallback=LTO7)
    assert partial.rate_mb_s == 250 and partial.load_s == LTO7.load_s
    with pytest.raises(InputError, match="lack"):
        ModelParams.from_dict({"rate_mb_s": 250})
    files = tape([1], [GB]).with_columns(media_type=pl.lit("LTO-99"))
    with pytest.raises(InputError, match="LTO-99"):
        file_times(files, default_params())


def test_parse_drives() -> None:
    assert parse_drives("LTO8:6, lto-7:4,LTO8:1") == {"LTO-8": 7, "LTO-7": 4}
    assert parse_drives("TS1160=2") == {"TS1160": 2}
    for bad in ("LTO8", "LTO8:x", "", "LTO8:0"):
        with pytest.raises(InputError, match="--drives"):
            parse_drives(bad)


def _two_tapes(media: tuple[str, str]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "volume": ["A", "A", "B"],
            "position": [1, 2, 1],
            "size_bytes": [30 * GB, 30 * GB, 10 * GB],
            "start_bytes": [0, 30 * GB, 0],
        }
    ), {"A": media[0], "B": media[1]}


def test_recall_on_one_drive_is_the_sum_and_on_two_the_longest() -> None:
    files, media = _two_tapes(("LTO-7", "LTO-7"))
    simple = replace(SIMPLE, media_type="LTO-7")
    params = {"LTO-7": simple}
    a = predict_tape(files.filter(pl.col("volume") == "A"), simple).total_s
    b = predict_tape(files.filter(pl.col("volume") == "B"), simple).total_s
    one = predict_recall(files, {"LTO-7": 1}, params, media)
    assert one.makespan_s == pytest.approx(a + b)
    assert one.mounts == 2 and one.files_read == 3 and one.bytes == 70 * GB
    assert one.rate_mb_s == pytest.approx(70 * GB / MB / (a + b))
    # longest first: A starts at 0, B after it; per-file times are on the recall's clock
    b_file = one.files.filter(pl.col("volume") == "B").row(0, named=True)
    assert b_file["start_s"] == pytest.approx(a + 25.0)
    two = predict_recall(files, {"LTO-7": 2}, params, media)
    assert two.makespan_s == pytest.approx(max(a, b))
    assert set(two.tapes["drive"].to_list()) == {"LTO-7#1", "LTO-7#2"}


def test_recall_respects_which_drives_read_which_media() -> None:
    files, media = _two_tapes(("LTO-7", "LTO-6"))
    params = default_params()
    newer = predict_recall(files, {"LTO-8": 2}, params, media)  # LTO-8 reads LTO-7, not LTO-6
    assert newer.unreadable == ("B",)
    assert newer.mounts == 1 and newer.bytes == 60 * GB
    both = predict_recall(files, {"LTO-8": 1, "LTO-7": 1}, params, media)
    drives = dict(zip(both.tapes["volume"], both.tapes["drive_type"], strict=True))
    assert drives["B"] == "LTO-7" and both.unreadable == ()


def test_a_tape_goes_to_a_drive_of_its_own_generation_on_ties() -> None:
    files, media = _two_tapes(("LTO-7", "LTO-7"))
    alone = predict_recall(
        files.filter(pl.col("volume") == "A"), {"LTO-8": 1, "LTO-7": 1}, default_params(), media
    )
    assert alone.tapes["drive"].to_list() == ["LTO-7#1"]
