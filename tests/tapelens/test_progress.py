"""Every command says its progress the same way: quiet for two seconds, then each event, and a
line every ten seconds while nothing else is said. Clocks are injected: no test waits."""

from __future__ import annotations

import pytest

from tapelens.cli.progress import EVERY_S, QUIET_S, Progress, time_left
from tapelens.dbt_runs import NodeDone


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return capsys.readouterr().err.splitlines()


def test_quiet_then_events_then_a_heartbeat(capsys: pytest.CaptureFixture[str]) -> None:
    clock = Clock()
    progress = Progress("cmd", "working", clock=clock)
    progress.say("too early")  # within the quiet time: a short command says nothing
    clock.now += QUIET_S
    progress.say("step one")
    clock.now += EVERY_S - 0.5
    progress.tick()  # nothing said for 9.5 s: too soon
    clock.now += 0.5
    progress.tick()
    progress.tick()  # just said: not again
    progress.doing = lambda: "status of the moment"
    clock.now += EVERY_S
    progress.tick()
    assert lines(capsys) == [
        "cmd: step one (2.0 s)",
        "cmd: working (12.0 s)",
        "cmd: status of the moment (22.0 s)",
    ]


def test_the_heartbeat_thread_stops_with_the_command() -> None:
    with Progress("cmd", "working", every_s=0.01) as progress:
        assert progress.ticking
    assert not progress.ticking


def test_time_left_at_the_pace_so_far() -> None:
    assert time_left(0, 100, 5.0) == ""
    assert time_left(25, 100, 10.0) == "0:30 left"
    assert time_left(10, 100, 10.0) == "1:30 left"


def test_marts_build_lines(capsys: pytest.CaptureFixture[str]) -> None:
    from tapelens.cli.marts import _BuildProgress

    clock = Clock()
    progress = _BuildProgress()
    progress.clock = clock
    progress.started = progress.said_at = clock.now
    clock.now += 3.0
    progress(NodeDone("fct_file_gaps", "model", "success", 4.0, 1000, 1, 4, 30.0))
    progress(NodeDone("not_null_x", "test", "pass", 0.1, None, 2, 4, None))  # quick, passed
    progress(NodeDone("unique_y", "test", "fail", 0.1, None, 3, 4, None))
    clock.now += EVERY_S
    progress.tick()
    assert lines(capsys) == [
        "marts build: fct_file_gaps success, 1,000 rows in 4.0 s (250 rows/s); 1 of 4 nodes,"
        " about 0:30 left (3.0 s)",
        "marts build: unique_y fail in 0.1 s; 3 of 4 nodes (3.0 s)",
        "marts build: building; 3 of 4 nodes done (13.0 s)",
    ]


def test_demo_generate_lines(capsys: pytest.CaptureFixture[str]) -> None:
    from tapelens.cli.synth import _Stages

    clock = Clock()
    stages = _Stages()
    stages.clock = clock
    stages.started = stages.said_at = clock.now
    clock.now += QUIET_S
    stages("hpss ls -P", 0, 100)
    clock.now += EVERY_S
    stages("hpss ls -P", 40, 100)
    stages("logs", 0, 10)
    assert lines(capsys) == [
        "demo generate: hpss ls -P (2.0 s)",
        "demo generate: hpss ls -P: 40% (12.0 s)",
        "demo generate: logs (12.0 s)",
    ]


def test_ingest_lines_off_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    from tapelens.cli.ingest import _LazyProgress

    clock = Clock()
    load = _LazyProgress("dump.txt")
    load.tty = False
    load.clock = clock
    load.started = load.said_at = clock.now
    clock.now += 5.0
    load(50_000_000, 200_000_000, 100_000)  # 5 s in: not yet ten seconds without a line
    clock.now += 5.0
    load(100_000_000, 200_000_000, 200_000)
    load(100_000_000, 200_000_000, 200_000, step="indexes")
    assert lines(capsys) == [
        "dump.txt: 100 of 200 MB, 200,000 rows, 20,000 rows/s, 10.0 MB/s, 0:10 left (10.0 s)",
        "dump.txt: 200,000 rows read; building indexes (10.0 s)",
    ]
