"""A request frame turned into what the simulator's engine reads: flat per-request lists, ids in
(volume, position, offset) order, per-tape media, and the read-time function of the throughput
model in scalar form (analysis/sim/simulator.py describes the simulator)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from tapelens.analysis.geometry import Geometry, Places, places, plan_order
from tapelens.analysis.geometry.place import place_of, start_address
from tapelens.analysis.sim.config import Library
from tapelens.analysis.throughput.model import MB, ModelParams
from tapelens.analysis.throughput.moves import from_load_point_s, priced_geometry
from tapelens.analysis.throughput.moves import rewind_s as priced_rewind_s
from tapelens.errors import InputError
from tapelens.media import BY_NAME


@dataclass
class Prepared:
    """A request frame turned into the engine's flat arrays, ids in (volume, position, offset)
    order, so that sorting request ids sorts them along their tape."""

    frame: pl.DataFrame  # the requests in id order, with submit_s and requester filled
    volumes: list[str]
    requesters: list[str]
    tape: list[int]
    position: list[int]
    offset: list[int]  # -1: not in an aggregate
    size: list[int]
    start_bytes: list[float]  # nan: unknown
    address: list[float]  # estimated bytes before the request's object (geometry.start_address)
    first_s: list[float]  # read time when it is the first file read after a load
    body_s: list[float]  # per-object overhead + streaming
    stream_s: list[float]  # streaming alone (aggregate members share the object's overhead)
    rewind_s: list[float]  # the final rewind of a mount whose last read it is
    submit_s: list[float]
    requester: list[int]
    tape_media: list[int]
    media: list[ModelParams]
    avg_object: list[float]  # per tape: bytes per object, to estimate skipped bytes
    plan_drive: list[int] = field(default_factory=list)  # planned: drive index per request
    plan_order: list[float] = field(default_factory=list)


def prepare(
    requests: pl.DataFrame, params_by_media: Mapping[str, ModelParams], drives: list[str]
) -> Prepared:
    """Check and flatten a request frame (volume, media_type, position, size_bytes; optional
    path, offset_bytes, start_bytes, avg_object_bytes, submit_s, requester; drive and order for
    planned runs)."""
    needed = ["volume", "media_type", "position", "size_bytes"]
    missing = [c for c in needed if c not in requests.columns]
    if missing:
        raise InputError(f"requests lack column(s) {', '.join(missing)}")
    unknown = sorted(
        set(requests["media_type"].drop_nulls().unique().to_list()) - set(params_by_media)
    )
    if unknown or requests["media_type"].null_count():
        raise InputError(f"no throughput parameters for media type(s) {unknown or ['(none)']}")
    defaults = {
        "path": pl.lit(None, pl.String()),
        "offset_bytes": pl.lit(None, pl.Int64()),
        "start_bytes": pl.lit(None, pl.Int64()),
        "avg_object_bytes": pl.lit(None, pl.Float64()),
        "submit_s": pl.lit(0.0),
        "requester": pl.lit("default"),
    }
    frame = (
        requests.drop("_row", strict=False)
        .with_row_index("_row")
        .with_columns([v.alias(k) for k, v in defaults.items() if k not in requests.columns])
    ).with_columns(
        pl.col("submit_s").cast(pl.Float64).fill_null(0.0),
        pl.col("requester").cast(pl.String).fill_null("default"),
        pl.col("path").cast(pl.String),
        pl.col("position").cast(pl.Int64),
        pl.col("size_bytes").cast(pl.Int64),
        pl.col("offset_bytes").cast(pl.Int64),
    )
    if frame.height and frame["size_bytes"].min() < 0:  # type: ignore[operator]
        raise InputError("requests: size_bytes must not be negative")
    frame = frame.sort(
        ["volume", "position", "offset_bytes"], nulls_last=False, maintain_order=True
    )
    volumes = frame["volume"].unique(maintain_order=True).to_list()
    tape_of = {v: i for i, v in enumerate(volumes)}
    media_names = sorted(frame["media_type"].unique().to_list())
    media_of = {m: i for i, m in enumerate(media_names)}
    media = [params_by_media[m] for m in media_names]
    per_tape = frame.group_by("volume", maintain_order=True).agg(
        pl.col("media_type").first(),
        pl.coalesce(pl.col("avg_object_bytes").drop_nulls().first(), pl.col("size_bytes").mean())
        .cast(pl.Float64)
        .alias("avg"),
    )
    tape_media = [media_of[m] for m in per_tape["media_type"].to_list()]
    avg_object = [float(a or 0.0) for a in per_tape["avg"].to_list()]
    tape_avg = pl.Series(avg_object)[[tape_of[v] for v in frame["volume"].to_list()]]
    address = (
        frame.with_columns(tape_avg.alias("_avg"))
        .select(start_address(frame.columns, pl.col("_avg")))
        .to_series()
        .fill_null(0.0)
        .to_list()
    )
    requesters = sorted(frame["requester"].unique().to_list())
    req_of = {r: i for i, r in enumerate(requesters)}
    tape = [tape_of[v] for v in frame["volume"].to_list()]
    position = frame["position"].to_list()
    size = frame["size_bytes"].to_list()
    offset = [-1 if o is None else int(o) for o in frame["offset_bytes"].to_list()]
    start_bytes = [math.nan if s is None else float(s) for s in frame["start_bytes"].to_list()]
    body_s, stream_s = [], []
    for t, sz in zip(tape, size, strict=True):
        p = media[tape_media[t]]
        rate_b_s = p.rate_mb_s * MB
        stream_s.append(sz / rate_b_s)
        body_s.append(p.overhead_s + sz / rate_b_s)
    first_s = _first_reads(tape, tape_media, media, address, offset, body_s)
    rewind_s = _rewinds_after(tape, tape_media, media, address, offset, size)
    prepared = Prepared(
        frame=frame,
        volumes=volumes,
        requesters=requesters,
        tape=tape,
        position=shared(position),
        offset=offset,
        size=shared(size),
        start_bytes=start_bytes,
        address=address,
        first_s=shared(first_s),
        body_s=shared(body_s),
        stream_s=stream_s,
        rewind_s=shared(rewind_s),
        submit_s=frame["submit_s"].to_list(),
        requester=[req_of[r] for r in frame["requester"].to_list()],
        tape_media=tape_media,
        media=media,
        avg_object=avg_object,
    )
    if "drive" in frame.columns:
        index = {n: i for i, n in enumerate(drives)}
        lost = sorted(set(frame["drive"].drop_nulls().unique().to_list()) - set(index))
        if lost:
            raise InputError(f"the plan names drive(s) the library lacks: {', '.join(lost[:5])}")
        prepared.plan_drive = [-1 if d is None else index[d] for d in frame["drive"].to_list()]
        order = frame["order"] if "order" in frame.columns else pl.Series(range(frame.height))
        prepared.plan_order = order.cast(pl.Float64).to_list()
    return prepared


def _first_reads(
    tape: list[int],
    tape_media: list[int],
    media: list[ModelParams],
    address: list[float],
    offset: list[int],
    body_s: list[float],
) -> list[float]:
    """Per request, its read time as the first read after a load: the one price of the move
    from the load point to its object (moves.move_s), streaming on to its offset inside an
    aggregate, then its overhead and streaming, as throughput.file_times times it."""
    by_request = np.asarray(tape_media, dtype=np.int64)[np.asarray(tape, dtype=np.int64)]
    obj = np.asarray(address, dtype=np.float64)
    into = np.maximum(np.asarray(offset, dtype=np.float64), 0.0)
    first = np.zeros(len(obj))
    for m, params in enumerate(media):
        rows = np.flatnonzero(by_request == m)
        first[rows] = from_load_point_s(params, obj[rows]) + into[rows] / (params.rate_mb_s * MB)
    return (first + np.asarray(body_s, dtype=np.float64)).tolist()


def _rewinds_after(
    tape: list[int],
    tape_media: list[int],
    media: list[ModelParams],
    address: list[float],
    offset: list[int],
    size: list[int],
) -> list[float]:
    """Per request, the final rewind of a mount whose last read it is: the one price of a move
    (moves.rewind_s) from where reading it leaves the head (its object's address, its offset
    inside an aggregate, its size), as throughput.mount_rewinds prices a plan's mounts."""
    by_request = np.asarray(tape_media, dtype=np.int64)[np.asarray(tape, dtype=np.int64)]
    head = (
        np.asarray(address, dtype=np.float64)
        + np.maximum(np.asarray(offset, dtype=np.float64), 0.0)
        + np.asarray(size, dtype=np.float64)
    )
    out = np.zeros(len(head))
    for m, params in enumerate(media):
        rows = np.flatnonzero(by_request == m)
        out[rows] = priced_rewind_s(params, head[rows])
    return out.tolist()


