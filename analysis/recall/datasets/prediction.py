"""What today's placement costs a dataset recall: predicted time now and with ideal placement.

Now: the recall of the dataset's files as `plan recall` would make it, through the same engine
(engine.recall): the cheapest copies, each tape read in one pass, the tapes shared out on all the
given drives as if the dataset were recalled alone. Ideal: the faster of two layouts of the
chosen copies' objects, recalled the same way: adjacent (gap 1) from the start of the fewest
tapes of the dataset's main media type, filled to capacity ("packed"); or adjacent from the
start of each tape they are on now ("own tapes", which wins when several drives read today's
tapes side by side). The ratio is the slowdown; what the placement costs in drive time is
placement_cost.py's. Pure: frames and parameters in, one row per dataset out.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from tapelens.analysis.recall.engine import Policy, engine_inputs, readable_media, recall
from tapelens.analysis.recall.schedule.drives import readable_by_catalog
from tapelens.analysis.recall.schedule.policies import Sharing
from tapelens.analysis.throughput.model import MB, ModelParams
from tapelens.tape_states import NOT_RECALLABLE

KEY = ["dataset", "volume"]


def choose_copies(files: pl.DataFrame) -> pl.DataFrame:
    """One copy per (dataset, file_id): on the volume holding most of the dataset's copies,
    then the oldest, then the lowest copy number, then the first volume by name.

    The copy a planner would read to keep the dataset on few tapes, for per-dataset
    predictions, not the copy a tape client recalls (that is baselines.newest_copies)."""
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


# What matters first: a table printed to a terminal keeps its first columns.
PREDICTION_COLUMNS = (
    "dataset",
    "live_files",
    "readable_files",
    "now_s",
    "ideal_s",
    "placement_cost_s",
    "slowdown",
    "drive_s",
    "ideal_drive_s",
    "bytes",
    "now_tapes",
    "ideal_tapes",
    "ideal_layout",
    "now_rate_mb_s",
    "ideal_rate_mb_s",
    "media_type",
    "dataset_type",
    "now_unreadable_tapes",
    "ideal_unreadable_tapes",
)


def adjacent_on_own_tapes(files: pl.DataFrame, where_today: bool = False) -> pl.DataFrame:
    """The files of each dataset left on the tapes they are on, each tape's share packed
    adjacently from its start (same objects, same order, gap 1): today's tapes without the
    gaps. With several drives this can beat packing onto the fewest tapes, which reads one
    tape where today's placement reads several at once. With `where_today`, each tape's share
    begins where its first object begins today (start_bytes, position) rather than at the
    start of the tape: the gaps closed, nothing moved along the tape."""
    size = pl.col("size_bytes")
    tape = ["dataset", "volume"]
    if where_today:
        laid = adjacent_on_own_tapes(files)
        first = files.group_by(tape).agg(
            (pl.col("position").min() - 1).alias("_pos0"),
            pl.col("start_bytes").min().fill_null(0).alias("_at0")
            if "start_bytes" in files.columns
            else pl.lit(0, pl.Int64).alias("_at0"),
        )
        return (
            laid.join(first, on=tape, how="left")
            .with_columns(
                (pl.col("position") + pl.col("_pos0")).alias("position"),
                (pl.col("start_bytes") + pl.col("_at0")).alias("start_bytes"),
            )
            .drop("_pos0", "_at0")
        )
    new_object = pl.col("position").ne_missing(pl.col("position").shift(1)).over(tape) | (
        pl.int_range(pl.len()).over(tape) == 0
    )
    before = (size.cum_sum() - size).over(tape)
    return (
        files.sort("dataset", "volume", "position", "offset_bytes", nulls_last=False)
        .with_columns(new_object.alias("_new"), before.alias("_before"))
        .with_columns(
            pl.col("_new").cum_sum().over(tape).alias("_pos"),
            pl.when("_new").then(pl.col("_before")).forward_fill().over(tape).alias("_obj_at"),
        )
        .select(
            "dataset",
            "volume",
            "media_type",
            pl.col("_pos").cast(pl.Int64).alias("position"),
            (pl.col("_before") - pl.col("_obj_at")).alias("offset_bytes"),
            "size_bytes",
            pl.col("_before").alias("start_bytes"),
        )
    )


def recall_per_dataset(
    files: pl.DataFrame,
    drives: Mapping[str, int],
    params_by_media: Mapping[str, ModelParams],
    readable_by: Mapping[str, tuple[str, ...]] | None,
    prefix: str,
    sharing: Sharing | None = None,
    order: str = "position",
) -> pl.DataFrame:
    """Per dataset, its files recalled alone on all the given drives by the recall engine:
    {prefix}_tapes, {prefix}_unreadable_tapes (tapes of a media type no given drive reads, or
    in a state that cannot be recalled now),
    {prefix}_s and {prefix}_rate_mb_s. `files` may hold several copies of a file (file_id):
    the engine picks among them as `plan recall` does."""
    recalled, _, _ = recall_datasets(files, drives, params_by_media, readable_by, sharing, order)
    return _prefixed(recalled, prefix)


def _prefixed(frame: pl.DataFrame, prefix: str) -> pl.DataFrame:
    return frame.rename({c: f"{prefix}_{c}" for c in frame.columns if c != "dataset"})


def readable_split(
    files: pl.DataFrame, drives: Mapping[str, int], readers: Mapping[str, tuple[str, ...]]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The copies `drives` can recall now, and per dataset the tapes of the others (unreadable
    _tapes: a media type no given drive reads, or a state that cannot be recalled now)."""
    can = pl.col("media_type").is_in(readable_media(drives, readers))
    if "tape_state" in files.columns:  # as requests.resolve refuses them for a plan
        can = can & ~pl.col("tape_state").is_in(list(NOT_RECALLABLE))
    unreadable = (
        files.filter(~can)
        .group_by("dataset")
        .agg(pl.col("volume").n_unique().alias("unreadable_tapes"))
    )
    return files.filter(can), unreadable


