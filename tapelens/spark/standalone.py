"""A Spark standalone cluster on this machine (127.0.0.1): a master and its workers, each its own
JVM, started and stopped with the daemon script that ships with Spark, for the tests and the
benchmarks that run tapelens on a real cluster.

Spark's `sbin/start-master.sh` and `sbin/start-worker.sh` (apache/spark) come down to
`spark-daemon.sh start org.apache.spark.deploy.master.Master 1 --host H --port P --webui-port W`
and `spark-daemon.sh start org.apache.spark.deploy.worker.Worker N --webui-port W spark://H:P
[options]`; the pip pyspark package ships `sbin/spark-daemon.sh` and `bin/spark-class` but not
those two, so they are run here as those scripts run them, with SPARK_HOME the package's folder.
Each daemon's pid file, log and work folder are under the cluster's own folder, never in the
package; `stop()` ends every JVM it started, the executors the workers launched included.

A driver reaches the cluster at `master_url`; `client_env()` is the environment a tapelens
command needs to run on it (the engine, the master, and a Spark configuration folder whose
spark-defaults.conf the driver's spark-submit reads: the driver on 127.0.0.1, and an event log
when asked for, from which `tasks_per_worker` counts the tasks each worker's executors ran).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import closing, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tapelens.errors import ConfigError

HOST = "127.0.0.1"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
IDENT = "tapelens"  # SPARK_IDENT_STRING: names the pid files


def spark_home() -> Path:
    """The pyspark package's folder: Spark's jars, bin/ and sbin/ (SPARK_HOME of a pip install)."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (the OS picks it)."""
    with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class WorkerDaemon:
    """One worker of the cluster: its instance number, ports and work folder (where each
    executor it launches keeps a folder `<app id>/<executor id>`)."""

    number: int
    port: int
    webui_port: int
    work_dir: Path

    def executors(self, app_id: str) -> set[str]:
        """The ids of the executors this worker launched for the application."""
        app = self.work_dir / app_id
        return {p.name for p in app.iterdir() if p.is_dir()} if app.is_dir() else set()


@dataclass
class StandaloneCluster:
    """A running standalone cluster: the master at `master_url` and its workers."""

    folder: Path
    port: int
    webui_port: int
    workers: list[WorkerDaemon] = field(default_factory=list)
    event_log: Path | None = None

    @property
    def master_url(self) -> str:
        return f"spark://{HOST}:{self.port}"

    @property
    def conf_dir(self) -> Path:
        """The Spark configuration folder of the daemons and of the drivers (client_env)."""
        return self.folder / "conf"

    def daemon_env(self) -> dict[str, str]:
        """The environment spark-daemon.sh runs in: everything it writes under `folder`."""
        env = dict(os.environ)
        env.update(
            SPARK_HOME=str(spark_home()),
            SPARK_CONF_DIR=str(self.conf_dir),
            SPARK_LOG_DIR=str(self.folder / "logs"),
            SPARK_PID_DIR=str(self.folder / "pids"),
            SPARK_IDENT_STRING=IDENT,
            SPARK_LOCAL_IP=HOST,
        )
        env.pop("SPARK_NO_DAEMONIZE", None)  # spark-daemon.sh would run in the foreground
        return env

    def client_env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment of a tapelens command run on this cluster (engine spark)."""
        env = dict(os.environ if base is None else base)
        env.update(
            TAPELENS_ENGINE="spark",
            TAPELENS_SPARK_MASTER=self.master_url,
            SPARK_CONF_DIR=str(self.conf_dir),
            SPARK_LOCAL_IP=HOST,
        )
        return env

    def pid_file(self, command: str, number: int) -> Path:
        """spark-daemon.sh's pid file of a daemon (spark-<ident>-<class>-<instance>.pid)."""
        return self.folder / "pids" / f"spark-{IDENT}-{command}-{number}.pid"

    def pid(self, command: str, number: int) -> int | None:
        """The pid of a daemon's JVM, from its pid file, if it still runs."""
        path = self.pid_file(command, number)
        try:
            pid = int(path.read_text().strip())
        except (OSError, ValueError):
            return None
        return pid if _alive(pid) else None

    def worker_pid(self, worker: WorkerDaemon) -> int | None:
        return self.pid(WORKER_CLASS, worker.number)

    def state(self) -> dict[str, Any]:
        """The master's state as its web UI serves it (/json): workers, applications."""
        url = f"http://{HOST}:{self.webui_port}/json/"
        with urllib.request.urlopen(url, timeout=5) as answer:
            state: dict[str, Any] = json.load(answer)
        return state

    def alive_workers(self) -> int:
        workers = self.state().get("workers", [])
        return sum(1 for w in workers if w.get("state") == "ALIVE")

    def kill_worker(self, worker: WorkerDaemon) -> list[int]:
        """SIGKILL a worker's JVM and the executors it launched, as a machine that fails; the
        pids killed."""
        pid = self.worker_pid(worker)
        if pid is None:
            return []
        pids = [*_descendants(pid), pid]
        for each in pids:
            with suppress(ProcessLookupError):
                os.kill(each, signal.SIGKILL)
        return pids

    def stop(self, timeout: float = 30.0) -> None:
        """Stop every daemon of the cluster (SIGTERM, then SIGKILL after `timeout` seconds),
        and any executor a worker left."""
        daemons = [(WORKER_CLASS, w.number) for w in self.workers] + [(MASTER_CLASS, 1)]
        pids: list[int] = []
        for command, number in daemons:
            pid = self.pid(command, number)
            if pid is not None:
                pids += [*_descendants(pid), pid]
        for pid in pids:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while any(_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.2)
        for pid in pids:
            if _alive(pid):
                with suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        for pid in pids:
            _reap(pid)
        for command, number in daemons:
            self.pid_file(command, number).unlink(missing_ok=True)


