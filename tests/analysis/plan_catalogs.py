"""Hand-made catalogs of live copies for the recall planner tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import polars as pl

from tapelens.analysis.plan_dispatch import Sharing
from tapelens.analysis.planner import PlanOptions
from tapelens.analysis.scheduling import parse_drives

GB = 1_000_000_000
WRITTEN = datetime(2021, 3, 1, tzinfo=UTC)

SCHEMA: dict[str, pl.DataType] = {
    "file_id": pl.String(),
    "path": pl.String(),
    "dataset": pl.String(),
    "size_bytes": pl.Int64(),
    "volume": pl.String(),
    "position": pl.Int64(),
    "offset_bytes": pl.Int64(),
    "aggregate_id": pl.String(),
    "copy_no": pl.Int32(),
    "written_at": pl.Datetime("us", "UTC"),
    "media_type": pl.String(),
    "tape_state": pl.String(),
}


def copy(
    file_id: str,
    volume: str,
    position: int,
    *,
    dataset: str = "ds",
    size_bytes: int = 2 * GB,
    offset_bytes: int | None = None,
    copy_no: int = 1,
    days_later: float = 0.0,
    media_type: str = "LTO-8",
    tape_state: str = "full",
    path: str | None = None,
) -> dict[str, Any]:
    """One live copy; the path defaults to /store/<dataset>/<file_id>."""
    return {
        "file_id": file_id,
        "path": path or f"/store/{dataset}/{file_id}",
        "dataset": dataset,
        "size_bytes": size_bytes,
        "volume": volume,
        "position": position,
        "offset_bytes": offset_bytes,
        "aggregate_id": f"{volume}:{position}" if offset_bytes is not None else None,
        "copy_no": copy_no,
        "written_at": WRITTEN + timedelta(days=days_later),
        "media_type": media_type,
        "tape_state": tape_state,
    }


def catalog(rows: list[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=SCHEMA)


def tape(
    volume: str, dataset: str, n: int, *, first: int = 1, step: int = 1, **kw: Any
) -> list[dict[str, Any]]:
    """n files of one dataset on one tape at positions first, first+step, ..."""
    return [
        copy(f"{dataset}-{volume}-{i}", volume, first + i * step, dataset=dataset, **kw)
        for i in range(n)
    ]


def options(drives: str = "LTO8:2", **sharing: Any) -> PlanOptions:
    baselines = sharing.pop("baselines", True)
    exact_limit = sharing.pop("exact_limit", None)
    extra = {"exact_limit": exact_limit} if exact_limit is not None else {}
    return PlanOptions(
        drives=tuple(parse_drives(drives).items()),
        sharing=Sharing(**sharing),
        baselines=baselines,
        **extra,
    )
