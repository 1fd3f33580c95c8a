"""What a repack changes, as placements: the copies recalls read now and after, and what moves.

Each candidate becomes four frames keyed by `cand` (the candidate's name) and `dataset`:
- now: the copies a recall of each affected dataset reads today;
- after: the copies it would read once the repack is done;
- read: the copies the repack reads (the data that moves, plus checksum verifications);
- write: where the repack writes them.
Every frame has the columns the throughput model reads (volume, media_type, position,
size_bytes, offset_bytes, aggregate_id, start_bytes). Pure: frames in, frames out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import polars as pl

from tapelens.analysis.recall.baselines import newest as baselines
from tapelens.analysis.recall.datasets.prediction import choose_copies, ideal_placement
from tapelens.analysis.throughput.model import ModelParams

PLACEMENT = [
    "dataset",
    "volume",
    "media_type",
    "position",
    "size_bytes",
    "offset_bytes",
    "aggregate_id",
    "start_bytes",
]


@dataclass(frozen=True)
class Scenario:
    now: pl.DataFrame
    after: pl.DataFrame
    read: pl.DataFrame
    write: pl.DataFrame

    @staticmethod
    def concat(scenarios: list[Scenario]) -> Scenario:
        def cat(frames: list[pl.DataFrame]) -> pl.DataFrame:
            return pl.concat(frames, how="vertical_relaxed") if frames else _empty()

        return Scenario(
            cat([s.now for s in scenarios]),
            cat([s.after for s in scenarios]),
            cat([s.read for s in scenarios]),
            cat([s.write for s in scenarios]),
        )


def _empty() -> pl.DataFrame:
    return pl.DataFrame(
        schema={
            "cand": pl.String,
            "dataset": pl.String,
            "volume": pl.String,
            "media_type": pl.String,
            "position": pl.Int64,
            "size_bytes": pl.Int64,
            "offset_bytes": pl.Int64,
            "aggregate_id": pl.String,
            "start_bytes": pl.Int64,
        }
    )


def _tag(frame: pl.DataFrame, cand: str) -> pl.DataFrame:
    if "aggregate_id" not in frame.columns:
        # Placements written by a repack: members of one tape object share its position.
        member = pl.col("offset_bytes").is_not_null()
        aggregate = pl.format("{}:{}", pl.col("volume"), pl.col("position"))
        frame = frame.with_columns(pl.when(member).then(aggregate).alias("aggregate_id"))
    return frame.select(pl.lit(cand).alias("cand"), *PLACEMENT)


def _renamed(frame: pl.DataFrame, cand: str) -> pl.DataFrame:
    """Volumes a repack writes are new cartridges: name them after the candidate so that two
    candidates' new tapes never count as one mount."""
    return frame.with_columns(pl.format("{}/{}", pl.lit(cand), pl.col("volume")).alias("volume"))


def newest_copies(files: pl.DataFrame) -> pl.DataFrame:
    """One copy per (dataset, file_id): the newest, what tape clients recall (docs/domain.md)."""
    return baselines.newest_copies(files, key=["dataset", "file_id"])


def collocated(cand: str, files: pl.DataFrame, params: Mapping[str, ModelParams]) -> Scenario:
    """A dataset rewritten in position order onto the fewest tapes of its main media type."""
    chosen = choose_copies(files)
    after = _renamed(ideal_placement(chosen, params), cand)
    return Scenario(_tag(chosen, cand), _tag(after, cand), _tag(chosen, cand), _tag(after, cand))


def containerised(
    cand: str,
    files: pl.DataFrame,
    params: Mapping[str, ModelParams],
    small_file_bytes: int,
    container_bytes: int,
) -> Scenario:
    """A dataset rewritten collocated, its small files not yet in an aggregate packed into
    containers of up to container_bytes, each read as one tape object."""
    chosen = choose_copies(files)
    packed = containers(chosen, small_file_bytes, container_bytes)
    after = _renamed(ideal_placement(packed, params), cand)
    return Scenario(_tag(chosen, cand), _tag(after, cand), _tag(chosen, cand), _tag(after, cand))


