"""Drive sharing policies: which waiting tape a free drive takes next.

One ranking serves both users of a policy: the recall engine's list scheduling
(analysis/recall/schedule/dispatch.py, every tape known up front) and the library simulator's sorted
scheduler (analysis/sim/schedulers.py, tapes whose requests arrive, grow and leave over time).
They differ in what they know, not in how they choose. Policies (docs/domain.md, "Share drives"):

- fifo: the tape of the earliest submitted request first (priority ignored);
- by-demand: the tape with the most requested bytes first;
- time-slider: the tape of the oldest request first (higher priority first), pulling in every
  other request on the same tape;
- equal: the requester with the fewest drives busy for it goes next (oldest request first within);
- group: likewise between groups; weighted: groups share drives in proportion to their weights.

A tape belongs to the requester and group of its oldest request. Fairness comes first; then the
caller's preference (the engine's media quotas on mixed drive generations), then the policy's
order (the key a caller gives each tape; smaller first, the lower tape number among equals).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from tapelens.errors import InputError

POLICIES = ("fifo", "by-demand", "time-slider", "equal", "group", "weighted")
DEFAULT_POLICY = "by-demand"
FAIR = ("equal", "group", "weighted")


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
        if self.policy == "weighted" and not self.group_weights:
            # Without weights every group would weigh the same: that is --policy group.
            raise InputError(
                "--policy weighted needs --group-weights G=W,... (each group's share of the"
                " drives); for equal shares use --policy group"
            )

    @property
    def by_requester(self) -> bool:
        """Whether tapes are told apart by requester (fair sharing or a per-requester cap)."""
        return self.policy == "equal" or self.requester_limit is not None

    @property
    def by_group(self) -> bool:
        return self.policy in ("group", "weighted") or self.max_drives_per_group is not None

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


Key = tuple[float, ...]
Queue = tuple[int, int, int]  # (requester, group, media); 0 where the policy does not tell apart


class TapeQueue:
    """The tapes waiting for a drive, ranked by a sharing policy.

    Tapes, requesters, groups and media are numbered by the caller (0..n-1). `rank` puts a tape
    in line or moves it (a later rank voids the earlier one), `drop` takes it out; `choose` gives
    the tape a free drive takes. Within one (requester, group, media) line the tapes sit in a
    heap by (key, tape); entries voided by a later rank or a drop are discarded when met, so
    ranking a tape again as its demand grows costs one heap push.
    """

    def __init__(self, sharing: Sharing, tapes: int, group_weights: Sequence[float] = ()) -> None:
        self.policy = sharing.policy
        self.by_requester = sharing.by_requester
        self.by_group = sharing.by_group
        self.weights = list(group_weights)
        self.version = [0] * tapes
        self.queued = [False] * tapes  # whether the tape is in line now
        self.owner: list[Queue] = [(0, 0, 0)] * tapes
        self.lines: dict[Queue, list[tuple[Key, int, int]]] = {}

    def rank(self, tape: int, media: int, key: Key, requester: int = 0, group: int = 0) -> None:
        """Put `tape` in line (or move it) with `key`, for `requester` and `group`."""
        line = (
            requester if self.by_requester else 0,
            group if self.by_group else 0,
            media,
        )
        self.version[tape] += 1
        self.queued[tape] = True
        self.owner[tape] = (requester, group, media)
        heapq.heappush(self.lines.setdefault(line, []), (key, tape, self.version[tape]))

    def drop(self, tape: int) -> None:
        if self.queued[tape]:
            self.version[tape] += 1
            self.queued[tape] = False

    def waiting(self) -> list[tuple[Queue, Key, int]]:
        """(line, key, tape) of every tape in line, sorted: the state, for comparing runs."""
        return sorted(
            (line, key, t)
            for line, heap in self.lines.items()
            for key, t, version in heap
            if version == self.version[t]
        )

    def requester_of(self, tape: int) -> int:
        return self.owner[tape][0]

    def _head(
        self, heap: list[tuple[Key, int, int]], usable: Callable[[int], bool] | None
    ) -> tuple[Key, int, int] | None:
        """The first entry of a line whose tape `usable` accepts, or None; void entries are
        discarded, valid ones of tapes not usable just now are set aside and put back."""
        version, aside, found = self.version, [], None
        while heap:
            entry = heap[0]
            t = entry[1]
            if entry[2] != version[t]:
                heapq.heappop(heap)
                continue
            if usable is None or usable(t):
                found = entry
                break
            aside.append(heapq.heappop(heap))
        for entry in aside:
            heapq.heappush(heap, entry)
        return found

    def heads(
        self, media: Iterable[int], usable: Callable[[int], bool] | None = None
    ) -> list[tuple[Key, int, Queue]]:
        """(key, tape, line) of the first usable tape of every line of the given media."""
        readable = set(media)
        found = []
        for line, heap in self.lines.items():
            if line[2] in readable and heap:
                entry = self._head(heap, usable)
                if entry is not None:
                    found.append((entry[0], entry[1], line))
        return found

    def choose(
        self,
        media: Iterable[int],
        busy_requester: Sequence[float],
        busy_group: Sequence[float],
        usable: Callable[[int], bool] | None = None,
        allowed: Callable[[int], bool] | None = None,
        prefer: Callable[[int], bool] | None = None,
    ) -> int:
        """The tape a free drive that reads `media` takes, or -1. `busy_requester` and
        `busy_group`: drives busy for each now. `usable`: whether the drive may take a tape at
        all (not in another drive, not kept for a plan); a line's first usable tape is its
        head. `allowed`: whether the limits let a line's head start now (judged on the head
        alone, as a line waits behind it). `prefer`: heads to take first when any is."""
        heads = self.heads(media, usable)
        if allowed is not None:
            heads = [h for h in heads if allowed(h[1])]
        if not heads:
            return -1
        if self.policy in FAIR:
            shares = [self.share(h[2], busy_requester, busy_group) for h in heads]
            least = min(shares)
            heads = [h for h, s in zip(heads, shares, strict=True) if s == least]
        if prefer is not None:
            heads = [h for h in heads if prefer(h[1])] or heads
        return min(heads)[1]

    def share(
        self, line: Queue, busy_requester: Sequence[float], busy_group: Sequence[float]
    ) -> float:
        """A line's share of busy drives, the smallest of which fair sharing serves first."""
        if self.policy == "equal":
            return float(busy_requester[line[0]])
        weight = self.weights[line[1]] if self.policy == "weighted" and self.weights else 1.0
        return busy_group[line[1]] / weight

    def has_work(
        self, requester: int, media: Iterable[int], usable: Callable[[int], bool] | None = None
    ) -> bool:
        """Whether `requester` has a tape in line that a drive reading `media` could take."""
        return any(line[0] == requester for _, _, line in self.heads(media, usable))
