"""Items handed from worker threads to the thread that uses them, through a bounded queue.

The bound keeps memory to a few items when the workers run ahead. Either side may stop early:
the consumer when its caller drops it unfinished or fails, a worker when it fails. A blocked
`put` or `get` then returns instead of waiting for an item that will never be taken or come.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Generator

# Marks the end of one worker's items, and what `get` returns once the handoff is stopped.
DONE = object()
_POLL_S = 0.5  # how often a blocked side looks whether the handoff was stopped


class Handoff:
    """A bounded queue that a stop event ends for both sides (shared by all handoffs of one
    pipeline, so that stopping one stops every stage)."""

    def __init__(self, depth: int, stop: threading.Event | None = None) -> None:
        self._queue: queue.Queue[object] = queue.Queue(maxsize=depth)
        self.stop = stop or threading.Event()

    def put(self, item: object) -> bool:
        """Hand `item` on, unless the handoff was stopped meanwhile (then False)."""
        while not self.stop.is_set():
            try:
                self._queue.put(item, timeout=_POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def get(self) -> object:
        """The next item; DONE once the handoff was stopped."""
        while not self.stop.is_set():
            try:
                return self._queue.get(timeout=_POLL_S)
            except queue.Empty:
                continue
        return DONE

    def drain(
        self, workers: list[threading.Thread], ends: int = 1
    ) -> Generator[object, None, None]:
        """Start `workers` and yield what they hand on until `ends` of them have put DONE; an
        exception handed on is raised here. However the caller leaves, the handoff is stopped
        and the workers joined."""
        for worker in workers:
            worker.start()
        try:
            while ends:
                item = self._queue.get()
                if item is DONE:
                    ends -= 1
                elif isinstance(item, BaseException):
                    raise item
                else:
                    yield item
        finally:
            self.stop.set()
            # A generator dropped unfinished may be closed by the garbage collector on one of
            # its own workers, which cannot wait for itself.
            for worker in workers:
                if worker is not threading.current_thread():
                    worker.join(timeout=10)