def containers(files: pl.DataFrame, small_file_bytes: int, container_bytes: int) -> pl.DataFrame:
    """Small files outside aggregates, in directory order, grouped into containers: each
    container becomes one tape object (shared volume/position, offsets inside it)."""
    order = ["dataset", "volume", "position", "offset_bytes"]
    files = files.sort(order, nulls_last=False)
    small = (pl.col("size_bytes") < small_file_bytes) & pl.col("aggregate_id").is_null()
    loose = files.filter(small)
    rest = files.filter(~small)
    if loose.height == 0:
        return files
    size = pl.col("size_bytes")
    # A file goes to the container its last byte falls in: containers stay near their size.
    end_in_dataset = size.cum_sum().over("dataset") - 1
    boxed = loose.with_columns((end_in_dataset // container_bytes).alias("_box")).with_columns(
        (size.cum_sum().over("dataset", "_box") - size).alias("offset_bytes"),
        pl.format("container-{}", pl.col("_box")).alias("volume"),
        pl.col("_box").alias("position"),
        pl.format("{}#container-{}", pl.col("dataset"), pl.col("_box")).alias("aggregate_id"),
    )
    # Containers sort after the dataset's other objects: they are written as the files are.
    return pl.concat([rest, boxed.drop("_box")], how="vertical_relaxed")


def compacted(volume_copies: pl.DataFrame, new_volume: str) -> pl.DataFrame:
    """A tape's live copies rewritten onto a new tape in the same order, without dead space."""
    objects = (
        volume_copies.group_by("position")
        .agg(
            (pl.col("offset_bytes").fill_null(0) + pl.col("size_bytes")).max().alias("_obj"),
        )
        .sort("position")
        .with_columns(
            (pl.col("_obj").cum_sum() - pl.col("_obj")).alias("_obj_start"),
            pl.int_range(1, pl.len() + 1, dtype=pl.Int64).alias("_new_pos"),
        )
    )
    return (
        volume_copies.join(objects, on="position", how="left")
        .with_columns(
            pl.lit(new_volume).alias("volume"),
            pl.col("_new_pos").alias("position"),
            (pl.col("_obj_start") + pl.col("offset_bytes").fill_null(0)).alias("start_bytes"),
        )
        .drop("_obj", "_obj_start", "_new_pos")
    )


def tape_emptied(cand: str, volume: str, files: pl.DataFrame) -> Scenario:
    """A low-occupancy tape repacked: its live copies move, compacted, to a new tape.

    `files`: live copies of the datasets on the tape (every copy). The affected datasets are
    recalled as the planner would (choose_copies) before and after the move.
    """
    on_tape = files.filter(pl.col("volume") == volume)
    moved = compacted(on_tape, f"{cand}/new")
    after_files = pl.concat([files.filter(pl.col("volume") != volume), moved], how="diagonal")
    return Scenario(
        _tag(choose_copies(files), cand),
        _tag(choose_copies(after_files), cand),
        _tag(on_tape, cand),
        _tag(moved, cand),
    )


def strays_retired(cand: str, volume: str, files: pl.DataFrame, plan: pl.DataFrame) -> Scenario:
    """A tape holding stray duplicate copies: those copies retired once the kept copies'
    checksums are verified; nothing moves.

    Only the stray copies (off their datasets' tapes, dedup's `stray`) are retired: a
    duplicate that sits with its dataset costs a recall little, and retiring it can send the
    recall to an older copy no better placed (plan dedup lists those too). The rest of the
    tape stays; freeing the cartridge is the low-occupancy kind's business.

    `files`: every live copy of the datasets with a copy on the tape; `plan`: dedup's
    classification of them (file_id, volume, position, action, stray). Recalls are timed as
    tape clients run them, on each file's newest copy, before and after.
    """
    retire = plan.filter(
        (pl.col("action") == "retire") & (pl.col("volume") == volume) & pl.col("stray")
    )
    retired_files = retire.select("file_id").unique()
    kept = plan.filter(pl.col("action") == "keep").join(retired_files, on="file_id", how="semi")
    keys = ["file_id", "volume", "position"]
    after_files = files.join(retire.select(keys), on=keys, how="anti")
    verify = files.join(kept.select(keys), on=keys, how="semi")
    affected = retire.select("dataset").unique()
    return Scenario(
        _tag(newest_copies(files.join(affected, on="dataset", how="semi")), cand),
        _tag(newest_copies(after_files.join(affected, on="dataset", how="semi")), cand),
        _tag(verify, cand),
        _tag(verify.clear(), cand),
    )