def shared(values: list[Any]) -> list[Any]:
    """The values, one object per distinct value. Positions, sizes and the read times they
    give repeat from tape to tape, and a large run looks them up all over its lists (every
    mount's first read, every locate): fewer objects stay in cache. Each value is replaced by
    an equal one (none of these is -0.0)."""
    seen: dict[Any, Any] = {}
    return list(map(seen.setdefault, values, values))


def _curve_read_timer(p: Prepared) -> Callable[[int, int], float]:
    """read_s(h, r): the throughput model's time for reading request r when the head is just
    after request h (h = -1: at the load point). The scalar form of throughput.file_times
    (first locate, read-through of the gap, bounded locate, aggregate members), for reads in
    any order: a read back to an earlier place on the tape is a locate over that distance.
    Skipped bytes come from byte addresses when both are known, else from the tape's average
    object size. The lists it reads are bound once, as closure variables, for speed."""
    media = [p.media[m] for m in p.tape_media]
    t_rate = [m.rate_mb_s * MB for m in media]
    t_gap = [m.read_through_max_gap for m in media]
    t_lbase = [m.locate_base_s for m in media]
    t_lslope = [m.locate_slope_s for m in media]
    t_lmax = [m.locate_max_s for m in media]
    t_cap = [float(m.capacity_bytes) for m in media]
    first_s, body_s, stream_s, avg_object = p.first_s, p.body_s, p.stream_s, p.avg_object
    tape, position, offset, size, start_bytes = p.tape, p.position, p.offset, p.size, p.start_bytes

    def read_s(h: int, r: int) -> float:
        if h < 0:
            return first_s[r]
        t = tape[r]
        gap = position[r] - position[h]
        sb_r, sb_h = start_bytes[r], start_bytes[h]
        if gap == 0:  # members of one aggregate (one tape object)
            o_r, o_h = offset[r], offset[h]
            if o_r >= 0 and o_h >= 0 and o_r < o_h:  # back to an earlier member: locate
                dist = float(o_h + size[h] - o_r)
            else:
                if sb_r == sb_r and sb_h == sb_h:  # byte addresses known (not NaN)
                    skip = sb_r - sb_h - size[h]
                else:
                    skip = o_r - o_h - size[h] if o_r >= 0 and o_h >= 0 else 0.0
                return (skip if skip > 0.0 else 0.0) / t_rate[t] + stream_s[r]
        elif 1 <= gap <= t_gap[t]:  # read through the objects in between
            if sb_r == sb_r and sb_h == sb_h:
                skip = sb_r - sb_h - size[h]
            else:
                skip = (gap - 1) * avg_object[t]
            return (skip if skip > 0.0 else 0.0) / t_rate[t] + body_s[r]
        elif sb_r == sb_r and sb_h == sb_h:
            dist = abs(sb_r - sb_h - size[h])
        else:
            dist = (gap - 1 if gap > 0 else -gap - 1) * avg_object[t]
        share = dist / t_cap[t]
        locate = t_lbase[t] + t_lslope[t] * (share if share < 1.0 else 1.0)
        return (locate if locate < t_lmax[t] else t_lmax[t]) + body_s[r]

    return read_s