def recall_datasets(
    files: pl.DataFrame,
    drives: Mapping[str, int],
    params_by_media: Mapping[str, ModelParams],
    readable_by: Mapping[str, tuple[str, ...]] | None,
    sharing: Sharing | None,
    order: str = "position",
    objective: str = "makespan",
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Each dataset of `files` recalled alone on its own copy of `drives` by the recall engine.

    Returns per dataset tapes, unreadable_tapes, s (elapsed) and rate_mb_s; the copies the
    engine read (group is the dataset); and its mounts (group, volume, bytes, total_s: mount to
    dismount). Copies on tapes no given drive reads, or in a state that cannot be recalled now,
    are left out and counted in unreadable_tapes."""
    readers = dict(readable_by) if readable_by is not None else readable_by_catalog()
    counts = {d: n for d, n in drives.items() if n > 0}
    ready, unreadable = readable_split(files, counts, readers)
    copies, wanted = engine_inputs(ready, group="dataset")
    policy = Policy(sharing or Sharing(), order=order, objective=objective)
    done = recall(copies, wanted, params_by_media, counts, readers, policy, own_drives=True)
    read = done.schedule.files
    per_dataset = (
        done.schedule.tapes.group_by("group")
        .agg(
            pl.len().alias("tapes"),
            pl.col("end_s").max().alias("s"),
            pl.col("bytes").sum().alias("_bytes"),
        )
        .rename({"group": "dataset"})
        .with_columns((pl.col("_bytes") / MB / pl.col("s")).alias("rate_mb_s"))
        .drop("_bytes")
    )
    datasets = files.select("dataset").unique()
    out = (
        datasets.join(per_dataset, on="dataset", how="left")
        .join(unreadable, on="dataset", how="left")
        .with_columns(
            pl.col("tapes").fill_null(0).cast(pl.UInt32),
            pl.col("unreadable_tapes").fill_null(0).cast(pl.UInt32),
        )
        .select("dataset", "tapes", "unreadable_tapes", "s", "rate_mb_s")
    )
    return out, read, done.schedule.tapes.rename({"group": "dataset"})


def predict_datasets(
    files: pl.DataFrame,
    drives: Mapping[str, int],
    params_by_media: Mapping[str, ModelParams],
    readable_by: Mapping[str, tuple[str, ...]] | None = None,
    sharing: Sharing | None = None,
    order: str = "position",
) -> pl.DataFrame:
    """Per dataset: live and readable files, bytes, tapes; predicted recall time (elapsed) and
    rate now and with ideal placement, and the slowdown (now / ideal). The placement cost in
    drive time joins these in placement_cost.with_placement_costs.

    `files`: the datasets' live copies: dataset, volume, media_type, position, size_bytes, and
    optionally file_id, path, offset_bytes, aggregate_id, start_bytes, avg_object_bytes,
    written_at, copy_no, dataset_type. Each dataset is predicted as `plan recall` of its files
    would plan it alone on all the given drives, each tape read in `order` (read_order.ORDERS).
    """
    if "offset_bytes" not in files.columns:
        files = files.with_columns(offset_bytes=pl.lit(None, pl.Int64))
    now, read, _ = recall_datasets(files, drives, params_by_media, readable_by, sharing, order)
    first = [pl.col("dataset_type").first()] if "dataset_type" in files.columns else []
    types = files.group_by("dataset").agg(*first)
    key = "file_id" if "file_id" in files.columns else "position"
    summary = types.join(
        files.group_by("dataset").agg(pl.col(key).n_unique().alias("live_files")), on="dataset"
    ).join(
        read.group_by("group")
        .agg(
            pl.col("fid").n_unique().alias("readable_files"),
            pl.col("size_bytes").sum().alias("bytes"),
            pl.col("media_type").mode().sort().first().alias("media_type"),
        )
        .rename({"group": "dataset"}),
        on="dataset",
        how="left",
    )
    packed, _, _ = recall_datasets(
        ideal_placement(read, params_by_media), drives, params_by_media, readable_by, sharing, order
    )
    own, _, _ = recall_datasets(
        adjacent_on_own_tapes(read), drives, params_by_media, readable_by, sharing, order
    )
    # The ideal is the faster of the two layouts, so that no dataset's placement shows a
    # negative cost merely because packing it onto fewer tapes serialises its reads.
    ideal = (
        pl.concat(
            [
                packed.with_columns(layout=pl.lit("packed")),
                own.with_columns(layout=pl.lit("own tapes")),
            ]
        )
        .sort("dataset", pl.col("s").fill_null(float("inf")), "layout")
        .unique("dataset", keep="first", maintain_order=True)
    )
    predicted = (
        summary.join(_prefixed(now, "now"), on="dataset", how="left")
        .join(_prefixed(ideal, "ideal"), on="dataset", how="left")
        .with_columns(
            (pl.col("now_s") / pl.col("ideal_s")).alias("slowdown"),
            pl.col("readable_files").fill_null(0),
        )
        .sort("dataset")
    )
    return predicted.select([c for c in PREDICTION_COLUMNS if c in predicted.columns])
