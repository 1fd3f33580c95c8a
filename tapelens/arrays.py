"""Lookups of many keys in a large sorted array (numpy), as the loader and the readers do them."""

from __future__ import annotations

import numpy as np


def sorted_search(table: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """np.searchsorted(table, keys), with the keys looked up in ascending order: each search
    then starts where the last one ended and walks memory forwards. On a table of millions
    that is several times faster than searching in the keys' own order, which misses the
    cache at every step."""
    order = np.argsort(keys)
    at = np.empty(len(keys), dtype=np.intp)
    at[order] = np.searchsorted(table, keys[order])
    return at