def _curve_pass_timer(p: Prepared) -> Callable[[list[int], int], list[float]]:
    """times(w, i): read_s(w[k - 1], w[k]) for every k >= i of a drive's list w (entries before i
    are 0.0), for i >= 1, in one vectorised pass. A long list read in one pass costs one call
    instead of one per read. Every branch of read_s is computed with the same operations in the
    same order, then the one that applies is picked, so each value is the same float."""
    tape_media = np.asarray(p.tape_media, dtype=np.int64)
    media = [p.media[m] for m in range(len(p.media))]

    def per_tape(values: list[float]) -> np.ndarray:
        return np.asarray(values, dtype=np.float64)[tape_media]

    t_rate = per_tape([m.rate_mb_s * MB for m in media])
    t_gap = per_tape([m.read_through_max_gap for m in media])
    t_lbase = per_tape([m.locate_base_s for m in media])
    t_lslope = per_tape([m.locate_slope_s for m in media])
    t_lmax = per_tape([m.locate_max_s for m in media])
    t_cap = per_tape([float(m.capacity_bytes) for m in media])
    avg_object = np.asarray(p.avg_object, dtype=np.float64)
    tape = np.asarray(p.tape, dtype=np.int64)
    position = np.asarray(p.position, dtype=np.int64)
    offset = np.asarray(p.offset, dtype=np.int64)
    size = np.asarray(p.size, dtype=np.int64)
    start_bytes = np.asarray(p.start_bytes, dtype=np.float64)
    body_s = np.asarray(p.body_s, dtype=np.float64)
    stream_s = np.asarray(p.stream_s, dtype=np.float64)

    def times(w: list[int], i: int) -> list[float]:
        ids = np.fromiter(w[i - 1 :], dtype=np.int64)
        h, r = ids[:-1], ids[1:]
        on_tape = tape[ids]
        # A drive's list is one tape's: its parameters are then scalars, not gathered per read.
        t: int | np.ndarray = int(on_tape[0]) if (on_tape == on_tape[0]).all() else on_tape[1:]
        at = position[ids]
        gap = at[1:] - at[:-1]
        size_h = size[h]
        starts = start_bytes[ids]
        known = ~np.isnan(starts)
        known = known[1:] & known[:-1]
        byte_skip = starts[1:] - starts[:-1] - size_h
        offsets = offset[ids]
        o_r, o_h = offsets[1:], offsets[:-1]
        members = (o_r >= 0) & (o_h >= 0)
        rate, avg, body = t_rate[t], avg_object[t], body_s[r]
        # Same object (gap 0): stream on from the member read last, or locate back.
        back = members & (o_r < o_h)
        skip = np.where(known, byte_skip, np.where(members, o_r - o_h - size_h, 0).astype(float))
        same_object = np.where(skip > 0.0, skip, 0.0) / rate + stream_s[r]
        # A short gap forward: read through the objects in between.
        skip = np.where(known, byte_skip, (gap - 1) * avg)
        through = np.where(skip > 0.0, skip, 0.0) / rate + body
        # Otherwise a locate over the distance.
        estimated = np.where(gap > 0, gap - 1, -gap - 1) * avg
        dist = np.where(known, np.abs(byte_skip), estimated)
        dist = np.where(gap == 0, (o_h + size_h - o_r).astype(float), dist)
        share = dist / t_cap[t]
        locate = t_lbase[t] + t_lslope[t] * np.where(share < 1.0, share, 1.0)
        located = np.where(locate < t_lmax[t], locate, t_lmax[t]) + body
        short = (gap >= 1) & (gap <= t_gap[t])
        out = np.where(gap == 0, np.where(back, located, same_object), located)
        out = np.where(short, through, out)
        result: list[float] = [0.0] * i
        result += out.tolist()
        return result

    return times


