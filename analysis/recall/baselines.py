"""What a recall costs the usual way of choosing copies: the newest, as tape clients do.

Tape clients recall the newest copy of a file (docs/domain.md, "Duplicate copies"). The baseline
reads those copies with the plan's own ordering and sharing, so that the difference to the plan
is what the copy choice gains. Direct submission to the tape system, the other baseline, is
direct.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from tapelens.analysis.recall.schedule import Schedule
from tapelens.analysis.throughput.model import MB


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
    """The copy a tape client recalls: the newest of each file (the highest copy number among
    copies written at the same time). `key` names the file."""
    several = pl.struct(key).is_duplicated()
    multi = copies.filter(several)
    if multi.height == 0:
        return copies
    newest = multi.sort(
        ["written_at", "copy_no"], descending=True, nulls_last=True, maintain_order=True
    ).unique(key, keep="first", maintain_order=True)
    return pl.concat([copies.filter(~several), newest])
