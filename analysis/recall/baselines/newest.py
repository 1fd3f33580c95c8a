"""What a recall costs the usual way of choosing copies: the newest, as tape clients do.

Tape clients recall the newest copy of a file (docs/domain.md, "Duplicate copies"). The baseline
reads those copies with the plan's own ordering and sharing, so that the difference to the plan
is what the copy choice gains. Direct submission to the tape system, the other baseline, is
baselines/direct.py.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import polars as pl

from tapelens.analysis.recall.schedule.schedule import Schedule
from tapelens.analysis.throughput.model import MB
from tapelens.tape_states import NOT_RECALLABLE


@dataclass(frozen=True)
class BaselineResult:
    makespan_s: float
    mounts: int
    files: int
    bytes: int

    @property
    def rate_mb_s(self) -> float:
        return self.bytes / MB / self.makespan_s if self.makespan_s > 0 else 0.0

    @classmethod
    def of(cls, schedule: Schedule) -> BaselineResult:
        """A schedule's figures; a copy on several cartridges is read from each but is one file."""
        tapes = schedule.tapes
        if tapes.height == 0:
            return cls(0.0, 0, 0, 0)
        files = int(schedule.files["fid"].n_unique())
        return cls(schedule.makespan_s, tapes.height, files, int(tapes["bytes"].sum()))

    def as_dict(self) -> dict[str, Any]:
        return {
            "makespan_s": round(self.makespan_s, 3),
            "mounts": self.mounts,
            "files": self.files,
            "rate_mb_s": round(self.rate_mb_s, 3),
        }


def newest_copies(copies: pl.DataFrame, key: str | list[str] = "fid") -> pl.DataFrame:
    """The copy a tape client recalls: one per file, the first in `newest_first` order.

    The product's one rule for "the newest copy" (the planner's baseline, the duplicate
    clean-up's recall before and after, dCache's tape information): `key` names the file. Files
    with one copy come first as given, then the chosen copies of the others."""
    several = pl.struct(key).is_duplicated()
    multi = copies.filter(several)
    if multi.height == 0:
        return copies
    by, descending = newest_first(multi.columns)
    newest = multi.sort(by, descending=descending, nulls_last=True, maintain_order=True).unique(
        key, keep="first", maintain_order=True
    )
    return pl.concat([copies.filter(~several), newest])


def newest_first(columns: Collection[str]) -> tuple[list[pl.Expr], list[bool]]:
    """The order in which a tape client prefers a file's copies, as sort keys and directions.

    A copy on a tape that can be mounted for a recall comes first (where the frame has
    tape_state); then the newest written_at (an unknown time last: it cannot be called the
    newest); then the highest copy number (copy numbers follow the order the copies were
    written, so they break ties of coarse timestamps the same way); then the catalog's own
    order, volume and position ascending, so that the choice never depends on row order."""
    by: list[pl.Expr] = []
    descending: list[bool] = []
    if "tape_state" in columns:
        by.append(~pl.col("tape_state").is_in(list(NOT_RECALLABLE)).fill_null(True))
        descending.append(True)
    for name, newest_high in (("written_at", True), ("copy_no", True)):
        if name in columns:
            by.append(pl.col(name))
            descending.append(newest_high)
    for name in ("volume", "position", "offset_bytes"):
        if name in columns:
            by.append(pl.col(name))
            descending.append(False)
    return by, descending