def can_read(library: Library, media: list[ModelParams]) -> list[list[bool]]:
    """Per drive, per media index: whether the drive reads it (media catalog readable_by)."""
    table = []
    for drive in library.drives:
        row = []
        for p in media:
            catalog = BY_NAME.get(p.media_type)
            readers = catalog.readable_by if catalog is not None else (p.media_type,)
            row.append(drive.drive_type in readers)
        table.append(row)
    return table


# Time to order one mount's requests (simulate --order rao): a library serves thousands of mounts.
ORDER_BUDGET_S = 0.05


@dataclass
class Geometric:
    """What reading a mount's requests in recommended access order needs (simulate --order
    rao, sorted scheduler): per request, its estimated place (analysis.geometry.places, from its
    byte address, else from its position and the tape's average object), and per tape the
    geometry as moves are priced (moves.priced_geometry; None: a media type without one keeps
    position order)."""

    places: Places
    first_s: list[float]
    shape: list[Geometry | None]  # per tape
    tape: list[int]

    def ordered(self, reqs: list[int]) -> list[int]:
        """One mount's requests (of one tape) in recommended access order, as the recall
        engine orders a tape's reads (plan_order with the final rewind, a short budget: a
        library serves many mounts)."""
        shape = self.shape[self.tape[reqs[0]]] if reqs else None
        if shape is None or shape.approximate or len(reqs) < 2:
            return reqs  # as the engine keeps position order on these tapes
        index = np.asarray(reqs, dtype=np.int64)
        # Weighed with the final rewind, as the engine weighs a tape's orders.
        chosen = plan_order(self.places.take(index), shape, budget_s=ORDER_BUDGET_S)
        return index[chosen.order].tolist()


def _addresses(p: Prepared) -> tuple[np.ndarray, np.ndarray]:
    """(object start, the request's own address) per request: the estimated bytes before its
    object (start_address) and its offset inside an aggregate, as throughput.file_times
    places a read."""
    obj = np.asarray(p.address, dtype=np.float64)
    return obj, obj + np.maximum(np.asarray(p.offset, dtype=np.float64), 0.0)


