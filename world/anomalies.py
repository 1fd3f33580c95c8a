"""Injected anomalies with truth labels: scattered datasets and acknowledgement outages.

Both are what a repack or clean-up advisor should find on a real site, put there on purpose so
that its findings can be scored against the truth:

- A scattered dataset does not arrive in one window: each of its files comes at its own time,
  uniform over `scattered_spread_days` from the dataset's window start (a production that
  trickled in). Many migrations write it, interleaved with everything else, so it ends on many
  tapes with large gaps and locates.
- An acknowledgement outage takes the site's front end down for `ack_outage_hours`. It loses
  the requests it was waiting on: the files in the disk cache not yet migrated when it went
  down, and those that arrived while it was down (a flaky front end, rather than a dead one,
  loses only a share `ack_outage_loss` of them). Once it is back, the transfer service submits
  every lost file again, each after its own back-off, so the next migrations write a burst
  of stray copies, one by one among the new files, on the tapes every pool is filling.

Each anomaly draws from its own random stream (generate.py numbers them), and draws nothing
when its knob is 0, so a site without anomalies is byte-identical to one generated before they
existed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from tapelens.world.params import SiteParams, drives_per_pool
from tapelens.world.timeline import Timeline, epoch_s

if TYPE_CHECKING:
    from tapelens.world.site import Site
    from tapelens.world.writepath import Batches

DAY_S = 86_400.0
HOUR_S = 3_600.0
U_MAX = 1.0 - 1e-12
# A dataset is worth scattering when its own window is at most this share of the spread.
WINDOW_SHARE_OF_SPREAD = 0.25


@dataclass
class Arrivals:
    """The site model's datasets and file arrivals, as scatter() needs them."""

    ds_pool: np.ndarray
    ds_type: np.ndarray
    ds_files: np.ndarray  # files per dataset; a dataset's files are contiguous in f_*
    ds_start_u: np.ndarray
    f_ds: np.ndarray
    f_u: np.ndarray  # arrival progress, changed in place
    f_late: np.ndarray  # changed in place


def scatter(p: SiteParams, a: Arrivals, timeline: Timeline, rng: np.random.Generator) -> np.ndarray:
    """Choose the scattered datasets and redraw their files' arrivals, in place; which
    datasets were scattered (bool per dataset)."""
    chosen = choose_scattered(p, a, timeline, rng)
    idx = np.flatnonzero(chosen[a.f_ds])
    if idx.size:
        # The spread is the dataset's window (cut at the site's end), so none of its files is
        # late: is_late keeps meaning "after the dataset's window".
        start_s = timeline.seconds(a.ds_start_u[a.f_ds[idx]])
        end_s = np.minimum(start_s + p.scattered_spread_days * DAY_S, float(timeline.end_s))
        t = start_s + (end_s - start_s) * rng.random(idx.size)
        a.f_u[idx] = np.minimum(timeline.progress_array(t), U_MAX)
        a.f_late[idx] = False
    return chosen


def choose_scattered(
    p: SiteParams, a: Arrivals, timeline: Timeline, rng: np.random.Generator
) -> np.ndarray:
    """Which datasets to scatter (bool per dataset).

    Drawn among the datasets with at least `scattered_min_files` files, preferring, in this
    order: pools with several write drives (one drive writes one tape at a time, so a dataset
    scattered there would gain locates but hardly any tapes); a spread that ends before the
    cutover when the site sorts after it (a sorting migration puts the trickled files it takes
    side by side, so the dataset would gain tapes but hardly any gaps; FIFO interleaves them
    with everything that arrived meanwhile); a spread that ends before the site does (else it
    is cut short); windows much shorter than the spread (a production that already lasts
    months is spread by nature); and types whose files are written alone rather
    than in aggregates (the gap statistics leave aggregate members out). A preference is
    dropped, last first, when too few datasets meet it; when too few have enough files, the
    largest are taken.
    """
    n_ds = a.ds_files.shape[0]
    chosen = np.zeros(n_ds, dtype=bool)
    k = min(p.scattered_datasets, n_ds)
    if k == 0:
        return chosen
    medians = dict(p.sizes)
    type_alone = np.array(
        [
            not p.aggregate or medians[name].median_bytes >= p.aggregate_max_file_bytes
            for name, _, _ in p.types
        ]
    )
    spread_s = p.scattered_spread_days * DAY_S
    start_s = timeline.seconds(a.ds_start_u)
    firsts = np.cumsum(a.ds_files) - a.ds_files
    on_time = np.where(a.f_late, 0.0, a.f_u)
    window_s = timeline.seconds(np.maximum.reduceat(on_time, firsts)) - start_s
    fifo_until_s = epoch_s(p.cutover) if p.policy_after == "sorted" else timeline.end_s
    preferences = [
        drives_per_pool(p)[a.ds_pool] > 1,
        start_s + spread_s <= fifo_until_s,
        start_s + spread_s <= timeline.end_s,
        window_s <= WINDOW_SHARE_OF_SPREAD * spread_s,
        type_alone[a.ds_type],
    ]
    big = a.ds_files >= p.scattered_min_files
    for kept in range(len(preferences), -1, -1):
        candidates = big.copy()
        for wanted in preferences[:kept]:
            candidates &= wanted
        if int(candidates.sum()) >= k:
            chosen[np.sort(rng.choice(np.flatnonzero(candidates), size=k, replace=False))] = True
            return chosen
    # Largest first; equal sizes by dataset order.
    chosen[np.lexsort((np.arange(n_ds), -a.ds_files))[:k]] = True
    return chosen


