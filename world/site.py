"""The site model: experiments, datasets and files, and when each file reaches the disk cache.

Time runs in "progress" u in [0, 1): the share of the site's files that have arrived. Each pool
is fed by a few production streams that write datasets one after the other, so how datasets
interleave in the cache does not depend on how many files are sampled; timeline.py maps progress
to dates with a growing yearly volume.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tapelens.world import anomalies, naming
from tapelens.world.params import SiteParams, SizeModel
from tapelens.world.timeline import Timeline

MIN_FILE_BYTES = 1_000
MAX_FILE_BYTES = 20_000_000_000
U_MAX = 1.0 - 1e-12


@dataclass
class Site:
    """Datasets (one row per dataset) and files (one row per file) as parallel arrays."""

    pools: tuple[str, ...]
    type_names: tuple[str, ...]
    # datasets
    ds_pool: np.ndarray  # int16 index into pools
    ds_type: np.ndarray  # int8 index into type_names
    ds_files: np.ndarray  # int32 number of files
    ds_dir: list[str]  # the dataset's directory
    ds_prefix: list[str]  # file name up to the file number
    ds_suffix: list[str]  # file name after the file number
    ds_rank: np.ndarray  # int32 rank of ds_dir in byte order (what "sort by directory" uses)
    ds_start_u: np.ndarray  # float64 progress at which the dataset's window opens
    ds_scattered: np.ndarray  # bool: its files trickle in over a long spread (an anomaly)
    # files
    f_ds: np.ndarray  # int32
    f_no: np.ndarray  # int32 file number inside its dataset (1-based)
    f_size: np.ndarray  # int64 bytes
    f_u: np.ndarray  # float64 arrival progress
    f_late: np.ndarray  # bool: arrived after its dataset's window
    # files of the namespace that have no tape copy (size 0)
    z_ds: np.ndarray
    z_no: np.ndarray

    @property
    def n_files(self) -> int:
        return int(self.f_ds.shape[0])

    @property
    def total_bytes(self) -> int:
        return int(self.f_size.sum())


def build_site(
    p: SiteParams,
    timeline: Timeline,
    rng: np.random.Generator,
    scatter_rng: np.random.Generator | None = None,
) -> Site:
    """Draw datasets and files for every pool, then their arrival times in progress.

    The scattered datasets (`scattered_datasets`) are chosen, and their files' arrivals
    redrawn, from scatter_rng alone, so the rest of the site does not change with them.
    """
    pools = tuple(name for name, _ in p.experiments)
    type_names = tuple(name for name, _, _ in p.types)
    per_pool = _split(p.files, np.array([s for _, s in p.experiments], dtype=float))

    ds_pool, ds_type, ds_files = [], [], []
    for pool, n_pool in enumerate(per_pool):
        if n_pool == 0:
            continue
        # No dataset outweighs a pool's production streams (they share the pool's volume).
        cap = int(min(p.dataset_files_max, max(10, n_pool // (2 * p.production_streams))))
        types, counts = _datasets(p, int(n_pool), cap, rng)
        ds_pool.append(np.full(types.shape[0], pool, dtype=np.int16))
        ds_type.append(types)
        ds_files.append(counts)
    pool_arr = np.concatenate(ds_pool)
    type_arr = np.concatenate(ds_type)
    files_arr = np.concatenate(ds_files)

    f_ds = np.repeat(np.arange(files_arr.shape[0], dtype=np.int32), files_arr)
    f_no = _file_numbers(files_arr, rng)
    f_size = _sizes(p, type_names, type_arr[f_ds], rng)
    f_u, f_late, ds_start = _arrivals(p, pool_arr, files_arr, f_ds, timeline, rng)
    scattered = np.zeros(files_arr.shape[0], dtype=bool)
    if p.scattered_datasets:
        if scatter_rng is None:
            raise ValueError("scattered_datasets needs its own random stream (scatter_rng)")
        arrivals = anomalies.Arrivals(pool_arr, type_arr, files_arr, ds_start, f_ds, f_u, f_late)
        scattered = anomalies.scatter(p, arrivals, timeline, scatter_rng)

    ds_year = timeline.year(ds_start)
    names = naming.dataset_names(p, pools, type_names, pool_arr, type_arr, ds_year, rng)
    order = sorted(range(len(names.dirs)), key=lambda i: names.dirs[i].encode())
    rank = np.empty(len(order), dtype=np.int32)
    rank[np.array(order, dtype=np.int64)] = np.arange(len(order), dtype=np.int32)

    z_ds, z_no = _zero_length(p, files_arr, rng)
    return Site(
        pools=pools,
        type_names=type_names,
        ds_pool=pool_arr,
        ds_type=type_arr,
        ds_files=files_arr.astype(np.int32),
        ds_dir=names.dirs,
        ds_prefix=names.prefixes,
        ds_suffix=names.suffixes,
        ds_rank=rank,
        ds_start_u=ds_start,
        ds_scattered=scattered,
        f_ds=f_ds,
        f_no=f_no,
        f_size=f_size,
        f_u=f_u,
        f_late=f_late,
        z_ds=z_ds,
        z_no=z_no,
    )


def _split(total: int, shares: np.ndarray) -> np.ndarray:
    """Integer parts of `total` in proportion to shares (largest remainder)."""
    exact = total * shares / shares.sum()
    out = np.floor(exact).astype(np.int64)
    rest = total - int(out.sum())
    if rest:
        out[np.argsort(-(exact - out), kind="stable")[:rest]] += 1
    return out


def _datasets(
    p: SiteParams, n_files: int, cap: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Dataset types and heavy-tailed file counts (lognormal) that add up to n_files."""
    shares = np.array([s for _, s, _ in p.types], dtype=float)
    scales = np.array([k for _, _, k in p.types], dtype=float)
    # Types are drawn per dataset so that their share of files matches `shares`.
    weights = shares / scales
    weights = weights / weights.sum()
    mean_count = p.dataset_files_median * float(np.exp(p.dataset_files_sigma**2 / 2))
    types_parts, counts_parts, total = [], [], 0
    while total < n_files:
        k = int(max(16, 1.5 * (n_files - total) / mean_count))
        t = rng.choice(len(weights), size=k, p=weights).astype(np.int8)
        c = rng.lognormal(np.log(p.dataset_files_median * scales[t]), p.dataset_files_sigma)
        c = np.clip(np.round(c), 1, cap).astype(np.int64)
        types_parts.append(t)
        counts_parts.append(c)
        total += int(c.sum())
    types = np.concatenate(types_parts)
    counts = np.concatenate(counts_parts)
    cum = np.cumsum(counts)
    last = int(np.searchsorted(cum, n_files))
    types, counts = types[: last + 1], counts[: last + 1].copy()
    counts[last] -= int(cum[last]) - n_files
    return types, counts


