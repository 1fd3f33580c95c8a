"""The Superset server of an instance: gunicorn on 127.0.0.1, started in the background.

`start` records the server's pid and port in the instance's server.json; `running` trusts that
record only while the pid is still the gunicorn of the instance's virtualenv, so a stale file
never leads to signalling an unrelated process.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from tapelens.dashboards.superset.install import (
    DashboardsError,
    Progress,
    SupersetHome,
    private_file,
    quiet,
)

HOST = "127.0.0.1"
# Superset's import of its whole app takes 5-20 s; on a loaded 2-core machine, more.
HEALTH_TIMEOUT_S = 300.0
STOP_TIMEOUT_S = 30.0
# One gunicorn worker with threads: a dashboard fires one request per chart at once.
GUNICORN_WORKERS = 1
GUNICORN_THREADS = 8
GUNICORN_TIMEOUT_S = 300


@dataclass(frozen=True)
class Running:
    pid: int
    port: int

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"


# -- the server --------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child of this process counts as gone.
    with contextlib.suppress(ChildProcessError):
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    return True


def healthy(url: str, timeout_s: float = 5.0) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=timeout_s) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def running(home: SupersetHome) -> Running | None:
    """The server this instance started, if it is still there."""
    try:
        state = json.loads(home.state_path.read_text())
        found = Running(pid=int(state["pid"]), port=int(state["port"]))
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return None
    return found if _alive(found.pid) and _is_our_server(home, found.pid) else None


def _is_our_server(home: SupersetHome, pid: int) -> bool:
    """Whether pid is the gunicorn this instance started (not a process that reused the pid)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return any(arg.decode(errors="replace") == str(home.bin / "gunicorn") for arg in argv[:2])


def start(
    home: SupersetHome,
    port: int | None = None,
    wait: bool = True,
    progress: Progress = quiet,
) -> Running:
    """Start Superset on 127.0.0.1 in the background (a no-op when it runs already) and, with
    `wait`, return once /health answers."""
    current = running(home)
    if current is not None and (port is None or port == current.port):
        if wait:
            wait_healthy(home, current)
        return current
    if current is not None:
        stop(home)
    port = port or free_port()
    argv = [
        str(home.bin / "gunicorn"),
        "--bind",
        f"{HOST}:{port}",
        "--workers",
        str(GUNICORN_WORKERS),
        "--worker-class",
        "gthread",
        "--threads",
        str(GUNICORN_THREADS),
        "--timeout",
        str(GUNICORN_TIMEOUT_S),
        "--limit-request-line",
        "0",
        "superset.app:create_app()",
    ]
    progress(f"starting Superset on {HOST}:{port} (log: {home.log_path})")
    private_file(home.log_path)  # requests in the log can carry session data
    with open(home.log_path, "ab") as log:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=home.env(),
            cwd=home.root,
            start_new_session=True,
        )
    started = Running(pid=process.pid, port=port)
    home.state_path.write_text(json.dumps({"pid": process.pid, "port": port}) + "\n")
    if wait:
        wait_healthy(home, started)
    return started


def wait_healthy(home: SupersetHome, server: Running, timeout_s: float = HEALTH_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if healthy(server.url):
            return
        if not _alive(server.pid):
            raise DashboardsError(
                f"Superset stopped while starting: {_last_log_line(home)} (log: {home.log_path})"
            )
        time.sleep(1.0)
    raise DashboardsError(
        f"Superset did not answer on {server.url}/health within {timeout_s:.0f} s "
        f"(log: {home.log_path})"
    )


def _last_log_line(home: SupersetHome) -> str:
    try:
        lines = [line for line in home.log_path.read_text().splitlines() if line.strip()]
    except FileNotFoundError:
        return "no log"
    return lines[-1].strip() if lines else "empty log"


def stop(home: SupersetHome) -> bool:
    """Stop the server this instance started; False when none was running."""
    current = running(home)
    if current is None:
        home.state_path.unlink(missing_ok=True)
        return False
    # gunicorn's master ends its workers on SIGTERM; the group catches any stray one.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(current.pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while _alive(current.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if _alive(current.pid):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(current.pid, signal.SIGKILL)
    home.state_path.unlink(missing_ok=True)
    return True
