"""tapelens on a real Spark standalone cluster: a master and two workers on 127.0.0.1, each its
own JVM, started with the daemon script that ships with Spark (tapelens.spark.standalone; the
arguments are those of sbin/start-master.sh and sbin/start-worker.sh in apache/spark).

The commands run as a user runs them, through the CLI in a subprocess with TAPELENS_ENGINE=spark
and TAPELENS_SPARK_MASTER=spark://127.0.0.1:<port>; the driver is that process, so which worker
ran what is read from the application's event log afterwards (SparkListenerTaskEnd events name
the executor of each task, and each worker's work folder the executors it launched).

The site is a small generated HPSS site (tapelens.world: its `hsi ls -P` listing, its staging
log and its mount log as CSV); the readers' fixtures and their sources are in docs/formats/.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest

from tapelens.spark.standalone import StandaloneCluster, standalone_cluster, tasks_per_worker
from tapelens.world import generate, site_params

pytest.importorskip("pyspark")
pytest.importorskip("delta")

pytestmark = [pytest.mark.slow, pytest.mark.cluster, pytest.mark.timeout(3600)]

ROOT = Path(__file__).resolve().parents[2]
TAPELENS = Path(sys.executable).parent / "tapelens"  # the command as installed
FILES = 300
SEED = 5
# The drivers' settings, in the spark-defaults.conf of the cluster's configuration folder (what
# a site's Spark configuration sets): a small site's Delta logs are a few files, and compiling
# each query's Java code costs more than running it interpreted.
SMALL = {
    "spark.databricks.delta.snapshotPartitions": "2",
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}
COMMAND_TIMEOUT = 1500
DRIVES = "LTO9:2,LTO8:2,LTO7:2"  # the generated site's media, as the demo plans on them


@dataclass
class Run:
    """The cluster, the site and what the commands on it said."""

    cluster: StandaloneCluster
    site: Path
    home: Path
    warehouse: Path
    said: dict[str, str]  # command -> what it printed

    def env(self) -> dict[str, str]:
        env = self.cluster.client_env()
        env.update(TAPELENS_HOME=str(self.home), TAPELENS_SPARK_WAREHOUSE=str(self.warehouse))
        return env

    def tapelens(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(TAPELENS), *args],
            env=self.env(),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT,
            check=False,
        )
        if check:
            assert done.returncode == 0, f"tapelens {' '.join(args)}:\n{done.stderr[-3000:]}"
        self.said[" ".join(args)] = done.stdout + done.stderr
        return done

    def table(self, name: str, schema: str = "tapelens") -> Path:
        return self.warehouse / "tables" / f"{schema}.db" / name


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    """A cluster of two workers (one core, 1.5 GB each) and a generated site on it: tables
    created, the catalog, the staging log and the tape inventory loaded, the marts built, a
    report and a recall plan made, the status shown."""
    folder = tmp_path_factory.mktemp("cluster")
    site = tmp_path_factory.mktemp("sites") / "bnl"
    generate(site, site_params("bnl", files=FILES, seed=SEED))
    with standalone_cluster(folder / "spark", 2, memory="1536m", event_log=True, conf=SMALL) as cl:
        run = Run(cl, site, folder / "home", folder / "warehouse", {})
        run.tapelens("db", "migrate")
        run.tapelens(
            "ingest", "catalog", "--format", "hpss-lsp", "--source", "bnl-hpss",
            str(site / "catalog" / "ls-P.txt"),
        )  # fmt: skip
        run.tapelens(
            "ingest", "transfers", "--format", "staging-csv", str(site / "logs" / "staging.csv")
        )
        # The inventory: the tapes' media, without which no drive reads them.
        run.tapelens("ingest", "tapes", "--format", "csv", str(site / "catalog" / "tapes.csv"))
        run.tapelens("marts", "build")
        run.tapelens("report", "gaps", "--by", "type", "--format", "csv")
        requests = folder / "requests.txt"
        requests.write_text("\n".join(listed_paths(site / "catalog" / "ls-P.txt")[:40]) + "\n")
        run.tapelens(
            "plan", "recall", str(requests), "--drives", DRIVES, "-o", str(folder / "plan.csv")
        )
        run.tapelens("db", "status")
        yield run


def listed_paths(listing: Path) -> list[str]:
    """The paths of an `hsi ls -P` listing's FILE lines (the second tab-separated field)."""
    return [
        line.split("\t")[1]
        for line in listing.read_text().splitlines()
        if line.startswith("FILE\t")
    ]


def delta_log(table: Path) -> list[dict[str, object]]:
    """A Delta table's commits, oldest first: each commit's actions, read from _delta_log."""
    commits = []
    for path in sorted((table / "_delta_log").glob("*.json")):
        actions = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        commits.append({"version": int(path.stem), "actions": actions})
    return commits


def live_rows(table: Path) -> int:
    """The rows of a Delta table's current version: its log replayed (each commit adds and
    removes data files), the rows of the files left counted. Read from the files, so that no
    second driver opens the warehouse's metastore."""
    files: set[str] = set()
    for commit in delta_log(table):
        for action in commit["actions"]:
            assert isinstance(action, dict)
            if "add" in action:
                files.add(action["add"]["path"])
            elif "remove" in action:
                files.discard(action["remove"]["path"])
    return sum(pl.scan_parquet(table / f).select(pl.len()).collect().item() for f in files)


