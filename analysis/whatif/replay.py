"""Placement what-if: replay a recorded write stream under another write policy.

The question it answers: would enabling sorted writes (or collocating datasets) have helped, and
by how much, before an admin changes anything (docs/domain.md, "Tape-positional gaps" and the
published averages: FIFO writes 2.1-2.9 mean gap by type, sorted by directory 1.05-1.14).
Input: the files with when they reached the disk cache; output: where each would have landed
(volume, position, aggregate) under the policy. Policies:

- `fifo`: each migration writes its files in arrival order;
- `sorted-by-directory`: each migration writes its files sorted by directory and file name
  (HPSS's "sort by directory" option): the sort window is the migration;
- `collocate`: each dataset written whole, in directory order, once its last file has arrived,
  onto the fewest tapes (analysis/whatif/collocate.py): the best a placement can do;
- `collocate-by-hint` (replay_families): migrations as the site runs them, each file on the
  open tape of its tape family, the file's collocation hint group at level k (small groups
  merged upward), with at most F families open per pool (analysis/whatif/families.py).

The mechanics (migration triggers, write drives, aggregates, tape fill) are in
analysis/whatif/write.py; the statistics in analysis/whatif/stats.py. Pure: frames in, frames out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np
import polars as pl

from tapelens.analysis.whatif import write as ww
from tapelens.analysis.whatif.collocate import Groups, place_groups
from tapelens.analysis.whatif.families import (
    FamilyPolicy,
    HintGroups,
    WriteCost,
    family_codes,
    family_names,
    hint_groups,
    place_families,
    write_cost,
)
from tapelens.analysis.whatif.stats import RecallSetup, seconds_of, summarise
from tapelens.errors import InputError
from tapelens.media import BY_NAME as MEDIA

POLICIES = ("fifo", "sorted-by-directory", "collocate")
HINT_POLICY = "collocate-by-hint"  # replay_families: needs each file's hint groups
GB = 1_000_000_000
MB = 1_000_000
TB = 1_000_000_000_000
# A daily migration: the sort window the example uses.
DEFAULT_WINDOW_S = 86_400.0
DEFAULT_WRITE_DRIVES = 4
# One more write drive per terabyte in a migration (the synthetic bnl site's write path).
DEFAULT_DRIVE_BYTES = 1 * TB
# Small-file aggregation as the synthetic HPSS site does it (world/params.py): files
# under 256 MB packed into aggregates of up to 16 GB and 2,000 members.
DEFAULT_AGGREGATE_MAX_FILE_BYTES = 256 * MB
DEFAULT_AGGREGATE_MAX_BYTES = 16 * GB
DEFAULT_AGGREGATE_MAX_MEMBERS = 2_000
DEFAULT_POOL = "all"

Progress = Callable[[str], None]


@dataclass(frozen=True)
class WhatIfParams:
    """How the replayed site writes. Times are epoch seconds (UTC)."""

    policy: str = "fifo"
    window_s: float = DEFAULT_WINDOW_S  # a migration when the oldest waiting file waited this
    batch_bytes: int | None = None  # ... or when the cache holds this much
    write_drives: int = DEFAULT_WRITE_DRIVES  # shared out over the pools by their bytes
    drives_by_pool: tuple[tuple[str, int], ...] = ()  # explicit drives per pool instead
    drive_bytes: int = DEFAULT_DRIVE_BYTES  # a migration starts one drive per this volume
    policy_before: str = "fifo"  # migrations before switch_at_s write with this policy
    switch_at_s: float | None = None
    media: tuple[tuple[str, float], ...] = (("LTO-8", 0.0),)  # (media type, in use from)
    capacity_bytes: int | None = None  # overrides the media's capacity
    aggregate: bool = True
    aggregate_max_file_bytes: int = DEFAULT_AGGREGATE_MAX_FILE_BYTES
    aggregate_max_bytes: int = DEFAULT_AGGREGATE_MAX_BYTES
    aggregate_max_members: int = DEFAULT_AGGREGATE_MAX_MEMBERS

    def __post_init__(self) -> None:
        for name in ("policy", "policy_before"):
            if getattr(self, name) not in POLICIES:
                raise InputError(f"{name}: expected one of {', '.join(POLICIES)}")
        if self.policy_before == "collocate" or (
            self.policy == "collocate" and self.switch_at_s is not None
        ):
            raise InputError("collocate places whole datasets: it takes no switch date")
        if self.window_s <= 0 or self.write_drives < 1 or self.drive_bytes <= 0:
            raise InputError("sort window, write drives and drive bytes must be positive")
        if self.batch_bytes is not None and self.batch_bytes <= 0:
            raise InputError("batch bytes must be positive")
        if not self.media:
            raise InputError("media: at least one media type")
        unknown = [m for m, _ in self.media if m not in MEDIA]
        if unknown and self.capacity_bytes is None:
            raise InputError(f"unknown media type(s) {', '.join(unknown)}: give a capacity")
        if min(self.aggregate_max_bytes, self.aggregate_max_file_bytes) <= 0 or (
            self.aggregate_max_members < 2
        ):
            raise InputError("aggregate limits must be positive, at least 2 members")


STREAM_COLUMNS = ("dataset", "dataset_type", "size_bytes", "arrived_at")


def _prepare(stream: pl.DataFrame) -> tuple[pl.DataFrame, ww.Arrivals, list[str]]:
    """The stream sorted by arrival with its codes; the pool names."""
    source, order, arrivals, pools = _prepare_order(stream)
    return source[order], arrivals, pools


def _prepare_order(
    stream: pl.DataFrame,
) -> tuple[pl.DataFrame, pl.Series, ww.Arrivals, list[str]]:
    """The stream in its own order with its codes (_t, _pool, _in), the arrival order of its
    rows, the arrays of its files in arrival order and the pool names: the string columns are
    only put in arrival order by whoever needs them."""
    missing = [c for c in STREAM_COLUMNS if c not in stream.columns]
    if missing:
        raise InputError(f"write stream lacks column(s) {', '.join(missing)}")
    if "path" in stream.columns:
        directory = pl.col("path").str.replace(r"/[^/]*$", "")
        name = pl.col("path").str.extract(r"([^/]*)$")
    else:
        directory = pl.col("dataset")
        name = pl.col("file_name") if "file_name" in stream.columns else pl.lit("")
    pool = pl.col("pool") if "pool" in stream.columns else pl.lit(DEFAULT_POOL)
    frame = stream.with_columns(
        seconds_of(stream, "arrived_at").alias("_t"),
        directory.fill_null("").alias("_dir"),
        name.fill_null("").alias("_name"),
        pool.cast(pl.String).fill_null(DEFAULT_POOL).alias("_pool"),
    ).with_row_index("_in")
    # Each file's rank by (directory, name, input order): the directory as its rank among
    # the distinct directories (only those are sorted as strings), then one stable sort by it
    # and the name; then the arrival order with that rank breaking ties, which is the order
    # (_t, _dir, _name, _in).
    by_path = (
        pl.DataFrame({"_dir": dense_rank(frame["_dir"]), "_name": frame["_name"]})
        .select(pl.arg_sort_by("_dir", "_name", maintain_order=True))
        .to_series()
        .to_numpy()
    )
    rank = np.empty(frame.height, dtype=np.int64)
    rank[by_path] = np.arange(frame.height)
    frame = frame.with_columns(pl.Series("_rank", rank))
    order = frame.select(pl.arg_sort_by("_t", "_rank")).to_series()
    for column, what in (
        ("_t", "an arrival time"),
        ("size_bytes", "a size"),
        ("dataset", "a dataset"),
    ):
        if frame[column].null_count():
            raise InputError(f"write stream: every file needs {what}")
    if (frame["size_bytes"] < 0).any():
        raise InputError("write stream: negative file size")
    at = order.to_numpy()
    pools = sorted(frame["_pool"].unique().to_list())
    pool_code = frame["_pool"].replace_strict(pools, range(len(pools))).to_numpy()
    arrivals = ww.Arrivals(
        arrived_s=frame["_t"].to_numpy().astype(np.float64)[at],
        size=frame["size_bytes"].cast(pl.Int64).to_numpy()[at],
        pool=pool_code.astype(np.int64)[at],
        dataset=dense_rank(frame["dataset"])[at],
        path_rank=rank[at],
    )
    return frame.drop("_dir", "_name", "_rank"), order, arrivals, pools


def dense_rank(values: pl.Series) -> np.ndarray:
    """The 0-based dense rank of each value (Series.rank("dense") - 1) of a column without
    nulls, through its categorical codes: only the distinct values are sorted."""
    codes = values.cast(pl.Categorical).to_physical().cast(pl.Int64)
    distinct = (
        pl.DataFrame({"code": codes, "value": values})
        .unique("code")
        .sort("value")
        .with_row_index("rank")
    )
    held = distinct["code"].to_numpy()
    lookup = np.zeros(int(held.max(initial=0)) + 1, dtype=np.int64)
    lookup[held] = distinct["rank"].to_numpy()
    return lookup[codes.to_numpy()]


def drives_per_pool(params: WhatIfParams, pools: list[str], pool_bytes: np.ndarray) -> np.ndarray:
    """Write drives of each pool: as given, else one each and the rest by share of bytes."""
    if params.drives_by_pool:
        given = dict(params.drives_by_pool)
        return np.array([max(int(given.get(p, 1)), 1) for p in pools], dtype=np.int64)
    n = len(pools)
    extra = max(params.write_drives - n, 0)
    total = float(pool_bytes.sum())
    share = pool_bytes / total if total > 0 else np.full(n, 1.0 / n)
    exact = extra * share
    out = np.floor(exact).astype(np.int64)
    rest = extra - int(out.sum())
    if rest:
        out[np.argsort(-(exact - out), kind="stable")[:rest]] += 1
    return out + 1


def _media_index(params: WhatIfParams, times_s: np.ndarray) -> np.ndarray:
    starts = np.array([t for _, t in params.media], dtype=np.float64)
    order = np.argsort(starts, kind="stable")
    idx = np.maximum(np.searchsorted(starts[order], times_s, side="right") - 1, 0)
    return order[idx]


def _capacities(params: WhatIfParams) -> np.ndarray:
    if params.capacity_bytes is not None:
        return np.full(len(params.media), params.capacity_bytes, dtype=np.int64)
    return np.array([MEDIA[m].capacity_bytes for m, _ in params.media], dtype=np.int64)


def _aggregation(params: WhatIfParams) -> ww.Aggregation:
    return ww.Aggregation(
        params.aggregate,
        params.aggregate_max_file_bytes,
        params.aggregate_max_bytes,
        params.aggregate_max_members,
    )


def _batched(params: WhatIfParams, a: ww.Arrivals, drives: np.ndarray) -> ww.Objects:
    """FIFO or sorted migrations, dealt to drives, packed, and filled onto tapes."""
    batch, ran_s = ww.migrations(a.arrived_s, a.size, params.window_s, params.batch_bytes)
    sorted_policy = np.full(ran_s.shape[0], params.policy == "sorted-by-directory")
    if params.switch_at_s is not None:
        sorted_policy &= ran_s >= params.switch_at_s
        sorted_policy |= (ran_s < params.switch_at_s) & (
            params.policy_before == "sorted-by-directory"
        )
    n = a.size.shape[0]
    key = np.where(sorted_policy[batch], a.path_rank, np.arange(n))
    queue = np.lexsort((key, batch, a.pool))
    drive_q = ww.deal(a.pool[queue], batch[queue], a.size[queue], drives, params.drive_bytes)
    drive = np.empty(n, dtype=np.int64)
    drive[queue] = drive_q
    # Drive order: per pool and drive, migrations and queue order as they come.
    rank = np.empty(n, dtype=np.int64)
    rank[queue] = np.arange(n)
    order = np.lexsort((rank, drive, a.pool))
    stream_key = (a.pool[order] * (int(drives.max()) + 1) + drive[order]) * (
        int(batch.max()) + 1
    ) + batch[order]
    return _objects(params, a, order, stream_key, ran_s[batch], drive)


@dataclass(frozen=True)
class _Packed:
    file_obj: np.ndarray  # object of each file (arrival order)
    member: np.ndarray
    offset: np.ndarray
    obj_in_order: np.ndarray  # object of each file in write order
    obj_size: np.ndarray


def _pack(params: WhatIfParams, a: ww.Arrivals, order: np.ndarray, key: np.ndarray) -> _Packed:
    """Tape objects of the files taken in write `order` (aggregates cut where `key` changes)."""
    obj_o, member_o, offset_o = ww.pack(key, a.size[order], _aggregation(params))
    n = a.size.shape[0]
    file_obj, member, offset = (np.empty(n, dtype=np.int64) for _ in range(3))
    file_obj[order], member[order], offset[order] = obj_o, member_o, offset_o
    n_obj = int(obj_o.max()) + 1 if n else 0
    obj_size = np.bincount(file_obj, weights=a.size, minlength=n_obj).astype(np.int64)
    return _Packed(file_obj, member, offset, obj_o, obj_size)


def _objects(
    params: WhatIfParams,
    a: ww.Arrivals,
    order: np.ndarray,
    stream_key: np.ndarray,
    time_s: np.ndarray,
    drive: np.ndarray,
) -> ww.Objects:
    """Pack each drive's files and fill its tapes, one at a time."""
    packed = _pack(params, a, order, stream_key)
    obj_o = packed.obj_in_order
    head = order[np.flatnonzero(np.append(True, obj_o[1:] != obj_o[:-1]))]
    obj_media = _media_index(params, time_s[head])
    tape, tape_media = ww.drive_streams(
        a.pool[head], drive[head], packed.obj_size, obj_media, _capacities(params)
    )
    pos, start = ww.positions(tape, packed.obj_size)
    return ww.Objects(
        packed.file_obj, packed.member, packed.offset, time_s, tape, pos, start, tape_media
    )


