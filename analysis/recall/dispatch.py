"""Tapes of a recall plan onto drives, under a sharing policy.

Each tape is mounted once and holds its drive for its whole predicted time. Whenever a drive is
free, it takes the next tape it can read that the policy ranks first among those the limits allow
(list scheduling; ties go to the longest tape). Policies (docs/domain.md, "Share drives"):

- fifo: tapes in submission order of their first request (priority ignored);
- by-demand: the tape with the most requested bytes first;
- time-slider: the tape of the oldest request first (higher priority first), pulling in every
  other request on the same tape;
- equal: the requester with the fewest drives busy for it goes next (oldest request first within);
- group: likewise between groups; weighted: groups share drives in proportion to their weights.

Fairness comes first; between tapes it leaves equal, the media quotas below, then the policy's
order decide. fifo, by-demand and time-slider know no requesters: a small late request waits for
an earlier large one unless `requester_limit` is set (or equal/group sharing is used).

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
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
from scipy.optimize import linprog

from tapelens.errors import InputError
from tapelens.media import BY_NAME

POLICIES = ("fifo", "by-demand", "time-slider", "equal", "group", "weighted")
DEFAULT_POLICY = "by-demand"

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


@dataclass(frozen=True)
class Sharing:
    """How drives are shared between requests, requesters and groups."""

    policy: str = DEFAULT_POLICY
    max_drives_per_group: int | None = None
    requester_limit: int | None = None
    group_weights: tuple[tuple[str, float], ...] = ()

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise InputError(f"unknown policy {self.policy!r} (expected {', '.join(POLICIES)})")
        if self.max_drives_per_group is not None and self.max_drives_per_group < 1:
            raise InputError("--max-drives-per-group must be at least 1")
        if self.requester_limit is not None and self.requester_limit < 1:
            raise InputError("--requester-limit must be at least 1")
        if any(w <= 0 for _, w in self.group_weights):
            raise InputError("group weights must be positive")

    def as_dict(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "max_drives_per_group": self.max_drives_per_group,
            "requester_limit": self.requester_limit,
            "group_weights": dict(self.group_weights),
        }


def parse_group_weights(spec: str) -> tuple[tuple[str, float], ...]:
    """'atlas=3,cms=1' -> (('atlas', 3.0), ('cms', 1.0)); groups not named weigh 1."""
    weights: list[tuple[str, float]] = []
    for item in spec.split(","):
        if not item.strip():
            continue
        name, sep, value = item.partition("=")
        try:
            weight = float(value)
        except ValueError:
            weight = -1.0
        if not sep or not name.strip() or weight <= 0:
            raise InputError(
                f"--group-weights: expected GROUP=WEIGHT items like atlas=3, got {item.strip()!r}"
            )
        weights.append((name.strip(), weight))
    return tuple(weights)


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
        self.requester = tapes["requester"].to_list()
        self.group = tapes["group"].to_list()
        self.owner_files = tapes["owner_files"].to_list()
        self.quota = dict(split)
        self.mixed = len({d for r in readers.values() for d in r}) > 1
        self.weights = dict(sharing.group_weights)
        by_requester = sharing.policy == "equal" or sharing.requester_limit is not None
        by_group = (
            sharing.policy in ("group", "weighted") or sharing.max_drives_per_group is not None
        )
        keys = self._keys()
        queues: dict[tuple[Any, Any, str], list[int]] = {}
        for i in sorted(range(tapes.height), key=keys.__getitem__, reverse=True):
            owner = (
                self.requester[i] if by_requester else None,
                self.group[i] if by_group else None,
                self.media[i],
            )
            queues.setdefault(owner, []).append(i)  # best last: pop() takes it
        self.queues = queues
        self.keys = keys
        self.media_for: dict[str, set[str]] = {}
        for m, types in readers.items():
            for d in types:
                self.media_for.setdefault(d, set()).add(m)
        self.pending = Counter(self.media)

    def _keys(self) -> list[tuple[float, ...]]:
        """Per tape, the policy's sort key (smaller first); the longest tape breaks ties."""
        t = self.tapes
        longest = (-t["total_s"].cast(pl.Float64)).to_list()
        if self.sharing.policy == "fifo":
            first = t["fifo_rank"].to_list()
        elif self.sharing.policy == "by-demand":
            first = (-t["demand_bytes"].cast(pl.Float64)).to_list()
        else:
            first = t["rank"].to_list()
        return [(float(a), b) for a, b in zip(first, longest, strict=True)]

    def _allowed(self, i: int, busy_group: Counter[Any], inflight: Counter[Any]) -> bool:
        limit = self.sharing.max_drives_per_group
        if limit is not None and busy_group[self.group[i]] >= limit:
            return False
        cap = self.sharing.requester_limit
        if cap is None:
            return True
        held = inflight[self.requester[i]]
        return held == 0 or held + self.owner_files[i] <= cap

    def _choose(
        self,
        drive_type: str,
        busy_req: Counter[Any],
        busy_group: Counter[Any],
        inflight: Counter[Any],
    ) -> tuple[Any, Any, str] | None:
        readable = self.media_for.get(drive_type, set())
        heads = [
            q
            for q, items in self.queues.items()
            if items and q[2] in readable and self._allowed(items[-1], busy_group, inflight)
        ]
        if not heads:
            return None
        policy = self.sharing.policy
        if policy in ("equal", "group", "weighted"):
            # Fairness first: the requester or group with the smallest share of busy drives.
            def share(q: tuple[Any, Any, str]) -> float:
                i = self.queues[q][-1]
                if policy == "equal":
                    return float(busy_req[self.requester[i]])
                weight = self.weights.get(self.group[i], 1.0) if policy == "weighted" else 1.0
                return busy_group[self.group[i]] / weight

            least = min(share(q) for q in heads)
            heads = [q for q in heads if share(q) == least]
        if self.mixed:
            within = [q for q in heads if self.quota.get((q[2], drive_type), 0.0) > 1e-9]
            heads = within or heads
        return min(heads, key=lambda q: self.keys[self.queues[q][-1]])

    def run(self) -> pl.DataFrame:
        names = drive_names(self.drives)
        free = [(0.0, k) for k in range(len(names))]
        heapq.heapify(free)
        running: list[tuple[float, int]] = []
        busy_req: Counter[Any] = Counter()
        busy_group: Counter[Any] = Counter()
        inflight: Counter[Any] = Counter()
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
            if not any(self.pending[m] for m in self.media_for.get(kind, ())):
                continue  # nothing left this drive can read: it stays idle
            q = self._choose(kind, busy_req, busy_group, inflight)
            if q is None:
                if not running:
                    raise InputError("dispatch: no tape can start although no drive is busy")
                heapq.heappush(free, (running[0][0], k))  # wait for the next tape to finish
                continue
            i = self.queues[q].pop()
            if not self.queues[q]:
                del self.queues[q]
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
