"""Tapes of a recall plan onto drives, under a sharing policy (list scheduling).

Each tape is mounted once and holds its drive for its whole predicted time. Whenever a drive is
free, it takes the tape the policy ranks first among those the limits allow
(analysis/recall/schedule/policies.py says how each policy ranks; ties go to the longest tape).
fifo, by-demand and time-slider know no requesters: a small late request waits for an earlier
large one unless `requester_limit` is set (or equal/group sharing is used).

A tape belongs to the requester and group of its oldest request. `max_drives_per_group` caps the
drives busy for one group at once; `requester_limit` caps a requester's files in flight (on tapes
mounted for it and not yet finished; a tape is allowed when nothing else of the requester is in
flight, so no tape waits forever). With several drive types, a fractional assignment of each media
type's work to drive types (a small LP) sets quotas, so that drives lent to older media do not
leave tapes only they can read until the end.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np
import polars as pl
from scipy.optimize import linprog

from tapelens.analysis.recall.schedule.policies import Sharing, TapeQueue
from tapelens.errors import InputError
from tapelens.media import BY_NAME

# Columns dispatch needs per tape.
TAPE_COLUMNS = (
    "volume",
    "media_type",
    "total_s",
    "fifo_rank",  # submission order of the tape's first request
    "rank",  # order of its oldest request, priority first
    "demand_bytes",
    "requester",  # of the oldest request: who the tape is mounted for
    "group",
    "owner_files",  # files of that requester on the tape (its requests in flight)
)


def drive_names(drives: Mapping[str, int]) -> list[tuple[str, str]]:
    """(name, type) of every drive: 'LTO-7#1', 'LTO-8#1', 'LTO-8#2', ... Older generations come
    first, so that when drives free at the same moment the oldest that can read a tape takes it
    and newer drives stay free for the media only they read."""

    def age(kind: str) -> tuple[str, int, str]:
        media = BY_NAME.get(kind)
        return (media.family, media.generation, kind) if media else ("~", 0, kind)

    return [
        (f"{kind}#{i}", kind)
        for kind in sorted(drives, key=age)
        for i in range(1, drives[kind] + 1)
    ]


def readers_of(
    media: list[str], drives: Mapping[str, int], readable_by: Mapping[str, tuple[str, ...]]
) -> dict[str, list[str]]:
    """Media type -> the given drive types that read it; refuses media no drive reads."""
    readers = {m: [d for d in readable_by.get(m, ()) if drives.get(d, 0) > 0] for m in media}
    lost = sorted(m for m, r in readers.items() if not r)
    if lost:
        raise InputError(f"no given drive reads media type(s) {', '.join(lost)}")
    return readers


def fractional_split(
    work_by_media: Mapping[str, float],
    drives: Mapping[str, int],
    readers: Mapping[str, list[str]],
) -> tuple[float, dict[tuple[str, str], float]]:
    """The least makespan if work could be split freely among the drives that read it, and the
    split itself ((media, drive type) -> seconds). A lower bound on any schedule."""
    pairs = [(m, d) for m, w in work_by_media.items() if w > 0 for d in readers[m]]
    types = sorted({d for _, d in pairs})
    if not pairs:
        return 0.0, {}
    n = len(pairs) + 1  # the split, then T
    cost = np.zeros(n)
    cost[-1] = 1.0
    media = sorted({m for m, _ in pairs})
    a_eq = np.zeros((len(media), n))
    for k, (m, _) in enumerate(pairs):
        a_eq[media.index(m), k] = 1.0
    b_eq = np.array([work_by_media[m] for m in media])
    a_ub = np.zeros((len(types), n))
    for k, (_, d) in enumerate(pairs):
        a_ub[types.index(d), k] = 1.0
    for i, d in enumerate(types):
        a_ub[i, -1] = -float(drives[d])
    result = linprog(cost, A_ub=a_ub, b_ub=np.zeros(len(types)), A_eq=a_eq, b_eq=b_eq)
    if result.status != 0:
        return max(work_by_media.values()) / sum(drives.values()), {}
    return float(result.x[-1]), {p: float(v) for p, v in zip(pairs, result.x[:-1], strict=False)}


def dispatch(
    tapes: pl.DataFrame,
    drives: Mapping[str, int],
    sharing: Sharing,
    readable_by: Mapping[str, tuple[str, ...]],
) -> pl.DataFrame:
    """The tapes with drive, drive_type, start_s, end_s and mount_order (1 = first mounted)."""
    missing = [c for c in TAPE_COLUMNS if c not in tapes.columns]
    if missing:
        raise InputError(f"tapes to dispatch lack column(s) {', '.join(missing)}")
    if tapes.height == 0:
        return tapes.with_columns(
            pl.lit(None, pl.String).alias("drive"),
            pl.lit(None, pl.String).alias("drive_type"),
            pl.lit(None, pl.Float64).alias("start_s"),
            pl.lit(None, pl.Float64).alias("end_s"),
            pl.lit(None, pl.Int64).alias("mount_order"),
        )
    media = tapes["media_type"].to_list()
    readers = readers_of(sorted(set(media)), drives, readable_by)
    work = tapes.group_by("media_type").agg(pl.col("total_s").sum())
    _, split = fractional_split(dict(work.iter_rows()), drives, readers)
    state = _State(tapes, drives, sharing, readers, split)
    return state.run()


class _State:
    def __init__(
        self,
        tapes: pl.DataFrame,
        drives: Mapping[str, int],
        sharing: Sharing,
        readers: Mapping[str, list[str]],
        split: dict[tuple[str, str], float],
    ) -> None:
        self.tapes = tapes
        self.drives = {d: n for d, n in drives.items() if n > 0}
        self.sharing = sharing
        self.media = tapes["media_type"].to_list()
        self.total = tapes["total_s"].cast(pl.Float64).to_list()
        self.requester = _codes(tapes["requester"].to_list())
        group_names = tapes["group"].to_list()
        self.group = _codes(group_names)
        self.owner_files = tapes["owner_files"].to_list()
        self.quota = dict(split)
        self.mixed = len({d for r in readers.values() for d in r}) > 1
        weight_of = dict(sharing.group_weights)
        weights = [1.0] * (max(self.group, default=-1) + 1)
        for name, code in zip(group_names, self.group, strict=True):
            weights[code] = weight_of.get(name, 1.0)
        media_names = sorted(set(self.media))
        self.media_code = {m: i for i, m in enumerate(media_names)}
        self.queue = TapeQueue(sharing, tapes.height, weights)
        for i, key in enumerate(self._keys()):
            self.queue.rank(
                i, self.media_code[self.media[i]], key, self.requester[i], self.group[i]
            )
        self.media_for: dict[str, set[str]] = {}
        for m, types in readers.items():
            for d in types:
                self.media_for.setdefault(d, set()).add(m)
        self.pending = Counter(self.media)

    def _keys(self) -> list[tuple[float, ...]]:
        """Per tape, the policy's sort key (smaller first); the longest tape breaks ties, then
        the later row (the order list scheduling has always taken)."""
        t = self.tapes
        longest = (-t["total_s"].cast(pl.Float64)).to_list()
        if self.sharing.policy == "fifo":
            first = t["fifo_rank"].to_list()
        elif self.sharing.policy == "by-demand":
            first = (-t["demand_bytes"].cast(pl.Float64)).to_list()
        else:
            first = t["rank"].to_list()
        return [(float(a), b, -i) for i, (a, b) in enumerate(zip(first, longest, strict=True))]

    def run(self) -> pl.DataFrame:
        names = drive_names(self.drives)
        free = [(0.0, k) for k in range(len(names))]
        heapq.heapify(free)
        running: list[tuple[float, int]] = []
        busy_req = [0] * (max(self.requester, default=-1) + 1)
        busy_group = [0] * (max(self.group, default=-1) + 1)
        inflight = [0] * len(busy_req)
        limit = self.sharing.max_drives_per_group
        cap = self.sharing.requester_limit

        def allowed(i: int) -> bool:
            if limit is not None and busy_group[self.group[i]] >= limit:
                return False
            held = inflight[self.requester[i]]
            return cap is None or held == 0 or held + self.owner_files[i] <= cap

        n = self.tapes.height
        drive: list[str | None] = [None] * n
        start: list[float | None] = [None] * n
        order: list[int | None] = [None] * n
        mounted = 0
        while free and mounted < n:
            now, k = heapq.heappop(free)
            while running and running[0][0] <= now:
                _, j = heapq.heappop(running)
                busy_req[self.requester[j]] -= 1
                busy_group[self.group[j]] -= 1
                inflight[self.requester[j]] -= self.owner_files[j]
            name, kind = names[k]
            readable = self.media_for.get(kind, set())
            if not any(self.pending[m] for m in readable):
                continue  # nothing left this drive can read: it stays idle
            prefer = None
            if self.mixed:

                def prefer(i: int, kind: str = kind) -> bool:
                    return self.quota.get((self.media[i], kind), 0.0) > 1e-9

            i = self.queue.choose(
                [self.media_code[m] for m in readable if m in self.media_code],
                busy_req,
                busy_group,
                allowed=allowed,
                prefer=prefer,
            )
            if i < 0:
                if not running:
                    raise InputError("dispatch: no tape can start although no drive is busy")
                heapq.heappush(free, (running[0][0], k))  # wait for the next tape to finish
                continue
            self.queue.drop(i)
            mounted += 1
            drive[i], start[i], order[i] = name, now, mounted
            end = now + self.total[i]
            heapq.heappush(free, (end, k))
            heapq.heappush(running, (end, i))
            busy_req[self.requester[i]] += 1
            busy_group[self.group[i]] += 1
            inflight[self.requester[i]] += self.owner_files[i]
            self.pending[self.media[i]] -= 1
            key = (self.media[i], kind)
            self.quota[key] = self.quota.get(key, 0.0) - self.total[i]
        return self.tapes.with_columns(
            pl.Series("drive", drive, dtype=pl.String()),
            pl.Series("start_s", start, dtype=pl.Float64()),
            pl.Series("mount_order", order, dtype=pl.Int64()),
        ).with_columns(
            pl.col("drive").str.split("#").list.first().alias("drive_type"),
            (pl.col("start_s") + pl.col("total_s")).alias("end_s"),
        )


def _codes(values: list[Any]) -> list[int]:
    """Values numbered 0.. in order of first appearance (None is a value like any other)."""
    seen: dict[Any, int] = {}
    return [seen.setdefault(v, len(seen)) for v in values]