def _collocated(params: WhatIfParams, a: ww.Arrivals, drives: np.ndarray) -> ww.Objects:
    """Each dataset (of a pool) written whole once its last file has arrived."""
    group_key = a.pool * (int(a.dataset.max()) + 1) + a.dataset
    done = np.zeros(int(group_key.max()) + 1)
    np.maximum.at(done, group_key, a.arrived_s)
    time_s = done[group_key]
    order = np.lexsort((a.path_rank, group_key, time_s, a.pool))
    packed = _pack(params, a, order, group_key[order])
    g_sorted = group_key[order]
    first = np.flatnonzero(np.append(True, g_sorted[1:] != g_sorted[:-1]))
    heads = order[first]
    obj_first = packed.obj_in_order[first]
    groups = Groups(
        pool=a.pool[heads],
        media=_media_index(params, time_s[heads]),
        obj_first=obj_first,
        obj_end=np.append(obj_first[1:], packed.obj_size.shape[0]),
    )
    tape, tape_media = place_groups(groups, packed.obj_size, drives, _capacities(params))
    pos, start = ww.positions(tape, packed.obj_size)
    return ww.Objects(
        packed.file_obj, packed.member, packed.offset, time_s, tape, pos, start, tape_media
    )


# Pointed out when at least this share of the datasets arrive over longer than the window.
SPLIT_SHARE = 0.25


