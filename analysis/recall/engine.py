"""The recall engine: the one entry point, `recall`, that decides and times a recall.

Given the candidate copies of the requested files, who asked for each file, the drives and a
policy, the engine

1. chooses one copy per file: the set of copies whose tapes cost least to open and read
   (copies/copy_choice.py, exact when proven so), or the newest copy as tape clients do;
2. reads each tape in one forward pass in position order (aggregate members by offset, each
   aggregate once) or in recommended access order, every move priced by the one price of a
   move (throughput/moves.py) from where the previous read left the head;
3. puts the tapes on drives that can read them under the sharing policy (schedule/dispatch.py);

and returns the schedule: per file, per mount, and per drive the events mount, position, read,
rewind and dismount with their predicted times. `plan recall`, `predict datasets` and the
planner's newest-copy baseline all run through `recall`, so the same recall is timed the same
way wherever it is asked about. Pure: frames and frozen options in, frames out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import polars as pl

from tapelens.analysis.recall.baselines.newest import newest_copies
from tapelens.analysis.recall.copies.copy_choice import EXACT_LIMIT, CopyChoice, choose_copies
from tapelens.analysis.recall.schedule.drives import readable_by_catalog
from tapelens.analysis.recall.schedule.policies import Sharing
from tapelens.analysis.recall.schedule.read_order import ORDERS, OrderCache
from tapelens.analysis.recall.schedule.schedule import Schedule, build_schedule, with_copy_columns
from tapelens.analysis.throughput.model import MB, ModelParams, predict_reads
from tapelens.analysis.throughput.moves import least_first_s, least_rewind_s, mean_rewind_s
from tapelens.errors import InputError

# How the engine picks among the copies of a file.
COPY_RULES = ("cheapest", "newest")
# What "best" means when several copy sets are weighed: the recall's elapsed time first (drives
# that would idle are put to use), or the drive time it costs first (fewest, shortest mounts).
OBJECTIVES = ("makespan", "drive-time")
# Rounds of moving reads off the tape that finishes last, each one tried at a few sizes.
RELIEF_ROUNDS = 8
RELIEF_SHARES = (1.0, 0.5, 0.25)
# Reads are moved off the last tape only when the best set so far leaves drives idle for more
# than this share of the drive time the recall spans: with every drive busy to the end, reading
# other copies cannot finish much sooner, and a large recall need not be rescheduled for nothing.
IDLE_WORTH_WEIGHING = 0.05


@dataclass(frozen=True)
class Policy:
    """Everything the engine is told besides the request: copy rule, sharing, solver limit."""

    sharing: Sharing = field(default_factory=Sharing)
    copies: str = "cheapest"  # cheapest: least predicted time; newest: as tape clients do
    exact_limit: int = EXACT_LIMIT
    objective: str = "makespan"
    order: str = "position"  # the reads on a tape: read_order.ORDERS

    def __post_init__(self) -> None:
        if self.copies not in COPY_RULES:
            raise ValueError(f"copy rule {self.copies!r} is not one of {COPY_RULES}")
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective {self.objective!r} is not one of {OBJECTIVES}")
        if self.order not in ORDERS:
            raise ValueError(f"read order {self.order!r} is not one of {ORDERS}")


@dataclass(frozen=True)
class Recall:
    """The engine's answer: the schedule, how the copies were chosen (None: the newest, or one
    choice per group), and which copy set won (cheapest, newest or relieved)."""

    schedule: Schedule
    choice: CopyChoice | None
    copy_set: str = "cheapest"
    # The newest copies read the same way: the newest-copy baseline, scheduled once here.
    newest: Schedule | None = None

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
    *,
    own_drives: bool = False,
) -> Recall:
    """Choose, order, place and time the recall of the files in `wanted`.

    `copies`: the candidate copies of the wanted files, one row per copy: fid (the file),
    vid (an integer code per tape), volume, media_type, position, offset_bytes, size_bytes,
    written_at, copy_no, and optionally aggregate_id, avg_object_bytes, start_bytes; other
    columns travel with the chosen copies. `wanted`: per fid, requester, group, rank and
    fifo_rank (requests.resolve gives both). `drives`: drive type -> count; `readers`: media type
    -> the drive types that read it. With `own_drives`, each group of `wanted` is recalled on
    its own copy of the drives, as if alone (tapes must then not be shared between groups: give
    a tape holding files of two groups a vid per group).
    """
    # One ordering budget for the whole recall, orders reused wherever a tape recurs.
    orders = OrderCache()
    if own_drives:
        # Each group is its own recall: its copies are chosen and its tapes shared out as if it
        # were asked for alone, so that a group's answer does not depend on the other groups.
        owner = wanted.select("fid", "group")
        parts = [
            _recall_alone(
                part.drop("group"),
                wanted.filter(pl.col("group") == part["group"][0]),
                params_by_media,
                drives,
                readers,
                policy,
                orders,
            )
            for part in copies.join(owner, on="fid").partition_by("group", maintain_order=True)
        ]
        if not parts:
            return _recall_alone(copies, wanted, params_by_media, drives, readers, policy, orders)
        schedule = Schedule(
            pl.concat([r.schedule.files for r in parts], how="diagonal_relaxed"),
            pl.concat([r.schedule.tapes for r in parts], how="diagonal_relaxed"),
            pl.concat([r.schedule.timeline for r in parts], how="diagonal_relaxed"),
        )
        return Recall(schedule, None, "per group")
    return _recall_alone(copies, wanted, params_by_media, drives, readers, policy, orders)


def _recall_alone(
    copies: pl.DataFrame,
    wanted: pl.DataFrame,
    params_by_media: Mapping[str, ModelParams],
    drives: Mapping[str, int],
    readers: Mapping[str, tuple[str, ...]],
    policy: Policy,
    orders: OrderCache,
) -> Recall:
    """One recall: the cheapest copies, and, when files have a choice of copies, the newest and
    a relieved set too, the best of them under the policy's objective."""

    def build(chosen: pl.DataFrame) -> Schedule:
        # Candidates are weighed lean (a million-file plan holds several at once); the copy
        # columns are gathered for the one kept.
        parts = with_other_volumes(chosen, copies)
        return build_schedule(
            parts,
            wanted,
            params_by_media,
            drives,
            policy.sharing,
            readers,
            lean=True,
            order=policy.order,
            orders=orders,
        )

    def kept(chosen: pl.DataFrame, schedule: Schedule) -> Schedule:
        return with_copy_columns(schedule, with_other_volumes(chosen, copies))

    if policy.copies == "newest":
        newest = newest_copies(copies)
        only = kept(newest, build(newest))
        return Recall(only, None, "newest", only)
    choice = _cheapest(copies, params_by_media, policy)
    cheapest = choice.chosen.drop("cost_s")
    best = (cheapest, build(cheapest), "cheapest")
    if copies["fid"].n_unique() == copies.height:  # one copy per file: nothing to weigh
        only = kept(cheapest, best[1])
        return Recall(only, choice, best[2], only)  # the newest copies are the only ones
    key = _objective(policy.objective)
    newest = newest_copies(copies)
    newest_schedule = build(newest)
    # Only the best so far and the newest (the baseline) are held.
    if key(newest_schedule) < key(best[1]):
        best = (newest, newest_schedule, "newest")
    if policy.objective == "makespan" and _idle_share(best[1], drives) > IDLE_WORTH_WEIGHING:
        relieved = _relieve(best[0], best[1], copies, params_by_media, build, key)
        if key(relieved[1]) < key(best[1]):
            best = (relieved[0], relieved[1], "relieved")
    winner = kept(best[0], best[1])
    return Recall(winner, choice, best[2], winner if best[2] == "newest" else newest_schedule)


