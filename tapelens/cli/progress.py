"""Progress of a long command on stderr, said the same way by every command.

One rule: a command that ends within QUIET_S seconds prints no progress at all; after that, each
event the command reports (a step ended, a model built, a stage begun) is a line, and while a step
runs with nothing to report, a line every EVERY_S seconds says what is under way, so a batch job's
log never goes silent for long. Every line is `<command>: <what> (<seconds since the start> s)`.
Data never goes here: stdout and -o FILE are the command's output.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Self

import click

QUIET_S = 2.0  # a command that ends sooner says nothing of its progress
EVERY_S = 10.0  # while nothing else is said, a line this often

Doing = str | Callable[[], str]


class Progress:
    """Progress lines of one command on stderr: quiet, then events, and a heartbeat.

    `say(line)` reports an event. `doing` is what is under way (a text, or a function that
    gives the current status, such as rows read and rows/s); `tick(now)` prints it when nothing
    has been said for `every_s` seconds. Used as a context manager, a thread ticks once a
    second, for steps (one SQL statement, one dbt model) that report nothing while they run;
    callers that report often call `tick` themselves and need no thread.
    """

    def __init__(
        self,
        command: str,
        doing: Doing = "",
        *,
        quiet_s: float = QUIET_S,
        every_s: float = EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.command = command
        self.doing: Doing = doing
        self.quiet_s = quiet_s
        self.every_s = every_s
        self.clock = clock
        self.started = self.said_at = clock()
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._ticker: threading.Thread | None = None

    def __enter__(self) -> Self:
        self._ticker = threading.Thread(target=self._run, name="progress", daemon=True)
        self._ticker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        if self._ticker is not None:
            self._ticker.join()

    @property
    def ticking(self) -> bool:
        """Whether the heartbeat thread runs."""
        return self._ticker is not None and self._ticker.is_alive()

    def past_quiet(self, now: float | None = None) -> bool:
        """Whether the command has run long enough for its progress to show."""
        return (self.clock() if now is None else now) - self.started >= self.quiet_s

    def say(self, line: str, now: float | None = None) -> None:
        """An event: printed once the quiet time is over, and it restarts the heartbeat's wait."""
        with self._lock:
            now = self.clock() if now is None else now
            self.said_at = now
            self._print(line, now)

    def tick(self, now: float | None = None) -> None:
        """Say what is under way if nothing has been said for every_s seconds."""
        with self._lock:
            now = self.clock() if now is None else now
            if now - self.said_at >= self.every_s and self.past_quiet(now):
                self.said_at = now
                doing = self.doing() if callable(self.doing) else self.doing
                if doing:
                    self._print(doing, now)

    def _run(self) -> None:
        while not self._done.wait(min(1.0, self.every_s)):
            self.tick()

    def _print(self, line: str, now: float) -> None:
        elapsed = now - self.started
        if elapsed >= self.quiet_s:
            click.echo(f"{self.command}: {line} ({elapsed:.1f} s)", err=True)


def time_left(done: float, total: float, elapsed_s: float) -> str:
    """'1:05 left' at the pace so far; '' before anything is done."""
    if not done or not total:
        return ""
    left = max(total - done, 0) * elapsed_s / done
    return f"{int(left // 60)}:{int(left % 60):02d} left"
