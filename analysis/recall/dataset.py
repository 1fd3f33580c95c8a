"""What today's placement costs a dataset recall: predicted time now and with ideal placement.

Now: the dataset's live files where they are (one copy per file: the one on the tape holding
most of the dataset, the oldest on a tie), each tape mounted once, the tapes spread over the
drives. Ideal: the same objects adjacent (gap 1) from the start of the fewest tapes of the
dataset's main media type, filled to capacity. The difference is the cost of the placement.
Pure: frames and parameters in, one row per dataset out.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from tapelens.analysis.recall.drives import schedule_tapes
from tapelens.analysis.throughput.model import MB, ModelParams, file_times, tape_times

KEY = ["dataset", "volume"]


def choose_copies(files: pl.DataFrame) -> pl.DataFrame:
    """One copy per (dataset, file_id): on the volume holding most of the dataset's copies,
    then the oldest, then the lowest copy number."""
    if "file_id" not in files.columns:
        return files
    several = pl.struct("dataset", "file_id").is_duplicated()
    flagged = files.with_columns(several.alias("_several"))
    single = flagged.filter(~pl.col("_several")).drop("_several")
    multi = flagged.filter(pl.col("_several")).drop("_several")
    if multi.height == 0:
        return files
    order = [c for c in ("written_at", "copy_no") if c in files.columns]
    counts = files.group_by(KEY).agg(pl.len().alias("_on_volume"))
    chosen = (
        multi.join(counts, on=KEY, how="left")
        .sort(
            ["dataset", "file_id", "_on_volume", *order, "volume"],
            descending=[False, False, True, *([False] * len(order)), False],
        )
        .unique(["dataset", "file_id"], keep="first", maintain_order=True)
        .drop("_on_volume")
    )
    return pl.concat([single, chosen])


def resolve_media(
    files: pl.DataFrame, known: Mapping[str, object], assume: str | None
) -> tuple[pl.DataFrame, list[str]]:
    """Files whose tape has no known media type get `assume` (when given; else they are
    dropped). Returns the files and the volumes concerned."""
    unknown = ~pl.col("media_type").is_in(list(known)) | pl.col("media_type").is_null()
    volumes = files.filter(unknown)["volume"].unique().sort().to_list()
    if not volumes:
        return files, []
    if assume is None:
        return files.filter(~unknown), volumes
    return files.with_columns(
        pl.when(unknown).then(pl.lit(assume)).otherwise(pl.col("media_type")).alias("media_type")
    ), volumes


def ideal_placement(
    files: pl.DataFrame, params_by_media: Mapping[str, ModelParams]
) -> pl.DataFrame:
    """The files of each dataset packed adjacently onto the fewest tapes of its main media type
    (the one holding most of its bytes): same objects, same order, gap 1 everywhere."""
    main = (
        files.group_by("dataset", "media_type")
        .agg(pl.col("size_bytes").sum().alias("_b"))
        .sort("dataset", "_b", "media_type", descending=[False, True, False])
        .unique("dataset", keep="first", maintain_order=True)
    )
    capacity = {m: p.capacity_bytes for m, p in params_by_media.items()}
    main = main.select(
        "dataset",
        pl.col("media_type").alias("_main"),
        pl.col("media_type").replace_strict(capacity, return_dtype=pl.Int64).alias("_cap"),
    )
    # Sorted once; objects, their byte offsets and tape numbers follow from running sums.
    size = pl.col("size_bytes")
    before = size.cum_sum() - size
    new_dataset = pl.col("dataset").ne_missing(pl.col("dataset").shift(1))
    new_object = (
        new_dataset
        | pl.col("volume").ne_missing(pl.col("volume").shift(1))
        | pl.col("position").ne_missing(pl.col("position").shift(1))
    )
    object_at = pl.when(new_object).then(before).forward_fill()
    dataset_at = pl.when(new_dataset).then(before).forward_fill()
    new_tape = new_dataset | (pl.col("_tape") != pl.col("_tape").shift(1))
    object_no = new_object.cum_sum()
    return (
        files.sort("dataset", "volume", "position", "offset_bytes", nulls_last=False)
        .join(main, on="dataset", how="left", maintain_order="left")
        .with_columns(
            (object_at - dataset_at).alias("_at"),
            (before - object_at).alias("_in_obj"),
            object_no.alias("_obj"),
            new_dataset.alias("_new_dataset"),
        )
        .with_columns((pl.col("_at") // pl.col("_cap")).alias("_tape"))
        .with_columns(
            (pl.col("_obj") - pl.when(new_tape).then(pl.col("_obj")).forward_fill() + 1).alias(
                "_pos"
            )
        )
        .select(
            "dataset",
            pl.format("ideal-{}", pl.col("_tape")).alias("volume"),
            pl.col("_main").alias("media_type"),
            pl.col("_pos").alias("position"),
            pl.col("_in_obj").alias("offset_bytes"),
            "size_bytes",
            (pl.col("_at") - pl.col("_tape") * pl.col("_cap") + pl.col("_in_obj")).alias(
                "start_bytes"
            ),
        )
    )


def recall_per_dataset(
    files: pl.DataFrame,
    drives: Mapping[str, int],
    params_by_media: Mapping[str, ModelParams],
    readable_by: Mapping[str, tuple[str, ...]] | None,
    prefix: str,
) -> pl.DataFrame:
    """Per dataset, the given copies recalled on their own copy of the drives (each tape mounted
    once): {prefix}_tapes, {prefix}_unreadable_tapes, {prefix}_s and {prefix}_rate_mb_s."""
    columns = ["dataset", "volume", "media_type", "position", "size_bytes"]
    optional = [c for c in ("offset_bytes", "aggregate_id", "start_bytes") if c in files.columns]
    timed = file_times(files.select(*columns, *optional), params_by_media, KEY)
    tapes = tape_times(files, params_by_media, KEY, per_file=timed)
    placed = schedule_tapes(tapes, drives, readable_by, group="dataset")
    readable = pl.col("drive").is_not_null()
    out = placed.group_by("dataset").agg(
        readable.sum().alias(f"{prefix}_tapes"),
        (~readable).sum().alias(f"{prefix}_unreadable_tapes"),
        pl.col("end_s").max().alias(f"{prefix}_s"),
        pl.col("bytes").filter(readable).sum().alias("_readable_bytes"),
    )
    return out.with_columns(
        (pl.col("_readable_bytes") / MB / pl.col(f"{prefix}_s")).alias(f"{prefix}_rate_mb_s")
    ).drop("_readable_bytes")


def predict_datasets(
    files: pl.DataFrame,
    drives: Mapping[str, int],
    params_by_media: Mapping[str, ModelParams],
    readable_by: Mapping[str, tuple[str, ...]] | None = None,
) -> pl.DataFrame:
    """Per dataset: files, bytes, tapes; predicted recall time and rate now and with ideal
    placement; the cost of today's placement (now_s - ideal_s) and the slowdown (now / ideal).

    `files`: dataset, volume, media_type, position, size_bytes, and optionally file_id,
    offset_bytes, aggregate_id, start_bytes, written_at, copy_no, dataset_type. Each dataset is
    predicted as a recall of its own on all the given drives.
    """
    if "offset_bytes" not in files.columns:
        files = files.with_columns(offset_bytes=pl.lit(None, pl.Int64))
    chosen = choose_copies(files)
    first = [pl.col("dataset_type").first()] if "dataset_type" in chosen.columns else []
    summary = chosen.group_by("dataset").agg(
        *first,
        pl.len().alias("files"),
        pl.col("size_bytes").sum().alias("bytes"),
        pl.col("media_type").mode().sort().first().alias("media_type"),
    )
    now = recall_per_dataset(chosen, drives, params_by_media, readable_by, "now")
    ideal = recall_per_dataset(
        ideal_placement(chosen, params_by_media), drives, params_by_media, readable_by, "ideal"
    )
    return (
        summary.join(now, on="dataset", how="left")
        .join(ideal, on="dataset", how="left")
        .with_columns(
            (pl.col("now_s") - pl.col("ideal_s")).alias("placement_cost_s"),
            (pl.col("now_s") / pl.col("ideal_s")).alias("slowdown"),
        )
        .sort("placement_cost_s", "dataset", descending=[True, False], nulls_last=True)
    )
