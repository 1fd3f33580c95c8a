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

Tapes are serpentine (LTO, 3592, T10000): bytes fill wrap 0 from the beginning of the tape to its
end, wrap 1 back, wrap 2 forward again, wraps grouped in bands. A locate costs a fixed part (stop,
search, settle), the travel along the tape at high speed (accelerating and braking), a head step
to another wrap of the same band or a longer switch to another band, and a backhitch when the
target lies behind the head in the direction its own wrap is read (the drive overshoots and comes
back). Streaming across a wrap's end costs a turnaround. The world's figures are its own
(WORLD_LAYOUT and the constants below): they resemble published LTO figures without being the
product's model (tapelens.analysis.geometry), so that planning with the product's estimate and
replaying in this physics measures the estimate honestly. A media type without a layout locates by
byte distance alone (locate_s).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

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

# The world's serpentine layout per media type: (data area length in metres, wraps).
WORLD_LAYOUT: dict[str, tuple[float, int]] = {
    "LTO-5": (822.0, 80),
    "LTO-6": (822.0, 136),
    "LTO-7": (936.0, 112),
    "LTO-7M": (936.0, 168),
    "LTO-8": (936.0, 208),
    "LTO-9": (1011.0, 280),
    "3592-JD": (1010.0, 272),
    "3592-JE": (1010.0, 272),
    "3592-JF": (1010.0, 272),
    "T10000D": (1050.0, 288),
}
WORLD_BANDS = 4
WORLD_DATA_START_M = 12.0  # leader and calibration area before the first wrap's data
WORLD_LOCATE_SETTLE_S = 3.0  # any locate: stop, search for the block, settle
WORLD_ACCEL_M_S2 = 5.0  # high-speed locate ramps up and down at this rate
WORLD_WRAP_STEP_S = 4.0  # head step to another wrap of the same band
WORLD_BAND_SWITCH_S = 8.0  # head move to another band: servo reacquired
WORLD_BACKHITCH_S = 9.0  # target behind the head in its wrap's direction: overshoot and return
WORLD_TURNAROUND_S = 1.5  # streaming across a wrap's end


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
    # Serpentine layout (wraps = 0: none, locates by byte distance alone).
    wraps: int = 0
    bands: int = WORLD_BANDS
    data_start_m: float = 0.0
    data_length_m: float = 0.0
    locate_speed_m_s: float = 0.0
    accel_m_s2: float = WORLD_ACCEL_M_S2
    wrap_step_s: float = 0.0
    band_switch_s: float = 0.0
    backhitch_s: float = 0.0
    turnaround_s: float = 0.0

    @property
    def serpentine(self) -> bool:
        return self.wraps > 0

    def place(self, address_bytes: np.ndarray | float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(wrap, x metres from the load point, direction +1/-1) of byte addresses."""
        b = np.clip(np.asarray(address_bytes, dtype=np.float64), 0.0, None)
        per_wrap = self.capacity_bytes / self.wraps
        wrap = np.minimum(b // per_wrap, self.wraps - 1).astype(np.int64)
        along = np.clip(b / per_wrap - wrap, 0.0, 1.0)
        forward = wrap % 2 == 0
        x = self.data_start_m + self.data_length_m * np.where(forward, along, 1.0 - along)
        return wrap, x, np.where(forward, 1, -1)

    def _travel_s(self, distance_m: np.ndarray) -> np.ndarray:
        v, a = self.locate_speed_m_s, self.accel_m_s2
        d = np.asarray(distance_m, dtype=np.float64)
        return np.where(d >= v * v / a, d / v + v / a, 2 * np.sqrt(d / a))

    def locate_between_s(
        self,
        from_bytes: np.ndarray | float,
        to_bytes: np.ndarray | float,
        from_load_point: np.ndarray | bool = False,
    ) -> np.ndarray:
        """Locate time from where the head is (after byte `from_bytes`, or at the load point)
        to the start of an object at `to_bytes`, without noise. Without a serpentine layout:
        locate_s of the byte distance."""
        if not self.serpentine:
            return self.locate_s(np.asarray(to_bytes, dtype=np.float64) - from_bytes)
        fresh = np.asarray(from_load_point, dtype=bool)
        wa, xa, _ = self.place(np.maximum(np.asarray(from_bytes, dtype=np.float64) - 1, 0))
        wa, xa = np.where(fresh, 0, wa), np.where(fresh, 0.0, xa)
        wb, xb, db = self.place(to_bytes)
        per_band = max(self.wraps // self.bands, 1)
        step = np.where(
            wa == wb, 0.0, np.where(wa // per_band == wb // per_band, self.wrap_step_s, 0.0)
        )
        step = np.where((wa != wb) & (wa // per_band != wb // per_band), self.band_switch_s, step)
        behind = (xb - xa) * db < 0
        return (
            self.locate_base_s
            + self._travel_s(np.abs(xb - xa))
            + step
            + np.where(behind, self.backhitch_s, 0.0)
        )

    def locate_between_one_s(
        self, from_bytes: float, to_bytes: float, from_load_point: bool = False
    ) -> float:
        """locate_between_s for one move, in plain Python (the FIFO scheduler's path)."""
        if not self.serpentine:
            return self.locate_one_s(to_bytes - from_bytes)
        per_wrap = self.capacity_bytes / self.wraps
        last = self.wraps - 1
        if from_load_point:
            wa, xa = 0, 0.0
        else:
            b = max(from_bytes - 1, 0)
            wa = min(int(b // per_wrap), last)
            along = min(max(b / per_wrap - wa, 0.0), 1.0)
            xa = self.data_start_m + self.data_length_m * (along if wa % 2 == 0 else 1.0 - along)
        b = max(to_bytes, 0)
        wb = min(int(b // per_wrap), last)
        along = min(max(b / per_wrap - wb, 0.0), 1.0)
        forward = wb % 2 == 0
        xb = self.data_start_m + self.data_length_m * (along if forward else 1.0 - along)
        d = abs(xb - xa)
        v, a = self.locate_speed_m_s, self.accel_m_s2
        t = self.locate_base_s + (d / v + v / a if d >= v * v / a else 2 * math.sqrt(d / a))
        if wa != wb:
            per_band = max(self.wraps // self.bands, 1)
            t += self.wrap_step_s if wa // per_band == wb // per_band else self.band_switch_s
        if (xb - xa) * (1 if forward else -1) < 0:
            t += self.backhitch_s
        return t

    def turnarounds_s(
        self, from_bytes: np.ndarray | float, to_bytes: np.ndarray | float
    ) -> np.ndarray:
        """Streaming from `from_bytes` on to `to_bytes`: a turnaround at each wrap end crossed."""
        if not self.serpentine:
            return np.zeros(np.broadcast(np.asarray(from_bytes), np.asarray(to_bytes)).shape)
        per_wrap = self.capacity_bytes / self.wraps
        a = np.asarray(from_bytes, dtype=np.float64) // per_wrap
        b = np.asarray(to_bytes, dtype=np.float64) // per_wrap
        return np.maximum(b - a, 0.0) * self.turnaround_s

    def rewind_from_s(self, address_bytes: float) -> float:
        """Rewind from the head's place to the load point (serpentine); else the average."""
        if not self.serpentine:
            return self.rewind_s
        _, x, _ = self.place(max(address_bytes - 1, 0))
        return float(self.locate_base_s + self._travel_s(np.asarray(x)))

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


def default_physics(media: MediaType, serpentine: bool = True) -> PhysicsParams:
    """Physics of a media type from its catalog figures (tapelens/media.py) and the shares above;
    with the world's serpentine layout where it has one (serpentine=False: locates by byte
    distance alone). Either way a locate from the load point to a uniformly random place takes
    the catalog's average locate on average."""
    base_s = LOCATE_BASE_SHARE * media.locate_avg_s
    # mean over uniform targets = base + (max - base) * (1 - reach / 2) = locate_avg_s
    max_s = base_s + (media.locate_avg_s - base_s) / (1 - LOCATE_CAP_REACH / 2)
    per_tb = (max_s - base_s) / (LOCATE_CAP_REACH * media.capacity_bytes / TB)
    linear = PhysicsParams(
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
    layout = WORLD_LAYOUT.get(media.media_type)
    if not serpentine or layout is None:
        return linear
    length_m, wraps = layout
    serp = replace(
        linear,
        locate_base_s=WORLD_LOCATE_SETTLE_S,
        wraps=wraps,
        bands=WORLD_BANDS,
        data_start_m=WORLD_DATA_START_M,
        data_length_m=length_m,
        locate_speed_m_s=10.0,
        accel_m_s2=WORLD_ACCEL_M_S2,
        wrap_step_s=WORLD_WRAP_STEP_S,
        band_switch_s=WORLD_BAND_SWITCH_S,
        backhitch_s=WORLD_BACKHITCH_S,
        turnaround_s=WORLD_TURNAROUND_S,
    )
    return replace(serp, locate_speed_m_s=_speed_for_mean(serp, float(media.locate_avg_s)))


def _speed_for_mean(params: PhysicsParams, mean_s: float) -> float:
    """The locate speed at which the mean locate from the load point is `mean_s` (bisection;
    the mean falls as the speed grows)."""
    lo, hi = 1.0, 100.0
    for _ in range(50):
        mid = (lo + hi) / 2
        if mean_locate_s(replace(params, locate_speed_m_s=mid), params.capacity_bytes) > mean_s:
            lo = mid
        else:
            hi = mid
    return round((lo + hi) / 2, 3)


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
    locate = np.where(located, params.locate_between_s(prev_end, obj, fresh) * lmult, 0.0)
    turns = params.turnarounds_s(np.where(located, obj, prev_end), addr)
    positioning = locate + skipped / bytes_per_s * rmult + turns
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
    turn = params.turnaround_s if params.serpentine else 0.0
    per_wrap = params.capacity_bytes / params.wraps if params.serpentine else 1.0
    if head_position != 0:
        if gap == 0 and address_bytes >= head_bytes:
            turns = turn * max(address_bytes // per_wrap - head_bytes // per_wrap, 0)
            return (address_bytes - head_bytes) / bytes_per_s * rate_mult + turns, 0.0, read_s
        if 1 <= gap <= params.read_through_max_gap:
            skipped = max(address_bytes - head_bytes, 0)
            turns = turn * max(address_bytes // per_wrap - head_bytes // per_wrap, 0)
            return skipped / bytes_per_s * rate_mult + turns, params.overhead_s, read_s
    locate = (
        params.locate_between_one_s(head_bytes, object_start_bytes, head_position == 0)
        * locate_mult
    )
    turns = turn * max(address_bytes // per_wrap - object_start_bytes // per_wrap, 0)
    positioning = locate + (address_bytes - object_start_bytes) / bytes_per_s * rate_mult + turns
    return positioning, params.overhead_s, read_s


@dataclass(frozen=True)
class OrderTime:
    """What reading a tape's objects in one order takes in the world's physics (seconds, from
    the loaded tape to the rewound tape; mount and unload are the same for any order)."""

    positioning_s: float
    overhead_s: float
    read_s: float
    rewind_s: float
    locates: int

    @property
    def total_s(self) -> float:
        return self.positioning_s + self.overhead_s + self.read_s + self.rewind_s


def time_read_order(
    params: PhysicsParams,
    position: np.ndarray,
    object_start_bytes: np.ndarray,
    size_bytes: np.ndarray,
    order: np.ndarray | None = None,
    *,
    address_bytes: np.ndarray | None = None,
    rng: np.random.Generator | None = None,
) -> OrderTime:
    """Time one mount's reads in a given order (indices into the arrays; None: as given) on a
    freshly loaded tape, then the rewind from where the last read ends. Without `rng` there is
    no noise; with it, streaming and locate times get the world's log-normal noise. An object's
    members (same position) are distinguished by `address_bytes` (default: the object start)."""
    idx = np.arange(len(position)) if order is None else np.asarray(order, dtype=np.int64)
    pos = np.asarray(position, dtype=np.int64)[idx]
    obj = np.asarray(object_start_bytes, dtype=np.int64)[idx]
    addr = obj if address_bytes is None else np.asarray(address_bytes, dtype=np.int64)[idx]
    size = np.asarray(size_bytes, dtype=np.int64)[idx]
    n = len(idx)
    rate_m = locate_m = None
    if rng is not None:
        rate_m = lognormal_multiplier(params.rate_noise, rng.standard_normal(n))
        locate_m = lognormal_multiplier(params.locate_noise, rng.standard_normal(n))
    timeline = read_timeline(params, pos, obj, addr, size, rate_m, locate_m)
    rewind = params.rewind_from_s(timeline.head.bytes) if n else 0.0
    return OrderTime(
        positioning_s=float(timeline.positioning_s.sum()),
        overhead_s=float(timeline.overhead_s.sum()),
        read_s=float(timeline.read_s.sum()),
        rewind_s=float(rewind),
        locates=int(timeline.located.sum()),
    )


def fresh_mount_s(params: PhysicsParams, timeline: Timeline) -> float:
    """Request to empty drive for one mount that reads `timeline`, robots free (closed form)."""
    return params.mount_s + float(timeline.duration_s.sum()) + params.dismount_s


def mean_locate_s(params: PhysicsParams, capacity_bytes: int) -> float:
    """Average locate from load point to a uniformly random place on a tape of this capacity."""
    grid = np.linspace(0.0, float(capacity_bytes), 10_001)
    return float(params.locate_between_s(0.0, grid, True).mean())


__all__ = [
    "Head",
    "OrderTime",
    "PhysicsParams",
    "Timeline",
    "default_physics",
    "fresh_mount_s",
    "lognormal_multiplier",
    "mean_locate_s",
    "physics_frame",
    "read_step",
    "read_timeline",
    "time_read_order",
]
