"""Tape families advice: which hint level to collocate on, per pool, and what it saves.

For each hint level k the recorded write stream is replayed under the write policy
"collocate by hint level k with at most F open families" (analysis/whatif/families.py), and
every placement, the recorded one too, is priced the same way: gaps and tapes per dataset as
`whatif placement` measures them (analysis/whatif/stats.py), and each recall campaign of the
history recalled from it by the recall engine (analysis/recall/engine.py predict_recall: every
tape mounted once, every move by the one price of a move). Per pool the advised level is the
one with the fewest recall hours over the history's campaigns; on a tie (within TIE_SHARE) the
one that leaves fewer tapes partly filled, then the broader; and when no level beats the
recorded placement, the advice is to keep writing as now. Pure: frames in, frames out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, replace

import numpy as np
import polars as pl

from tapelens.analysis.recall.engine import predict_recall
from tapelens.analysis.whatif.families import (
    DEFAULT_MIN_FAMILY_BYTES,
    FULL_SHARE,
    LEVELS,
    FamilyPolicy,
    dense_codes,
    family_codes,
    family_names,
    renumbered,
)
from tapelens.analysis.whatif.replay import (
    FamilyReplay,
    HintStream,
    WhatIfParams,
    drives_per_pool,
    placed_families,
    prepare_hints,
    replay_family_arrays,
)
from tapelens.analysis.whatif.stats import RecallSetup, ordered_gap_figures, summarise
from tapelens.arrays import rows_of
from tapelens.errors import InputError
from tapelens.media import BY_NAME as MEDIA

RECORDED = "recorded"
# What the recall engine reads of a copy.
ENGINE_COLUMNS = (
    "file_id",
    "path",
    "volume",
    "media_type",
    "position",
    "offset_bytes",
    "aggregate_id",
    "start_bytes",
    "size_bytes",
    "copy_no",
)
# What the gap statistics, tape counts and tape fill of a placement read, besides the engine's.
FIGURE_COLUMNS = (
    "pool",
    "dataset",
    "dataset_type",
    "volume",
    "position",
    "offset_bytes",
    "aggregate_id",
    "media_type",
    "size_bytes",
    "written_at",
    "family",
    "file_id",
)
TIE_SHARE = 0.005  # recall hours this close are a tie
# Placements priced at once: the machines it runs on have two cores or more.
PRICED_AT_ONCE = 2
HOUR_S = 3600.0

Progress = Callable[[str], None]

TABLE_SCHEMA: dict[str, pl.DataType] = {
    "pool": pl.String(),
    "placement": pl.String(),
    "level": pl.Int64(),
    "advised": pl.Boolean(),
    "families": pl.Int64(),
    "open_families": pl.Int64(),
    "files": pl.Int64(),
    "tapes": pl.Int64(),
    "tapes_per_dataset": pl.Float64(),
    "mean_gap": pl.Float64(),
    "campaigns": pl.Int64(),
    "recall_mounts": pl.Int64(),
    "recall_hours": pl.Float64(),
    "recall_elapsed_hours": pl.Float64(),
    "write_mounts": pl.Int64(),
    "partly_filled_tapes": pl.Int64(),
}


@dataclass(frozen=True)
class AdviceOptions:
    """How the families are advised: the open tapes the site can keep (shared out over the
    pools by their bytes), the smallest family, the levels to try."""

    open_families: int
    min_family_bytes: int = DEFAULT_MIN_FAMILY_BYTES
    levels: tuple[int, ...] = tuple(range(LEVELS))


class Advice:
    """The advice: per pool and placement its figures (TABLE_SCHEMA; `advised` marks each
    pool's advised level), the advised families (pool, level, family, files, bytes, tapes),
    and each advised file's place (file_id, pool, family, volume, ...). The placement, a row
    per file of the advised pools, is made when first asked for (or given made): `plan
    families` prints and keeps the table and the families only."""

    def __init__(
        self,
        table: pl.DataFrame,
        families: pl.DataFrame,
        placement: pl.DataFrame | Callable[[], pl.DataFrame],
    ) -> None:
        self.table = table
        self.families = families
        self._placement = placement

    @property
    def placement(self) -> pl.DataFrame:
        """The advised placement: file_id, pool, family, volume, ..."""
        if not isinstance(self._placement, pl.DataFrame):
            self._placement = self._placement()
        return self._placement


def advise(
    copies: pl.DataFrame,
    stream: pl.DataFrame,
    campaigns: pl.DataFrame,
    recall: RecallSetup,
    params: WhatIfParams,
    options: AdviceOptions,
    progress: Progress | None = None,
) -> Advice:
    """Advise tape families per pool.

    copies: the live copies (whatif store COPY_SCHEMA: file_id, dataset, dataset_type,
    experiment, size_bytes, volume, position, offset_bytes, aggregate_id, start_bytes,
    media_type, written_at). stream: one row per file (write_stream) with group_0..group_4.
    campaigns: campaign, file_id (the files each recall campaign of the history read)."""
    say = progress or (lambda _m: None)
    if stream.height == 0:
        raise InputError("no written files to advise on")
    # The recorded placement and each level are priced apart, two at a time: numpy's sorts
    # and Polars release the GIL, so two threads keep both cores busy, while a third would
    # add its working set (a few GB at 10,000,000 copies) without a core to run on.
    with _small_pages(), ThreadPoolExecutor(max_workers=PRICED_AT_ONCE) as workers:
        # What the recorded placement reads of the copies alone is coded while the stream is
        # prepared.
        recorded = workers.submit(_RecordedCopies.of, copies, stream)
        prepared = prepare_hints(stream)
        a = prepared.arrivals
        pools = prepared.pools
        # Integer sums: a pool's bytes pass 2**53 on a large site.
        pool_bytes = np.array([float(a.size[a.pool == k].sum()) for k in range(len(pools))])
        open_per_pool = drives_per_pool(
            replace(params, write_drives=options.open_families, drives_by_pool=()),
            pools,
            pool_bytes,
        )
        open_map = tuple(zip(pools, (int(x) for x in open_per_pool), strict=True))
        stream_figures = _StreamFigures.of(prepared, campaigns)
        inputs = _RecallInputs(campaigns, recall, params)
        prepared.migrations(params)  # cut once here, not by two replays at a time
        sizes = a.size.astype(np.float64)
        families_of: dict[int, np.ndarray] = {}
        same_as: dict[int, int] = {}
        for level in options.levels:
            codes = family_codes(prepared.groups, a.pool, sizes, level, options.min_family_bytes)
            # A level that names no group of its own (few senders name level 4, KIT only level
            # 3) gives every file the family of a level already replayed: the same placement.
            same = next((k for k, c in families_of.items() if np.array_equal(c, codes)), None)
            if same is None:
                families_of[level] = codes
            else:
                same_as[level] = same

        def price_recorded() -> list[dict[str, object]]:
            say(f"pricing the recorded placement ({copies.height:,} copies)")
            return _recorded_figures(recorded.result(), prepared, stream_figures, campaigns, recall)

        def price_level(level: int) -> tuple[FamilyReplay, list[dict[str, object]]]:
            say(f"replaying the writes collocated by hint level {level}")
            policy = FamilyPolicy(level, open_map, options.min_family_bytes)
            replayed = replay_family_arrays(prepared, params, policy, families_of[level])
            figures = _replay_figures(
                prepared, replayed, stream_figures, inputs, f"level {level}", level, dict(open_map)
            )
            return replayed, figures

        recorded_rows = workers.submit(price_recorded)
        by_level = {level: workers.submit(price_level, level) for level in families_of}
        rows = recorded_rows.result()
        replayed_by_level: dict[int, FamilyReplay] = {}
        for level in options.levels:
            if level in same_as:
                same = same_as[level]
                say(f"hint level {level} makes the families of level {same}: the same placement")
                replayed_by_level[level] = replayed_by_level[same]
                rows += [
                    {**row, "placement": f"level {level}", "level": level}
                    for row in rows
                    if row["level"] == same
                ]
                continue
            replayed_by_level[level], level_rows = by_level[level].result()
            rows += level_rows
        table = _choose(pl.DataFrame(rows, schema=TABLE_SCHEMA, orient="row"))
        advised = table.filter(pl.col("advised") & pl.col("level").is_not_null()).select(
            "pool", "level"
        )
        chosen = [
            (
                pool,
                int(level),
                replayed_by_level[int(level)],
                np.flatnonzero(a.pool == pools.index(pool)),
            )
            for pool, level in advised.iter_rows()
        ]

        def placement() -> pl.DataFrame:
            # Only the advised pools' files are named (families, volumes), in the stream's order.
            parts = [
                placed_families(prepared, params, replayed, rows) for _, _, replayed, rows in chosen
            ]
            return pl.concat(parts, how="vertical_relaxed") if parts else pl.DataFrame()

        return Advice(table, _advised_families(prepared, chosen), placement)


@contextmanager
def _small_pages() -> Iterator[None]:
    """numpy's arrays without the advice to back them by transparent huge pages, while the
    advice runs. It makes and drops arrays of the catalog's length by the hundred: where the
    kernel backs such an array by huge pages on request (transparent_hugepage `madvise`), each
    one's first touch may stall in the kernel compacting memory for a huge page, which cost
    more CPU than the huge pages save (on 1,000,000 copies 9.7 s instead of 7.4)."""
    toggle = getattr(getattr(np, "_core", None), "multiarray", None)
    set_huge = getattr(toggle, "_set_madvise_hugepage", None)
    if set_huge is None:
        yield
        return
    before = bool(set_huge(False))
    try:
        yield
    finally:
        set_huge(before)


def _with_pool(copies: pl.DataFrame, stream: pl.DataFrame) -> pl.DataFrame:
    """The columns of the copies that the figures read, in the copies' order, with the pool of
    their file in the stream and its row there, `_row` (copies of files not in it left out).
    Each copy finds its file by rows_of: on millions of copies a join gathers every string
    column of the copies again, while this takes only the pool, and leaves the copies as they
    are when every one is in the stream."""
    wanted = set(FIGURE_COLUMNS) | set(ENGINE_COLUMNS)
    left = copies.select([c for c in copies.columns if c in wanted and c != "pool"])
    row = rows_of(left["file_id"], stream["file_id"])
    if row is None:
        return _with_pool_joined(left, stream)  # two of the stream's ids share a hash
    keep = row >= 0
    row_of = pl.Series("_row", np.where(keep, row, 0), dtype=pl.UInt64)
    pool = stream["pool"].cast(pl.String).gather(row_of)
    placed = left.with_columns(pool, row_of.cast(pl.Int64))
    return placed if bool(keep.all()) else placed.filter(pl.Series(keep))


def _with_pool_joined(left: pl.DataFrame, stream: pl.DataFrame) -> pl.DataFrame:
    """_with_pool by a join on the ids' hashes, for a stream in which two ids share one."""
    right = stream.select(
        pl.col("file_id").hash().alias("_hash"),
        pl.col("file_id").alias("_file_id"),
        pl.col("pool").cast(pl.String),
        pl.int_range(pl.len(), dtype=pl.Int64).alias("_row"),
    )
    return (
        left.with_columns(pl.col("file_id").hash().alias("_hash"))
        .join(right, on="_hash", how="inner", maintain_order="left")
        .filter(pl.col("file_id") == pl.col("_file_id"))
        .drop("_hash", "_file_id")
    )


@dataclass(frozen=True)
class _RecallInputs:
    """What the recalls of a placement read besides it."""

    campaigns: pl.DataFrame
    recall: RecallSetup
    params: WhatIfParams


@dataclass(frozen=True)
class _StreamFigures:
    """What every replay of one stream shares: per pool its files and datasets, and the
    stream's rows that the campaigns read."""

    files: np.ndarray  # distinct file ids per pool
    datasets: np.ndarray  # distinct datasets per pool
    campaign_rows: np.ndarray  # ascending rows of the prepared stream

    @staticmethod
    def of(prepared: HintStream, campaigns: pl.DataFrame) -> _StreamFigures:
        a, n_pools = prepared.arrivals, len(prepared.pools)
        # The stream's own rows: its file ids are not put in arrival order for this.
        source_at = prepared.order.to_numpy()
        row_pool = np.empty(source_at.shape[0], dtype=np.int64)
        row_pool[source_at] = a.pool
        file_id = prepared.source["file_id"]
        files = _distinct_ids_per_pool(file_id, row_pool, n_pools)
        # Dataset codes are of the whole stream: a pool's are its distinct (pool, code) pairs.
        width = int(a.dataset.max(initial=0)) + 1
        present = np.zeros(n_pools * width, dtype=bool)
        present[a.pool * width + a.dataset] = True
        datasets = present.reshape(n_pools, width).sum(axis=1).astype(np.int64)
        read = file_id.is_in(campaigns["file_id"].implode()).to_numpy()
        return _StreamFigures(files, datasets, np.flatnonzero(read[source_at]))


def _distinct_ids_per_pool(ids: pl.Series, pool: np.ndarray, n_pools: int) -> np.ndarray:
    """Per pool the distinct ids among its rows: counted on the ids' 64-bit hashes, which
    are distinct, and so are the ids, where the pool has as many as rows; else on the ids."""
    frame = pl.DataFrame({"pool": pool, "id": ids})
    if ids.null_count() == 0:
        per_pool = frame.group_by("pool").agg(
            pl.col("id").hash().n_unique().alias("hashes"), pl.len().alias("rows")
        )
        if (per_pool["hashes"] == per_pool["rows"]).all():
            out = np.zeros(n_pools, dtype=np.int64)
            out[per_pool["pool"].to_numpy()] = per_pool["rows"].to_numpy()
            return out
    per_pool = frame.group_by("pool").agg(pl.col("id").n_unique())
    out = np.zeros(n_pools, dtype=np.int64)
    out[per_pool["pool"].to_numpy()] = per_pool["id"].to_numpy()
    return out


def _replay_figures(
    prepared: HintStream,
    replayed: FamilyReplay,
    shared: _StreamFigures,
    inputs: _RecallInputs,
    name: str,
    level: int,
    open_map: dict[str, int],
) -> list[dict[str, object]]:
    """The table rows of a replayed placement, from the replay's arrays: the figures _figures
    takes of a placed frame, with only the campaigns' files named for the recall engine."""
    a, obj, pools = prepared.arrivals, replayed.obj, prepared.pools
    n_pools = len(pools)
    # The files in write order: objects are numbered in it, so their tapes are read in turn.
    written = _Written.of(prepared, replayed)
    # Tapes and families each belong to one pool (a family code is of a pool's group, or its
    # rest), so a pool's count is that of the distinct ones its files name.
    tape_pool = np.full(obj.tape_media.shape[0], -1, dtype=np.int64)
    tape_pool[written.tape] = written.pool
    tapes = np.bincount(tape_pool[tape_pool >= 0], minlength=n_pools)
    low = int(replayed.family.min())
    family_pool = np.full(int(replayed.family.max()) - low + 1, -1, dtype=np.int64)
    family_pool[replayed.family - low] = a.pool
    families = np.bincount(family_pool[family_pool >= 0], minlength=n_pools)
    tapes_per_dataset, mean_gap = _replay_gaps(prepared, written, shared.datasets)
    read = placed_families(prepared, inputs.params, replayed, shared.campaign_rows)
    wanted = set(FIGURE_COLUMNS) | set(ENGINE_COLUMNS)
    read = read.select([c for c in read.columns if c in wanted])
    read_by_pool = read.partition_by("pool", as_dict=True, include_key=False)
    cost = replayed.cost.frame
    rows: list[dict[str, object]] = []
    for k, pool in enumerate(pools):
        if shared.files[k] == 0 and tapes[k] == 0:
            continue
        recalls = _recalls(
            read_by_pool.get((pool,), read.clear().drop("pool")),
            inputs.campaigns,
            inputs.recall,
        )
        mine_cost = cost.filter(pl.col("pool") == pool)
        rows.append(
            _table_row(
                pool,
                name,
                level,
                (int(families[k]), open_map.get(pool), int(shared.files[k]), int(tapes[k])),
                (tapes_per_dataset[k], mean_gap[k]),
                recalls,
                (int(mine_cost["write_mounts"][0]), int(mine_cost["partly_filled_tapes"][0])),
            )
        )
    return rows


def _table_row(
    pool: str,
    placement: str,
    level: int | None,
    counts: tuple[int | None, int | None, int, int],
    gaps: tuple[float, float],
    recalls: tuple[int, float, float, int],
    written: tuple[int | None, int],
) -> dict[str, object]:
    """A row of the advice's table (TABLE_SCHEMA), not advised: counts are its families, open
    families, files and tapes; gaps its tapes per dataset and mean gap (NaN for none); recalls
    as _recalls returns them; written its write mounts and partly filled tapes."""
    families, open_families, files, tapes = counts
    mounts, hours, elapsed, n_campaigns = recalls
    return {
        "pool": pool,
        "placement": placement,
        "level": level,
        "advised": False,
        "families": families,
        "open_families": open_families,
        "files": files,
        "tapes": tapes,
        "tapes_per_dataset": _number(gaps[0]),
        "mean_gap": _number(gaps[1]),
        "campaigns": n_campaigns,
        "recall_mounts": mounts,
        "recall_hours": hours,
        "recall_elapsed_hours": elapsed,
        "write_mounts": written[0],
        "partly_filled_tapes": written[1],
    }


@dataclass(frozen=True)
class _Written:
    """A replay's files in write order: each one's tape, position, pool and dataset, and
    whether it is an aggregate's member."""

    tape: np.ndarray
    position: np.ndarray
    pool: np.ndarray
    dataset: np.ndarray
    member: np.ndarray

    @staticmethod
    def of(prepared: HintStream, replayed: FamilyReplay) -> _Written:
        a, obj, order = prepared.arrivals, replayed.obj, replayed.write_order
        # The objects ascend in write order, so their tapes are read in turn, not at random.
        in_order = obj.file_obj[order]
        return _Written(
            obj.obj_tape[in_order],
            obj.obj_pos[in_order],
            a.pool[order],
            a.dataset[order],
            obj.file_member[order] > 0,
        )


def _replay_gaps(
    prepared: HintStream, written: _Written, datasets: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Gap figures per pool of a replay: its files in write order lie on each tape in position
    (and offset) order, so one stable sort by tape and dataset puts them in gap order. A
    dataset's files mostly follow one another in write order, so the sort moves runs of them
    and the arrays taken in its order are read almost in turn."""
    width = int(prepared.arrivals.dataset.max()) + 1
    at = np.argsort(written.tape * width + written.dataset, kind="stable")
    return ordered_gap_figures(
        written.pool[at],
        written.tape[at],
        written.dataset[at],
        written.position[at],
        written.member[at],
        datasets,
    )


def _number(value: float) -> float | None:
    return None if np.isnan(value) else float(value)


@dataclass(frozen=True)
class _RecordedCopies:
    """The copies as the recorded placement's figures read them (_with_pool's), and, when
    none lacks a key (RECORDED_KEYS), their volume, dataset and media as dense codes and
    counts, and each one's media capacity (-1 unknown): what needs the copies alone."""

    placed: pl.DataFrame
    codes: tuple[tuple[np.ndarray, int], tuple[np.ndarray, int], tuple[np.ndarray, int]] | None
    capacity: np.ndarray | None

    @staticmethod
    def of(copies: pl.DataFrame, stream: pl.DataFrame) -> _RecordedCopies:
        placed = _with_pool(copies, stream)
        if placed.height == 0 or placed.select(RECORDED_KEYS).null_count().sum_horizontal()[0]:
            return _RecordedCopies(placed, None, None)
        codes = (
            dense_codes(placed["volume"]),
            dense_codes(placed["dataset"]),
            dense_codes(placed["media_type"].fill_null("")),
        )
        capacity = (
            placed["media_type"]
            .replace_strict(
                {m: MEDIA[m].capacity_bytes for m in MEDIA}, default=None, return_dtype=pl.Int64
            )
            .fill_null(-1)
            .to_numpy()
        )
        return _RecordedCopies(placed, codes, capacity)


RECORDED_KEYS = ["pool", "dataset", "volume", "position", "file_id"]


def _recorded_figures(
    recorded: _RecordedCopies,
    prepared: HintStream,
    shared: _StreamFigures,
    campaigns: pl.DataFrame,
    recall: RecallSetup,
) -> list[dict[str, object]]:
    """The table rows of the recorded placement (_with_pool's copies) as _figures takes them,
    counted on integer codes: each copy's pool from its stream row, its volume, dataset and
    media as dense codes of their categories, so no string is sorted, grouped or searched.
    Copies lacking a pool, dataset, volume, position or file id go through _figures."""
    pools, placed = prepared.pools, recorded.placed
    if recorded.codes is None or recorded.capacity is None:
        return _figures(placed, campaigns, recall, pools, RECORDED, None, {}, None)
    n_pools, row = len(pools), placed["_row"].to_numpy()
    # The pool code of each stream row (the prepared arrays are in arrival order).
    source_at = prepared.order.to_numpy()
    row_pool = np.empty(source_at.shape[0], dtype=np.int64)
    row_pool[source_at] = prepared.arrivals.pool
    pool = row_pool[row]
    (volume, n_volumes), (dataset, n_datasets), (media, n_media) = recorded.codes
    # A dataset and a tape are of a pool: two pools' datasets of one name stay apart.
    pool_dataset, _ = renumbered(pool * n_datasets + dataset)
    datasets = _distinct_per_pool(pool_dataset, pool, n_pools)
    files = _distinct_per_pool(row, pool, n_pools)
    tapes = _distinct_per_pool(pool * n_volumes + volume, pool, n_pools)
    position = placed["position"].cast(pl.Int64).to_numpy()
    offset = placed["offset_bytes"] if "offset_bytes" in placed.columns else None
    member = np.zeros(placed.height, dtype=bool)
    for name in ("offset_bytes", "aggregate_id"):
        if name in placed.columns:
            member |= placed[name].is_not_null().to_numpy()
    at = _gap_order(volume, pool_dataset, position, offset)
    tapes_per_dataset, mean_gap = ordered_gap_figures(
        pool[at], volume[at], pool_dataset[at], position[at], member[at], datasets
    )
    # Tape fill: the bytes of each pool's copies on each (volume, media type).
    capacity = recorded.capacity
    tape_key = (pool * n_volumes + volume) * n_media + media
    size = placed["size_bytes"].fill_null(0).to_numpy().astype(np.float64)
    used = np.bincount(tape_key, weights=size)
    held = np.bincount(tape_key) > 0
    tape_capacity = np.full(used.shape[0], -1, dtype=np.int64)
    tape_capacity[tape_key] = capacity
    partly = held & (tape_capacity >= 0) & (used < FULL_SHARE * tape_capacity)
    key_pool = np.arange(used.shape[0]) // (n_volumes * n_media)
    partly_filled = np.bincount(key_pool[partly], minlength=n_pools)
    # The recalls read the campaigns' files only: picked out once, in the placement's order.
    read_row = np.zeros(source_at.shape[0], dtype=bool)
    read_row[source_at[shared.campaign_rows]] = True
    wanted = set(FIGURE_COLUMNS) | set(ENGINE_COLUMNS)
    narrow = placed.select([c for c in placed.columns if c in wanted])
    read = narrow.filter(pl.Series(read_row[row]))
    read_by_pool = read.partition_by("pool", as_dict=True, include_key=False)
    copies_per_pool = np.bincount(pool, minlength=n_pools)
    rows: list[dict[str, object]] = []
    for k, name in enumerate(pools):
        if copies_per_pool[k] == 0:
            continue
        recalls = _recalls(read_by_pool.get((name,), read.clear().drop("pool")), campaigns, recall)
        rows.append(
            _table_row(
                name,
                RECORDED,
                None,
                (None, None, int(files[k]), int(tapes[k])),
                (tapes_per_dataset[k], mean_gap[k]),
                recalls,
                (None, int(partly_filled[k])),
            )
        )
    return rows


def _distinct_per_pool(codes: np.ndarray, pool: np.ndarray, n_pools: int) -> np.ndarray:
    """Per pool the distinct codes among its copies (each code of one pool)."""
    present = np.zeros(int(codes.max(initial=-1)) + 1, dtype=bool)
    present[codes] = True
    code_pool = np.zeros(present.shape[0], dtype=np.int64)
    code_pool[codes] = pool
    return np.bincount(code_pool[present], minlength=n_pools)


def _gap_order(
    volume: np.ndarray, dataset: np.ndarray, position: np.ndarray, offset: pl.Series | None
) -> np.ndarray:
    """The copies' order by volume, dataset, position, then offset with the unaggregated
    first: one sort of a single int64 key when they fit in one."""
    keys = [volume, dataset, position - int(position.min(initial=0))]
    widths = [int(k.max(initial=0)) + 1 for k in keys]
    held = offset is not None and offset.null_count() < offset.len()
    if held and offset is not None:
        low = int(offset.min())  # type: ignore[arg-type]
        keys.append((offset.cast(pl.Int64) - low + 1).fill_null(0).to_numpy())
        widths.append(int(keys[-1].max()) + 1)
    span = 1
    for width in widths:
        span *= width
    if span >= 1 << 62:
        return np.lexsort(tuple(reversed(keys)))
    combined = np.zeros(volume.shape[0], dtype=np.int64)
    for key, width in zip(keys, widths, strict=True):
        combined = combined * width + key
    return np.argsort(combined, kind="stable")


def _figures(
    placed: pl.DataFrame,
    campaigns: pl.DataFrame,
    recall: RecallSetup,
    pools: list[str],
    name: str,
    level: int | None,
    open_map: dict[str, int],
    cost: pl.DataFrame | None,
) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    # Only the columns the figures read: sorting and filtering the wide placed frame (hint
    # groups, paths) cost more than the figures themselves.
    wanted = set(FIGURE_COLUMNS) | {c for c in ENGINE_COLUMNS if c in placed.columns}
    narrow = placed.select([c for c in placed.columns if c in wanted])
    gaps = _gap_figures(narrow, pools)
    counts = {
        str(r["pool"]): r
        for r in narrow.group_by("pool")
        .agg(
            pl.col("file_id").n_unique().alias("files"),
            pl.col("volume").n_unique().alias("tapes"),
            (pl.col("family").n_unique() if "family" in narrow.columns else pl.lit(None))
            .first()
            .alias("families"),
        )
        .iter_rows(named=True)
    }
    # The recalls read the campaigns' files only: picked out once, in the placement's order.
    read = narrow.filter(pl.col("file_id").is_in(campaigns["file_id"].implode()))
    read_by_pool = read.partition_by("pool", as_dict=True, include_key=False)
    for pool in pools:
        if pool not in counts:
            continue
        empty = narrow.clear().drop("pool")
        mounts, hours, elapsed, n_campaigns = _recalls(
            read_by_pool.get((pool,), empty), campaigns, recall
        )
        tapes_per_dataset, mean_gap = gaps.get(pool, (None, None))
        row: dict[str, object] = {
            "pool": pool,
            "placement": name,
            "level": level,
            "advised": False,
            "families": counts[pool]["families"],
            "open_families": open_map.get(pool) if level is not None else None,
            "files": counts[pool]["files"],
            "tapes": counts[pool]["tapes"],
            "tapes_per_dataset": tapes_per_dataset,
            "mean_gap": mean_gap,
            "campaigns": n_campaigns,
            "recall_mounts": mounts,
            "recall_hours": hours,
            "recall_elapsed_hours": elapsed,
            "write_mounts": None,
            "partly_filled_tapes": None,
        }
        mine_cost = cost.filter(pl.col("pool") == pool) if cost is not None else None
        if mine_cost is not None and mine_cost.height:
            row["write_mounts"] = int(mine_cost["write_mounts"][0])
            row["partly_filled_tapes"] = int(mine_cost["partly_filled_tapes"][0])
        else:
            row["partly_filled_tapes"] = _partly_filled(narrow.filter(pl.col("pool") == pool))
        rows.append(row)
    return rows


def _gap_figures(placed: pl.DataFrame, pools: list[str]) -> dict[str, tuple[float | None, ...]]:
    """Per pool the mean tapes per dataset and the mean counted gap, as `whatif placement`
    measures them (stats.summarise) of the pool's copies alone: one pass over every pool, a
    dataset and a volume taken as integer codes (a dataset qualified by its pool, so two
    pools' datasets of one name stay apart), one sort of the codes into gap order."""
    pool_rank = (
        pl.col("pool")
        .cast(pl.String)
        .replace_strict(pools, list(range(len(pools))), default=None, return_dtype=pl.Int64)
    )
    dataset_code = pl.col("dataset").cast(pl.Categorical).to_physical().cast(pl.Int64)
    offset = pl.col("offset_bytes") if "offset_bytes" in placed else pl.lit(None, pl.Int64)
    aggregate = pl.col("aggregate_id") if "aggregate_id" in placed else pl.lit(None, pl.String)
    coded = placed.select(
        pool_rank.alias("pool"),
        (pool_rank * (1 << 32) + dataset_code).alias("dataset"),
        pl.col("volume").cast(pl.Categorical).to_physical().cast(pl.Int64),
        pl.col("position").cast(pl.Int64),
        offset.alias("offset_bytes"),
        (offset.is_not_null() | aggregate.is_not_null()).alias("member"),
    )
    if coded.select("pool", "dataset", "volume", "position").null_count().sum_horizontal()[0]:
        return _gap_figures_of_frame(placed, pools)
    datasets = np.zeros(len(pools), dtype=np.int64)
    per_pool = coded.group_by("pool").agg(pl.col("dataset").n_unique())
    datasets[per_pool["pool"].to_numpy()] = per_pool["dataset"].to_numpy()
    ordered = coded.sort("volume", "dataset", "position", "offset_bytes", nulls_last=False)
    column = {c: ordered[c].to_numpy() for c in ("pool", "volume", "dataset", "position")}
    tapes_per_dataset, mean_gap = ordered_gap_figures(
        column["pool"],
        column["volume"],
        column["dataset"],
        column["position"],
        ordered["member"].to_numpy(),
        datasets,
    )
    return {
        pool: (_number(tapes_per_dataset[k]), _number(mean_gap[k])) for k, pool in enumerate(pools)
    }


def _gap_figures_of_frame(
    placed: pl.DataFrame, pools: list[str]
) -> dict[str, tuple[float | None, ...]]:
    """Per pool the mean tapes per dataset and the mean counted gap through stats.summarise
    itself, for copies lacking a pool, dataset, volume or position among them: each pool a
    dataset type of its own, a dataset and a volume taken as integer codes (a dataset
    qualified by its pool, so two pools' datasets of one name stay apart)."""
    pool_code = (
        pl.col("pool")
        .cast(pl.String)
        .replace_strict(pools, [f"pool {k}" for k in range(len(pools))], default=None)
    )
    dataset_code = pl.col("dataset").cast(pl.Categorical).to_physical().cast(pl.Int64)
    pool_rank = (
        pl.col("pool")
        .cast(pl.String)
        .replace_strict(pools, list(range(len(pools))), default=None, return_dtype=pl.Int64)
    )
    coded = placed.select(
        pool_code.alias("dataset_type"),
        (pool_rank * (1 << 32) + dataset_code).alias("dataset"),
        pl.col("volume").cast(pl.Categorical).to_physical(),
        *[c for c in ("position", "offset_bytes", "aggregate_id", "written_at") if c in placed],
    )
    stats = summarise(coded, "written_at")
    out: dict[str, tuple[float | None, ...]] = {}
    for k, pool in enumerate(pools):
        mine = stats.filter(pl.col("dataset_type") == f"pool {k}")
        out[pool] = (_first(mine, "tapes_per_dataset_mean"), _first(mine, "mean_gap"))
    return out


def _first(frame: pl.DataFrame, column: str) -> float | None:
    if frame.height == 0 or frame[column][0] is None:
        return None
    return float(frame[column][0])


def _partly_filled(copies: pl.DataFrame) -> int:
    """Tapes of these copies filled to less than FULL_SHARE of their media's capacity (the
    bytes of the given copies on them)."""
    used = copies.group_by("volume", "media_type").agg(pl.col("size_bytes").sum().alias("used"))
    capacity = pl.col("media_type").replace_strict(
        {m: MEDIA[m].capacity_bytes for m in MEDIA}, default=None, return_dtype=pl.Int64
    )
    return int(used.filter(pl.col("used") < FULL_SHARE * capacity).height)


def _recalls(
    placed: pl.DataFrame, campaigns: pl.DataFrame, recall: RecallSetup
) -> tuple[int, float, float, int]:
    """Mounts, drive hours and elapsed hours of recalling each campaign's files from `placed`,
    one campaign after the other, each on all the drives (the engine's plan of it), and the
    number of campaigns. A mount's drive time runs from the robot's mount to its dismount."""
    columns = [c for c in ENGINE_COLUMNS if c in placed.columns]
    if placed.schema.get("written_at", pl.Float64()).is_temporal():
        columns.append("written_at")  # a replayed placement's times are the migrations'
    # The campaigns in their names' order, each one's files in the placement's: the sums do
    # not depend on how a join orders its rows.
    wanted = placed.select(columns).join(
        campaigns.select("campaign", "file_id"), on="file_id", how="inner", maintain_order="left"
    )
    wanted = wanted.filter(pl.col("media_type").is_in(list(recall.params_by_media)))
    mounts, drive_s, elapsed_s, n = 0, 0.0, 0.0, 0
    by_campaign = wanted.partition_by("campaign", as_dict=True)
    for _key, files in sorted(by_campaign.items(), key=lambda item: str(item[0][0])):
        done = predict_recall(
            files.drop("campaign"),
            recall.drives,
            recall.params_by_media,
            readable_by=recall.readable_by,
        )
        mounts += done.mounts
        drive_s += float((done.tapes["end_s"] - done.tapes["start_s"]).sum())
        elapsed_s += done.makespan_s
        n += 1
    return mounts, drive_s / HOUR_S, elapsed_s / HOUR_S, n


def _choose(table: pl.DataFrame) -> pl.DataFrame:
    """Mark each pool's advice: the level with the fewest recall hours, ties to fewer partly
    filled tapes, then to the broader level; the recorded placement itself (keep writing as
    now) when no level recalls the history in fewer hours than it."""
    advised: set[tuple[str, int | None]] = set()
    levels = table.filter(pl.col("level").is_not_null())
    for (pool,), rows in levels.group_by(["pool"], maintain_order=True):
        best = float(rows["recall_hours"].min())  # type: ignore[arg-type]
        close = rows.filter(pl.col("recall_hours") <= best * (1 + TIE_SHARE) + 1e-9)
        pick = close.sort("partly_filled_tapes", "level").row(0, named=True)
        now = table.filter((pl.col("pool") == pool) & (pl.col("placement") == RECORDED))
        if now.height and best >= float(now["recall_hours"][0]):
            advised.add((str(pool), None))
        else:
            advised.add((str(pool), int(pick["level"])))
    marks = [
        (p, lv) in advised
        for p, lv in zip(table["pool"].to_list(), table["level"].to_list(), strict=True)
    ]
    return table.with_columns(pl.Series("advised", marks, dtype=pl.Boolean))


FAMILIES_SCHEMA: dict[str, pl.DataType] = {
    "pool": pl.String(),
    "level": pl.Int64(),
    "family": pl.String(),
    "files": pl.Int64(),
    "bytes": pl.Int64(),
    "tapes": pl.Int64(),
}


def _advised_families(
    prepared: HintStream, chosen: list[tuple[str, int, FamilyReplay, np.ndarray]]
) -> pl.DataFrame:
    """The advised families per pool (FAMILIES_SCHEMA), as _families takes them of the
    placement, counted on the replays' family and tape codes: only the families are named."""
    a, parts = prepared.arrivals, []
    for pool, level, replayed, rows in chosen:
        obj = replayed.obj
        counted = (
            pl.DataFrame(
                {
                    "code": replayed.family[rows],
                    "tape": obj.obj_tape[obj.file_obj[rows]],
                    "size": a.size[rows],
                }
            )
            .group_by("code")
            .agg(
                pl.len().cast(pl.Int64).alias("files"),
                pl.col("size").sum().cast(pl.Int64).alias("bytes"),
                pl.col("tape").n_unique().cast(pl.Int64).alias("tapes"),
            )
        )
        codes = counted["code"].to_numpy()
        parts.append(
            counted.select(
                pl.lit(pool, dtype=pl.String).alias("pool"),
                pl.lit(level, dtype=pl.Int64).alias("level"),
                family_names(prepared.groups, codes),
                "files",
                "bytes",
                "tapes",
            )
        )
    if not parts:
        return pl.DataFrame(schema=FAMILIES_SCHEMA)
    return (
        pl.concat(parts)
        .sort("pool", pl.col("bytes"), descending=[False, True])
        .select(list(FAMILIES_SCHEMA))
    )


def levels_of(values: Sequence[str]) -> tuple[int, ...]:
    """Hint levels from their names ("0".."4")."""
    out = []
    for v in values:
        if v not in {str(k) for k in range(LEVELS)}:
            raise InputError(f"hint level {v!r}: expected 0 to {LEVELS - 1}")
        out.append(int(v))
    return tuple(sorted(set(out)))
