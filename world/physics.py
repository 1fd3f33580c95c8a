"""Where the time goes when files are read from one mounted tape: the synthetic site's physics.

A recall mounts a cartridge (robot move from its cell, load), locates to the first file, then for
each next file either reads through the bytes in between (a small positional gap: the drive streams
over other people's files) or locates (a large gap: a bounded time that grows with the distance),
pays a per-file overhead and streams the file at an effective rate with noise; at the end it
rewinds and unloads (docs/domain.md). These parameters are the ground truth that the throughput
model must recover from the generated logs, so every choice here is explicit and documented.

A tape object is a position on the volume: one file, or a small-file aggregate whose members
share the position. Byte addresses along the tape are the sums of the objects before it (the
contract's contiguous packing), plus a member's offset inside its aggregate.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import polars as pl

from tapelens.media import MediaType

MB = 1_000_000
TB = 1_000_000_000_000

# Any locate costs this share of the media's average locate, however short: stopping the tape,
# finding the nearest key point and restarting (serpentine drives cannot go straight to a block).
LOCATE_BASE_SHARE = 0.2
# The locate time grows with the distance and saturates at this share of the tape's capacity; the
# slope is set so that the mean over a uniformly random target equals the media's average locate.
LOCATE_CAP_REACH = 0.75
# Effective streaming rate as a share of the native rate: GridKa saw 160-210 MB/s for files
# > 9 GB on drives rated 250-360 MB/s (docs/domain.md), i.e. roughly 0.6-0.85 of native.
RATE_SHARE = 0.85
# Per-file cost besides positioning and streaming (tape mark, open/close, disk-side create):
# a few seconds, the order of the 6 s -> 1 s per-file ingest times quoted in docs/domain.md.
OVERHEAD_S = 4.0
# Positional gaps up to this many read through; larger gaps locate (docs/domain.md: "up to gaps of
# about 5" the rate falls as 1/gap, "beyond about 10 files the drive fast-forwards").
READ_THROUGH_MAX_GAP = 10
# Log-normal sigmas of the multiplicative noise on streaming time and on locate time.
RATE_NOISE = 0.08
LOCATE_NOISE = 0.15


@dataclass(frozen=True)
class PhysicsParams:
    """The physical model of reading one media type (times in seconds, rates in MB/s = 1e6 B/s)."""

    media_type: str
    capacity_bytes: int  # of a cartridge: the locate slope per whole tape is relative to it
    robot_s: float  # cell to drive; the same back
    load_s: float  # thread and load until ready
    locate_base_s: float  # the cost of any locate
    locate_s_per_tb: float  # growth with the distance travelled
    locate_max_s: float  # the cap: a locate never takes longer
    read_through_max_gap: int  # largest positional gap (posdiff) read through instead of located
    overhead_s: float  # per tape object read
    rate_mb_s: float  # effective streaming rate
    rate_noise: float  # log-normal sigma of the streaming-time multiplier (mean 1)
    locate_noise: float  # log-normal sigma of the locate-time multiplier (mean 1)
    rewind_s: float
    unload_s: float

    def locate_s(self, distance_bytes: np.ndarray | float) -> np.ndarray:
        """Locate time over a distance in bytes (either direction), without noise."""
        distance_tb = np.abs(np.asarray(distance_bytes, dtype=np.float64)) / TB
        return np.minimum(
            self.locate_base_s + self.locate_s_per_tb * distance_tb, self.locate_max_s
        )

    def locate_one_s(self, distance_bytes: float) -> float:
        """locate_s for one distance, without numpy's per-call cost (the FIFO scheduler's path)."""
        t = self.locate_base_s + self.locate_s_per_tb * abs(distance_bytes) / TB
        return t if t < self.locate_max_s else self.locate_max_s

    @property
    def locate_slope_s(self) -> float:
        """Locate growth per whole tape of distance (before the cap)."""
        return self.locate_s_per_tb * self.capacity_bytes / TB

    @property
    def mount_s(self) -> float:
        """From the mount request to ready at load point, robots free."""
        return self.robot_s + self.load_s

    @property
    def dismount_s(self) -> float:
        """From the last read to the drive being empty (the robot's return is not included)."""
        return self.rewind_s + self.unload_s

    def as_row(self) -> dict[str, object]:
        return asdict(self) | {"locate_slope_s": round(self.locate_slope_s, 3)}


def default_physics(media: MediaType) -> PhysicsParams:
    """Physics of a media type from its catalog figures (tapelens/media.py) and the shares above."""
    base_s = LOCATE_BASE_SHARE * media.locate_avg_s
    # mean over uniform targets = base + (max - base) * (1 - reach / 2) = locate_avg_s
    max_s = base_s + (media.locate_avg_s - base_s) / (1 - LOCATE_CAP_REACH / 2)
    per_tb = (max_s - base_s) / (LOCATE_CAP_REACH * media.capacity_bytes / TB)
    return PhysicsParams(
        media_type=media.media_type,
        capacity_bytes=int(media.capacity_bytes),
        robot_s=float(media.robot_s),
        load_s=float(media.load_s),
        locate_base_s=round(base_s, 3),
        locate_s_per_tb=round(per_tb, 3),
        locate_max_s=round(max_s, 3),
        read_through_max_gap=READ_THROUGH_MAX_GAP,
        overhead_s=OVERHEAD_S,
        rate_mb_s=round(RATE_SHARE * media.native_rate_mb_s, 3),
        rate_noise=RATE_NOISE,
        locate_noise=LOCATE_NOISE,
        rewind_s=float(media.rewind_avg_s),
        unload_s=float(media.unload_s),
    )


def physics_frame(params: list[PhysicsParams]) -> pl.DataFrame:
    """One row per media type: the parameters a history was generated with (for the truth)."""
    rows = [p.as_row() for p in sorted(params, key=lambda p: p.media_type)]
    ints = {"capacity_bytes", "read_through_max_gap"}
    schema: dict[str, pl.DataType] = {
        name: pl.String() if name == "media_type" else pl.Int64() if name in ints else pl.Float64()
        for name in [*PhysicsParams.__dataclass_fields__, "locate_slope_s"]
    }
    return pl.DataFrame(rows, schema=schema)


def lognormal_multiplier(sigma: float | np.ndarray, z: np.ndarray) -> np.ndarray:
    """exp(sigma z - sigma^2 / 2): a multiplier with mean 1 from standard normal draws z, so
    that noise does not shift the mean time the calibration has to recover."""
    s = np.asarray(sigma, dtype=np.float64)
    return np.exp(s * np.asarray(z, dtype=np.float64) - 0.5 * s * s)


@dataclass(frozen=True)
class Head:
    """Where the drive's head is: after the last object read (position 0 = at load point)."""

    position: int = 0
    bytes: int = 0


@dataclass(frozen=True)
class Timeline:
    """Per read, in read order: positioning (locate or read-through), overhead and streaming."""

    positioning_s: np.ndarray
    overhead_s: np.ndarray
    read_s: np.ndarray
    located: np.ndarray  # True where the drive located rather than streamed to the file
    head: Head  # after the last read

    @property
    def duration_s(self) -> np.ndarray:
        return self.positioning_s + self.overhead_s + self.read_s


def read_timeline(
    params: PhysicsParams,
    position: np.ndarray,
    object_start_bytes: np.ndarray,
    address_bytes: np.ndarray,
    size_bytes: np.ndarray,
    rate_mult: np.ndarray | None = None,
    locate_mult: np.ndarray | None = None,
    head: Head | None = None,
) -> Timeline:
    """The time of each read of one mount, files given in read order.

    A read of the same tape object as the previous one, further on, streams on (aggregate members
    are one tape object: no locate, no overhead). A gap of 1..read_through_max_gap positions
    streams through the bytes in between. Anything else (the first read after load, a larger gap,
    a step backwards) locates over the byte distance to the object's start, then streams to the
    member's offset. The multipliers (mean 1) scale streaming and locate times; None means none.
    """
    pos = np.asarray(position, dtype=np.int64)
    obj = np.asarray(object_start_bytes, dtype=np.int64)
    addr = np.asarray(address_bytes, dtype=np.int64)
    size = np.asarray(size_bytes, dtype=np.int64)
    n = len(pos)
    start = head or Head()
    rmult = np.ones(n) if rate_mult is None else np.asarray(rate_mult, dtype=np.float64)
    lmult = np.ones(n) if locate_mult is None else np.asarray(locate_mult, dtype=np.float64)
    prev_pos = np.concatenate(([start.position], pos[:-1])) if n else pos
    prev_end = np.concatenate(([start.bytes], (addr + size)[:-1])) if n else addr
    gap = pos - prev_pos
    fresh = prev_pos == 0
    same = (gap == 0) & (addr >= prev_end) & ~fresh
    through = (gap >= 1) & (gap <= params.read_through_max_gap) & ~fresh
    located = ~(same | through)
    skipped = np.where(located, addr - obj, np.maximum(addr - prev_end, 0))
    bytes_per_s = params.rate_mb_s * MB
    locate = np.where(located, params.locate_s(obj - prev_end) * lmult, 0.0)
    positioning = locate + skipped / bytes_per_s * rmult
    overhead = np.where(same, 0.0, params.overhead_s)
    read = size / bytes_per_s * rmult
    end = Head(int(pos[-1]), int(addr[-1] + size[-1])) if n else start
    return Timeline(positioning, overhead, read, located, end)


def read_step(
    params: PhysicsParams,
    head_position: int,
    head_bytes: int,
    position: int,
    object_start_bytes: int,
    address_bytes: int,
    size_bytes: int,
    rate_mult: float = 1.0,
    locate_mult: float = 1.0,
) -> tuple[float, float, float]:
    """read_timeline for one read with the head at (head_position, head_bytes), 0 = load point:
    (positioning_s, overhead_s, read_s).

    The scalar twin exists because the FIFO scheduler decides one request at a time and numpy's
    per-call cost would dominate; a test keeps the two equal.
    """
    gap = position - head_position
    bytes_per_s = params.rate_mb_s * MB
    read_s = size_bytes / bytes_per_s * rate_mult
    if head_position != 0:
        if gap == 0 and address_bytes >= head_bytes:
            return (address_bytes - head_bytes) / bytes_per_s * rate_mult, 0.0, read_s
        if 1 <= gap <= params.read_through_max_gap:
            skipped = max(address_bytes - head_bytes, 0)
            return skipped / bytes_per_s * rate_mult, params.overhead_s, read_s
    locate = params.locate_one_s(object_start_bytes - head_bytes) * locate_mult
    positioning = locate + (address_bytes - object_start_bytes) / bytes_per_s * rate_mult
    return positioning, params.overhead_s, read_s


def fresh_mount_s(params: PhysicsParams, timeline: Timeline) -> float:
    """Request to empty drive for one mount that reads `timeline`, robots free (closed form)."""
    return params.mount_s + float(timeline.duration_s.sum()) + params.dismount_s


def mean_locate_s(params: PhysicsParams, capacity_bytes: int) -> float:
    """Average locate from load point to a uniformly random place on a tape of this capacity."""
    grid = np.linspace(0.0, float(capacity_bytes), 10_001)
    return float(params.locate_s(grid).mean())


__all__ = [
    "Head",
    "PhysicsParams",
    "Timeline",
    "default_physics",
    "fresh_mount_s",
    "lognormal_multiplier",
    "mean_locate_s",
    "physics_frame",
    "read_step",
    "read_timeline",
]
