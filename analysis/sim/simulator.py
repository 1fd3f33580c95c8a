"""A discrete-event model of a tape library serving recall requests: the public side.

What it models: robots (count, move time), drives by type (an LTO drive reads its own and the
previous generation), mounts and dismounts, per-file reads timed by the throughput model
(analysis/throughput/model.py: the same parameters a plan's prediction uses, so a plan and its
simulation agree), a stream of requests with submission times, a queue window (the scheduler
sees at most W requests, as dCache's limit on stage requests does), schedulers `fifo`, `sorted`
and `planned`, injected faults and retry policies. Times are seconds from the start of the run.
This module holds `simulate` and re-exports the options and typed results (config.py); the rest
is in inputs.py (request frame to flat lists, scalar read times), state.py (the run's state, one
object passed to every function), events.py (the event loop), pool.py, drives.py,
schedulers.py, admit.py, faults.py, results.py and io.py (files in and out).

Schedulers (docs/domain.md, "What a good recall does"):
- fifo: direct submission as HPSS, CTA and Spectrum Protect serve it (docs/baselines.md): one
  queue per tape; a request for a tape a drive holds joins that drive's queue; a free drive
  mounts the tape of the oldest waiting request it can read (an empty drive first, then the
  longest idle, whose tape is dismounted then) with every request waiting for that tape; a
  drive reads its queue in arrival order; an idle tape stays mounted until its drive is needed
  elsewhere or it has been idle for `idle_dismount_s` (HPSS's 15 minutes by default). With a
  window, requests that are not visible yet cannot join their tape's queue: a small window
  makes tapes leave and come back. The planner's direct-submission baseline is this scheduler
  (analysis/recall/baselines/direct.py runs it).
- sorted: a drive reads one tape at a time in position order (aggregate members by offset),
  pulling in every visible request of that tape; requests arriving for the mounted tape are read
  in the same pass when ahead of the head, otherwise in one more pass after it. Which tape a
  free drive takes next is the policy, ranked as the recall engine ranks it
  (analysis/recall/schedule/policies.py, TapeQueue): `time-slider` (the tape of the oldest
  visible request), `by-demand` (most requested bytes) or `equal` (the requester with the fewest
  drives first, so a lone request does not starve behind a big one).
- planned: each drive follows its part of a plan (columns drive and order, as the planner
  writes them), asking for a tape's files when it mounts the tape; files not sent yet when their
  turn comes, and retries, are left to `sorted` scheduling once the plans are done.

Faults and retries: a drive fault stops the drive for a period (the read in progress fails, the
tape stays in it). During a network outage the library keeps reading into its disk cache but
clients cannot reach it and see their requests fail. `immediate`: clients send every failed
request again as soon as they can (after the outage, each after its own turnaround, so the
retries arrive in no useful order): the library cancels the originals, drops their staged
copies (cache purges) and reads them again as new requests. `cycle:H`: failed requests are sent
again together every H hours, after asking the library, which still holds the originals; only
reads the library itself lost are sent again. docs/domain.md: immediate mass retries after an outage
caused cache purges and unsorted re-reads that cut BNL's rate 75-fold.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import polars as pl

from tapelens.analysis.sim.config import (
    DCACHE_WINDOW,
    DEFAULT_CLIENT_DELAY_S,
    DEFAULT_ROBOTS,
    EVENTS_SCHEMA,
    POLICIES,
    SCHEDULERS,
    Fault,
    Library,
    RetryPolicy,
    SimConfig,
    SimResult,
    parse_duration,
    parse_fault,
    parse_retry,
)
from tapelens.analysis.sim.events import bind, simulate_run
from tapelens.analysis.sim.inputs import can_read, prepare
from tapelens.analysis.sim.state import new_state
from tapelens.analysis.throughput.model import ModelParams
from tapelens.errors import InputError
from tapelens.media import BY_NAME

# The public side: options and results (from config.py), `simulate`, `scattered_requests`.
__all__ = [
    "DCACHE_WINDOW",
    "DEFAULT_CLIENT_DELAY_S",
    "DEFAULT_ROBOTS",
    "EVENTS_SCHEMA",
    "POLICIES",
    "SCHEDULERS",
    "Fault",
    "Library",
    "RetryPolicy",
    "SimConfig",
    "SimResult",
    "parse_duration",
    "parse_fault",
    "parse_retry",
    "scattered_requests",
    "simulate",
]


def simulate(
    requests: pl.DataFrame,
    library: Library,
    params_by_media: Mapping[str, ModelParams],
    config: SimConfig,
    rng: np.random.Generator,
) -> SimResult:
    """Run the library on a request stream; randomness (client turnaround, read-time jitter)
    comes only from `rng`, so one seed gives one history."""
    if not library.drives:
        raise InputError("the library has no drives")
    if library.robots < 1:
        raise InputError(f"the library needs at least one robot, got {library.robots}")
    names = [d.name for d in library.drives]
    if len(set(names)) != len(names):
        raise InputError("drive names must be unique")
    for fault in config.faults:
        if fault.kind == "drive" and fault.drive not in names:
            raise InputError(
                f"--fault names drive {fault.drive!r}; the drives are {', '.join(names[:8])}"
            )
        if fault.kind not in ("drive", "network") or fault.duration_s < 0 or fault.start_s < 0:
            raise InputError(f"fault {fault}: expected a drive or network fault with times >= 0")
    if config.scheduler == "planned" and "drive" not in requests.columns:
        raise InputError("the planned scheduler needs a plan (columns drive and order)")
    if config.scheduler != "planned":  # a plan run by another scheduler: only its files count
        requests = requests.drop("drive", strict=False)
    prepared = prepare(requests, params_by_media, names)
    readable = can_read(library, prepared.media)
    unreadable = [
        prepared.media[m].media_type
        for m in range(len(prepared.media))
        if not any(row[m] for row in readable)
    ]
    if unreadable:
        raise InputError(f"no drive of the library reads {', '.join(sorted(set(unreadable)))}")
    return simulate_run(bind(new_state(prepared, library, readable, config, rng)))


def scattered_requests(
    rng: np.random.Generator,
    tapes: int,
    files_per_tape: int,
    objects_per_tape: int,
    size_bytes: int = 2_000_000_000,
    media_type: str = "LTO-7",
    requester: str = "default",
) -> pl.DataFrame:
    """A synthetic scattered recall (benchmarks, tests, the demo): on each tape, files at
    distinct random positions among `objects_per_tape` objects of `size_bytes`, all submitted at
    once in random order, so arrival order says nothing about where files sit."""
    positions = np.concatenate(
        [np.sort(rng.choice(objects_per_tape, files_per_tape, replace=False)) for _ in range(tapes)]
    )
    tape = np.repeat(np.arange(tapes), files_per_tape)
    order = rng.permutation(tape.size)
    suffix = BY_NAME[media_type].barcode_suffix or ""
    return pl.DataFrame(
        {
            "path": [
                f"/scattered/t{t:05d}/p{p:06d}"
                for t, p in zip(tape[order], positions[order], strict=True)
            ],
            "volume": [f"S{t:05d}{suffix}" for t in tape[order]],
            "media_type": media_type,
            "position": positions[order].astype(np.int64),
            "size_bytes": np.full(tape.size, size_bytes, dtype=np.int64),
            "avg_object_bytes": float(size_bytes),
            "requester": requester,
            "submit_s": 0.0,
        }
    )
