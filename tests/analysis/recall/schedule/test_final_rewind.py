"""A mount's final rewind is a move: priced by the one price of a move (moves.rewind_s) from
where its last read ends, the same figure in the engine's schedule, the direct-submission
baseline and the simulator."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import polars as pl
import pytest

from tapelens.analysis.geometry.media import GEOMETRIES
from tapelens.analysis.recall.baselines.direct import serve_direct
from tapelens.analysis.recall.engine import Policy, candidate_bounds, engine_inputs, recall
from tapelens.analysis.recall.schedule.drives import readable_by_catalog
from tapelens.analysis.sim.simulator import Library, SimConfig, simulate
from tapelens.analysis.throughput.model import default_params
from tapelens.analysis.throughput.moves import least_rewind_s, rewind_s

PARAMS = default_params()
LTO8 = PARAMS["LTO-8"]
GB = 1_000_000_000
# Wrap 0 runs forward from the load point: its first gigabyte lies next to the load point, its
# last at the far end of the tape.
NEAR = 0
FAR = int(GEOMETRIES["LTO-8"].bytes_per_wrap) - GB


def one_file(start_bytes: int) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "fid": [1],
            "file_id": ["/a/1"],
            "path": ["/a/1"],
            "volume": ["A00001L8"],
            "media_type": ["LTO-8"],
            "position": [1 + start_bytes // GB],
            "offset_bytes": pl.Series([None], dtype=pl.Int64),
            "size_bytes": [GB],
            "start_bytes": [start_bytes],
        }
    )


def engine_rewind(files: pl.DataFrame) -> float:
    copies, wanted = engine_inputs(files.drop("fid"))
    done = recall(copies, wanted, PARAMS, {"LTO-8": 1}, readable_by_catalog(), Policy())
    event = done.schedule.timeline.filter(pl.col("event") == "rewind").row(0, named=True)
    return float(event["end_s"] - event["start_s"])


def direct_rewind(files: pl.DataFrame) -> float:
    result = serve_direct(files, {"LTO-8": 1}, PARAMS, readable_by_catalog())
    event = result.timeline.filter(pl.col("event") == "rewind").row(0, named=True)
    return float(event["end_s"] - event["start_s"])


def simulated_rewind(files: pl.DataFrame) -> float:
    library = Library.from_counts({"LTO-8": 1}, robots=1)
    result = simulate(files, library, PARAMS, SimConfig(), np.random.default_rng(0))
    unmount = result.events.filter(pl.col("kind").cast(pl.String) == "unmount").row(0, named=True)
    return float(unmount["end_s"] - unmount["start_s"]) - LTO8.unload_s


def test_the_rewind_is_priced_from_where_the_last_read_ends_alike_everywhere() -> None:
    near, far = one_file(NEAR), one_file(FAR)
    expected_near = float(rewind_s(LTO8, np.array([NEAR + GB]))[0])
    expected_far = float(rewind_s(LTO8, np.array([FAR + GB]))[0])
    # Near the load point a rewind is little more than a locate's fixed part; from the far end
    # it crosses the whole tape, longer than the media's average.
    assert expected_near < 0.2 * LTO8.rewind_s < expected_far
    assert expected_far > LTO8.rewind_s
    for timing in (engine_rewind, direct_rewind, simulated_rewind):
        assert timing(near) == pytest.approx(expected_near), timing.__name__
        assert timing(far) == pytest.approx(expected_far), timing.__name__


def test_a_media_type_without_a_geometry_keeps_its_average_rewind() -> None:
    lto8 = LTO8
    unknown = replace(lto8, media_type="NO-GEOMETRY")
    ends = np.array([GB, 10 * GB, np.nan])
    assert rewind_s(unknown, ends).tolist() == [lto8.rewind_s] * 3
    assert least_rewind_s(unknown) == lto8.rewind_s
    # With a geometry, a place not known keeps the average too.
    assert float(rewind_s(lto8, np.array([np.nan]))[0]) == lto8.rewind_s


def test_the_bound_charges_no_more_than_the_least_rewind() -> None:
    near = one_file(NEAR)
    copies, wanted = engine_inputs(near.drop("fid"))
    done = recall(copies, wanted, PARAMS, {"LTO-8": 1}, readable_by_catalog(), Policy())
    bounds = candidate_bounds(copies, wanted, PARAMS, {"LTO-8": 1})
    assert bounds["lower_bound_s"] <= done.makespan_s + 1e-9
    assert least_rewind_s(LTO8) <= engine_rewind(near)