def geometric(p: Prepared) -> Geometric:
    """The requests' places, for ordering p's requests by geometry."""
    tape = np.asarray(p.tape, dtype=np.int64)
    _, start = _addresses(p)
    size = np.asarray(p.size, dtype=np.float64)
    by_media = [priced_geometry(params) for params in p.media]
    shapes = [by_media[m] for m in p.tape_media]
    media_of = np.asarray(p.tape_media, dtype=np.int64)[tape]
    n = len(tape)
    fields = {
        name: np.zeros(n, dtype=np.float64 if "bytes" in name or "x_m" in name else np.int64)
        for name in Places.__dataclass_fields__
    }
    for m, shape in enumerate(by_media):  # a media type at a time, as _priced places them
        if shape is None:  # kept in position order: no place needed
            continue
        rows = np.flatnonzero(media_of == m)
        where = places(start[rows], size[rows], shape)
        for name in fields:
            fields[name][rows] = getattr(where, name)
    return Geometric(Places(**fields), p.first_s, shapes, list(p.tape))


@dataclass(frozen=True)
class _Priced:
    """Per request, what the one price of a move needs (moves.move_s): its object's place,
    its own address and wrap, where reading it leaves the head; per tape the priced terms."""

    obj: np.ndarray  # object start, bytes
    addr: np.ndarray  # the request's own address
    end: np.ndarray  # where reading it ends
    o_wrap: np.ndarray
    o_band: np.ndarray
    o_x: np.ndarray
    o_dir: np.ndarray
    a_wrap: np.ndarray  # wrap of the request's own address
    e_wrap: np.ndarray  # the head's place after reading it
    e_band: np.ndarray
    e_x: np.ndarray
    e_dir: np.ndarray
    terms: list[tuple[float, ...] | None]  # per tape, _move_terms of its priced geometry


def _move_terms(g: Geometry) -> tuple[float, ...]:
    return (
        g.locate_base_s,
        g.locate_speed_m_s,
        g.wrap_change_s,
        g.band_change_s,
        g.direction_change_s,
        g.step_back_s,
        g.rate_mb_s * MB,
        g.turnaround_s,
    )


def _priced(p: Prepared) -> _Priced:
    obj, addr = _addresses(p)
    end = addr + np.asarray(p.size, dtype=np.float64)
    tape = np.asarray(p.tape, dtype=np.int64)
    n = len(tape)
    cols = {k: np.zeros(n, dtype=np.int64) for k in ("ow", "ob", "od", "aw", "ew", "eb", "ed")}
    xs = {k: np.zeros(n) for k in ("ox", "ex")}
    # A tape's priced geometry is its media type's: placed a media type at a time (a tape at a
    # time is a pass over every request per tape, which 20,000 tapes feel).
    by_media = [priced_geometry(params) for params in p.media]
    shapes = [by_media[m] for m in p.tape_media]
    media_of = np.asarray(p.tape_media, dtype=np.int64)[tape]
    for m, shape in enumerate(by_media):
        if shape is None:
            continue
        rows = np.flatnonzero(media_of == m)
        ow, ob, ox, od = place_of(obj[rows], shape)
        aw = place_of(addr[rows], shape)[0]
        ew, eb, ex, ed = place_of(np.maximum(end[rows] - 1.0, 0.0), shape)
        for k, v in (("ow", ow), ("ob", ob), ("od", od), ("aw", aw), ("ew", ew), ("eb", eb)):
            cols[k][rows] = v
        cols["ed"][rows] = ed
        xs["ox"][rows], xs["ex"][rows] = ox, ex
    return _Priced(
        obj, addr, end, cols["ow"], cols["ob"], xs["ox"], cols["od"], cols["aw"],
        cols["ew"], cols["eb"], xs["ex"], cols["ed"],
        [None if g is None else _move_terms(g) for g in shapes],
    )  # fmt: skip


