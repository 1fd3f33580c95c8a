"""What a recall costs the usual way of choosing copies: the newest, as tape clients do.

Tape clients recall the newest copy of a file (docs/domain.md, "Duplicate copies"). The baseline
reads those copies with the plan's own ordering and sharing, so that the difference to the plan
is what the copy choice gains. Direct submission to the tape system, the other baseline, is
direct.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl

from tapelens.analysis.recall.dispatch import Sharing, dispatch
from tapelens.analysis.recall.schedule import Schedule, timed_tapes
from tapelens.analysis.throughput.model import MB, ModelParams


@dataclass(frozen=True)
class BaselineResult:
    makespan_s: float
    mounts: int
    files: int
    bytes: int

    @property
    def rate_mb_s(self) -> float:
        return self.bytes / MB / self.makespan_s if self.makespan_s > 0 else 0.0

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


def newest_copy(
    newest: pl.DataFrame,
    planned: pl.DataFrame,
    plan: Schedule,
    wanted: pl.DataFrame,
    params_by_media: Mapping[str, ModelParams],
    drives: Mapping[str, int],
    sharing: Sharing,
    readers: Mapping[str, tuple[str, ...]],
) -> BaselineResult:
    """The newest copies read with the plan's ordering and sharing. Tapes whose set of reads
    is the same as in the plan (`planned` copies, `plan` schedule) keep the plan's timing."""
    moved = (
        newest.select("fid", "vid")
        .join(planned.select("fid", pl.col("vid").alias("was")), on="fid")
        .filter(pl.col("vid") != pl.col("was"))
    )
    touched = pl.concat([moved["vid"], moved["was"]]).unique().implode()
    _, changed = timed_tapes(
        newest.filter(pl.col("vid").is_in(touched)), wanted, params_by_media, detail=False
    )
    kept = plan.tapes.filter(~pl.col("vid").is_in(touched)).select(changed.columns)
    tapes = pl.concat([kept, changed.cast(kept.schema)]) if kept.height else changed
    placed = dispatch(tapes, drives, sharing, readers)
    end = float(placed.select(pl.col("end_s").max()).item() or 0.0)
    return BaselineResult(
        end, placed.height, int(placed["files"].sum()), int(placed["bytes"].sum())
    )