def start_cluster(
    folder: Path,
    workers: int = 2,
    *,
    cores: int = 1,
    memory: str = "1536m",
    event_log: bool = False,
    conf: Mapping[str, str] | None = None,
    timeout: float = 180.0,
) -> StandaloneCluster:
    """Start a master and `workers` workers (each `cores` cores and `memory`) on 127.0.0.1,
    and wait until every worker has registered with the master (its /json).

    `folder` holds the cluster's configuration, logs, pid files, work folders and, with
    `event_log`, the drivers' event logs; `conf` adds lines to the spark-defaults.conf the
    drivers read. A daemon that does not start, or workers that do not register within
    `timeout` seconds, stop the whole cluster and raise ConfigError."""
    folder = Path(folder).absolute()
    cluster = StandaloneCluster(folder, free_port(), free_port())
    cluster.conf_dir.mkdir(parents=True, exist_ok=True)
    defaults = {"spark.driver.host": HOST, "spark.driver.bindAddress": HOST}
    if event_log:
        cluster.event_log = folder / "events"
        cluster.event_log.mkdir(exist_ok=True)
        defaults["spark.eventLog.enabled"] = "true"
        defaults["spark.eventLog.dir"] = cluster.event_log.as_uri()
    defaults.update(conf or {})
    (cluster.conf_dir / "spark-defaults.conf").write_text(
        "".join(f"{key} {value}\n" for key, value in defaults.items())
    )
    try:
        _daemon(
            cluster,
            MASTER_CLASS,
            1,
            ["--host", HOST, "--port", str(cluster.port), "--webui-port", str(cluster.webui_port)],
        )
        for number in range(1, workers + 1):
            worker = WorkerDaemon(number, free_port(), free_port(), folder / f"work-{number}")
            worker.work_dir.mkdir(exist_ok=True)
            cluster.workers.append(worker)
            _daemon(
                cluster,
                WORKER_CLASS,
                number,
                [
                    "--webui-port", str(worker.webui_port),
                    "--port", str(worker.port),
                    "--host", HOST,
                    "--cores", str(cores),
                    "--memory", memory,
                    "--work-dir", str(worker.work_dir),
                    cluster.master_url,
                ],
            )  # fmt: skip
        _wait_for_workers(cluster, workers, timeout)
    except BaseException:
        cluster.stop()
        raise
    return cluster


@contextmanager
def standalone_cluster(
    folder: Path, workers: int = 2, **options: Any
) -> Iterator[StandaloneCluster]:
    """start_cluster (the same options), stopped (every JVM of it) when the block ends, however
    it ends."""
    cluster = start_cluster(folder, workers, **options)
    try:
        yield cluster
    finally:
        cluster.stop()


