"""Tapes: media generations, filling each write drive's tape to capacity, repack, tape states.

Each pool's write drive fills one tape at a time with objects in write order until the next
object does not fit (capacities from tapelens/media.py, data taken as incompressible); a new
media generation (bought at the dates of `media_schedule`) closes the current tape. A repack
copies the contents of some tapes two or more generations old, in position order, onto new
tapes of the current generation; the old tapes keep the state `repacked` (emptied, their copies
removed from the catalog).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tapelens.media import BY_NAME as MEDIA
from tapelens.world import naming
from tapelens.world.params import SiteParams
from tapelens.world.timeline import Timeline, epoch_s
from tapelens.world.writepath import Batches, Objects

STATES = ("empty", "filling", "full", "readonly", "disabled", "repacked")
EMPTY, FILLING, FULL, READONLY, DISABLED, REPACKED = range(len(STATES))
MB = 1_000_000


@dataclass
class Placement:
    """Where each object went, and the tapes that hold them."""

    obj_tape: np.ndarray  # int32
    obj_pos: np.ndarray  # int32 position on the tape, 1-based
    obj_time_s: np.ndarray  # float64 when the object was written
    obj_moved_to: np.ndarray  # int32 object index of its repacked copy, -1 when not moved
    tape_pool: np.ndarray  # int16
    tape_gen: np.ndarray  # int16 index into media_schedule
    tape_opened_s: np.ndarray  # float64
    tape_state: np.ndarray  # int8 index into STATES
    volumes: list[str] = field(default_factory=list)
    barcodes: list[str] = field(default_factory=list)
    libraries: list[str] = field(default_factory=list)

    @property
    def n_tapes(self) -> int:
        return int(self.tape_pool.shape[0])

    def drop_objects(self) -> None:
        """Free the per-object arrays once the copies know their tape and position."""
        empty = np.zeros(0, dtype=np.int64)
        self.obj_tape = self.obj_pos = self.obj_moved_to = empty
        self.obj_time_s = np.zeros(0)


def generation_at(p: SiteParams, seconds: np.ndarray) -> np.ndarray:
    """Index into media_schedule of the media bought for writes at each time."""
    starts = np.array([epoch_s(d) for _, d in p.media_schedule], dtype=np.float64)
    return np.maximum(np.searchsorted(starts, seconds, side="right") - 1, 0).astype(np.int16)


def _media(p: SiteParams, gen: np.ndarray, attr: str) -> np.ndarray:
    values = [getattr(MEDIA[name], attr) for name, _ in p.media_schedule]
    return np.asarray(values, dtype=np.float64)[gen]


def place(
    p: SiteParams, objects: Objects, batches: Batches, timeline: Timeline, rng: np.random.Generator
) -> Placement:
    """Fill tapes, time every write, repack, set tape states and names.

    Objects moved by a repack get copies numbered after the written objects. Each write
    drive's stream of objects is handled on its own, which bounds the temporary arrays.
    """
    n = objects.size.shape[0]
    obj_tape = np.empty(n, dtype=np.int32)
    obj_pos = np.empty(n, dtype=np.int32)
    obj_time = np.empty(n, dtype=np.float64)
    firsts: list[np.ndarray] = []
    last_of_stream: list[int] = []
    capacity = _media(p, np.arange(len(p.media_schedule)), "capacity_bytes").astype(np.int64)
    rate = _media(p, np.arange(len(p.media_schedule)), "native_rate_mb_s") * MB
    stream_change = np.ones(n, dtype=bool)
    stream_change[1:] = (objects.pool[1:] != objects.pool[:-1]) | (
        objects.drive[1:] != objects.drive[:-1]
    )
    bounds = np.append(np.flatnonzero(stream_change), n)
    del stream_change
    n_tapes = 0
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        batch = objects.batch[a:b]
        batch_s = batches.time_s[batch]
        gen = generation_at(p, batch_s)
        size = objects.size[a:b]
        seg = np.flatnonzero(np.append(True, gen[1:] != gen[:-1]))
        local_tape, local_first = _fill(size, capacity[gen[seg]], seg)
        obj_tape[a:b] = local_tape + n_tapes
        obj_pos[a:b] = np.arange(b - a) - local_first[local_tape] + 1
        firsts.append(local_first + a)
        n_tapes += local_first.shape[0]
        last_of_stream.append(n_tapes - 1)
        # Each drive writes its share of a migration back to back.
        busy = size / rate[gen] + p.write_overhead_s
        new_batch = np.append(True, batch[1:] != batch[:-1])
        t = batch_s + _exclusive_cumsum(busy, new_batch)
        obj_time[a:b] = np.maximum.accumulate(t)
    tape_first = np.concatenate(firsts) if firsts else np.zeros(0, dtype=np.int64)
    tape_pool = objects.pool[tape_first]
    tape_gen = generation_at(p, batches.time_s[objects.batch[tape_first]])
    state = np.full(n_tapes, FULL, dtype=np.int8)
    last_gen = int(generation_at(p, np.array([timeline.end_s - 1.0]))[0])
    last = np.asarray(last_of_stream, dtype=np.int64)
    state[last[tape_gen[last] == last_gen]] = FILLING

    placement = Placement(
        obj_tape=obj_tape,
        obj_pos=obj_pos,
        obj_time_s=obj_time,
        obj_moved_to=np.full(n, -1, dtype=np.int32),
        tape_pool=tape_pool,
        tape_gen=tape_gen,
        tape_opened_s=obj_time[tape_first],
        tape_state=state,
    )
    placement = _repack(p, objects, placement, timeline, rng)
    _damage(p, placement, rng)
    _add_scratch(p, placement, timeline, last_gen)
    _name(p, placement, rng)
    return placement


def _exclusive_cumsum(values: np.ndarray, group_start: np.ndarray) -> np.ndarray:
    """Sum of the values before each one within its group (groups are contiguous)."""
    before = np.cumsum(values)
    before -= values
    starts = np.flatnonzero(group_start)
    before -= np.repeat(before[starts], np.diff(np.append(starts, values.shape[0])))
    return before


def _fill(
    sizes: np.ndarray, capacity: np.ndarray, seg_starts: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Greedy fill: a new tape when the next object does not fit or a new segment (media
    generation) starts; capacity is given per segment."""
    n = sizes.shape[0]
    cum = np.cumsum(sizes).astype(np.int64)
    obj_tape = np.empty(n, dtype=np.int32)
    firsts: list[int] = []
    bounds = np.append(seg_starts, n)
    for k, (a, b) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
        cap = np.int64(capacity[k])
        i = int(a)
        while i < b:
            base = cum[i - 1] if i else np.int64(0)
            j = int(np.searchsorted(cum[i:b], base + cap, side="right")) + i
            j = max(j, i + 1)
            obj_tape[i:j] = len(firsts)
            firsts.append(i)
            i = j
    return obj_tape, np.asarray(firsts, dtype=np.int64)


