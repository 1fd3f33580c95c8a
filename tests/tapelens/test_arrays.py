"""Lookups of many keys in a large sorted array."""

from __future__ import annotations

import numpy as np
import pytest

from tapelens.arrays import sorted_search


@pytest.mark.parametrize("size", [0, 1, 7, 10_000])
def test_a_search_in_key_order_finds_what_a_plain_search_finds(size: int) -> None:
    rng = np.random.default_rng(size)
    table = np.sort(rng.integers(0, 500, size, dtype=np.uint64))  # repeated keys among them
    keys = rng.integers(0, 520, 3_000, dtype=np.uint64)  # some beyond the last key
    assert (sorted_search(table, keys) == np.searchsorted(table, keys)).all()