def read_timer(p: Prepared) -> Callable[[int, int], float]:
    """read_s(h, r): the time of reading request r when the head is just after request h
    (h = -1: at the load point), every move priced by the one price of a move (moves.move_s,
    the same operations in the same order, as throughput.file_times times a plan): a gap of
    1 to read_through_max_gap objects is read through, any other move a locate to the
    object's start and on to the request's offset. Reading on inside one aggregate, and tapes
    without a geometry, by the throughput model's curve."""
    model = _curve_read_timer(p)
    c = _priced(p)
    obj, addr = c.obj.tolist(), c.addr.tolist()
    ow, ob, ox, od = c.o_wrap.tolist(), c.o_band.tolist(), c.o_x.tolist(), c.o_dir.tolist()
    aw = c.a_wrap.tolist()
    ew, eb, ex, ed = c.e_wrap.tolist(), c.e_band.tolist(), c.e_x.tolist(), c.e_dir.tolist()
    terms = c.terms
    t_gap = [p.media[m].read_through_max_gap for m in p.tape_media]
    tape, position, offset, body_s, first_s = p.tape, p.position, p.offset, p.body_s, p.first_s

    def read_s(h: int, r: int) -> float:
        if h < 0:
            return first_s[r]
        t = tape[r]
        k = terms[t]
        if k is None or (position[r] == position[h] and not 0 <= offset[r] < offset[h]):
            # Reading on inside one tape object, as throughput.file_times reads an aggregate's
            # members (offsets unknown: the same object read on), and only a step back to an
            # earlier member is a move.
            return model(h, r)
        base, speed, wrap_c, band_c, dir_c, back_c, rate, turn = k
        gap = position[r] - position[h]
        if 1 <= gap <= t_gap[t]:  # read through: the model's skipped bytes, and turnarounds
            crossed = aw[r] - ew[h]
            return model(h, r) + turn * (crossed if crossed > 0 else 0)
        dx = ox[r] - ex[h]
        locate = (
            base
            + abs(dx) / speed
            + wrap_c * (ew[h] != ow[r])
            + band_c * (eb[h] != ob[r])
            + dir_c * (ed[h] != od[r])
            + back_c * (dx * od[r] < 0)
        )
        return locate + (addr[r] - obj[r]) / rate + body_s[r]

    return read_s


def pass_timer(p: Prepared) -> Callable[[list[int], int], list[float]]:
    """times(w, i): read_s(w[k - 1], w[k]) for every k >= i of a drive's list w (entries
    before i are 0.0), for i >= 1, in one vectorised pass; each value the same float as
    read_timer's."""
    model = _curve_pass_timer(p)
    c = _priced(p)
    tape = np.asarray(p.tape, dtype=np.int64)
    position = np.asarray(p.position, dtype=np.int64)
    offset = np.asarray(p.offset, dtype=np.int64)
    body_s = np.asarray(p.body_s, dtype=np.float64)
    has = np.asarray([k is not None for k in c.terms], dtype=bool)
    filler = (0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0)  # tapes without a geometry: unused
    terms = np.asarray([filler if k is None else k for k in c.terms])
    t_gap = np.asarray([p.media[m].read_through_max_gap for m in p.tape_media])

    def times(wl: list[int], i: int) -> list[float]:
        result = model(wl, i)
        ids = np.fromiter(wl[i - 1 :], dtype=np.int64)
        h, r = ids[:-1], ids[1:]
        t = tape[r]
        base, speed, wrap_c, band_c, dir_c, back_c, rate, turn = terms[t].T
        gap = position[r] - position[h]
        crossed = c.a_wrap[r] - c.e_wrap[h]
        through = np.asarray(result[i:]) + turn * np.where(crossed > 0, crossed, 0)
        dx = c.o_x[r] - c.e_x[h]
        locate = (
            base
            + np.abs(dx) / speed
            + wrap_c * (c.e_wrap[h] != c.o_wrap[r])
            + band_c * (c.e_band[h] != c.o_band[r])
            + dir_c * (c.e_dir[h] != c.o_dir[r])
            + back_c * (dx * c.o_dir[r] < 0)
        )
        located = locate + (c.addr[r] - c.obj[r]) / rate + body_s[r]
        priced = np.where((gap >= 1) & (gap <= t_gap[t]), through, located)
        same = (position[r] == position[h]) & ~((offset[r] >= 0) & (offset[r] < offset[h]))
        use = has[t] & ~same
        result[i:] = np.where(use, priced, np.asarray(result[i:])).tolist()
        return result

    return times


def geometric_read_timer(p: Prepared, geo: Geometric) -> Callable[[int, int], float]:
    """read_timer: every read is priced by the one price of a move, in any order."""
    return read_timer(p)


def geometric_pass_timer(p: Prepared, geo: Geometric) -> Callable[[list[int], int], list[float]]:
    """pass_timer: every read is priced by the one price of a move, in any order."""
    return pass_timer(p)
