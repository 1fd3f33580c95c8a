"""Where a copy physically sits: wrap, band, longitudinal position and direction, from its byte
offset on the tape (or its position and the sizes before it), and how good that estimate is.

A tape is written from the beginning of wrap 0, forward to the end of the data area, then wrap 1
backward, wrap 2 forward, and so on: wrap w holds bytes [w B, (w + 1) B) with B the bytes per wrap
(capacity / wraps). Inside a wrap, bytes map linearly onto the data area's length. Bands are
groups of consecutive wraps (wraps / bands each).

The estimate assumes what the drive writes is spread evenly along the tape: the native capacity
of the cartridge, uncompressed bytes. Compression, rewritten blocks and the drive's own spacing
move real places; docs/geometry.md ("How good the estimate is") says by how much.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import numpy as np
import polars as pl

from tapelens.analysis.geometry.media import Geometry

Array = np.ndarray


@dataclass(frozen=True)
class Places:
    """Estimated physical places of tape objects, one entry per object.

    start_* is where the object begins, end_* where reading it leaves the head; x in metres from
    the load point; direction +1 (towards the end of tape) or -1.
    """

    start_bytes: Array  # float64
    end_bytes: Array
    start_wrap: Array  # int64
    start_band: Array
    start_x_m: Array
    start_direction: Array
    end_wrap: Array
    end_band: Array
    end_x_m: Array
    end_direction: Array

    def __len__(self) -> int:
        return len(self.start_bytes)

    def take(self, index: Array) -> Places:
        """The places of a subset (or a reordering) of the objects."""
        return Places(*(np.asarray(getattr(self, f))[index] for f in _FIELDS))


_FIELDS = tuple(Places.__dataclass_fields__)


def place_of(byte: Array | float, geometry: Geometry) -> tuple[Array, Array, Array, Array]:
    """(wrap, band, x_m, direction) of byte addresses. An address at or beyond the capacity is
    placed at the end of the last wrap (a tape can hold a little more than its nominal figure)."""
    b = np.clip(np.asarray(byte, dtype=np.float64), 0.0, None)
    per_wrap = geometry.bytes_per_wrap
    wrap = np.minimum(np.floor(b / per_wrap).astype(np.int64), geometry.wraps - 1)
    along = np.clip((b - wrap * per_wrap) / per_wrap, 0.0, 1.0)
    forward = wrap % 2 == 0
    share = np.where(forward, along, 1.0 - along)
    x = geometry.data_start_m + share * geometry.data_length_m
    band = np.minimum(wrap // geometry.wraps_per_band, geometry.bands - 1)
    direction = np.where(forward, 1, -1).astype(np.int64)
    return wrap, band, x, direction


def places(start_bytes: Array, size_bytes: Array, geometry: Geometry) -> Places:
    """Places of objects that begin at `start_bytes` (bytes before them on the tape) and hold
    `size_bytes`. The end is the last byte read, so that a read ending exactly at a wrap's end
    stays on that wrap."""
    start = np.asarray(start_bytes, dtype=np.float64)
    size = np.asarray(size_bytes, dtype=np.float64)
    end = start + np.maximum(size, 0.0)
    sw, sb, sx, sd = place_of(start, geometry)
    ew, eb, ex, ed = place_of(np.maximum(end - 1.0, start), geometry)
    return Places(start, end, sw, sb, sx, sd, ew, eb, ex, ed)


def start_bytes_from_sizes(position: Array, size_bytes: Array) -> Array:
    """Bytes before each object on its tape when every object of the tape is known: the
    cumulative sizes in position order, the copies at one position being one object whose bytes
    are their sum (the members of a small-file aggregate). The same address as the mart's
    (macros/tape_objects.sql); returned in the input's order."""
    pos = np.asarray(position, dtype=np.int64)
    size = np.asarray(size_bytes, dtype=np.float64)
    if len(pos) == 0:
        return np.zeros(0)
    uniq, inverse = np.unique(pos, return_inverse=True)
    per_object = np.zeros(len(uniq))
    np.add.at(per_object, inverse, size)
    before = np.concatenate(([0.0], np.cumsum(per_object)[:-1]))
    return before[inverse]


def start_bytes_from_positions(
    position: Array, avg_object_bytes: float, first_position: int = 1
) -> Array:
    """Bytes before each object when only its position is known: (position - first) objects of
    the tape's average size. The coarsest estimate (see `accuracy`)."""
    pos = np.asarray(position, dtype=np.float64)
    return np.maximum(pos - first_position, 0.0) * float(avg_object_bytes)


def start_address(columns: Collection[str], avg_object_bytes: pl.Expr | float) -> pl.Expr:
    """The same estimate as a Polars expression over a frame with these `columns`: a read's
    start_bytes where known (the address macros/tape_objects.sql defines, as the planner
    reads it from the marts or the catalog), else (position - 1) objects of the average size;
    null when the frame has neither."""
    address = pl.lit(None, pl.Float64)
    if "position" in columns:
        address = (pl.col("position") - 1).clip(0).cast(pl.Float64) * avg_object_bytes
    if "start_bytes" in columns:
        address = pl.coalesce(pl.col("start_bytes").cast(pl.Float64), address)
    return address