def _file_numbers(files: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """File numbers 1..n of each dataset in a random order: jobs finish out of order."""
    n = int(files.sum())
    starts = np.repeat(np.cumsum(files) - files, files)
    local = np.arange(n, dtype=np.int64) - starts
    # Shuffle inside each dataset: sort by dataset + a random fraction.
    ds = np.repeat(np.arange(files.shape[0], dtype=np.float64), files)
    perm = np.argsort(ds + 0.5 * rng.random(n), kind="stable")
    out = np.empty(n, dtype=np.int32)
    out[perm] = (local + 1).astype(np.int32)
    return out


def _sizes(
    p: SiteParams, type_names: tuple[str, ...], f_type: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    models: dict[str, SizeModel] = dict(p.sizes)
    out = np.empty(f_type.shape[0], dtype=np.int64)
    for t, name in enumerate(type_names):
        idx = np.flatnonzero(f_type == t)
        if idx.size == 0:
            continue
        m = models[name]
        body = rng.lognormal(np.log(m.median_bytes), m.sigma, idx.size)
        small = rng.random(idx.size) < m.small_share
        body[small] = rng.lognormal(np.log(m.small_median_bytes), m.small_sigma, int(small.sum()))
        out[idx] = np.clip(body, MIN_FILE_BYTES, MAX_FILE_BYTES).astype(np.int64)
    return out


def _arrivals(
    p: SiteParams,
    ds_pool: np.ndarray,
    ds_files: np.ndarray,
    f_ds: np.ndarray,
    timeline: Timeline,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Arrival progress of each file, and the start of each dataset's window.

    Every pool has `production_streams` producers (detector export, simulation, reconstruction,
    derivation...). A stream writes its datasets one after the other, busy `stream_busy` of the
    time; a dataset's files arrive uniformly over its window, whose length follows its file
    count over a per-dataset rate. Late files (failed jobs rerun, stragglers) arrive days to
    weeks after the window closed.
    """
    n_ds = ds_files.shape[0]
    start = np.zeros(n_ds)
    length = np.zeros(n_ds)
    stream = _balanced_streams(ds_pool, ds_files, p.production_streams)
    rate: np.ndarray = np.asarray(rng.lognormal(-(p.rate_sigma**2) / 2, p.rate_sigma, n_ds))
    for pool in range(int(ds_pool.max()) + 1):
        for s in range(p.production_streams):
            members = np.flatnonzero((ds_pool == pool) & (stream == s))
            if members.size == 0:
                continue
            members = members[rng.permutation(members.size)]
            busy = ds_files[members] / rate[members]
            busy = p.stream_busy * busy / busy.sum()
            idle = (1.0 - p.stream_busy) * rng.dirichlet(np.ones(members.size + 1))
            length[members] = busy
            start[members] = np.cumsum(idle[:-1]) + np.cumsum(busy) - busy
    u = start[f_ds] + length[f_ds] * rng.random(f_ds.shape[0])
    late: np.ndarray = np.asarray(rng.random(f_ds.shape[0])) < p.late_share
    n_late = int(late.sum())
    delay_s = 86_400.0 * rng.lognormal(np.log(p.late_delay_days), 1.0, n_late)
    late_u = timeline.progress_array(timeline.seconds((start + length)[f_ds[late]]) + delay_s)
    fits = late_u < U_MAX
    idx = np.flatnonzero(late)
    u[idx[fits]] = late_u[fits]
    late[idx[~fits]] = False
    return np.minimum(u, U_MAX), late, start


def _balanced_streams(ds_pool: np.ndarray, ds_files: np.ndarray, k: int) -> np.ndarray:
    """Share each pool's datasets between its streams, largest first to the least loaded
    (a workload manager hands new tasks to free capacity), so streams carry similar volumes."""
    stream = np.zeros(ds_pool.shape[0], dtype=np.int64)
    load = np.zeros((int(ds_pool.max()) + 1, k))
    for d in np.lexsort((np.arange(ds_pool.shape[0]), -ds_files)):
        pool = int(ds_pool[d])
        s = int(np.argmin(load[pool]))
        stream[d] = s
        load[pool, s] += ds_files[d]
    return stream


def _zero_length(
    p: SiteParams, files: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """A few empty files per site: in the namespace, never on tape."""
    n = int(rng.binomial(int(files.sum()), p.zero_length_share)) if p.zero_length_share else 0
    ds = (
        np.sort(rng.choice(files.shape[0], size=n)).astype(np.int32) if n else np.zeros(0, np.int32)
    )
    # Number them after the dataset's real files, one after the other.
    k = np.arange(n) - np.searchsorted(ds, ds, side="left")
    no = (files[ds] + 1 + k).astype(np.int32)
    return ds, no