def arrival_note(stream: pl.DataFrame, params: WhatIfParams) -> str | None:
    """A warning when many datasets arrive over longer than the sort window: a sorted
    migration can only group the files that wait together, so those datasets are split over
    several migrations with other datasets' files in between, and the replayed gap measures the
    window rather than the sort. None when few do."""
    if stream.height == 0 or params.policy == "collocate":
        return None
    spans = (
        stream.select("dataset", seconds_of(stream, "arrived_at").alias("_t"))
        .group_by("dataset")
        .agg((pl.col("_t").max() - pl.col("_t").min()).alias("span"))
    )
    longer = spans.filter(pl.col("span") > params.window_s).height
    if longer < SPLIT_SHARE * spans.height:
        return None
    window = (
        f"{params.window_s / 3600:g} h"
        if params.window_s < 86_400 * 2
        else (f"{params.window_s / 86_400:g} d")
    )
    return (
        f"{longer:,} of {spans.height:,} datasets arrive over longer than the sort window"
        f" ({window}): a sorted migration groups only the files that wait together, so their"
        " replayed gaps show the window as much as the sort; give --sort-window and"
        " --batch-bytes as the site migrates"
    )


def replay(stream: pl.DataFrame, params: WhatIfParams) -> pl.DataFrame:
    """Where each file of the write stream lands under the policy.

    `stream`: dataset, dataset_type, size_bytes, arrived_at (epoch s or datetime: when the file
    reached the disk cache), and optionally path (or file_name) and pool (tape pool or
    experiment). Returns the stream (sorted by arrival) with volume, media_type, position,
    offset_bytes and aggregate_id (null when alone), start_bytes (bytes before the tape object
    on its tape) and written_at (epoch s: when the migration ran).
    """
    frame, a, pools = _prepare(stream)
    if frame.height == 0:
        raise InputError("the write stream holds no files")
    pool_bytes = np.bincount(a.pool, weights=a.size, minlength=len(pools))
    drives = drives_per_pool(params, pools, pool_bytes)
    if params.policy == "collocate":
        obj = _collocated(params, a, drives)
    else:
        obj = _batched(params, a, drives)
    return _placed(frame, params, obj)


