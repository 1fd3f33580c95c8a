"""Positions on a TSM volume: the rank of each tape object in listing order.

The TSM server gives no byte position, but lists a volume's contents in their order on tape
(docs/formats/tsm.md), so position = rank: 1, 2, 3, ... per volume. Files of one aggregate
(AGGREGATED "i/n", n > 1) share the aggregate's rank; a member's offset is the total size of the
members listed before it in that aggregate. A new aggregate starts when i does not follow the
previous member of an aggregate of the same n (members missing from the listing leave no gap in
offsets). A continuation segment of a file that spans volumes ("2/2" on the next volume) is a tape
object too: it takes a rank, though it does not start a file.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

# Offsets from here up are summed as Python integers (beyond int64's reach in a run's sums).
OFFSET_LIMIT = 1 << 62


def fraction(text: str) -> tuple[int, int] | None:
    """'2/5' -> (2, 5); None unless 1 <= i <= n."""
    i, slash, n = text.partition("/")
    i, n = i.strip(), n.strip()
    if not (slash and i.isascii() and i.isdigit() and n.isascii() and n.isdigit()):
        return None
    a, b = int(i), int(n)
    return (a, b) if 1 <= a <= b else None


def aggregated(text: str) -> tuple[int, int] | None:
    """AGGREGATED: 'No' -> (1, 1) (a file alone); 'i/n' -> (i, n); anything else -> None."""
    if text.strip().lower() in ("no", "n"):
        return (1, 1)
    return fraction(text)


@dataclass
class _Volume:
    rank: int = 0
    group_n: int = 0  # n of the aggregate being listed, 0 when the last object was not one
    group_i: int = 0
    group_offset: int = 0  # bytes of the members listed so far


class VolumeRanks:
    """Hands out (position, offset_bytes) per listed object, per volume."""

    def __init__(self) -> None:
        self._volumes: dict[str, _Volume] = {}

    def place(
        self, volume: str, member: tuple[int, int], size_bytes: int
    ) -> tuple[int, int | None]:
        """The position of the next listed file (member = AGGREGATED i/n); offset_bytes is None
        for a file alone (n = 1)."""
        v = self._volumes.setdefault(volume, _Volume())
        if member[1] == 1:
            v.rank += 1
            v.group_n = 0
            return v.rank, None
        i, n = member
        if v.group_n == n and i > v.group_i:
            offset = v.group_offset
        else:
            v.rank += 1
            v.group_n, offset = n, 0
        v.group_i = i
        v.group_offset = offset + size_bytes
        return v.rank, offset

    def occupy(self, volume: str) -> None:
        """An object that takes a place on the volume without being a file's start."""
        v = self._volumes.setdefault(volume, _Volume())
        v.rank += 1
        v.group_n = 0

    def place_all(self, listed: pl.DataFrame) -> pl.DataFrame:
        """`place` and `occupy` for a run of listed objects at once, in listing order.

        listed: volume (String), member_i and member_n (Int64: AGGREGATED i/n, n = 1 for a file
        alone), size_bytes (Int64, below 2**40), occupies (Boolean: a continuation segment,
        which takes a rank and no more); no nulls. Returns position and offset_bytes (null for
        a file alone and for a continuation) for every row, and leaves each volume's state as
        the calls one by one would, so that runs read at once and lines read one by one carry
        on from each other.
        """
        rows = listed.height
        if not rows:
            return pl.DataFrame(schema={"position": pl.Int64, "offset_bytes": pl.Int64})
        volume = listed["volume"]
        # Volume ids from runs of equal names: a dump lists a volume's objects together.
        starts = np.flatnonzero((volume != volume.shift(1)).fill_null(True).to_numpy())
        ids: dict[str, int] = {}
        run_ids = [ids.setdefault(v, len(ids)) for v in volume.gather(starts).to_list()]
        vid = np.repeat(np.array(run_ids, dtype=np.int64), np.diff(np.append(starts, rows)))
        states = [self._volumes.setdefault(v, _Volume()) for v in ids]
        if any(s.group_offset >= OFFSET_LIMIT for s in states):
            return self._place_each(listed)  # offsets past int64's reach: Python's integers
        rank0, n0, i0, offset0 = (
            np.array([getattr(s, k) for s in states], dtype=np.int64)
            for k in ("rank", "group_n", "group_i", "group_offset")
        )
        i, n, size = (
            listed[c].to_numpy().astype(np.int64) for c in ("member_i", "member_n", "size_bytes")
        )
        occupies = listed["occupies"].to_numpy()
        order = None
        if len(ids) < len(run_ids):  # a volume in several runs: gather each volume's rows
            order = np.argsort(vid, kind="stable")
            vid, i, n, size, occupies = vid[order], i[order], n[order], size[order], occupies[order]
        first = np.ones(rows, dtype=bool)
        first[1:] = vid[1:] != vid[:-1]
        grouped = ~occupies & (n > 1)
        group_n = np.where(grouped, n, 0)  # as _Volume.group_n after each row
        n_before = np.empty(rows, dtype=np.int64)
        i_before = np.empty(rows, dtype=np.int64)
        n_before[1:], i_before[1:] = group_n[:-1], i[:-1]
        n_before[first], i_before[first] = n0[vid[first]], i0[vid[first]]
        new = ~(grouped & (n_before == n) & (i > i_before))
        taken = np.cumsum(new)
        volume_of = np.cumsum(first) - 1
        position = rank0[vid] + taken - (taken - new)[first][volume_of]
        # Offsets: the sizes of the earlier members of the same aggregate (cumulative sums cut
        # at each aggregate's first row), plus what the aggregate a volume's state left open
        # already held.
        cut = new | first
        sums = np.cumsum(size)
        at = np.maximum.accumulate(np.where(cut, np.arange(rows), 0))
        offset = sums - size - (sums[at] - size[at])
        offset += np.where(position == rank0[vid], offset0[vid], 0)
        for k in np.flatnonzero(np.append(first[1:], True)).tolist():  # each volume's last row
            s = states[int(vid[k])]
            s.rank, s.group_n = int(position[k]), int(group_n[k])
            if s.group_n:
                s.group_i, s.group_offset = int(i[k]), int(offset[k] + size[k])
        if order is not None:  # back to listing order
            back = np.empty(rows, dtype=np.int64)
            back[order] = np.arange(rows)
            position, offset, grouped = position[back], offset[back], grouped[back]
        return pl.DataFrame(
            {
                "position": pl.Series(position, dtype=pl.Int64),
                "offset_bytes": pl.Series(offset, dtype=pl.Int64),
            }
        ).with_columns(
            pl.when(pl.Series(grouped)).then(pl.col("offset_bytes")).alias("offset_bytes")
        )

    def _place_each(self, listed: pl.DataFrame) -> pl.DataFrame:
        """place_all one row at a time (offsets as Python's unbounded integers)."""
        placed: list[tuple[int, int | None]] = []
        for v, i, n, size, occupies in listed.select(
            "volume", "member_i", "member_n", "size_bytes", "occupies"
        ).iter_rows():
            if occupies:
                self.occupy(v)
                placed.append((self._volumes[v].rank, None))
            else:
                placed.append(self.place(v, (i, n), size))
        return pl.DataFrame(
            placed, schema={"position": pl.Int64, "offset_bytes": pl.Int64}, orient="row"
        )
