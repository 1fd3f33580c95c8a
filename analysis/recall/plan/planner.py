"""A recall plan: the engine's schedule of a request list, with its baselines and bounds.

Requests are resolved against the live copies (analysis.recall.requests); the engine
(analysis.recall.engine, `recall`) chooses the copies, orders each tape's reads and puts the tapes
on drives. In the same run the plan is compared with what the usual ways would cost: direct FIFO
submission of the newest copies (analysis.recall.baselines.direct), and newest-copy selection
with the plan's own ordering (analysis.recall.baselines.newest); and with the bounds no schedule
can beat. Everything here is pure: frames and frozen options in, frames and a summary out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import polars as pl

from tapelens.analysis.recall.baselines.direct import DirectSubmission, serve_direct
from tapelens.analysis.recall.baselines.newest import (
    BaselineResult,
    newest_copies,
)
from tapelens.analysis.recall.copies.copy_choice import EXACT_LIMIT, CopyChoice
from tapelens.analysis.recall.engine import (
    Policy,
    Recall,
    candidate_bounds,
    readable_media,
    recall,
    with_other_volumes,
)
from tapelens.analysis.recall.requests.resolve import Resolution, resolve
from tapelens.analysis.recall.schedule.dispatch import fractional_split, readers_of
from tapelens.analysis.recall.schedule.drives import readable_by_catalog
from tapelens.analysis.recall.schedule.policies import Sharing
from tapelens.analysis.recall.schedule.read_order import POSITION_BY_GEOMETRY
from tapelens.analysis.recall.schedule.schedule import Schedule, build_schedule, with_copy_columns
from tapelens.analysis.throughput.model import MB, ModelParams


@dataclass(frozen=True)
class PlanOptions:
    """Drives (type -> count, as drives.parse_drives gives), how they are shared, and what the
    engine weighs first when files have a choice of copies (engine.OBJECTIVES)."""

    drives: tuple[tuple[str, int], ...]
    sharing: Sharing = field(default_factory=Sharing)
    exact_limit: int = EXACT_LIMIT
    baselines: bool = True
    objective: str = "makespan"
    order: str = "position"  # the reads on a tape (read_order.ORDERS)
    # How the FIFO baseline's tape system serves direct submission (baselines/direct.py).
    direct: DirectSubmission = field(default_factory=DirectSubmission)

    @property
    def drive_counts(self) -> dict[str, int]:
        return {d: n for d, n in self.drives if n > 0}

    def as_dict(self) -> dict[str, Any]:
        return {"drives": self.drive_counts, **self.sharing.as_dict()}


@dataclass(frozen=True)
class RecallPlan:
    schedule: Schedule
    resolution: Resolution
    copy_choice: CopyChoice
    requesters: pl.DataFrame  # requester, files, bytes, completion_s
    lower_bound: dict[str, float]  # over every choice of copies (engine.candidate_bounds)
    schedule_bound: dict[str, float]  # over every ordering of this plan's mounts
    baselines: dict[str, BaselineResult]
    summary: dict[str, Any]
    options: PlanOptions

    @property
    def files(self) -> pl.DataFrame:
        return self.schedule.files

    @property
    def not_found(self) -> pl.DataFrame:
        return self.resolution.not_found

    @property
    def unavailable(self) -> pl.DataFrame:
        return self.resolution.unavailable


def plan_recall(
    requests: pl.DataFrame,
    catalog: pl.DataFrame,
    params_by_media: Mapping[str, ModelParams],
    options: PlanOptions,
    readable_by: Mapping[str, tuple[str, ...]] | None = None,
    progress: Callable[[str], None] | None = None,
) -> RecallPlan:
    """Plan the recall of `requests` (analysis.recall.requests frame) from `catalog` (live copies
    with their tape's media_type and tape_state; an avg_object_bytes column per copy's volume is
    used when present, else estimated from the catalog). `progress` hears each step as it ends."""
    say = progress or (lambda _: None)
    readers = dict(readable_by) if readable_by is not None else readable_by_catalog()
    drives = options.drive_counts
    readable = set(readable_media(drives, readers)) & set(params_by_media)
    resolution = resolve(requests, catalog, readable)
    copies = _with_object_size(resolution.copies, catalog).with_columns(
        pl.col("volume").rank("dense").cast(pl.Int64).alias("vid")
    )
    say(f"{resolution.wanted.height:,} files to read, {copies.height:,} copies to choose from")
    policy = Policy(
        options.sharing, "cheapest", options.exact_limit, options.objective, options.order
    )
    # The engine weighs where copies sit; their names (a million paths) join the plan after.
    names = [c for c in copies.columns if c in _NAMES]
    sits = copies.select(pl.exclude(names)).with_row_index("copy_row")
    planned = recall(sits, resolution.wanted, params_by_media, drives, readers, policy)
    planned = replace(
        planned, schedule=with_copy_columns(planned.schedule, copies.select(names), "copy_row")
    )
    schedule, choice = planned.schedule, planned.choice
    say(f"planned {schedule.tapes.height:,} mounts")
    assert choice is not None  # the cheapest-copy rule always reports its choice
    assert planned.newest is not None  # the cheapest-copy rule schedules the newest too
    newest_result = BaselineResult.of(planned.newest)
    # Only its figures are kept: the schedule of a million files is let go before the replay.
    planned = replace(planned, newest=None)
    wanted = resolution.wanted
    baselines: dict[str, BaselineResult] = {}
    if options.baselines:
        # Every cartridge a copy needs is asked for, right after its first (as the plan does).
        # The replay reads where each copy sits, not what it is called: the names stay behind.
        sits = sits.drop("copy_row")
        newest = with_other_volumes(newest_copies(sits), sits)
        submitted = newest.join(wanted.select("fid", "fifo_rank"), on="fid").sort(
            "fifo_rank", pl.col("part").fill_null(1) if "part" in newest.columns else "fid"
        )
        # Under RAO the plan's moves are priced by tape geometry; so are the baseline's.
        served_as = options.direct
        if options.order == "rao":
            served_as = replace(served_as, locates="geometry")
        direct = serve_direct(submitted, drives, params_by_media, readers, served_as)
        baselines["fifo"] = direct.baseline()
        say("replayed direct submission (the FIFO baseline)")
        baselines["newest_copy"] = newest_result
        if options.order == "rao":
            # The same copies on the same drives, each tape read in position order with its
            # moves priced by the same geometry: what RAO itself gains.
            by_position = build_schedule(
                schedule.files,
                wanted,
                params_by_media,
                drives,
                options.sharing,
                readers,
                lean=True,
                order=POSITION_BY_GEOMETRY,
            )
            baselines["position_order"] = BaselineResult.of(by_position)
    requesters = requester_completion(resolution.demand, schedule.files)
    limit = options.sharing.max_drives_per_group
    # A drive that reads none of the copies' media cannot share the work: counted, it would
    # shrink the bounds below what any plan on the drives that read them can reach.
    reading = reading_drives(copies, drives, readers)
    bound = candidate_bounds(copies, resolution.wanted, params_by_media, reading, limit)
    mounts_bound = schedule_bound(schedule.tapes, reading, readers, limit)
    summary = summarise(
        planned,
        resolution,
        choice,
        requesters,
        (bound, mounts_bound),
        baselines,
        options,
        requests.height,
    )
    return RecallPlan(
        schedule,
        resolution,
        choice,
        requesters,
        bound,
        mounts_bound,
        baselines,
        summary,
        options,
    )


# Columns of a copy that name it; what times a read is elsewhere.
_NAMES = ("file_id", "path", "dataset", "aggregate_id", "tape_state", "kind")


def _with_object_size(copies: pl.DataFrame, catalog: pl.DataFrame) -> pl.DataFrame:
    """Average tape-object size per volume: skipped bytes between files are estimated from it."""
    if "avg_object_bytes" in copies.columns:
        return copies
    sizes = catalog.group_by("volume").agg(
        (
            pl.col("size_bytes").sum().cast(pl.Float64)
            / pl.col("position").n_unique().cast(pl.Float64)
        ).alias("avg_object_bytes")
    )
    return copies.join(sizes, on="volume", how="left")


def reading_drives(
    copies: pl.DataFrame, drives: Mapping[str, int], readable_by: Mapping[str, tuple[str, ...]]
) -> dict[str, int]:
    """The given drives that read at least one media type of `copies` (all of them when none
    does, so that a bound still has drives to divide by)."""
    media = copies["media_type"].unique().to_list() if copies.height else []
    types = {d for m in media for d in readable_by.get(m, ())}
    reading = {d: n for d, n in drives.items() if n > 0 and d in types}
    return reading or dict(drives)


def requester_completion(demand: pl.DataFrame, files: pl.DataFrame) -> pl.DataFrame:
    """Per requester: files and bytes asked for and read, and when the last of them is read."""
    asked = demand.select("requester", "fid")
    if asked["fid"].n_unique() < asked.height:  # a file asked for more than once
        asked = asked.unique()
    return (
        asked.join(files.select("fid", "size_bytes", "end_s"), on="fid")
        .group_by("requester")
        .agg(
            pl.len().alias("files"),
            pl.col("size_bytes").sum().alias("bytes"),
            pl.col("end_s").max().alias("completion_s"),
        )
        .sort("requester")
    )


def schedule_bound(
    tapes: pl.DataFrame,
    drives: Mapping[str, int],
    readable_by: Mapping[str, tuple[str, ...]],
    max_drives_per_group: int | None = None,
) -> dict[str, float]:
    """No ordering of these mounts (this plan's tapes, each read as planned) on these drives
    can finish sooner than any of these (seconds). A bound on the dispatch, not on the choice
    of copies: candidate_bounds bounds every plan of the request."""
    if tapes.height == 0:
        return {"lower_bound_s": 0.0}
    n_drives = sum(drives.values())
    work = dict(tapes.group_by("media_type").agg(pl.col("total_s").sum()).iter_rows())
    readers = readers_of(sorted(work), drives, readable_by)
    split_s, _ = fractional_split(work, drives, readers)
    total_s, longest_s = tapes.select(
        pl.col("total_s").sum().alias("sum"), pl.col("total_s").max().alias("max")
    ).row(0)
    parts = {
        "work_over_drives_s": float(total_s) / n_drives,
        "longest_tape_s": float(longest_s),
        "drive_compatibility_s": split_s,
    }
    if max_drives_per_group is not None:
        per_group = tapes.group_by("group").agg(pl.col("total_s").sum()).select(pl.max("total_s"))
        parts["group_limit_s"] = float(per_group.item()) / min(max_drives_per_group, n_drives)
    parts["lower_bound_s"] = max(parts.values())
    return parts


def summarise(
    planned: Recall,
    resolution: Resolution,
    choice: CopyChoice,
    requesters: pl.DataFrame,
    bounds: tuple[dict[str, float], dict[str, float]],
    baselines: dict[str, BaselineResult],
    options: PlanOptions,
    n_requests: int,
) -> dict[str, Any]:
    """The plan in figures: the summary JSON."""
    schedule = planned.schedule
    bound, mounts_bound = bounds
    files = schedule.files
    makespan = schedule.makespan_s
    total_bytes = int(files["size_bytes"].sum()) if files.height else 0
    lb = bound["lower_bound_s"]
    unavailable = resolution.unavailable
    by_reason = dict(unavailable.group_by("reason").agg(pl.len()).sort("reason").iter_rows())
    use = schedule.tapes.group_by("drive").agg(pl.len(), pl.col("total_s").sum()).sort("drive")
    schedule_lb = mounts_bound["lower_bound_s"]
    return {
        "requests": n_requests,
        "files": files.height,
        "bytes": total_bytes,
        "tapes": schedule.tapes["volume"].n_unique() if schedule.tapes.height else 0,
        "mounts": schedule.mounts,
        "makespan_s": round(makespan, 3),
        "rate_mb_s": round(total_bytes / MB / makespan, 3) if makespan > 0 else 0.0,
        "lower_bound_s": round(lb, 3),
        "makespan_over_lower_bound": round(makespan / lb, 6) if lb > 0 else 1.0,
        "lower_bound": {k: round(v, 3) for k, v in bound.items() if k != "lower_bound_s"},
        "schedule_bound_s": round(schedule_lb, 3),
        "schedule_bound": {k: round(v, 3) for k, v in mounts_bound.items() if k != "lower_bound_s"},
        # The part that decides each bound, and how far the plan is from this plan's own.
        "lower_bound_by": deciding(bound),
        "schedule_bound_by": deciding(mounts_bound),
        "makespan_over_schedule_bound": (
            round(makespan / schedule_lb, 6) if schedule_lb > 0 else 1.0
        ),
        # Drive time: mount to dismount, summed over every mount on every drive (drive_use).
        "drive_time_s": round(float(schedule.tapes["total_s"].sum()), 3)
        if schedule.tapes.height
        else 0.0,
        "copy_set": planned.copy_set,
        "objective": options.objective,
        "read_order": options.order,
        **options.as_dict(),
        "copy_choice": choice.as_dict(),
        "not_found": [
            {"line": line, "kind": kind, "key": key}
            for line, kind, key in resolution.not_found.select("line_no", "kind", "key").iter_rows()
        ],
        "unavailable": {
            "files": unavailable.height,
            "bytes": int(unavailable["size_bytes"].sum()) if unavailable.height else 0,
            "by_reason": by_reason,
        },
        "requesters": {
            name: {"files": n, "bytes": b, "completion_s": round(t, 3)}
            for name, n, b, t in requesters.iter_rows()
        },
        "drive_use": {
            drive: {"mounts": n, "busy_s": round(busy, 3)} for drive, n, busy in use.iter_rows()
        },
        "baselines": {name: result.as_dict() for name, result in baselines.items()},
        "speedups": {
            name: round(result.makespan_s / makespan, 3) if makespan > 0 else None
            for name, result in baselines.items()
        },
    }


def deciding(bound: Mapping[str, float]) -> str:
    """The part of a bound (lower_bound_s its largest) that decides it: the first that reaches
    it, in the order the bound lists them."""
    top = bound.get("lower_bound_s", 0.0)
    for name, value in bound.items():
        if name != "lower_bound_s" and value >= top - 1e-9:
            return name
    return "lower_bound_s"


def whole_datasets(requests: pl.DataFrame) -> list[str]:
    """The datasets a request list asks for whole (kind dataset), sorted."""
    return sorted(requests.filter(pl.col("kind") == "dataset")["key"].unique().to_list())


def with_placement_costs(plan: RecallPlan, costs: pl.DataFrame | None) -> RecallPlan:
    """The plan with the placement costs of the whole datasets it was asked for (the figures a
    marts build stores: analysis/recall/datasets/stored.py) in its summary: per dataset its
    placement cost (drive time beyond ideal placement), drive time as placed, live and
    readable files, and their sum. None (no marts build yet) adds nothing."""
    if costs is None or costs.height == 0:
        return plan
    per_dataset = {
        str(row["dataset"]): {
            "placement_cost_s": round(float(row["placement_cost_s"]), 3),
            "drive_s": round(float(row["drive_s"]), 3),
            "live_files": int(row["live_files"]),
            "readable_files": int(row["readable_files"]),
        }
        for row in costs.sort("dataset").iter_rows(named=True)
    }
    placement = {
        "datasets": len(per_dataset),
        "placement_cost_s": round(float(costs["placement_cost_s"].sum()), 3),
        "drive_s": round(float(costs["drive_s"].sum()), 3),
        "by_dataset": per_dataset,
    }
    return replace(plan, summary={**plan.summary, "placement": placement})