def _placed(frame: pl.DataFrame, params: WhatIfParams, obj: ww.Objects) -> pl.DataFrame:
    """The prepared stream with where each file landed."""
    media_names = np.array([m for m, _ in params.media], dtype=object)
    tape = obj.obj_tape[obj.file_obj]
    in_agg = obj.file_member > 0
    placed = frame.drop("_t", "_pool", "_in").with_columns(
        pl.Series("_tape", tape, dtype=pl.Int64),
        pl.Series("media_type", media_names[obj.tape_media[tape]].tolist(), dtype=pl.String),
        pl.Series("position", obj.obj_pos[obj.file_obj], dtype=pl.Int64),
        pl.Series("_offset", obj.file_offset, dtype=pl.Int64),
        pl.Series("start_bytes", obj.obj_start[obj.file_obj] + np.maximum(obj.file_offset, 0)),
        pl.Series("written_at", obj.file_time_s, dtype=pl.Float64),
        pl.Series("_agg", in_agg),
    )
    volume = pl.concat_str(pl.lit("W"), pl.col("_tape").cast(pl.String).str.zfill(6))
    return (
        placed.with_columns(volume.alias("volume"))
        .with_columns(
            pl.when(pl.col("_agg")).then(pl.col("_offset")).alias("offset_bytes"),
            pl.when(pl.col("_agg"))
            .then(pl.format("{}:{}", pl.col("volume"), pl.col("position")))
            .alias("aggregate_id"),
        )
        .drop("_tape", "_offset", "_agg")
    )


