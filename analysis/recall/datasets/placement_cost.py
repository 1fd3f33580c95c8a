"""What a dataset's placement costs: the drive time beyond that of the same bytes ideally placed.

The one definition of the figure every command quotes (`placement_cost_s`; docs/domain.md,
"Placement cost"). Drive time is what drives spend on a recall, mount to dismount, summed over
its mounts (robot, load, positioning, reads, rewind, unload), priced by the recall engine and
its one price of a move:

- as placed (`drive_s`): every live file of the dataset that can be read now, recalled alone by
  the engine from the copies that take the least drive time, each tape mounted once and read in
  position order;
- ideally placed (`ideal_drive_s`): the same copies' objects, in the same order, contiguous,
  beginning where the dataset begins today: on the fewest tapes of its main media type (the
  first from where the dataset begins on the tape holding most of it), or on each tape they are
  on now (from where their first begins there), whichever takes less drive time. A dataset
  already contiguous costs nothing: its place along the tape is not a cost of its placement;
- `placement_cost_s` = drive_s - ideal_drive_s, never negative and never more than drive_s.

Drive time does not depend on how many drives share the work (elapsed time does), so the figure
is the same on every drive set that reads the dataset's media: it is priced with one drive for
each media type. Per tape, a dataset's cost is the drive time of its mount of that tape less the
tape's share (by bytes read) of the ideal drive time; the tapes' costs add up to the dataset's.
Pure: frames and parameters in, frames out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import polars as pl

from tapelens.analysis.recall.baselines.newest import newest_copies
from tapelens.analysis.recall.copies.copy_choice import choose_copies
from tapelens.analysis.recall.datasets.prediction import (
    PREDICTION_COLUMNS,
    adjacent_on_own_tapes,
    ideal_placement,
    readable_split,
)
from tapelens.analysis.recall.engine import (
    copy_costs,
    engine_inputs,
    tape_costs,
    with_other_volumes,
)
from tapelens.analysis.recall.schedule.drives import readable_by_catalog
from tapelens.analysis.recall.schedule.schedule import timed_tapes
from tapelens.analysis.throughput.model import ModelParams

# The per-dataset figures, what matters first.
DATASET_COLUMNS = (
    "dataset",
    "dataset_type",
    "placement_cost_s",
    "drive_s",
    "ideal_drive_s",
    "copies",
    "live_files",
    "readable_files",
    "bytes",
    "tapes",
    "ideal_tapes",
    "unreadable_tapes",
)
TAPE_COLUMNS = (
    "dataset",
    "volume",
    "media_type",
    "placement_cost_s",
    "drive_s",
    "readable_files",
    "bytes",
)


@dataclass(frozen=True)
class PlacementCosts:
    """Per dataset (DATASET_COLUMNS) and per dataset and tape it is read from (TAPE_COLUMNS)."""

    datasets: pl.DataFrame
    tapes: pl.DataFrame


# Drive times this close (a share of the drive time spent) are the same time.
SAME_TIME_SHARE = 1e-9


def pricing_drives(media: list[str], readable_by: Mapping[str, tuple[str, ...]]) -> dict[str, int]:
    """One drive of the first type that reads each media type (drive time does not depend on
    how many)."""
    drives: dict[str, int] = {}
    for name in media:
        readers = readable_by.get(name, ())
        if readers:
            drives[readers[0]] = 1
    return drives


def placement_costs(
    files: pl.DataFrame,
    params_by_media: Mapping[str, ModelParams],
    readable_by: Mapping[str, tuple[str, ...]] | None = None,
) -> PlacementCosts:
    """Each dataset's drive time as placed, ideally placed, and the difference.

    `files`: the datasets' live copies, as `predict datasets` reads them (dataset, volume,
    media_type, position, size_bytes, file_id, and optionally offset_bytes, aggregate_id,
    start_bytes, avg_object_bytes, written_at, copy_no, tape_state, dataset_type, path)."""
    readers = dict(readable_by) if readable_by is not None else readable_by_catalog()
    if "offset_bytes" not in files.columns:
        files = files.with_columns(offset_bytes=pl.lit(None, pl.Int64))
    media = sorted(m for m in files["media_type"].drop_nulls().unique() if m in params_by_media)
    drives = pricing_drives(media, readers)

    unreadable, read, mounts = _as_placed(files, drives, params_by_media, readers)
    per_tape = mounts.group_by("dataset", "volume").agg(
        pl.col("media_type").first(),
        pl.col("total_s").sum().alias("drive_s"),
        pl.col("bytes").sum(),
    )
    files_there = read.group_by("dataset", "volume").agg(
        pl.col("fid").n_unique().alias("readable_files")
    )
    ideal = (
        pl.concat(
            [
                _drive_time(_timed(packed_where_today(read, params_by_media), params_by_media)[1]),
                _drive_time(
                    _timed(adjacent_on_own_tapes(read, where_today=True), params_by_media)[1]
                ),
            ]
        )
        .group_by("dataset")
        .agg(
            pl.col("drive_s").min().alias("ideal_drive_s"),
            pl.col("tapes").sort_by("drive_s").first().alias("ideal_tapes"),
        )
    )
    key = "file_id" if "file_id" in files.columns else "position"
    first = [pl.col("dataset_type").first()] if "dataset_type" in files.columns else []
    counts = files.group_by("dataset").agg(
        *first,
        pl.len().alias("copies"),
        pl.col(key).n_unique().alias("live_files"),
    )
    readable = read.group_by("dataset").agg(
        pl.col("fid").n_unique().alias("readable_files"),
        pl.col("size_bytes").sum().alias("bytes"),
    )
    datasets = (
        counts.join(readable, on="dataset", how="left")
        .join(_drive_time(mounts), on="dataset", how="left")
        .join(unreadable, on="dataset", how="left")
        .join(ideal, on="dataset", how="left")
        .with_columns(
            pl.col("readable_files", "tapes", "ideal_tapes", "unreadable_tapes")
            .fill_null(0)
            .cast(pl.UInt32),
            pl.col("bytes").fill_null(0).cast(pl.Int64),
            pl.col("drive_s", "ideal_drive_s").fill_null(0.0),
        )
        .with_columns(
            # Never negative, never more than the drive time spent (an ideal layout that
            # happens to cost more than today's is no saving), and none under a billionth of
            # the drive time: two equal times summed in different orders (a batch or an
            # executor's group of datasets, not the whole catalog) differ in their last bits.
            pl.when(
                pl.col("drive_s") - pl.col("ideal_drive_s") <= SAME_TIME_SHARE * pl.col("drive_s")
            )
            .then(0.0)
            .otherwise(pl.col("drive_s") - pl.col("ideal_drive_s"))
            .clip(0.0, pl.col("drive_s"))
            .alias("placement_cost_s"),
        )
        .sort("placement_cost_s", "dataset", descending=[True, False])
    )
    if "dataset_type" not in datasets.columns:
        datasets = datasets.with_columns(pl.lit(None, pl.String).alias("dataset_type"))
    # Each tape's cost: its drive time less its share (by bytes read) of the drive time the
    # dataset would take ideally placed, so that the tapes' costs add up to the dataset's.
    share = pl.col("bytes") / pl.col("bytes").sum().over("dataset")
    tapes = (
        per_tape.join(
            datasets.select("dataset", "drive_s", "placement_cost_s").rename(
                {"drive_s": "_dataset_s", "placement_cost_s": "_cost_s"}
            ),
            on="dataset",
        )
        .join(files_there, on=["dataset", "volume"], how="left")
        .with_columns(
            (
                pl.col("drive_s") - (pl.col("_dataset_s") - pl.col("_cost_s")) * share.fill_nan(0.0)
            ).alias("placement_cost_s"),
            pl.col("readable_files").fill_null(0),
        )
        .sort("dataset", "volume")
    )
    return PlacementCosts(datasets.select(DATASET_COLUMNS), tapes.select(TAPE_COLUMNS))


def _as_placed(
    files: pl.DataFrame,
    drives: Mapping[str, int],
    params_by_media: Mapping[str, ModelParams],
    readers: Mapping[str, tuple[str, ...]],
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """The datasets recalled as placed: per dataset its unreadable tapes (a media type no drive
    reads, or a state that cannot be recalled now), the copies read and the mounts (dataset,
    volume, media_type, bytes, total_s). A dataset with a choice of copies goes through the
    engine's copy choice (the least drive time); the others' copies are all read, each tape
    timed by the engine's schedule at once for every dataset."""
    ready, unreadable = readable_split(files, drives, readers)
    key = "file_id" if "file_id" in files.columns else "position"
    choosing = (
        ready.group_by("dataset")
        .agg((pl.col(key).n_unique() < pl.len()).alias("_choice"))
        .filter("_choice")
        .select("dataset")
    )
    reads, mounts = [], []
    several = ready.join(choosing, on="dataset", how="semi")
    if several.height:
        read, mounted = _least_drive_time(several, params_by_media)
        reads.append(read)
        mounts.append(mounted)
    one = ready.join(choosing, on="dataset", how="anti")
    if one.height:
        read, mounted = _timed(one, params_by_media)
        reads.append(read)
        mounts.append(mounted)
    if not reads:
        read, mounted = _timed(ready, params_by_media)
        reads.append(read)
        mounts.append(mounted)
    return (
        unreadable,
        pl.concat(reads, how="diagonal_relaxed"),
        pl.concat(mounts, how="vertical_relaxed"),
    )


