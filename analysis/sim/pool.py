"""Requests into and out of the simulated library's pool, the scheduler's view of what waits
for each tape (analysis/sim/state.py holds the state)."""

from __future__ import annotations

from collections.abc import Sequence

from tapelens.analysis.sim.state import (
    ASSIGNED,
    BACKLOG,
    FUTURE,
    HELD,
    POOL,
    DriveState,
    SimState,
)


def sorted_in(reqs: list[int], st: Sequence[int], state: int) -> list[int]:
    """The distinct requests of `reqs` in `state`, sorted (a function of its own, so that its
    callers, which run once per mount, do not pay for a closure cell on every call)."""
    return sorted({r for r in reqs if st[r] == state})


def submit(s: SimState, r: int) -> None:
    """Request r is sent: it waits for the network, or (planned) for its tape's turn, or
    joins the backlog."""
    if not s.net.up:
        s.req.st[r] = HELD
        s.front.held_out.append(r)
    elif s.req.plan_live[r] and not s.pool.block_open[s.req.block_of[r]]:
        s.req.st[r] = FUTURE
        s.req.arrived[r] = True
    else:
        to_backlog(s, r)


def open_block(s: SimState, block: list[int], now: float) -> None:
    """A planned drive mounts a tape of its plan: the files of it sent so far are asked for,
    in plan order; the others will be as they come."""
    s.pool.block_open[s.req.block_of[block[0]]] = True
    for r in block:
        if s.req.arrived[r] and s.req.st[r] == FUTURE:
            to_backlog(s, r)
    s.admit(now)


def to_backlog(s: SimState, r: int) -> None:
    s.req.st[r] = BACKLOG
    s.req.gen[r] += 1
    if s.req.gen[r] > 1:
        s.front.repeats = True
    s.front.backlog.append(s.req.gen[r] * s.n + r)


def to_pool(s: SimState, r: int) -> None:
    p = s.p
    t = p.tape[r]
    s.req.st[r] = POOL
    s.pool.pending[t].append(r)
    if s.pool.count_bytes:
        s.pool.pool_bytes[t] += p.size[r]
    if s.policy == "by-demand":
        s.pool.line.rank(t, p.tape_media[t], (-s.pool.pool_bytes[t],))
    elif not s.pool.line.queued[t]:
        s.pool.line.rank(t, p.tape_media[t], (s.req.adm[r],), p.requester[r])


def rerank(s: SimState) -> None:
    """Tapes whose pooled requests failed: in line again by those still pooled, or out."""
    p, st, adm = s.p, s.req.st, s.req.adm
    for t in sorted(s.pool.dirty):
        live = [r for r in dict.fromkeys(s.pool.pending[t]) if st[r] == POOL]
        s.pool.pending[t] = live
        s.pool.pool_bytes[t] = sum(p.size[r] for r in live)
        if not live:
            s.pool.line.drop(t)
        elif s.policy == "by-demand":
            s.pool.line.rank(t, p.tape_media[t], (-s.pool.pool_bytes[t],))
        else:
            oldest = min(live, key=adm.__getitem__)
            s.pool.line.rank(t, p.tape_media[t], (adm[oldest],), p.requester[oldest])
    s.pool.dirty.clear()


def pooled(s: SimState, t: int) -> bool:
    """Whether tape t has pooled bytes."""
    return s.pool.pool_bytes[t] > 0 if s.pool.count_bytes else bool(s.pool.pending[t])


def take(s: SimState, t: int) -> list[int]:
    """Every pooled request of tape t, in position order, now assigned."""
    st = s.req.st
    pending = s.pool.pending[t]
    if not s.front.repeats:  # all pooled, each once (see repeats)
        pending.sort()
        reqs = pending
    elif len(pending) == 1:  # the common cases: no set, no sort
        reqs = pending if st[pending[0]] == POOL else []
    elif len(pending) == 2:
        a, b = sorted(pending)
        reqs = [a] if st[a] == POOL else []
        if b != a and st[b] == POOL:
            reqs.append(b)
    else:  # a request back in the pool may be listed twice
        reqs = sorted_in(pending, st, POOL)
    for r in reqs:
        st[r] = ASSIGNED
    s.pool.pending[t] = []
    s.pool.pool_bytes[t] = 0
    s.pool.line.drop(t)
    return reqs


def own(s: SimState, drv: DriveState, requester: int) -> None:
    """The drive serves `requester` (-1: nobody). Counted for equal sharing only, the one
    policy that reads it: the others leave every drive's owner at -1."""
    if drv.owner >= 0:
        s.pool.active[drv.owner] -= 1
    drv.owner = requester
    if requester >= 0:
        s.pool.active[requester] += 1
