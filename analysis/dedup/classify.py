"""Duplicate copies: which copy of each duplicated file to keep and which to retire.

A front-end that retries until it hears success leaves extra copies of a file, usually written
later by another migration onto tapes away from the rest of its dataset (docs/domain.md, "Duplicate
copies"). The cure sites used: keep the oldest copy, verify its checksum, delete the newer ones.
This module only decides; tapelens never deletes anything. Pure: frames in, frames out.

Rules, per file with more than one live copy:
- a copy sits with its dataset when its volume holds the first (oldest) copy of another file of
  the same dataset: the dataset's own tapes, not the ones later retries landed on;
- keep one copy: a copy on a readable tape first, then one that sits with its dataset, then the
  oldest, then the one on the volume holding most of the dataset's first copies (catalogs with
  coarse timestamps tie on age), then the lowest copy number;
- checksums that are known and differ leave every copy of the file for review: no copy can be
  called the good one until they are compared;
- the kept copy (and every copy under review) must have its checksum verified before any other
  copy of its file is retired; a file with one live copy is never listed.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from tapelens.errors import InputError
from tapelens.tape_states import NOT_RECALLABLE

REQUIRED_COLUMNS = (
    "file_id",
    "dataset",
    "volume",
    "position",
    "size_bytes",
    "copy_no",
    "written_at",
)
# The verdict's columns: the copy as given, then what was decided about it.
CLASSIFIED_COLUMNS = (
    *REQUIRED_COLUMNS,
    "copies",
    "action",
    "reason",
    "with_dataset",
    "stray",
    "verify_checksum",
)
# Input columns carried through to the classified copies when present.
CARRIED_COLUMNS = (
    "source",
    "copy_id",
    "path",
    "dataset_type",
    "checksum",
    "tape_state",
    "media_type",
)

KEEP, RETIRE, REVIEW = "keep", "retire", "review"


def file_key(copies: pl.DataFrame) -> list[str]:
    """The columns naming a logical file: file_id, within its source when the frame says."""
    return ["source", "file_id"] if "source" in copies.columns else ["file_id"]


def written_s(copies: pl.DataFrame) -> pl.Expr:
    """written_at as epoch seconds, whether it is a datetime, a date or already a number."""
    dtype = copies.schema["written_at"]
    column = pl.col("written_at")
    if isinstance(dtype, pl.Datetime | pl.Date):
        return column.cast(pl.Datetime("us")).dt.epoch("us").cast(pl.Float64) / 1e6
    return column.cast(pl.Float64)


def readable(copies: pl.DataFrame) -> pl.Expr:
    """True unless the copy's tape is in a state nothing reads (unknown state counts readable)."""
    if "tape_state" not in copies.columns:
        return pl.lit(True)
    return ~pl.col("tape_state").is_in(list(NOT_RECALLABLE)).fill_null(False)


def classify_copies(copies: pl.DataFrame) -> pl.DataFrame:
    """One row per live copy of every file with more than one live copy: keep, retire or review.

    `copies`: all live copies of the datasets concerned (single-copy files included: they tell
    which volumes the dataset sits on), with file_id, dataset, volume, position, size_bytes,
    copy_no, written_at and optionally source, checksum, tape_state, media_type, path,
    dataset_type. Returns CLASSIFIED_COLUMNS, then the CARRIED_COLUMNS present; rows ordered by
    dataset and file, the kept copy first.
    """
    return classify_rows(copies.with_row_index("_row")).drop("_row")