def _daemon(cluster: StandaloneCluster, command: str, number: int, args: list[str]) -> None:
    """spark-daemon.sh start <class> <instance> <args>, as start-master.sh and start-worker.sh
    call it; it returns once the JVM runs (or has failed to start)."""
    script = spark_home() / "sbin" / "spark-daemon.sh"
    done = subprocess.run(
        ["bash", str(script), "start", command, str(number), *args],
        env=cluster.daemon_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0 or cluster.pid(command, number) is None:
        said = " ".join((done.stdout + done.stderr).split())[-400:]
        name = command.rsplit(".", 1)[-1]
        raise ConfigError(
            "spark standalone", str(cluster.folder), f"the {name} {number} did not start: {said}"
        )


def _wait_for_workers(cluster: StandaloneCluster, workers: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    alive = 0
    while time.monotonic() < deadline:
        with suppress(OSError, ValueError):
            alive = cluster.alive_workers()
            if alive >= workers:
                return
        time.sleep(0.5)
    raise ConfigError(
        "spark standalone",
        cluster.master_url,
        f"{alive} of {workers} workers registered within {timeout:.0f} s "
        f"(their logs: {cluster.folder / 'logs'})",
    )


def _alive(pid: int) -> bool:
    """Whether the process runs (a zombie child not yet reaped counts as ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _reap(pid: int) -> None:
    # The daemons are children of spark-daemon.sh's nohup, not of this process; only a pid
    # this process started needs waiting for.
    with suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def _descendants(pid: int) -> list[int]:
    """Every process under pid (the executors a worker launched, their Python workers)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry.name))
    found: list[int] = []
    todo = list(children.get(pid, []))
    while todo:
        child = todo.pop()
        found.append(child)
        todo += children.get(child, [])
    return found


@dataclass(frozen=True)
class AppTasks:
    """The tasks one application (one tapelens command) ran, from its event log."""

    app_id: str
    app_name: str
    tasks_per_executor: dict[str, int]  # executor id -> tasks ended
    executor_hosts: dict[str, str]  # executor id -> host


def event_lines(path: Path) -> Iterator[str]:
    """The events of one application's log, a JSON object a line: a file, or the folder of a
    rolling log (Spark 4's default: `eventlog_v2_<app id>/events_<n>_<app id>[.zstd]`), each
    part zstd-compressed when its name says so."""
    parts = sorted(
        (p for p in path.iterdir() if p.name.startswith("events_")),
        key=lambda p: int(p.name.split("_")[1]),
    ) if path.is_dir() else [path]  # fmt: skip
    for part in parts:
        with part.open("rb") as raw:
            if part.suffix == ".zstd":
                import zstandard

                data = zstandard.ZstdDecompressor().stream_reader(raw).read()
            else:
                data = raw.read()
        yield from data.decode().splitlines()


def read_event_log(path: Path) -> AppTasks:
    """The tasks per executor of one application's event log: SparkListenerTaskEnd events
    name the executor that ran each task, SparkListenerExecutorAdded events each executor's
    host."""
    app_id = app_name = ""
    tasks: Counter[str] = Counter()
    hosts: dict[str, str] = {}
    for line in event_lines(path):
        if not line.strip():
            continue
        event = json.loads(line)
        kind = event.get("Event")
        if kind == "SparkListenerApplicationStart":
            app_id = str(event.get("App ID", ""))
            app_name = str(event.get("App Name", ""))
        elif kind == "SparkListenerTaskEnd":
            tasks[str(event["Task Info"]["Executor ID"])] += 1
        elif kind == "SparkListenerExecutorAdded":
            hosts[str(event["Executor ID"])] = str(event["Executor Info"]["Host"])
    return AppTasks(app_id, app_name, dict(tasks), hosts)


def tasks_per_worker(cluster: StandaloneCluster) -> list[tuple[AppTasks, dict[int, int]]]:
    """For each application whose event log the cluster keeps (oldest first), the tasks each
    worker's executors ran, by worker number; an executor of the driver's own (local) has
    none. An executor is its worker's when the worker's work folder holds its folder."""
    if cluster.event_log is None:
        raise ConfigError("spark standalone", str(cluster.folder), "started without event_log")
    out = []
    # named after the application's id, which the master numbers in order
    logs = sorted(cluster.event_log.iterdir(), key=lambda p: p.name.rsplit("-", 1)[-1])
    for path in logs:
        app = read_event_log(path)
        per_worker: dict[int, int] = {w.number: 0 for w in cluster.workers}
        for worker in cluster.workers:
            for executor in worker.executors(app.app_id):
                per_worker[worker.number] += app.tasks_per_executor.get(executor, 0)
        out.append((app, per_worker))
    return out
