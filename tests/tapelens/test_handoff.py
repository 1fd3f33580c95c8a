"""Handing items between threads: bounded, and stoppable from either side."""

from __future__ import annotations

import threading

import pytest

from tapelens.handoff import DONE, Handoff

pytestmark = pytest.mark.timeout(60)


def _worker(handoff: Handoff, items: list[object], finish: object = DONE) -> threading.Thread:
    def run() -> None:
        for item in items:
            if not handoff.put(item):
                return
        handoff.put(finish)

    return threading.Thread(target=run, daemon=True)


def test_items_of_several_workers_come_out_once_each() -> None:
    handoff = Handoff(2)
    workers = [_worker(handoff, list(range(k * 100, k * 100 + 100))) for k in range(3)]
    assert sorted(handoff.drain(workers, ends=3)) == list(range(300))  # type: ignore[type-var]


def test_a_worker_failure_is_raised_to_the_consumer() -> None:
    handoff = Handoff(2)
    workers = [_worker(handoff, [1, 2], finish=ValueError("bad line"))]
    with pytest.raises(ValueError, match="bad line"):
        list(handoff.drain(workers))


def test_a_consumer_that_leaves_early_releases_a_blocked_worker() -> None:
    handoff = Handoff(1)
    worker = _worker(handoff, list(range(1000)))
    items = handoff.drain([worker])
    assert next(items) == 0
    items.close()  # stops the handoff and joins the worker, blocked on a full queue
    assert not worker.is_alive()


def test_a_stopped_handoff_neither_takes_nor_gives() -> None:
    handoff = Handoff(1)
    handoff.stop.set()
    assert handoff.put("x") is False
    assert handoff.get() is DONE