def classify_rows(copies: pl.DataFrame) -> pl.DataFrame:
    """classify_copies for a frame with a _row column, which is kept (to join the verdicts back)."""
    missing = [c for c in REQUIRED_COLUMNS if c not in copies.columns]
    if missing:
        raise InputError(f"duplicate copies: input lacks column(s) {', '.join(missing)}")
    key = file_key(copies)
    carried = [c for c in CARRIED_COLUMNS if c in copies.columns]
    frame = copies.with_columns(
        written_s(copies).alias("_written_s"),
        readable(copies).alias("_readable"),
        _known_checksum(copies).alias("_checksum"),
    )
    located = _locate(frame, key)
    dup = located.filter(pl.col("copies") > 1)
    ranked = dup.sort(
        [*key, "_readable", "with_dataset", "_written_s", "_dataset_volume_files", "copy_no"]
        + ["volume", "position"],
        descending=[False] * len(key) + [True, True, False, True, False, False, False],
        nulls_last=True,
    ).with_columns(
        pl.int_range(pl.len()).over(key).alias("_rank"),
        (pl.col("_checksum").drop_nulls().n_unique().over(key) > 1).alias("_conflict"),
        pl.col("volume").first().over(key).alias("_kept_volume"),
        (~pl.col("_readable")).any().over(key).alias("_any_unreadable"),
    )
    action = (
        pl.when(pl.col("_conflict"))
        .then(pl.lit(REVIEW))
        .when(pl.col("_rank") == 0)
        .then(pl.lit(KEEP))
        .otherwise(pl.lit(RETIRE))
    )
    decided = ranked.with_columns(action.alias("action")).with_columns(
        _reason("tape_state" in copies.columns).alias("reason"),
        ((pl.col("action") == RETIRE) & ~pl.col("with_dataset")).alias("stray"),
        (pl.col("action") != RETIRE).alias("verify_checksum"),
    )
    return decided.sort(["dataset", *key, "_rank"]).select(*CLASSIFIED_COLUMNS, *carried, "_row")


def _known_checksum(copies: pl.DataFrame) -> pl.Expr:
    if "checksum" not in copies.columns:
        return pl.lit(None, pl.String)
    text = pl.col("checksum").cast(pl.String).str.strip_chars().str.to_lowercase()
    return pl.when(text == "").then(None).otherwise(text)


def _locate(frame: pl.DataFrame, key: Sequence[str]) -> pl.DataFrame:
    """Adds copies (live copies of the file), _dataset_volume_files (first copies of the
    dataset's files on the volume) and with_dataset."""
    keys = list(key)
    first = (
        frame.sort([*keys, "_written_s", "copy_no", "volume", "position"], nulls_last=True)
        .with_columns((pl.int_range(pl.len()).over(keys) == 0).alias("_first"))
        .with_columns(
            pl.len().over(keys).alias("copies"),
            pl.col("_first").any().over([*keys, "volume"]).alias("_first_here"),
        )
    )
    per_volume = first.group_by("dataset", "volume").agg(
        pl.col("_first").sum().cast(pl.Int64).alias("_dataset_volume_files")
    )
    located = first.join(per_volume, on=["dataset", "volume"], how="left")
    others = pl.col("_dataset_volume_files") - pl.col("_first_here").cast(pl.Int64)
    return located.with_columns((others >= 1).alias("with_dataset"))


def _reason(has_state: bool) -> pl.Expr:
    """Why each copy got its action (a copy is only unreadable when tape_state says so)."""
    action = pl.col("action")
    where = (
        pl.when(pl.col("with_dataset"))
        .then(pl.lit("copy with its dataset"))
        .otherwise(pl.lit("copy; no copy sits with its dataset"))
    )
    keep = (
        pl.when(~pl.col("_readable"))
        .then(pl.concat_str(pl.lit("no copy on a readable tape: oldest "), where))
        .when(pl.col("_any_unreadable"))
        .then(pl.concat_str(pl.lit("oldest readable "), where))
        .otherwise(pl.concat_str(pl.lit("oldest "), where))
    )
    retire = (
        pl.when(~pl.col("_readable"))
        .then(pl.format("tape {}", pl.col("tape_state")) if has_state else pl.lit("unreadable"))
        .when(pl.col("volume") == pl.col("_kept_volume"))
        .then(pl.lit("the kept copy is on the same tape"))
        .when(~pl.col("with_dataset"))
        .then(pl.lit("stray: off its dataset's tapes"))
        .otherwise(pl.lit("newer copy"))
    )
    return (
        pl.when(action == REVIEW)
        .then(pl.lit("checksums differ: compare before retiring any copy"))
        .when(action == KEEP)
        .then(keep)
        .otherwise(retire)
    )
