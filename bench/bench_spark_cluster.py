"""Spark standalone: one worker against two, on the same small generated site.

Run: .venv/bin/python bench/bench_spark_cluster.py [--files N] [--seed S] [--workers 1,2]

For each worker count, a fresh standalone cluster on 127.0.0.1 (tapelens.spark.standalone:
master and workers each their own JVM, one core and 1.5 GB a worker) and a fresh warehouse;
through the CLI, as a user runs them: `db migrate`, the loads of the site's HPSS catalog
(`hsi ls -P`), staging log and mounts, and `marts build`. Prints each step's wall time, and the
tasks each worker's executors ran in it (from the event log), then the load average: on a
machine of two cores shared with other work, the second worker's core is not a free one.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from tapelens.spark.standalone import standalone_cluster, tasks_per_worker
from tapelens.world import generate, site_params

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import TAPELENS, machine, measure  # noqa: E402

SMALL = {"spark.databricks.delta.snapshotPartitions": "2"}


def steps(site: Path) -> list[tuple[str, list[str]]]:
    return [
        ("db migrate", ["db", "migrate"]),
        (
            "ingest catalog",
            [
                "ingest",
                "catalog",
                "--format",
                "hpss-lsp",
                "--source",
                "bnl-hpss",
                str(site / "catalog" / "ls-P.txt"),
            ],
        ),  # fmt: skip
        (
            "ingest transfers",
            ["ingest", "transfers", "--format", "staging-csv", str(site / "logs" / "staging.csv")],
        ),
        (
            "ingest mounts",
            ["ingest", "mounts", "--format", "csv", str(site / "logs" / "mounts.csv")],
        ),
        ("marts build", ["marts", "build"]),
    ]


def run_on(workers: int, site: Path, folder: Path) -> list[tuple[str, float, dict[int, int]]]:
    """Every step on a fresh cluster of `workers` workers: (step, wall s, tasks per worker)."""
    out: list[tuple[str, float]] = []
    with standalone_cluster(folder / "spark", workers, event_log=True, conf=SMALL) as cluster:
        env = cluster.client_env()
        env.update(
            TAPELENS_HOME=str(folder / "home"), TAPELENS_SPARK_WAREHOUSE=str(folder / "warehouse")
        )
        for name, args in steps(site):
            timed = measure([TAPELENS, *args], env)
            out.append((name, timed.seconds))
            print(f"  {workers} worker(s)  {name:<18} {timed.seconds:7.1f} s", flush=True)
        apps = tasks_per_worker(cluster)
    assert len(apps) == len(out), "one application per step"
    return [(name, s, per) for (name, s), (_, per) in zip(out, apps, strict=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--workers", default="1,2")
    args = parser.parse_args()
    print(machine())
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-spark-cluster-") as tmp:
        site = Path(tmp) / "site"
        generate(site, site_params("bnl", files=args.files, seed=args.seed))
        for workers in (int(w) for w in args.workers.split(",")):
            started = time.monotonic()
            results[workers] = run_on(workers, site, Path(tmp) / f"w{workers}")
            print(f"  {workers} worker(s): {time.monotonic() - started:.0f} s with the cluster")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print()
    print("| step | workers | wall s | tasks per worker |")
    print("|---|---:|---:|---|")
    for workers, rows in results.items():
        for name, seconds, per in rows:
            tasks = ", ".join(f"worker {n}: {t}" for n, t in per.items())
            print(f"| {name} | {workers} | {seconds:.1f} | {tasks} |")
    if len(results) > 1:
        print()
        for name, *_ in next(iter(results.values())):
            times = {w: dict((n, s) for n, s, _ in rows)[name] for w, rows in results.items()}
            ratio = " / ".join(f"{times[w]:.1f}" for w in results)
            print(f"{name}: {ratio} s ({' against '.join(f'{w} worker(s)' for w in results)})")


if __name__ == "__main__":
    main()
