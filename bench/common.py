"""What the benchmarks share: a server to run on, fresh databases, timing of child processes."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import tempfile
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


def measure(argv: list[str], env: dict[str, str] | None = None) -> Timed:
    """Wall time and peak RSS of one command, isolated in its own measuring process."""
    code = (
        "import json, resource, subprocess, sys, time;"
        "t = time.perf_counter(); p = subprocess.run(sys.argv[1:], capture_output=True, text=True);"
        "s = time.perf_counter() - t;"
        "u = resource.getrusage(resource.RUSAGE_CHILDREN);"
        "print(json.dumps({'s': s, 'rss': u.ru_maxrss, 'cpu': u.ru_utime + u.ru_stime,"
        " 'rc': p.returncode, 'out': p.stdout[-5000:], 'err': p.stderr[-5000:]}))"
    )
    import json

    res = subprocess.run(
        [sys.executable, "-c", code, *argv],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        check=True,
    )
    doc = json.loads(res.stdout)
    if doc["rc"] != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({doc['rc']}):\n{doc['err'][-2000:]}")
    return Timed(doc["s"], doc["rss"] / 1024, doc["out"], doc["err"], doc["cpu"])


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