def candidate_bounds(
    copies: pl.DataFrame,
    wanted: pl.DataFrame,
    params_by_media: Mapping[str, ModelParams],
    drives: Mapping[str, int],
    max_drives_per_group: int | None = None,
) -> dict[str, float]:
    """Times no recall of `wanted` from any of `copies` on `drives` can beat (seconds), each
    named for what it bounds; `lower_bound_s` is the largest.

    work_over_drives_s: the least drive time any choice of copies needs, over all drives: every
    file streamed from its fastest copy (no overhead, no locate between files) and every tape
    that holds the only copy of a file mounted, its first move the cheapest the one price of a
    move charges (to the tape's first byte), rewound (the cheapest rewind: from the beginning
    of the data area) and unloaded once.
    single_file_s: the file whose cheapest recall alone (mount, first locate, stream, rewind,
    unload) takes longest. group_limit_s: a group's least work over the drives it may hold.
    """
    if copies.height == 0:
        return {"lower_bound_s": 0.0}
    fixed = {
        m: p.robot_s + p.load_s + least_first_s(p) + least_rewind_s(p) + p.unload_s
        for m, p in params_by_media.items()
    }
    rate = {m: p.rate_mb_s * MB for m, p in params_by_media.items()}
    timed = copies.select(
        "fid",
        "vid",
        (
            pl.col("size_bytes")
            / pl.col("media_type").replace_strict(rate, return_dtype=pl.Float64)
        ).alias("stream_s"),
        pl.col("media_type").replace_strict(fixed, return_dtype=pl.Float64).alias("fixed_s"),
    )
    per_file = timed.group_by("fid").agg(
        pl.col("stream_s").min(),
        (pl.col("stream_s") + pl.col("fixed_s")).min().alias("alone_s"),
        pl.len().alias("copies"),
    )
    forced = (
        timed.join(per_file.filter(pl.col("copies") == 1).select("fid"), on="fid")
        .group_by("vid")
        .agg(pl.col("fixed_s").first())
    )
    mounts_s = float(forced["fixed_s"].sum()) if forced.height else float(min(fixed.values()))
    n_drives = max(1, sum(n for n in drives.values() if n > 0))
    work_s = float(per_file["stream_s"].sum()) + mounts_s
    parts = {
        "work_over_drives_s": work_s / n_drives,
        "single_file_s": float(per_file.select(pl.col("alone_s").max()).item()),
    }
    if max_drives_per_group is not None:
        per_group = per_file.join(wanted.select("fid", "group"), on="fid").group_by("group")
        most = per_group.agg(pl.col("stream_s").sum()).select(pl.col("stream_s").max()).item()
        parts["group_limit_s"] = float(most or 0.0) / min(max_drives_per_group, n_drives)
    parts["lower_bound_s"] = max(parts.values())
    return parts


