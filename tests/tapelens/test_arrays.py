"""Lookups of many keys in a large sorted array."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from tapelens.arrays import rows_of, sorted_search


@pytest.mark.parametrize("size", [0, 1, 7, 10_000])
def test_a_search_in_key_order_finds_what_a_plain_search_finds(size: int) -> None:
    rng = np.random.default_rng(size)
    table = np.sort(rng.integers(0, 500, size, dtype=np.uint64))  # repeated keys among them
    keys = rng.integers(0, 520, 3_000, dtype=np.uint64)  # some beyond the last key
    assert (sorted_search(table, keys) == np.searchsorted(table, keys)).all()


def test_rows_of_finds_each_key_where_a_join_does() -> None:
    table = pl.Series(["/a/1", "/a/2", None, "/b/1", "/c/9"])
    keys = pl.Series(["/b/1", "/z", None, "/a/1", "/c/9", "/a/1"])
    assert rows_of(keys, table).tolist() == [3, -1, -1, 0, 4, 0]  # type: ignore[union-attr]
    assert rows_of(keys, table.clear()).tolist() == [-1] * 6  # type: ignore[union-attr]
    assert rows_of(keys, pl.Series(["/a/1", "/a/1"])) is None  # shared hashes: join instead
