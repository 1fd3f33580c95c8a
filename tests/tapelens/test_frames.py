"""Reading query results as frames, several queries at once, on a real server."""

from __future__ import annotations

import pytest

from tapelens.errors import DatabaseError
from tapelens.frames import read_batches_together

pytestmark = pytest.mark.timeout(60)


def test_queries_read_together_give_every_row_once(dsn: str) -> None:
    queries = [f"select g as n from generate_series({lo}, {lo + 99_999}) g" for lo in (0, 100_000)]
    seen = [n for frame in read_batches_together(dsn, queries) for n in frame["n"].to_list()]
    assert sorted(seen) == list(range(200_000))


def test_one_query_alone_is_read_as_it_is(dsn: str) -> None:
    frames = list(read_batches_together(dsn, ["select 1 as one"]))
    assert [f["one"].to_list() for f in frames] == [[1]]


def test_a_failing_query_fails_the_read(dsn: str) -> None:
    queries = ["select g from generate_series(1, 100000) g", "select 1 / 0 as x"]
    with pytest.raises(DatabaseError, match="division by zero"):
        for _ in read_batches_together(dsn, queries):
            pass


def test_stopping_early_leaves_no_reader_behind(dsn: str) -> None:
    queries = [f"select g from generate_series(1, 2000000) g where g > {k}" for k in (0, 1)]
    reader = read_batches_together(dsn, queries)
    next(reader)
    reader.close()  # joins the reading threads; a stuck one would hang here
