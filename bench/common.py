"""What the benchmarks share: a server to run on, fresh databases, timing of child processes."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import conninfo, sql

from tapelens.ingest.migrations import migrate
from tapelens.server import server_for, start, stop

ROOT = Path(__file__).resolve().parents[1]
TAPELENS = str(ROOT / ".venv" / "bin" / "tapelens")
PG_BIN = Path("/usr/lib/postgresql/15/bin")


@dataclass(frozen=True)
class Timed:
    seconds: float
    peak_rss_mb: float  # of the child process (ru_maxrss of the waited child)
    stdout: str
    stderr: str
    cpu_seconds: float = 0.0  # user + system CPU of the child and of every thread it ran
    # The most the command's whole process tree held at once (sampled every 0.2 s, never less
    # than peak_rss_mb): a command that starts a JVM (Spark) or other helpers holds theirs too.
    tree_rss_mb: float = 0.0
    returncode: int = 0


def _children() -> dict[int, list[int]]:
    """Every live process's children, from /proc (a process gone while read is left out)."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        # After the command name (in parentheses, which may hold spaces): state, then ppid.
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    return children


def tree_rss_bytes(pid: int) -> int:
    """Resident bytes of every descendant of `pid` (not of `pid` itself), summed now."""
    children = _children()
    page = os.sysconf("SC_PAGE_SIZE")
    total = 0
    todo = list(children.get(pid, []))
    while todo:
        child = todo.pop()
        todo.extend(children.get(child, []))
        try:
            fields = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[21]) * page  # field 24 of /proc/PID/stat: rss in pages
    return total


class TreeRss:
    """The most resident memory a process's descendants held at once, sampled every 0.2 s."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(0.2):
            self.peak = max(self.peak, tree_rss_bytes(self.pid))

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


def measure(argv: list[str], env: dict[str, str] | None = None, check: bool = True) -> Timed:
    """Wall time and peak RSS of one command, isolated in its own measuring process.

    A command that fails ends the benchmark (SystemExit with its stderr), unless `check` is
    False: then its return code is in the result."""
    code = (
        "import json, resource, subprocess, sys, time;"
        "t = time.perf_counter(); p = subprocess.run(sys.argv[1:], capture_output=True, text=True);"
        "s = time.perf_counter() - t;"
        "u = resource.getrusage(resource.RUSAGE_CHILDREN);"
        "print(json.dumps({'s': s, 'rss': u.ru_maxrss, 'cpu': u.ru_utime + u.ru_stime,"
        " 'rc': p.returncode, 'out': p.stdout[-5000:], 'err': p.stderr[-5000:]}))"
    )
    import json

    with subprocess.Popen(
        [sys.executable, "-c", code, *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    ) as proc:
        # The measuring process itself is left out: its children are the command's tree.
        tree = TreeRss(proc.pid)
        out, err = proc.communicate()
        tree_peak = tree.stop()
    if proc.returncode != 0:
        raise subprocess.CalledProcessError(proc.returncode, proc.args, out, err)
    doc = json.loads(out)
    if doc["rc"] != 0 and check:
        raise SystemExit(f"{' '.join(argv)} failed ({doc['rc']}):\n{doc['err'][-2000:]}")
    rss_mb = doc["rss"] / 1024
    return Timed(
        doc["s"],
        rss_mb,
        doc["out"],
        doc["err"],
        doc["cpu"],
        max(rss_mb, tree_peak / 2**20),
        doc["rc"],
    )


def server_cpu_seconds(dsn: str) -> float | None:
    """CPU seconds (user + system) the server's ended processes have used so far: the
    postmaster's reaped children, so a session's backend and its parallel workers count once
    they have exited. None when the server is not on this machine."""
    with psycopg.connect(dsn) as conn:
        row = conn.execute("select pg_backend_pid(), inet_server_addr()").fetchone()
        if row is None or row[1] not in (None, "127.0.0.1", "::1"):
            return None
        try:
            backend = Path(f"/proc/{row[0]}/stat").read_text()
        except OSError:
            return None
    postmaster = int(backend.rsplit(")", 1)[1].split()[1])  # the backend's parent
    time.sleep(0.3)  # lets the postmaster reap the backends of sessions just ended
    fields = Path(f"/proc/{postmaster}/stat").read_text().rsplit(")", 1)[1].split()
    # Fields 16 and 17 of /proc/PID/stat (cutime, cstime): 13 and 14 after the name.
    return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")


def with_dbname(dsn: str, dbname: str) -> str:
    params = conninfo.conninfo_to_dict(dsn)
    params["dbname"] = dbname
    return conninfo.make_conninfo(**params)


@contextmanager
def bench_server(dsn: str | None = None, timescaledb_license: str = "apache") -> Iterator[str]:
    """The server to benchmark on: TAPELENS_BENCH_DSN/--dsn, else an embedded one in a temp dir
    (running TimescaleDB's community edition when `timescaledb_license` is "timescale")."""
    if dsn:
        yield dsn
        return
    home = Path(tempfile.mkdtemp(prefix="tapelens-bench-"))
    server = server_for(home, PG_BIN, "postgres", timescaledb_license)
    try:
        yield start(server)
    finally:
        stop(server)
        shutil.rmtree(home, ignore_errors=True)


@contextmanager
def fresh_database(server_dsn: str) -> Iterator[str]:
    name = f"bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
    dsn = with_dbname(server_dsn, name)
    with psycopg.connect(dsn) as conn:
        migrate(conn, dsn)
    try:
        yield dsn
    finally:
        with psycopg.connect(server_dsn, autocommit=True) as conn:
            conn.execute(
                sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name))
            )


def machine() -> str:
    mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores ({cpu}), {mem_gb:.0f} GiB, {platform.platform()}"
