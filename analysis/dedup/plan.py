"""The duplicate clean-up plan: the copies to keep and retire, and what a dataset recall gains.

Tape clients recall a file's newest copy (docs/domain.md), which for a duplicated file is usually a
retry on a tape away from the rest of its dataset, so a recall of the dataset mounts that tape
too. Once only the kept copies remain, the same recall mounts only the tapes the kept copies are
on. The plan counts those mounts and predicts both recalls with the throughput model, each
dataset on its own copy of the drives. tapelens never deletes anything: the plan is a list for a
site to review, and every kept copy's checksum must be verified first (see dedup_classify).
Pure: frames and parameters in, frames out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl

from tapelens.analysis.dedup.classify import (
    CLASSIFIED_COLUMNS,
    KEEP,
    RETIRE,
    REVIEW,
    classify_copies,
    classify_rows,
    file_key,
)
from tapelens.analysis.recall.baselines.newest import newest_copies
from tapelens.analysis.recall.datasets.prediction import recall_per_dataset
from tapelens.analysis.throughput.model import ModelParams

__all__ = [
    "CLASSIFIED_COLUMNS",
    "DedupPlan",
    "classify_copies",
    "dedup_plan",
]

_TIMED = ("dataset", "volume", "media_type", "position", "size_bytes")
_TIMED_OPTIONAL = ("offset_bytes", "aggregate_id", "start_bytes")


@dataclass(frozen=True)
class DedupPlan:
    """copies: classify_copies' verdict per copy; datasets: per affected dataset, what retiring
    saves a recall of it; tapes: per volume, the copies retired and kept; summary: totals."""

    copies: pl.DataFrame
    datasets: pl.DataFrame
    tapes: pl.DataFrame
    summary: dict[str, Any]


def dedup_plan(
    copies: pl.DataFrame,
    params_by_media: Mapping[str, ModelParams],
    drives: Mapping[str, int],
    readable_by: Mapping[str, tuple[str, ...]] | None = None,
) -> DedupPlan:
    """Classify the copies and predict each affected dataset's recall now and after the retires.

    `copies`: all live copies of the affected datasets (as for classify_copies) with, for the
    predicted times, media_type and optionally offset_bytes, aggregate_id, start_bytes. Copies on
    media without parameters are counted in mounts but left out of the predicted times
    (summary untimed_copies).
    """
    rows = copies.with_row_index("_row")
    classified = classify_rows(rows)
    key = file_key(copies)
    retired = classified.filter(pl.col("action") == RETIRE)["_row"]
    affected = classified["dataset"].unique()
    live = rows.filter(pl.col("dataset").is_in(affected.implode())).with_columns(
        pl.col("_row").is_in(retired.implode()).alias("_retired"),
    )
    now = _newest(live, key)
    after = _newest(live.filter(~pl.col("_retired")), key)
    datasets = (
        _per_dataset(classified, key)
        .join(_mounts(now, "mounts_now"), on="dataset", how="left")
        .join(_mounts(after, "mounts_after"), on="dataset", how="left")
        .with_columns((pl.col("mounts_now") - pl.col("mounts_after")).alias("mounts_saved"))
    )
    timed_now, untimed = _timed(now, params_by_media)
    timed_after, _ = _timed(after, params_by_media)
    datasets = (
        datasets.join(
            _recall_s(timed_now, drives, params_by_media, readable_by, "recall_now_s"),
            on="dataset",
            how="left",
        )
        .join(
            _recall_s(timed_after, drives, params_by_media, readable_by, "recall_after_s"),
            on="dataset",
            how="left",
        )
        .with_columns((pl.col("recall_now_s") - pl.col("recall_after_s")).alias("recall_saved_s"))
        .sort(
            ["mounts_saved", "bytes_to_retire", "dataset"],
            descending=[True, True, False],
            nulls_last=True,
        )
    )
    tapes = _per_tape(classified)
    summary = _summary(classified, datasets, tapes, key, untimed)
    return DedupPlan(classified.drop("_row"), datasets, tapes, summary)


def _newest(live: pl.DataFrame, key: list[str]) -> pl.DataFrame:
    """The copy of each file a tape client recalls (the product's one rule: newest_copies),
    in file order."""
    return newest_copies(live, key).sort(key, maintain_order=True)


def _mounts(chosen: pl.DataFrame, name: str) -> pl.DataFrame:
    # Signed: retiring can cost mounts (a file's kept copy on a tape the dataset did not use),
    # and an unsigned difference would wrap round to 4,294,967,295.
    return chosen.group_by("dataset").agg(pl.col("volume").n_unique().cast(pl.Int64).alias(name))


def _timed(
    chosen: pl.DataFrame, params_by_media: Mapping[str, ModelParams]
) -> tuple[pl.DataFrame, int]:
    """The chosen copies the throughput model can time, and how many it cannot."""
    if "media_type" not in chosen.columns:
        return chosen.clear(), chosen.height
    known = chosen.filter(pl.col("media_type").is_in(list(params_by_media)))
    optional = [c for c in _TIMED_OPTIONAL if c in chosen.columns]
    return known.select(*_TIMED, *optional), chosen.height - known.height


def _recall_s(
    files: pl.DataFrame,
    drives: Mapping[str, int],
    params_by_media: Mapping[str, ModelParams],
    readable_by: Mapping[str, tuple[str, ...]] | None,
    name: str,
) -> pl.DataFrame:
    """Predicted seconds to recall each dataset's files (null when no drive reads them)."""
    if files.height == 0:
        return pl.DataFrame(schema={"dataset": pl.String, name: pl.Float64})
    if "offset_bytes" not in files.columns:
        files = files.with_columns(offset_bytes=pl.lit(None, pl.Int64))
    predicted = recall_per_dataset(files, drives, params_by_media, readable_by, "p")
    return predicted.select("dataset", pl.col("p_s").alias(name))


def _per_dataset(classified: pl.DataFrame, key: list[str]) -> pl.DataFrame:
    retire = pl.col("action") == RETIRE
    first_type = (
        [pl.col("dataset_type").first()]
        if "dataset_type" in classified.columns
        else [pl.lit(None, pl.String).alias("dataset_type")]
    )
    return classified.group_by("dataset").agg(
        *first_type,
        pl.struct(key).n_unique().alias("files_duplicated"),
        pl.struct(key).filter(pl.col("action") == REVIEW).n_unique().alias("files_review"),
        retire.sum().cast(pl.Int64).alias("copies_to_retire"),
        pl.col("size_bytes").filter(retire).sum().cast(pl.Int64).alias("bytes_to_retire"),
    )


def _per_tape(classified: pl.DataFrame) -> pl.DataFrame:
    action = pl.col("action")
    described = [c for c in ("media_type", "tape_state") if c in classified.columns]
    return (
        classified.group_by("volume")
        .agg(
            *[pl.col(c).first() for c in described],
            (action == RETIRE).sum().cast(pl.Int64).alias("copies_to_retire"),
            pl.col("size_bytes")
            .filter(action == RETIRE)
            .sum()
            .cast(pl.Int64)
            .alias("bytes_to_retire"),
            (action == KEEP).sum().cast(pl.Int64).alias("copies_kept"),
            pl.col("stray").sum().cast(pl.Int64).alias("stray_copies"),
            (action == REVIEW).sum().cast(pl.Int64).alias("copies_review"),
        )
        .sort(["bytes_to_retire", "volume"], descending=[True, False])
    )


def _summary(
    classified: pl.DataFrame,
    datasets: pl.DataFrame,
    tapes: pl.DataFrame,
    key: list[str],
    untimed: int,
) -> dict[str, Any]:
    def total(frame: pl.DataFrame, column: str) -> float:
        value = frame[column].sum() if frame.height else 0
        return float(value or 0)

    return {
        "datasets": datasets.height,
        "files_duplicated": classified.select(pl.struct(key).n_unique()).item()
        if classified.height
        else 0,
        "files_review": int(total(datasets, "files_review")),
        "copies_to_retire": int(total(datasets, "copies_to_retire")),
        "bytes_to_retire": int(total(datasets, "bytes_to_retire")),
        "stray_copies": int(classified["stray"].sum()) if classified.height else 0,
        "tapes_with_retires": tapes.filter(pl.col("copies_to_retire") > 0).height,
        "mounts_now": int(total(datasets, "mounts_now")),
        "mounts_after": int(total(datasets, "mounts_after")),
        "mounts_saved": int(total(datasets, "mounts_saved")),
        "recall_now_s": total(datasets, "recall_now_s"),
        "recall_after_s": total(datasets, "recall_after_s"),
        "recall_saved_s": total(datasets, "recall_saved_s"),
        "untimed_copies": untimed,
    }