# -- how good the estimate is ------------------------------------------------------------------

POSITION_SOURCES = (
    "byte_offset",  # the byte (or block) offset of each object is logged: CTA tf block ids, ENDIT
    "sizes_before",  # every object of the tape is known: cumulative sizes in position order
    "position_only",  # only the wanted objects' positions and an average object size
    "hpss_section",  # HPSS: section (tape file) numbers; sizes of the other sections unknown
    "tsm_rank",  # TSM: the object's rank in the volume's contents listing
    "aggregate_offset",  # aggregate members with their offset inside the aggregate
    "aggregate_no_offset",  # aggregate members without offsets: only the aggregate's place
)


@dataclass(frozen=True)
class Accuracy:
    """Expected error of an estimated place, one standard deviation."""

    source: str
    bytes_sd: float  # error of the byte address
    wraps_sd: float  # the same, in wraps
    x_sd_m: float  # longitudinal error, bounded by the spread of a uniform place
    locate_sd_s: float  # what that error costs a locate estimate
    useful_for_rao: bool  # the error stays well inside one wrap


# Native bytes drift from written bytes: drive compression of compressible data, rewritten
# blocks, format overhead. A relative standard deviation of the bytes written before an object:
# an assumption for incompressible (scientific) data, see docs/geometry.md.
BYTE_DRIFT = 0.001


def accuracy(
    source: str,
    geometry: Geometry,
    *,
    objects_before: float,
    avg_object_bytes: float,
    size_cv: float = 1.0,
    byte_drift: float = BYTE_DRIFT,
) -> Accuracy:
    """How good the place of an object with `objects_before` objects ahead of it on its tape is,
    given what the position data tells (one of POSITION_SOURCES).

    Byte offsets and known sizes: only the drift between logical and native bytes (byte_drift of
    the bytes before). Position only (also HPSS sections and TSM ranks, whose neighbours' sizes
    are unknown): the sum of `objects_before` unknown sizes of coefficient of variation
    `size_cv` adds sqrt(n) x cv x mean. Aggregate members inherit their aggregate's error, plus
    up to the aggregate's size when the offset is unknown.
    """
    if source not in POSITION_SOURCES:
        raise ValueError(f"unknown position source {source!r}; one of {POSITION_SOURCES}")
    n = max(float(objects_before), 0.0)
    before = n * avg_object_bytes
    drift = byte_drift * before
    sizes = np.sqrt(n) * size_cv * avg_object_bytes
    var = drift**2
    if source in ("position_only", "hpss_section", "tsm_rank", "aggregate_no_offset"):
        var += sizes**2
    if source == "aggregate_no_offset":
        var += (avg_object_bytes / np.sqrt(12.0)) ** 2
    sd = float(np.sqrt(var))
    wraps_sd = sd / geometry.bytes_per_wrap
    # A uniform place along the data area has sd L / sqrt(12): no estimate is worse than none.
    x_sd = min(sd / geometry.bytes_per_m, geometry.data_length_m / np.sqrt(12.0))
    locate_sd = x_sd / geometry.locate_speed_m_s + min(wraps_sd, 1.0) * geometry.wrap_change_s
    return Accuracy(source, sd, wraps_sd, x_sd, locate_sd, wraps_sd < 0.25)


def accuracy_statement(geometry: Geometry, avg_object_bytes: float = 2e9) -> str:
    """A table of the expected error by position source, for objects halfway along a full tape
    of objects of `avg_object_bytes` (the statement docs/geometry.md makes)."""
    n = geometry.capacity_bytes / avg_object_bytes / 2
    lines = [
        f"{geometry.media_type}, objects of {avg_object_bytes / 1e9:g} GB, halfway along a full "
        f"tape ({n:,.0f} objects before):",
        f"{'source':<22}{'bytes sd':>12}{'wraps sd':>10}{'x sd m':>9}{'locate sd s':>13}  RAO",
    ]
    for source in POSITION_SOURCES:
        a = accuracy(source, geometry, objects_before=n, avg_object_bytes=avg_object_bytes)
        lines.append(
            f"{source:<22}{a.bytes_sd / 1e9:>10.1f}GB{a.wraps_sd:>10.2f}{a.x_sd_m:>9.0f}"
            f"{a.locate_sd_s:>13.1f}  {'yes' if a.useful_for_rao else 'no'}"
        )
    return "\n".join(lines)


__all__ = [
    "POSITION_SOURCES",
    "Accuracy",
    "Places",
    "accuracy",
    "accuracy_statement",
    "place_of",
    "places",
    "start_bytes_from_positions",
    "start_bytes_from_sizes",
]