def with_other_volumes(chosen: pl.DataFrame, copies: pl.DataFrame) -> pl.DataFrame:
    """The chosen copies, each copy that needs several cartridges (other_volumes: striped, or
    going on to the next) as one read per cartridge: an equal share of its bytes on each, the
    first where the copy starts, the others from the start of their cartridge, so that the
    recall mounts every cartridge the copy needs. The share is an estimate: the catalogs say
    which cartridges, not how the bytes are split. `part` numbers the reads of one copy."""
    if (
        "other_volumes" not in chosen.columns
        or chosen["other_volumes"].null_count() == chosen.height
    ):
        return chosen
    several = chosen.filter(pl.col("other_volumes").is_not_null())
    others = several["other_volumes"].str.split(",")
    n_parts = others.list.len() + 1
    share = (several["size_bytes"] // n_parts).alias("size_bytes")
    first = several.with_columns(share, pl.lit(1, pl.Int32).alias("part"))
    extra = (
        several.with_columns(share, others.alias("_volume"))
        .with_columns(pl.int_ranges(2, n_parts + 1, dtype=pl.Int32).alias("part"))
        .explode(["_volume", "part"])
        .with_columns(
            pl.col("_volume").alias("volume"),
            pl.lit(1, pl.Int64).alias("position"),
            pl.lit(None, pl.Int64).alias("offset_bytes"),
            pl.lit(None, pl.String).alias("aggregate_id"),
        )
        .drop("_volume")
    )
    if "start_bytes" in extra.columns:
        extra = extra.with_columns(pl.lit(0, pl.Int64).alias("start_bytes"))
    # A cartridge the plan knows keeps its tape code; one it does not gets a new one.
    known = copies.select("volume", "vid").unique("volume")
    extra = extra.drop("vid").join(known, on="volume", how="left")
    start = int(copies.select(pl.col("vid").max()).item() or 0) + 1
    unknown = extra.filter(pl.col("vid").is_null())["volume"].unique().sort().to_list()
    if unknown:
        codes = dict(zip(unknown, range(start, start + len(unknown)), strict=True))
        extra = extra.with_columns(
            pl.coalesce(
                pl.col("vid"),
                pl.col("volume").replace_strict(codes, default=None, return_dtype=pl.Int64),
            ).alias("vid")
        )
    alone = chosen.filter(pl.col("other_volumes").is_null()).with_columns(
        pl.lit(None, pl.Int32).alias("part")
    )
    return pl.concat([alone, first, extra.select(first.columns)], how="vertical_relaxed")


def _idle_share(schedule: Schedule, drives: Mapping[str, int]) -> float:
    """The share of drive time left idle between the start and the end of the recall."""
    span_s = schedule.makespan_s * sum(n for n in drives.values() if n > 0)
    busy_s = float(schedule.tapes["total_s"].sum()) if schedule.tapes.height else 0.0
    return 1.0 - busy_s / span_s if span_s > 0 else 0.0


def _objective(name: str) -> Callable[[Schedule], tuple[float, ...]]:
    def drive_s(schedule: Schedule) -> float:
        return float(schedule.tapes["total_s"].sum()) if schedule.tapes.height else 0.0

    if name == "drive-time":
        return lambda s: (round(drive_s(s), 6), round(s.makespan_s, 6), s.mounts)
    return lambda s: (round(s.makespan_s, 6), round(drive_s(s), 6), s.mounts)


def _relieve(
    chosen: pl.DataFrame,
    schedule: Schedule,
    copies: pl.DataFrame,
    params_by_media: Mapping[str, ModelParams],
    build: Callable[[pl.DataFrame], Schedule],
    key: Callable[[Schedule], tuple[float, ...]],
) -> tuple[pl.DataFrame, Schedule]:
    """Move reads off the tape that finishes last onto other copies of the same files while
    that makes the recall better: the tail of the critical tape first (its pass gets shorter),
    each file to its cheapest other copy, a tape already in the plan preferred (no new mount).
    Stops when no move helps; never returns anything worse than it was given."""
    costs = copy_costs(copies, params_by_media).select("fid", "vid", "cost_s")
    for _ in range(RELIEF_ROUNDS):
        if schedule.tapes.height == 0:
            break
        critical = schedule.tapes.sort("end_s", "vid").tail(1)["vid"][0]
        on_it = chosen.filter(pl.col("vid") == critical).sort("position", descending=True)
        used = chosen["vid"].unique().implode()
        others = (
            copies.join(costs, on=["fid", "vid"], how="left")
            .filter(pl.col("fid").is_in(on_it["fid"].implode()) & (pl.col("vid") != critical))
            .with_columns((~pl.col("vid").is_in(used)).alias("_new_mount"))
            .sort("fid", "_new_mount", "cost_s", "vid")
            .unique("fid", keep="first", maintain_order=True)
            .drop("_new_mount", "cost_s")
        )
        movable = [f for f in on_it["fid"].to_list() if f in set(others["fid"].to_list())]
        if not movable:
            break
        better = None
        for share in RELIEF_SHARES:
            moved = movable[: max(1, int(len(movable) * share))]
            trial = pl.concat(
                [
                    chosen.filter(~pl.col("fid").is_in(moved)),
                    others.filter(pl.col("fid").is_in(moved)).select(chosen.columns),
                ]
            )
            trial_schedule = build(trial)
            if key(trial_schedule) < key(schedule):
                better = (trial, trial_schedule)
                break
        if better is None:
            break
        chosen, schedule = better
    return chosen, schedule


def readable_media(drives: Mapping[str, int], readers: Mapping[str, tuple[str, ...]]) -> list[str]:
    """The media types some given drive (type -> count) reads."""
    return sorted(m for m, kinds in readers.items() if any(drives.get(k, 0) > 0 for k in kinds))


def _cheapest(
    copies: pl.DataFrame, params_by_media: Mapping[str, ModelParams], policy: Policy
) -> CopyChoice:
    return choose_copies(
        copy_costs(copies, params_by_media),
        tape_costs(copies, params_by_media),
        file_col="fid",
        tape_col="vid",
        exact_limit=policy.exact_limit,
    )


def copy_costs(copies: pl.DataFrame, params: Mapping[str, ModelParams]) -> pl.DataFrame:
    """Each copy's read cost once its tape is mounted: the model's time for a file read
    straight after its neighbour (overhead and streaming); oldest copy first among equals."""
    reads = copies.select("media_type", "size_bytes", pl.lit(1, pl.Int64).alias("gap"))
    cost = predict_reads(reads, params)["predicted_duration_s"]
    return copies.with_columns(cost.alias("cost_s")).sort(
        ["written_at", "copy_no"], nulls_last=True, maintain_order=True
    )


def tape_costs(copies: pl.DataFrame, params: Mapping[str, ModelParams]) -> pl.DataFrame:
    """What opening a tape costs: mount, an average first locate (to mid-tape), dismount (the
    rewind from a last read anywhere along the tape, on average, and the unload)."""
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
                {
                    m: params[m].mount_s + mean_rewind_s(params[m]) + params[m].unload_s
                    for m in media
                },
                return_dtype=pl.Float64,
            )
        ).alias("open_s"),
    )
    return tapes.join(first, on="media_type").select("vid", "open_s")