@dataclass(frozen=True)
class HintStream:
    """A write stream prepared once for replays by tape family at several levels."""

    source: pl.DataFrame  # the stream in its own order, with its codes (_t, _pool, _in)
    order: pl.Series  # the rows of `source` in arrival order
    arrivals: ww.Arrivals
    pools: list[str]
    groups: HintGroups
    # The migrations of each (sort window, batch bytes): the same at every level.
    cuts: dict[tuple[float, int | None], tuple[np.ndarray, np.ndarray]] = field(
        default_factory=dict, compare=False, repr=False
    )

    @cached_property
    def frame(self) -> pl.DataFrame:
        """The stream in arrival order, every row taken at the first use."""
        return self.source[self.order]

    def rows(self, rows: np.ndarray) -> pl.DataFrame:
        """The stream's files at `rows` (indices in arrival order)."""
        return self.source[self.order.gather(rows)]

    def column(self, name: str) -> pl.Series:
        """One column of the stream in arrival order."""
        return self.source[name].gather(self.order)

    def migrations(self, params: WhatIfParams) -> tuple[np.ndarray, np.ndarray]:
        """The migration of every file and the time each ran, cut once per window."""
        key = (params.window_s, params.batch_bytes)
        if key not in self.cuts:
            a = self.arrivals
            self.cuts[key] = ww.migrations(a.arrived_s, a.size, params.window_s, params.batch_bytes)
        return self.cuts[key]


def prepare_hints(stream: pl.DataFrame) -> HintStream:
    """The stream (as for replay_families) sorted by arrival, with its hint groups coded."""
    with_pool = (
        stream if "pool" in stream.columns else stream.with_columns(pool=pl.lit(DEFAULT_POOL))
    )
    source, order, a, pools = _prepare_order(with_pool)
    if source.height == 0:
        raise InputError("the write stream holds no files")
    # A group's code does not depend on the rows' order: coded in the stream's own order.
    groups = hint_groups(source, "_pool")
    at = order.to_numpy()
    arrival_groups = HintGroups(tuple(c[at] for c in groups.codes), groups.names)
    return HintStream(source, order, a, pools, arrival_groups)


@dataclass(frozen=True)
class FamilyReplay:
    """A replay by tape family as arrays over the prepared stream's files (arrival order):
    each file's family code, where it went, the files in write order, and the write cost."""

    family: np.ndarray
    obj: ww.Objects
    write_order: np.ndarray
    cost: WriteCost