_MOUNT_COLUMNS = ("dataset", "volume", "media_type", "bytes", "total_s")


def _least_drive_time(
    files: pl.DataFrame, params_by_media: Mapping[str, ModelParams]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Datasets with a choice of copies, each recalled alone as the engine recalls it for the
    least drive time (engine.recall with own drives, objective drive-time): per dataset the
    cheapest copies (copy_choice) or the newest (the baseline), whichever takes less drive time,
    the cheapest where both take the same. Drive time is the sum of the dataset's mounts, each
    timed alone (schedule.timed_tapes), so it does not depend on how its tapes share the drives:
    every dataset is timed at once rather than each through an engine run of its own, which
    cost a fifth of a second a dataset, hours at a site of 50,000. Returns the copies read and
    the mounts (_MOUNT_COLUMNS)."""
    copies, wanted = engine_inputs(files, group="dataset")
    costs = copy_costs(copies, params_by_media)
    opens = tape_costs(copies, params_by_media)
    # Each dataset's choice is its own problem (its files and tapes are its own: fid and vid
    # per dataset), solved as the engine solves it, so an exact choice stays exact.
    cheapest = pl.concat(
        [
            choose_copies(part, opens, file_col="fid", tape_col="vid").chosen
            for part in costs.partition_by("dataset", maintain_order=True)
        ]
    ).drop("cost_s")
    ways = [
        _time(chosen, copies, wanted, params_by_media)
        for chosen in (cheapest, newest_copies(copies))
    ]
    drive_s = [
        mounts.group_by("dataset").agg(pl.col("total_s").sum().round(6).alias(f"_s{i}"))
        for i, (_, mounts) in enumerate(ways)
    ]
    newest_wins = (
        drive_s[0].join(drive_s[1], on="dataset").filter(pl.col("_s1") < pl.col("_s0"))["dataset"]
    )
    newest = pl.col("dataset").is_in(newest_wins.implode())
    picks = (~newest, newest)
    kept = [(p.filter(pick), m.filter(pick)) for (p, m), pick in zip(ways, picks, strict=True)]
    read = pl.concat([parts for parts, _ in kept], how="diagonal_relaxed")
    return read, pl.concat([mounts for _, mounts in kept])


def _timed(
    files: pl.DataFrame, params_by_media: Mapping[str, ModelParams]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Every copy of `files` read (one copy a file), each dataset's tapes its own mounts, timed
    as the engine times a tape (schedule.timed_tapes: its forward pass in position order, the
    rewind and unload): the copies read and the mounts (_MOUNT_COLUMNS)."""
    copies, wanted = engine_inputs(files, group="dataset")
    return _time(copies, copies, wanted, params_by_media)


def _time(
    chosen: pl.DataFrame,
    copies: pl.DataFrame,
    wanted: pl.DataFrame,
    params_by_media: Mapping[str, ModelParams],
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """`chosen` (one copy a file of `copies`, as engine_inputs gives them) read, each tape
    timed alone: the reads and the mounts (_MOUNT_COLUMNS)."""
    parts = with_other_volumes(chosen, copies)
    _, tapes = timed_tapes(parts, wanted, params_by_media, detail=False)
    return parts, tapes.select(pl.col("group").alias("dataset"), *_MOUNT_COLUMNS[1:])


def packed_where_today(
    read: pl.DataFrame, params_by_media: Mapping[str, ModelParams]
) -> pl.DataFrame:
    """prediction.ideal_placement (the fewest tapes of the main media type, filled in order),
    its first tape's objects beginning where the dataset begins today on the tape holding most
    of its bytes (when the dataset fits there): the scatter closed, the dataset's place along
    the tape kept, so that packing is not credited with a locate every dataset but one pays."""
    packed = ideal_placement(read, params_by_media)
    by_tape = read.group_by("dataset", "volume").agg(
        pl.col("size_bytes").sum().alias("_bytes"),
        (pl.col("position").min() - 1).alias("_pos0"),
        (
            pl.col("start_bytes").min().fill_null(0)
            if "start_bytes" in read.columns
            else pl.lit(0, pl.Int64)
        ).alias("_at0"),
    )
    begins = by_tape.sort("dataset", "_bytes", "volume", descending=[False, True, False]).unique(
        "dataset", keep="first", maintain_order=True
    )
    capacity = {m: p.capacity_bytes for m, p in params_by_media.items()}
    total = packed.group_by("dataset").agg(pl.col("size_bytes").sum().alias("_total"))
    fits = (pl.col("volume") == "ideal-0") & (
        pl.col("_at0") + pl.col("_total")
        <= pl.col("media_type").replace_strict(capacity, default=None, return_dtype=pl.Int64)
    )
    return (
        packed.join(begins.select("dataset", "_pos0", "_at0"), on="dataset", how="left")
        .join(total, on="dataset", how="left")
        .with_columns(
            pl.when(fits)
            .then(pl.col("position") + pl.col("_pos0"))
            .otherwise(pl.col("position"))
            .alias("position"),
            pl.when(fits)
            .then(pl.col("start_bytes") + pl.col("_at0"))
            .otherwise(pl.col("start_bytes"))
            .alias("start_bytes"),
        )
        .drop("_pos0", "_at0", "_total")
    )


def _drive_time(mounts: pl.DataFrame) -> pl.DataFrame:
    """Per dataset: drive_s (mount to dismount, summed over its mounts) and tapes mounted."""
    return mounts.group_by("dataset").agg(
        pl.col("total_s").sum().alias("drive_s"), pl.col("volume").n_unique().alias("tapes")
    )


def with_placement_costs(
    predicted: pl.DataFrame,
    files: pl.DataFrame,
    params_by_media: Mapping[str, ModelParams],
    readable_by: Mapping[str, tuple[str, ...]] | None = None,
) -> pl.DataFrame:
    """`predict datasets`: a prediction.predict_datasets table of `files` (elapsed time now and
    ideally placed on its drives) with each dataset's placement cost beside it (drive_s,
    ideal_drive_s, placement_cost_s as placement_costs prices them), most costly first."""
    costs = placement_costs(files, params_by_media, readable_by).datasets
    joined = predicted.join(
        costs.select("dataset", "placement_cost_s", "drive_s", "ideal_drive_s"),
        on="dataset",
        how="left",
    ).sort("placement_cost_s", "dataset", descending=[True, False], nulls_last=True)
    return joined.select([c for c in PREDICTION_COLUMNS if c in joined.columns])