def engine_inputs(
    files: pl.DataFrame, group: str | None = None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Copies as the engine takes them, from a frame of copies that is not a request list: a
    file (fid) per group and file_id (per row when there is no file_id), a tape code (vid) per
    group and volume, and each group as the requester and group of its files, asked for in path
    order as a dataset request is (requests/resolve.py). Without `group`, all is one recall."""
    if group is None:
        files = files.with_columns(pl.lit("recall").alias("_recall"))
        group = "_recall"
    if "file_id" not in files.columns:
        # Each copy is a file of its own (an ideal placement has no file ids).
        files = files.with_columns(pl.int_range(pl.len()).cast(pl.String).alias("file_id"))
    for name, dtype in (("written_at", pl.Datetime("us", "UTC")), ("copy_no", pl.Int32())):
        if name not in files.columns:
            files = files.with_columns(pl.lit(None, dtype).alias(name))
    if "offset_bytes" not in files.columns:
        files = files.with_columns(pl.lit(None, pl.Int64).alias("offset_bytes"))
    if "path" not in files.columns:
        files = files.with_columns(pl.col("file_id").alias("path"))
    copies = files.with_columns(
        pl.struct(group, "file_id").rank("dense").cast(pl.Int64).alias("fid"),
        pl.struct(group, "volume").rank("dense").cast(pl.Int64).alias("vid"),
    )
    wanted = (
        copies.group_by("fid")
        .agg(pl.col(group).first().alias("group"), pl.col("path").min().alias("_order"))
        .sort("group", "_order")
        .with_columns(
            pl.col("group").alias("requester"),
            pl.int_range(pl.len(), dtype=pl.Int64).alias("rank"),
        )
        .with_columns(pl.col("rank").alias("fifo_rank"))
        .select("fid", "requester", "group", "rank", "fifo_rank")
    )
    if group == "_recall":
        copies = copies.drop("_recall")
    return copies, wanted


@dataclass(frozen=True)
class RecallPrediction:
    """A whole recall of given copies: every tape mounted once, tapes shared out on the drives
    that read them by the engine."""

    makespan_s: float
    rate_mb_s: float
    mounts: int
    files_read: int
    bytes: int
    tapes: pl.DataFrame  # per tape: breakdown, drive, start_s, end_s
    files: pl.DataFrame  # per file: kind, predicted start_s/end_s on the recall's clock
    unreadable: tuple[str, ...]  # volumes no given drive can read (left out of the figures)


def media_column(
    files: pl.DataFrame, media_of_volume: Mapping[str, str] | pl.DataFrame | None
) -> pl.DataFrame:
    """`files` with a media_type column, from the mapping/frame (volume, media_type) given."""
    if media_of_volume is None:
        if "media_type" not in files.columns:
            raise InputError("files lack column media_type (and no media_of_volume was given)")
        return files
    if isinstance(media_of_volume, pl.DataFrame):
        lookup = media_of_volume.select("volume", "media_type").unique("volume")
    else:
        lookup = pl.DataFrame(
            {"volume": list(media_of_volume), "media_type": list(media_of_volume.values())},
            schema={"volume": pl.String(), "media_type": pl.String()},
        )
    joined = files.drop("media_type", strict=False).join(lookup, on="volume", how="left")
    lost = joined.filter(pl.col("media_type").is_null())["volume"].unique().sort().to_list()
    if lost:
        raise InputError(f"no media type for volume(s) {', '.join(lost[:5])}")
    return joined


def predict_recall(
    files: pl.DataFrame,
    drives: Mapping[str, int],
    params_by_media: Mapping[str, ModelParams],
    media_of_volume: Mapping[str, str] | pl.DataFrame | None = None,
    readable_by: Mapping[str, tuple[str, ...]] | None = None,
    policy: Policy | None = None,
) -> RecallPrediction:
    """Predicted makespan and rate of reading `files` (copies: volume, position, size_bytes and
    media_type or `media_of_volume`), as the engine plans it: each tape mounted once, tapes on
    the drives that read them (media catalog `readable_by` unless given). Tapes no drive can
    read are listed in `unreadable` and left out of the figures."""
    with_media = media_column(files, media_of_volume)
    readers = dict(readable_by) if readable_by is not None else readable_by_catalog()
    counts = {d: n for d, n in drives.items() if n > 0}
    readable = readable_media(counts, readers)
    can = pl.col("media_type").is_in(readable)
    unreadable = tuple(with_media.filter(~can)["volume"].unique().sort().to_list())
    copies, wanted = engine_inputs(with_media.filter(can))
    done = recall(copies, wanted, params_by_media, counts, readers, policy or Policy())
    tapes, read = done.schedule.tapes, done.schedule.files
    makespan_s = done.makespan_s
    total_bytes = int(tapes["bytes"].sum()) if tapes.height else 0
    return RecallPrediction(
        makespan_s=makespan_s,
        rate_mb_s=total_bytes / MB / makespan_s if makespan_s > 0 else 0.0,
        mounts=tapes.height,
        files_read=read.height,
        bytes=total_bytes,
        tapes=tapes,
        files=read,
        unreadable=unreadable,
    )