def replay_family_arrays(
    hs: HintStream, params: WhatIfParams, policy: FamilyPolicy, codes: np.ndarray | None = None
) -> FamilyReplay:
    """The replay of replay_families, kept as arrays: nothing is named (families, volumes)
    until a frame of it is asked for (placed_families). codes: the policy's family codes
    (family_codes) when the caller has already made them."""
    a, pools = hs.arrivals, hs.pools
    code = (
        codes
        if codes is not None
        else family_codes(
            hs.groups, a.pool, a.size.astype(np.float64), policy.level, policy.min_family_bytes
        )
    )
    given = dict(policy.open_families)
    open_per_pool = np.array([max(int(given.get(p, 1)), 1) for p in pools], dtype=np.int64)
    order, slot, batch, ran_s = place_families(
        a, code, open_per_pool, params.window_s, params.batch_bytes, hs.migrations(params)
    )
    n = hs.order.shape[0]
    o_pool, o_slot, o_batch, o_fam = a.pool[order], slot[order], batch[order], code[order]
    change = np.ones(n, dtype=bool)
    change[1:] = (
        (o_pool[1:] != o_pool[:-1])
        | (o_slot[1:] != o_slot[:-1])
        | (o_batch[1:] != o_batch[:-1])
        | (o_fam[1:] != o_fam[:-1])
    )
    obj = _objects(params, a, order, np.cumsum(change), ran_s[batch], slot)
    n_obj = obj.obj_tape.shape[0]
    obj_pool = np.zeros(n_obj, dtype=np.int64)
    obj_pool[obj.file_obj] = a.pool
    obj_batch = np.zeros(n_obj, dtype=np.int64)
    obj_batch[obj.file_obj] = batch
    obj_size = np.bincount(obj.file_obj, weights=a.size, minlength=n_obj).astype(np.int64)
    cost = write_cost(pools, obj, obj_pool, obj_batch, obj_size, _capacities(params))
    return FamilyReplay(code, obj, order, cost)


def placed_families(
    hs: HintStream, params: WhatIfParams, replayed: FamilyReplay, rows: np.ndarray | None = None
) -> pl.DataFrame:
    """The placed stream of a replay by family, as replay_families returns it: every file, or
    the files at `rows` (ascending indices in the stream's order)."""
    family = replayed.family if rows is None else replayed.family[rows]
    frame = hs.frame if rows is None else hs.rows(rows)
    named = frame.with_columns(family_names(hs.groups, family))
    if rows is None:
        return _placed(named, params, replayed.obj)
    obj = replace(
        replayed.obj,
        file_obj=replayed.obj.file_obj[rows],
        file_member=replayed.obj.file_member[rows],
        file_offset=replayed.obj.file_offset[rows],
        file_time_s=replayed.obj.file_time_s[rows],
    )
    return _placed(named, params, obj)


def replay_families(
    stream: pl.DataFrame | HintStream, params: WhatIfParams, policy: FamilyPolicy
) -> tuple[pl.DataFrame, WriteCost]:
    """Where each file of the write stream lands when written by tape family (the policy
    collocate-by-hint): the placed stream as replay() returns it, with its `family`, and the
    write cost per pool. `stream` as for replay(), with pool and group_0..group_4 (null where
    a file has no hint at that level), or prepared by prepare_hints for several replays."""
    hs = stream if isinstance(stream, HintStream) else prepare_hints(stream)
    replayed = replay_family_arrays(hs, params, policy)
    return placed_families(hs, params, replayed), replayed.cost


def compare(
    stream: pl.DataFrame,
    policies: Sequence[str],
    params: WhatIfParams,
    actual: pl.DataFrame | None = None,
    *,
    split_at_s: float | None = None,
    recall: RecallSetup | None = None,
    dataset_types: Sequence[str] | None = None,
    progress: Progress | None = None,
) -> pl.DataFrame:
    """Per placement (each policy, and `actual` when given) and dataset type (and period,
    before/after `split_at_s`): the gap statistics, tapes per dataset and, with `recall`, the
    predicted recall rate. `actual`: the site's live copies (dataset, dataset_type, volume,
    position, offset_bytes, aggregate_id, size_bytes, written_at, media_type, file_id)."""
    say = progress or (lambda _message: None)
    parts = []
    for policy in policies:
        say(f"replaying {stream.height} files under {policy}")
        switch = None if policy == "collocate" else params.switch_at_s
        placed = replay(stream, replace(params, policy=policy, switch_at_s=switch))
        say(f"statistics of {policy}")
        parts.append(
            summarise(placed, "arrived_at", split_at_s, recall, dataset_types).select(
                pl.lit(policy).alias("placement"), pl.all()
            )
        )
    if actual is not None:
        say(f"statistics of the actual placement ({actual.height} copies)")
        parts.append(
            summarise(actual, "written_at", split_at_s, recall, dataset_types).select(
                pl.lit("actual").alias("placement"), pl.all()
            )
        )
    return pl.concat(parts, how="vertical_relaxed") if parts else pl.DataFrame()