def outage_retries(
    p: SiteParams,
    site: Site,
    f_batch: np.ndarray,
    batches: Batches,
    timeline: Timeline,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The extra writes of the outages: (file, batch, u) per retry, in order of arrival.

    An outage of the site's front end starts at a uniform time over the FIFO part of the
    site's life. It loses
    the files that arrived before it ended and were not on tape when it began (the disk cache
    waiting for the next migration, and what came meanwhile). Each gets one retry, submitted
    again after the front end is back, no sooner than the acknowledgement timeout after the
    migration that wrote the first copy, at a time of its own before the next migration runs
    (each file backs off on its own), so a later migration writes it among new arrivals;
    retries past the site's history are not written.
    """
    n_batches = batches.end_u.shape[0]
    # Outages come while migrations write FIFO (before the cutover, on a site that sorts after
    # it): FIFO writes each retry among whatever arrived with it, off its dataset's tapes. A
    # sorting migration would file each retry next to its dataset's newer files, where it
    # costs a recall little.
    until_s = epoch_s(p.cutover) if p.policy_after == "sorted" else timeline.end_s
    until_s = max(min(until_s, timeline.end_s), timeline.start_s + 1)
    begins = timeline.start_s + (until_s - timeline.start_s) * rng.random(p.ack_outages)
    hit = np.zeros(site.n_files, dtype=bool)
    back = np.zeros(site.n_files)
    arrived_s = timeline.seconds(site.f_u)
    migrated_s = batches.time_s[f_batch]
    for begin in np.sort(begins):
        end = begin + p.ack_outage_hours * HOUR_S
        lost = (arrived_s <= end) & (migrated_s >= begin) & ~hit
        if p.ack_outage_loss < 1.0:
            # A flaky front end loses only a share of the acknowledgements.
            lost[np.flatnonzero(lost)[rng.random(int(lost.sum())) >= p.ack_outage_loss]] = False
        # A file lost by two outages is submitted again once, after the first.
        back[lost] = end
        hit |= lost
    del migrated_s
    file = np.flatnonzero(hit)
    if file.size == 0:
        empty = np.zeros(0, dtype=np.int32)
        return empty, empty, np.zeros(0)
    first = f_batch[file]
    earliest = np.maximum(back[file], batches.time_s[first] + p.retry_timeout_s)
    # The transfer service submits the lost files again in the order they first came.
    order = np.lexsort((file, arrived_s[file], earliest))
    file, first, earliest = file[order], first[order], earliest[order]
    u = timeline.progress_array(earliest)
    batch = np.maximum(np.searchsorted(batches.end_u, u, side="left"), first + 1)
    keep = batch < n_batches
    file, batch, u = file[keep], batch[keep].astype(np.int32), u[keep]
    lo = np.clip(u, batches.start_u[batch], batches.end_u[batch])
    # Each file is retried after its own back-off, at some time before that migration runs:
    # FIFO writes the retries one by one among the new arrivals, away from their datasets.
    u = lo + (batches.end_u[batch] - lo) * rng.random(file.shape[0])
    order = np.lexsort((file, u))
    return file[order].astype(np.int32), batch[order], u[order]
