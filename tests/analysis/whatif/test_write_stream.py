"""The write stream: each file's first copy, in file id order, as a sort of every copy by id,
time and copy number then the first of each id gives it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import polars as pl
from hypothesis import given
from hypothesis import strategies as st

from tapelens.analysis.whatif.store import write_stream

_BASE = datetime(2024, 1, 1, tzinfo=UTC)
_COPY = st.tuples(
    st.sampled_from(["/a/1", "/a/2", "/b/1", "/b/10", "/c", None]),  # ids repeat: copies
    st.one_of(st.none(), st.integers(0, 5)),  # written_at, hours after the base; ties
    st.integers(1, 3),  # copy_no
    st.integers(0, 10**9),
)


def _copies(rows: list[tuple[str | None, int | None, int, int]]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "file_id": [r[0] for r in rows],
            "path": [r[0] for r in rows],
            "dataset": ["d"] * len(rows),
            "dataset_type": ["RAW"] * len(rows),
            "experiment": ["atlas"] * len(rows),
            "size_bytes": [r[3] for r in rows],
            "written_at": [None if r[1] is None else _BASE + timedelta(hours=r[1]) for r in rows],
            "copy_no": pl.Series([r[2] for r in rows], dtype=pl.Int32),
            "media_type": ["LTO-8"] * len(rows),
        }
    )


@given(st.lists(_COPY, max_size=40))
def test_the_stream_is_each_files_first_copy_in_id_order(
    rows: list[tuple[str | None, int | None, int, int]],
) -> None:
    copies = _copies(rows)
    # A tie of id, time and copy number leaves either copy first: the size tells them apart.
    expected = (
        copies.sort("file_id", "written_at", "copy_no", "size_bytes")
        .unique("file_id", keep="first", maintain_order=True)
        .select(
            "file_id",
            "path",
            "dataset",
            "dataset_type",
            pl.col("experiment").alias("pool"),
            "size_bytes",
            pl.col("written_at").alias("arrived_at"),
            "media_type",
        )
    )
    got = write_stream(copies)
    keys = ["file_id", "arrived_at"]
    assert got.drop("size_bytes").equals(expected.drop("size_bytes"))
    # Where two copies tie on id, time and copy number either may be the first.
    tied = copies.group_by("file_id", "written_at", "copy_no").len().filter(pl.col("len") > 1)
    if tied.height == 0:
        assert got.equals(expected)
    assert got.select(keys).equals(expected.select(keys))