def _repack(
    p: SiteParams,
    objects: Objects,
    pl_: Placement,
    timeline: Timeline,
    rng: np.random.Generator,
) -> Placement:
    """Copy some old tapes onto new media; the copies become new objects (numbered after the
    written ones) on new tapes."""
    if p.repack_at is None:
        return pl_
    when = float(epoch_s(p.repack_at))
    if not timeline.start_s < when < timeline.end_s:
        return pl_
    gen_now = int(generation_at(p, np.array([when]))[0])
    last_write = np.zeros(pl_.n_tapes)
    np.maximum.at(last_write, pl_.obj_tape, pl_.obj_time_s)
    eligible = np.flatnonzero((pl_.tape_gen <= gen_now - 2) & (last_write < when))
    if eligible.size == 0:
        return pl_
    chosen = eligible[rng.random(eligible.size) < p.repack_share]
    if chosen.size == 0 and p.repack_share > 0:
        chosen = eligible[rng.integers(0, eligible.size, 1)]
    chosen = np.sort(chosen)
    is_src = np.zeros(pl_.n_tapes, dtype=bool)
    is_src[chosen] = True
    src = np.flatnonzero(is_src[pl_.obj_tape])
    # Read each source tape front to back, pools apart, in the order the tapes were opened.
    src = src[
        np.lexsort((pl_.obj_pos[src], pl_.tape_opened_s[pl_.obj_tape[src]], objects.pool[src]))
    ]
    new_pool = objects.pool[src]
    starts = np.flatnonzero(np.append(True, new_pool[1:] != new_pool[:-1]))
    media = MEDIA[p.media_schedule[gen_now][0]]
    capacity = np.full(starts.size, media.capacity_bytes, dtype=np.int64)
    new_tape_local, new_first = _fill(objects.size[src], capacity, starts)
    busy = objects.size[src] / (media.native_rate_mb_s * MB) + p.write_overhead_s
    pool_start = np.zeros(src.size, dtype=bool)
    pool_start[starts] = True
    new_time = when + _exclusive_cumsum(busy, pool_start)

    n_old = objects.size.shape[0]
    t_old = pl_.n_tapes
    moved_to = pl_.obj_moved_to
    moved_to[src] = n_old + np.arange(src.size)
    state = pl_.tape_state.copy()
    state[chosen] = REPACKED
    n_new = new_first.shape[0]
    new_state = np.full(n_new, FULL, dtype=np.int8)
    placement = Placement(
        obj_tape=np.concatenate([pl_.obj_tape, (t_old + new_tape_local).astype(np.int32)]),
        obj_pos=np.concatenate(
            [pl_.obj_pos, (np.arange(src.size) - new_first[new_tape_local] + 1).astype(np.int32)]
        ),
        obj_time_s=np.concatenate([pl_.obj_time_s, new_time]),
        obj_moved_to=np.concatenate([moved_to, np.full(src.size, -1, dtype=np.int32)]),
        tape_pool=np.concatenate([pl_.tape_pool, new_pool[new_first]]),
        tape_gen=np.concatenate([pl_.tape_gen, np.full(n_new, gen_now, dtype=np.int16)]),
        tape_opened_s=np.concatenate([pl_.tape_opened_s, new_time[new_first]]),
        tape_state=np.concatenate([state, new_state]),
    )
    return placement


