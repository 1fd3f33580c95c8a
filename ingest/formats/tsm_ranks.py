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
