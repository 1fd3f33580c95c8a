"""The write path: disk cache -> migration batches -> write drives -> tape objects.

Files (and the retries of files whose acknowledgement was lost) arrive in the disk cache. When
the unmigrated volume reaches `migration_batch_bytes`, or the oldest file has waited
`migration_max_age_days`, a migration takes the whole cache: in arrival order (FIFO) before the
cutover, sorted by directory and file name after it (the sort window is the migration). Each
pool's queue is dealt in turn to as many write drives as its volume needs, so one dataset lands
on several tapes and, under FIFO, interleaves with every dataset that arrived at the same time.
A run of consecutive small files on a drive is packed into aggregates, each written as one tape
object where the run ends.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tapelens.world import anomalies
from tapelens.world.params import SiteParams, drives_per_pool
from tapelens.world.site import Site
from tapelens.world.timeline import Timeline, epoch_s

POLICY_FIFO = 0
POLICY_SORTED = 1
POLICY_NAMES = ("fifo", "sorted")


@dataclass
class Batches:
    end_u: np.ndarray  # float64 progress of the arrival that triggered the migration
    start_u: np.ndarray
    time_s: np.ndarray  # float64 when the migration ran
    policy: np.ndarray  # int8 POLICY_*


@dataclass
class Requests:
    """One write of one file copy (originals and retries), in queue order."""

    file: np.ndarray  # int32
    seq: np.ndarray  # int16: 0 the original write, k the k-th retry
    outage: np.ndarray  # bool: a retry after an acknowledgement outage
    arrived_s: np.ndarray  # uint32 whole seconds when this write request reached the cache
    batch: np.ndarray  # int32
    pool: np.ndarray  # int16
    drive: np.ndarray  # int16 index of the write drive inside its pool
    obj: np.ndarray  # int32 tape object holding this copy
    member: np.ndarray  # int16 1-based index inside an aggregate, 0 when alone
    members: np.ndarray  # int16 size of the aggregate, 0 when alone
    offset: np.ndarray  # int64 byte offset inside the aggregate, -1 when alone


@dataclass
class Objects:
    """Tape objects (a file alone, or an aggregate) in write order per pool and drive."""

    pool: np.ndarray  # int16
    drive: np.ndarray  # int16
    batch: np.ndarray  # int32
    size: np.ndarray  # int64 bytes
    members: np.ndarray  # int16, 0 for a file alone


def migration_batches(p: SiteParams, site: Site, timeline: Timeline) -> tuple[Batches, np.ndarray]:
    """Cut the arrival stream into migrations; the batch of every file.

    A migration runs when the unmigrated volume reaches migration_batch_bytes, or when the
    oldest unmigrated file has waited migration_max_age_days, whichever comes first.
    """
    order = np.argsort(site.f_u, kind="stable")
    size = site.f_size[order]
    cum = np.cumsum(size)
    t = timeline.seconds(site.f_u[order])
    max_age_s = p.migration_max_age_days * 86_400.0
    n = order.shape[0]
    firsts: list[int] = []
    closes: list[float] = []
    i = 0
    while i < n:
        # Keys of the array's own dtype: a float key would convert the whole array per call.
        before = int(cum[i - 1]) if i else 0
        target = np.int64(before + p.migration_batch_bytes)
        j_bytes = int(np.searchsorted(cum, target, side="left")) + 1
        j_age = int(np.searchsorted(t, np.float64(t[i] + max_age_s), side="left"))
        j = max(min(j_bytes, j_age, n), i + 1)
        firsts.append(i)
        # The volume trigger fires on the file that fills the cache, the age trigger on time.
        closes.append(float(t[j - 1]) if j_bytes <= j_age or j == n else float(t[i] + max_age_s))
        i = j
    first = np.asarray(firsts, dtype=np.int64)
    batch_sorted = (np.searchsorted(first, np.arange(n), side="right") - 1).astype(np.int32)
    f_batch = np.empty_like(batch_sorted)
    f_batch[order] = batch_sorted
    time_s = np.asarray(closes)
    end_u = timeline.progress_array(time_s)
    end_u = np.maximum(end_u, site.f_u[order][np.append(first[1:], n) - 1])
    start_u = np.concatenate([[0.0], end_u[:-1]])
    cutover = epoch_s(p.cutover)
    policy = np.where(
        (time_s >= cutover) & (p.policy_after == "sorted"), POLICY_SORTED, POLICY_FIFO
    ).astype(np.int8)
    return Batches(end_u, start_u, time_s, policy), f_batch


Retries = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def retries(
    p: SiteParams,
    site: Site,
    f_batch: np.ndarray,
    batches: Batches,
    timeline: Timeline,
    rng: np.random.Generator,
    outage_rng: np.random.Generator | None = None,
) -> Retries:
    """Extra write requests after lost acknowledgements: (file, seq, batch, u, outage) per retry.

    A retried file is flushed again one or more migrations later, possibly more than once; one
    pathological file is retried in a loop for a few migrations and collects dozens of copies.
    Acknowledgement outages (`ack_outages`, drawn from outage_rng) add one retry to each file
    they lose, numbered after its other retries.
    """
    n_files = site.n_files
    n_batches = batches.end_u.shape[0]
    patho = _pathological_file(p, site, rng)
    chosen = rng.random(n_files) < p.duplicate_share
    if patho >= 0:
        chosen[patho] = False
    files = np.flatnonzero(chosen)
    counts = rng.geometric(1.0 - p.retry_more_p, files.shape[0]) if files.size else files
    r_file = np.repeat(files, counts).astype(np.int32)
    starts = np.repeat(np.cumsum(counts) - counts, counts)
    r_seq = (np.arange(r_file.shape[0]) - starts + 1).astype(np.int16)
    delays = 1 + rng.poisson(max(p.retry_delay_cycles - 1.0, 0.0), r_file.shape[0])
    # Each retry comes some migrations after the previous write of the same file.
    total = np.cumsum(delays)
    group_first = (np.cumsum(counts) - counts).astype(np.int64)
    cum_delay = total - np.repeat(total[group_first] - delays[group_first], counts)
    r_batch = (f_batch[r_file] + cum_delay).astype(np.int64)

    if patho >= 0 and p.pathological_copies > 1:
        k = p.pathological_copies - 1
        cycles = max(1, p.pathological_cycles)
        pb = f_batch[patho] + 1 + (np.arange(k) * cycles) // k
        r_file = np.concatenate([r_file, np.full(k, patho, dtype=np.int32)])
        r_seq = np.concatenate([r_seq, np.arange(1, k + 1, dtype=np.int16)])
        r_batch = np.concatenate([r_batch, pb.astype(np.int64)])

    # The front end retries after its acknowledgement timeout, counted from the migration that
    # wrote the previous copy; the retry waits in the cache for a later migration. Retries that
    # would come after the end of the site's history are not written.
    previous = np.where(r_seq > 1, np.roll(r_batch, 1), f_batch[r_file])
    previous = np.minimum(previous, n_batches - 1)
    earliest = timeline.progress_array(batches.time_s[previous] + p.retry_timeout_s)
    r_batch = np.maximum(r_batch, np.searchsorted(batches.end_u, earliest, side="left"))
    keep = r_batch < n_batches
    r_file, r_seq, r_batch, earliest = r_file[keep], r_seq[keep], r_batch[keep], earliest[keep]
    r_batch = r_batch.astype(np.int32)
    lo = np.maximum(batches.start_u[r_batch], earliest)
    hi = np.maximum(batches.end_u[r_batch], lo)
    r_u = lo + (hi - lo) * rng.random(r_batch.shape[0])
    r_outage = np.zeros(r_file.shape[0], dtype=bool)
    if p.ack_outages == 0:
        return r_file, r_seq, r_batch, r_u, r_outage
    if outage_rng is None:
        raise ValueError("ack_outages needs its own random stream (outage_rng)")
    o_file, o_batch, o_u = anomalies.outage_retries(p, site, f_batch, batches, timeline, outage_rng)
    last_seq = np.zeros(n_files, dtype=np.int16)
    np.maximum.at(last_seq, r_file, r_seq)
    return (
        np.concatenate([r_file, o_file]),
        np.concatenate([r_seq, last_seq[o_file] + 1]).astype(np.int16),
        np.concatenate([r_batch, o_batch]),
        np.concatenate([r_u, o_u]),
        np.concatenate([r_outage, np.ones(o_file.shape[0], dtype=bool)]),
    )


def _pathological_file(p: SiteParams, site: Site, rng: np.random.Generator) -> int:
    if p.pathological_copies < 2:
        return -1
    # A file of the biggest pool (the most write drives), in mid-life, not a small file.
    big = site.f_size >= (p.aggregate_max_file_bytes if p.aggregate else 0)
    main_pool = int(np.argmax([s for _, s in p.experiments]))
    in_pool = site.ds_pool[site.f_ds] == main_pool
    middle = (site.f_u > 0.35) & (site.f_u < 0.65) & big & ~site.f_late & in_pool
    candidates = np.flatnonzero(middle)
    if candidates.size == 0:
        candidates = np.arange(site.n_files)
    return int(candidates[rng.integers(0, candidates.size)])


def queue(
    p: SiteParams,
    site: Site,
    batches: Batches,
    f_batch: np.ndarray,
    retry: Retries,
    timeline: Timeline,
) -> Requests:
    """Order every write request as the migrations take them and deal them to drives."""
    r_file, r_seq, r_batch, r_u, r_outage = retry
    n = site.n_files
    file = np.concatenate([np.arange(n, dtype=np.int32), r_file])
    seq = np.concatenate([np.zeros(n, dtype=np.int16), r_seq])
    batch = np.concatenate([f_batch, r_batch])
    u = np.concatenate([site.f_u, r_u])
    outage = np.concatenate([np.zeros(n, dtype=bool), r_outage])
    del r_file, r_seq, r_batch, r_u, r_outage
    ds = site.f_ds[file]
    pool = site.ds_pool[ds]
    sort_by_dir = batches.policy[batch] == POLICY_SORTED
    width = float(site.ds_files.max() + 2)
    path_key = site.ds_rank[ds].astype(np.float64) * width + site.f_no[file]
    key = np.where(sort_by_dir, path_key, u)
    del path_key, ds, sort_by_dir
    order = np.lexsort((seq, key, batch, pool))
    del key
    file, seq, batch, u, pool = file[order], seq[order], batch[order], u[order], pool[order]
    outage = outage[order]
    del order
    drive = _deal(p, pool, batch, site.f_size[file])
    arrived = np.floor(timeline.seconds(u)).astype(np.uint32)
    del u
    m = file.shape[0]
    return Requests(
        file=file,
        seq=seq,
        outage=outage,
        arrived_s=arrived,
        batch=batch,
        pool=pool,
        drive=drive,
        obj=np.zeros(m, dtype=np.int32),
        member=np.zeros(m, dtype=np.int16),
        members=np.zeros(m, dtype=np.int16),
        offset=np.full(m, -1, dtype=np.int64),
    )


def _deal(p: SiteParams, pool: np.ndarray, batch: np.ndarray, size: np.ndarray) -> np.ndarray:
    """Write drive of each request (sorted by pool, batch, queue order).

    A migration starts one write drive per `migration_drive_bytes` of its volume, up to the
    pool's drives, taking drives in turn from one migration to the next; the queue is dealt to
    them one file each.
    """
    drives = drives_per_pool(p)
    m = pool.shape[0]
    change = np.ones(m, dtype=bool)
    change[1:] = (pool[1:] != pool[:-1]) | (batch[1:] != batch[:-1])
    group = np.cumsum(change) - 1
    firsts = np.flatnonzero(change)
    g_pool = pool[firsts]
    g_bytes = np.bincount(group, weights=size)
    g_drives = drives[g_pool]
    active = np.clip(np.ceil(g_bytes / p.migration_drive_bytes), 1, g_drives).astype(np.int64)
    # First drive of each migration: continue the rotation of the pool's previous migration.
    pool_change = np.ones(firsts.size, dtype=bool)
    pool_change[1:] = g_pool[1:] != g_pool[:-1]
    used_before = np.cumsum(active) - active
    used_before -= used_before[np.flatnonzero(pool_change)][np.cumsum(pool_change) - 1]
    first_drive = used_before % g_drives
    q = np.arange(m, dtype=np.int64) - firsts[group]
    return ((first_drive[group] + q % active[group]) % g_drives[group]).astype(np.int16)


def pack_objects(p: SiteParams, site: Site, req: Requests) -> Objects:
    """Form tape objects: runs of consecutive small files on a drive become aggregates (up to
    `aggregate_max_bytes` and `aggregate_max_members`), written where the run ends; the rest
    are written alone.

    Fills req.obj, req.member, req.members and req.offset in place. Requests are in queue
    order, pool by pool, so a request's index orders it within its pool.
    """
    m = req.file.shape[0]
    size = site.f_size[req.file]
    # write_q: the queue index at which each request's object is written (a run's last member)
    write_q = np.arange(m, dtype=np.int64)
    head = np.ones(m, dtype=bool)  # the request that names its object (an aggregate's first)
    agg = _aggregates(p, req, size) if p.aggregate else None
    if agg is not None:
        idx, seg, seg_first, in_agg, offset, n_of = agg
        member = np.arange(idx.size) - seg_first[seg] + 1
        close_q = idx[np.append(seg_first[1:], idx.size) - 1]
        sel = idx[in_agg]
        write_q[sel] = close_q[seg[in_agg]]
        head[sel] = member[in_agg] == 1
        req.member[sel] = member[in_agg].astype(np.int16)
        req.members[sel] = n_of[in_agg].astype(np.int16)
        req.offset[sel] = offset[in_agg]
        del member, close_q, offset, n_of
    # Objects in (pool, drive, write order): one composite key, pool-major like the queue.
    heads = np.flatnonzero(head)
    del head
    key = (req.pool[heads].astype(np.int64) * 65_536 + req.drive[heads]) * (m + 1)
    key += write_q[heads]
    heads = heads[np.argsort(key, kind="stable")]
    del key, write_q
    req.obj[heads] = np.arange(heads.size, dtype=np.int32)
    if agg is not None:
        idx, seg, seg_first, in_agg = agg[0], agg[1], agg[2], agg[3]
        # Members take the object of their aggregate's first member.
        req.obj[idx[in_agg]] = req.obj[idx[seg_first]][seg[in_agg]]
    obj_size = np.bincount(req.obj, weights=size, minlength=heads.size).astype(np.int64)
    return Objects(
        pool=req.pool[heads],
        drive=req.drive[heads],
        batch=req.batch[heads],
        size=obj_size,
        members=req.members[heads],
    )


def _aggregates(p: SiteParams, req: Requests, size: np.ndarray) -> tuple[np.ndarray, ...] | None:
    """Runs of consecutive small files in each drive's sequence, cut at the size and member
    limits: (request index, segment, segment firsts, in an aggregate, offset, members) over
    the small requests in drive order."""
    m = req.file.shape[0]
    key = (req.pool.astype(np.int64) * 65_536 + req.drive) * (m + 1) + np.arange(m)
    o = np.argsort(key, kind="stable")
    del key
    small_o = size[o] < p.aggregate_max_file_bytes
    stream_change = np.zeros(m, dtype=bool)
    stream_change[0] = True
    for column in (req.pool, req.drive, req.batch):
        c = column[o]
        stream_change[1:] |= c[1:] != c[:-1]
    run_start = small_o & (stream_change | np.append(True, ~small_o[:-1]))
    idx = o[small_o]
    grp_change = run_start[small_o]
    del o, small_o, stream_change, run_start
    if idx.size == 0:
        return None
    grp = np.cumsum(grp_change) - 1
    s = size[idx]
    cum = np.cumsum(s) - s
    sub = (cum - cum[np.flatnonzero(grp_change)][grp]) // p.aggregate_max_bytes
    del grp
    seg_change = grp_change
    seg_change[1:] |= sub[1:] != sub[:-1]
    del sub
    seg0 = np.cumsum(seg_change) - 1
    rank = np.arange(idx.size) - np.flatnonzero(seg_change)[seg0]
    seg_change |= (rank % p.aggregate_max_members) == 0
    del seg0, rank
    seg = np.cumsum(seg_change) - 1
    seg_first = np.flatnonzero(seg_change)
    n_of = np.diff(np.append(seg_first, idx.size))[seg]
    offset = cum - cum[seg_first][seg]
    return idx, seg, seg_first, n_of > 1, offset, n_of