def _damage(p: SiteParams, pl_: Placement, rng: np.random.Generator) -> None:
    """Some full tapes are set read-only (worn) or disabled (a damaged cartridge)."""
    full = np.flatnonzero(pl_.tape_state == FULL)
    if full.size == 0:
        return
    draw = rng.random(full.size)
    pl_.tape_state[full[draw < p.readonly_share]] = READONLY
    pl_.tape_state[
        full[(draw >= p.readonly_share) & (draw < p.readonly_share + p.disabled_share)]
    ] = DISABLED
    if full.size >= 10:
        if p.readonly_share > 0 and not (pl_.tape_state == READONLY).any():
            pl_.tape_state[full[0]] = READONLY
        if p.disabled_share > 0 and not (pl_.tape_state == DISABLED).any():
            pl_.tape_state[full[-1]] = DISABLED


def _add_scratch(p: SiteParams, pl_: Placement, timeline: Timeline, last_gen: int) -> None:
    """Blank cartridges of the current generation waiting in every pool."""
    k = p.scratch_tapes_per_pool
    n_pools = len(p.experiments)
    if k <= 0:
        return
    pools = np.repeat(np.arange(n_pools, dtype=np.int16), k)
    pl_.tape_pool = np.concatenate([pl_.tape_pool, pools])
    pl_.tape_gen = np.concatenate([pl_.tape_gen, np.full(pools.size, last_gen, dtype=np.int16)])
    pl_.tape_opened_s = np.concatenate(
        [pl_.tape_opened_s, np.full(pools.size, float(timeline.end_s))]
    )
    pl_.tape_state = np.concatenate([pl_.tape_state, np.full(pools.size, EMPTY, dtype=np.int8)])


def _name(p: SiteParams, pl_: Placement, rng: np.random.Generator) -> None:
    """Serial numbers per pool in the order the tapes were first written (bought)."""
    letters = naming.pool_letters(tuple(name for name, _ in p.experiments))
    width = 4 if p.profile in ("gridka", "fnal") else 5
    n_pools = len(letters)
    base = rng.integers(10 ** (width - 1), 5 * 10 ** (width - 1), n_pools)
    order = np.lexsort((np.arange(pl_.n_tapes), pl_.tape_opened_s, pl_.tape_pool))
    pool_sorted = pl_.tape_pool[order]
    first = np.searchsorted(pool_sorted, np.arange(n_pools), side="left")
    serial = np.empty(pl_.n_tapes, dtype=np.int64)
    serial[order] = np.arange(pl_.n_tapes) - first[pool_sorted] + base[pool_sorted]
    n_gens = len(p.media_schedule)
    n_libs = len(p.libraries)
    volumes, barcodes, libraries = [], [], []
    for t in range(pl_.n_tapes):
        gen = int(pl_.tape_gen[t])
        media = p.media_schedule[gen][0]
        vol, code = naming.volume_label(
            p.profile, letters[int(pl_.tape_pool[t])], int(serial[t]), media
        )
        volumes.append(vol)
        barcodes.append(code)
        libraries.append(p.libraries[min(gen * n_libs // n_gens, n_libs - 1)])
    pl_.volumes, pl_.barcodes, pl_.libraries = volumes, barcodes, libraries


def media_names(p: SiteParams, pl_: Placement) -> list[str]:
    return [p.media_schedule[int(g)][0] for g in pl_.tape_gen]