def buckets_of_volumes(table: Path) -> dict[str, int]:
    """Each volume's partition in a Delta table partitioned by volume_bucket, from the folders
    (volume_bucket=N) its data files are in."""
    out: dict[str, int] = {}
    for part in table.glob("volume_bucket=*/*.parquet"):
        bucket = int(part.parent.name.split("=", 1)[1])
        for volume in pl.read_parquet(part, columns=["volume"])["volume"].unique():
            out[volume] = bucket
    return out


def operations(table: Path, since: int = 0) -> list[str]:
    """The operation of each commit of a Delta table from version `since` (WRITE, MERGE,
    RESTORE...)."""
    out = []
    for commit in delta_log(table)[since:]:
        actions = commit["actions"]
        assert isinstance(actions, list)
        out.append(next(a["commitInfo"]["operation"] for a in actions if "commitInfo" in a))
    return out


def test_both_workers_run_the_commands(run: Run) -> None:
    """Every command ran on the cluster, and both workers' executors ran tasks of the load of
    the catalog and of the marts build (from each application's event log)."""
    apps = tasks_per_worker(run.cluster)
    # migrate, 3 loads, build, report, plan, status
    assert len(apps) == 8, [app.app_id for app, _ in apps]
    for app, per_worker in apps:
        assert app.tasks_per_executor, f"{app.app_id} ran no task on the cluster"
        # every task ran on an executor of one of the two workers (none on the driver)
        assert sum(per_worker.values()) == sum(app.tasks_per_executor.values()), app
    catalog, marts = apps[1][1], apps[4][1]
    assert catalog[1] > 0 and catalog[2] > 0, catalog
    assert marts[1] > 0 and marts[2] > 0, marts
    assert "models built" in run.said["marts build"]
    report = run.said["report gaps --by type --format csv"]
    assert report.startswith("dataset_type,"), report
    plan = pl.read_csv(run.home.parent / "plan.csv")  # the folder the fixture planned into
    assert plan.height > 0 and "volume" in plan.columns, plan
    status = run.said["db status"]
    assert f"master       {run.cluster.master_url}" in status, status
    assert live_rows(run.table("tape_files")) >= FILES
    assert live_rows(run.table("transfers")) > 0
    assert live_rows(run.table("fct_file_gaps", "tapelens_marts")) > 0


def test_marts_are_partitioned_by_the_volume_bucket(run: Run) -> None:
    """The per-copy and per-object marts are Delta tables partitioned by volume_bucket, and a
    volume sits in the same bucket there as in the catalog (tapelens.spark.tables.bucket_of)."""
    want = buckets_of_volumes(run.table("tape_files"))
    assert len(set(want.values())) > 1  # a site of several buckets
    for mart in ("fct_file_gaps", "plan_tape_objects", "fct_dataset_tape_gaps"):
        folder = run.table(mart, "tapelens_marts")
        metadata = next(
            a["metaData"] for c in delta_log(folder) for a in c["actions"] if "metaData" in a
        )
        assert metadata["partitionColumns"] == ["volume_bucket"], mart
        got = buckets_of_volumes(folder)
        assert got and all(want[v] == b for v, b in got.items()), mart
    # the summaries of one row per volume are not partitioned
    layouts = next(
        a["metaData"]
        for c in delta_log(run.table("plan_tape_layouts", "tapelens_marts"))
        for a in c["actions"]
        if "metaData" in a
    )
    assert layouts["partitionColumns"] == []


def test_a_worker_killed_mid_load_leaves_all_or_nothing(run: Run) -> None:
    """SIGKILL one worker's JVM and its executor while a catalog load runs on the cluster: the
    table afterwards holds the whole load or none of it (Delta's history: the load's commits
    stand whole, or were restored to the version before it), and the next commands work."""
    table = run.table("tape_files")
    before = live_rows(table)
    listing = run.site / "catalog" / "ls-P.txt"
    runs = run.table("ingest_runs") / "_delta_log"
    versions_before = len(delta_log(table))
    started = len(list(runs.glob("*.json")))
    args = ["ingest", "catalog", "--format", "hpss-lsp", "--source", "bnl-again", str(listing)]
    load = subprocess.Popen(
        [str(TAPELENS), *args],
        env=run.env(),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # The load has begun writing once its run is committed as running.
        deadline = time.monotonic() + COMMAND_TIMEOUT
        while len(list(runs.glob("*.json"))) == started and load.poll() is None:
            assert time.monotonic() < deadline, "the load never started"
            time.sleep(0.05)
        killed = run.cluster.kill_worker(run.cluster.workers[1])
        assert len(killed) >= 2, "the worker had no executor running the load"
        _, stderr = load.communicate(timeout=COMMAND_TIMEOUT)
    finally:
        if load.poll() is None:
            load.kill()
            load.wait()
    # The listing again under another source: the whole load is as many copies as the first.
    whole = before
    killed_commits = len(delta_log(table)) - versions_before
    if load.returncode == 0:  # the lost tasks ran again on the other worker's executor
        assert live_rows(table) - before == whole, stderr
        assert "RESTORE" not in operations(table, versions_before), stderr
        assert "unchanged" in run.tapelens(*args).stderr
    else:
        # the next command (the same load again) first restores what the failed load wrote,
        # then loads the listing whole
        again = run.tapelens(*args).stderr
        assert "unchanged" not in again, again
        if killed_commits:
            assert operations(table, versions_before)[killed_commits] == "RESTORE", stderr
    assert live_rows(table) - before == whole
