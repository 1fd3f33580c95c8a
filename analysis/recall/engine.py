"""The recall engine: one place that decides and times a recall.

Given the candidate copies of the requested files, who asked for each file, the drives and a
policy, the engine

1. chooses one copy per file: the set of copies whose tapes cost least to open and read
   (copy_choice.py, exact when proven so), or the newest copy as tape clients do;
2. reads each tape in one forward pass in position order, aggregate members by offset, each
   aggregate once, every read timed by the throughput model from where it sits;
3. puts the tapes on drives that can read them under the sharing policy (dispatch.py);

and returns the schedule: per file, per mount, and per drive the events mount, position, read,
rewind and dismount with their predicted times. `plan recall`, `predict datasets` and the
planner's newest-copy baseline all run through `recall`, so the same recall is timed the same
way wherever it is asked about. Pure: frames and frozen options in, frames out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import polars as pl

from tapelens.analysis.recall.baselines import newest_copies
from tapelens.analysis.recall.copy_choice import EXACT_LIMIT, CopyChoice, choose_copies
from tapelens.analysis.recall.dispatch import Sharing
from tapelens.analysis.recall.schedule import Schedule, build_schedule
from tapelens.analysis.throughput.model import ModelParams, predict_reads

# How the engine picks among the copies of a file.
COPY_RULES = ("cheapest", "newest")


@dataclass(frozen=True)
class Policy:
    """Everything the engine is told besides the request: copy rule, sharing, solver limit."""

    sharing: Sharing = field(default_factory=Sharing)
    copies: str = "cheapest"  # cheapest: least predicted time; newest: as tape clients do
    exact_limit: int = EXACT_LIMIT

    def __post_init__(self) -> None:
        if self.copies not in COPY_RULES:
            raise ValueError(f"copy rule {self.copies!r} is not one of {COPY_RULES}")


@dataclass(frozen=True)
class Recall:
    """The engine's answer: the schedule, and how the copies were chosen (None: newest)."""

    schedule: Schedule
    choice: CopyChoice | None

    @property
    def makespan_s(self) -> float:
        return self.schedule.makespan_s

    @property
    def mounts(self) -> int:
        return self.schedule.mounts


def recall(
    copies: pl.DataFrame,
    wanted: pl.DataFrame,
    params_by_media: Mapping[str, ModelParams],
    drives: Mapping[str, int],
    readers: Mapping[str, tuple[str, ...]],
    policy: Policy,
) -> Recall:
    """Choose, order, place and time the recall of the files in `wanted`.

    `copies`: the candidate copies of the wanted files, one row per copy: fid (the file),
    vid (an integer code per tape), volume, media_type, position, offset_bytes, size_bytes,
    written_at, copy_no, and optionally aggregate_id, avg_object_bytes, start_bytes; other
    columns travel with the chosen copies. `wanted`: per fid, requester, group, rank and
    fifo_rank (requests.resolve gives both). `drives`: drive type -> count; `readers`: media type
    -> the drive types that read it.
    """
    if policy.copies == "newest":
        chosen, choice = newest_copies(copies), None
    else:
        choice = choose_copies(
            copy_costs(copies, params_by_media),
            tape_costs(copies, params_by_media),
            file_col="fid",
            tape_col="vid",
            exact_limit=policy.exact_limit,
        )
        chosen = choice.chosen.drop("cost_s")
    schedule = build_schedule(chosen, wanted, params_by_media, drives, policy.sharing, readers)
    return Recall(schedule, choice)


def copy_costs(copies: pl.DataFrame, params: Mapping[str, ModelParams]) -> pl.DataFrame:
    """Each copy's read cost once its tape is mounted: the model's time for a file read
    straight after its neighbour (overhead and streaming); oldest copy first among equals."""
    reads = copies.select("media_type", "size_bytes", pl.lit(1, pl.Int64).alias("gap"))
    cost = predict_reads(reads, params)["predicted_duration_s"]
    return copies.with_columns(cost.alias("cost_s")).sort(
        ["written_at", "copy_no"], nulls_last=True, maintain_order=True
    )


def tape_costs(copies: pl.DataFrame, params: Mapping[str, ModelParams]) -> pl.DataFrame:
    """What opening a tape costs: mount, an average first locate (to mid-tape), dismount."""
    tapes = copies.select("vid", "media_type").unique("vid")
    media = tapes["media_type"].unique().to_list()
    if not media:
        return tapes.select("vid", pl.lit(0.0).alias("open_s"))
    mid = pl.DataFrame(
        {
            "media_type": media,
            "gap": [None] * len(media),
            "size_bytes": [0] * len(media),
            "start_bytes": [params[m].capacity_bytes // 2 for m in media],
        },
        schema={
            "media_type": pl.String(),
            "gap": pl.Int64(),
            "size_bytes": pl.Int64(),
            "start_bytes": pl.Int64(),
        },
    )
    first = predict_reads(mid, params).select(
        "media_type",
        (
            pl.col("predicted_positioning_s")
            + pl.col("media_type").replace_strict(
                {m: params[m].mount_s + params[m].dismount_s for m in media},
                return_dtype=pl.Float64,
            )
        ).alias("open_s"),
    )
    return tapes.join(first, on="media_type").select("vid", "open_s")
