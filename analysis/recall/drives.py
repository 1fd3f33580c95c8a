"""Tapes onto drives: which drive generations can read a tape, and longest-first list scheduling.

A tape only goes to a drive type that reads its media (an LTO drive reads its own generation and
the previous one, docs/domain.md); each tape is mounted once and occupies one drive for its whole
predicted time. Longest-first list scheduling (Graham's LPT rule) keeps the makespan within 4/3 of
the optimum on identical drives.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Mapping

import polars as pl

from tapelens.errors import InputError
from tapelens.media import BY_NAME, normalise_drive_type

_DRIVE_ITEM = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9 ._-]*?)\s*[:=]\s*(\d+)\s*$")


def parse_drives(spec: str) -> dict[str, int]:
    """'LTO8:6,LTO7:4' -> {'LTO-8': 6, 'LTO-7': 4}; a type given twice adds up."""
    drives: dict[str, int] = {}
    for item in spec.split(","):
        if not item.strip():
            continue
        match = _DRIVE_ITEM.match(item)
        if not match:
            raise InputError(
                f"--drives: expected TYPE:COUNT items like LTO8:6, got {item.strip()!r}"
            )
        name = normalise_drive_type(match[1])
        drives[name] = drives.get(name, 0) + int(match[2])
    if not drives or not any(drives.values()):
        raise InputError(f"--drives: no drives in {spec!r} (expected e.g. LTO8:6,LTO7:4)")
    return drives


def readable_by_catalog() -> dict[str, tuple[str, ...]]:
    """Media type -> drive types that read it, from the media catalog."""
    return {name: m.readable_by for name, m in BY_NAME.items()}


def schedule_tapes(
    tapes: pl.DataFrame,
    drives: Mapping[str, int],
    readable_by: Mapping[str, tuple[str, ...]] | None = None,
    *,
    group: str | None = None,
) -> pl.DataFrame:
    """Assign each tape (volume, media_type, total_s) to a drive, longest first.

    Returns the tapes with drive_type, drive (e.g. 'LTO-8#3'), start_s and end_s; a tape no
    given drive can read gets null drive and times. With `group`, every value of that column is
    scheduled on its own copy of the drives (e.g. one recall per dataset).
    """
    readers = readable_by if readable_by is not None else readable_by_catalog()
    counts = {normalise_drive_type(k): int(v) for k, v in drives.items() if int(v) > 0}
    order = [group] if group else []
    ordered = tapes.sort([*order, "total_s"], descending=[False] * len(order) + [True])
    groups = ordered[group].to_list() if group else [None] * ordered.height
    media = ordered["media_type"].to_list()
    totals = ordered["total_s"].to_list()
    drive_col: list[str | None] = []
    start_col: list[float | None] = []
    heaps: dict[str, list[tuple[float, int]]] = {}
    current: object = object()
    for g, m, total in zip(groups, media, totals, strict=True):
        if g != current:
            current = g
            heaps = {t: [(0.0, i) for i in range(1, n + 1)] for t, n in counts.items()}
        best: tuple[float, int, str] | None = None
        for rank, drive_type in enumerate(readers.get(m, ())):
            heap = heaps.get(drive_type)
            if heap and (best is None or heap[0][0] < best[0]):
                best = (heap[0][0], rank, drive_type)
        if best is None:
            drive_col.append(None)
            start_col.append(None)
            continue
        free_s, number = heapq.heappop(heaps[best[2]])
        heapq.heappush(heaps[best[2]], (free_s + float(total), number))
        drive_col.append(f"{best[2]}#{number}")
        start_col.append(free_s)
    return ordered.with_columns(
        pl.Series("drive", drive_col, dtype=pl.String()),
        pl.Series("start_s", start_col, dtype=pl.Float64()),
    ).with_columns(
        pl.col("drive").str.split("#").list.first().alias("drive_type"),
        (pl.col("start_s") + pl.col("total_s")).alias("end_s"),
    )
