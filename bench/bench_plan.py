"""Recall planner benchmark: plan a large recall from a synthetic catalog, in memory.

    .venv/bin/python bench/bench_plan.py                  # 1 M files over 20k tapes, 1% dups
    .venv/bin/python bench/bench_plan.py --files 100000 --tapes 2000 --quality

The catalog holds LTO-7 and LTO-8 tapes; each tape carries the files of a few datasets in runs of
nearby positions (gaps 1-3), and 1% of the files have one more, newer copy at the far end of some
other tape (a lost-acknowledgement retry). The timed run plans every file (paths in dataset
order) with the default policy on LTO8:6,LTO7:4, baselines included, in a child process whose
wall time and peak RSS are reported; targets: <= 30 s, <= 4 GB, makespan <= 1.05 x the bound
over the plan's own mounts (schedule_bound_s; lower_bound_s, over every choice of copies, is
printed too).
`--quality` adds the plan-quality ratios (planned vs FIFO vs newest copy) on three scenarios:
whole datasets, scattered files, a mix of requesters.
`--database` loads the same catalog into an embedded server and times, from the database: the
catalog read with byte addresses summed from the catalog, `marts build` of the address marts,
the read with addresses from the marts, and the whole `tapelens plan recall` command of every
first copy (requests file in, plan CSV out; wall time and peak RSS). Targets: <= 30 s, <= 4 GB.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import polars as pl
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import TAPELENS, bench_server, fresh_database, machine, measure  # noqa: E402

from tapelens.analysis.recall.plan.planner import PlanOptions, plan_recall  # noqa: E402
from tapelens.analysis.recall.requests.lists import requests_frame  # noqa: E402
from tapelens.analysis.recall.schedule.drives import parse_drives  # noqa: E402
from tapelens.analysis.recall.schedule.policies import Sharing  # noqa: E402
from tapelens.analysis.recall.store.catalog import load_catalog  # noqa: E402
from tapelens.analysis.throughput.model import default_params  # noqa: E402

GB = 1_000_000_000
OBJECTS_PER_TAPE = 3_000  # objects on a full tape; wanted files are a subset
FILES_PER_DATASET = 200


def synthetic_catalog(n_files: int, n_tapes: int, dup_share: float, seed: int) -> pl.DataFrame:
    """Live copies: main copies in runs of nearby positions, plus stray newer duplicates."""
    rng = np.random.default_rng(seed)
    per_tape = n_files // n_tapes
    tape = np.repeat(np.arange(n_tapes), per_tape)
    n = tape.size
    gaps = rng.choice([1, 1, 1, 2, 3], size=n)
    start = rng.integers(1, OBJECTS_PER_TAPE // 2, size=n_tapes)
    first = np.r_[0, np.flatnonzero(np.diff(tape)) + 1]
    cum = np.cumsum(gaps)
    position = cum - np.repeat(cum[first] - gaps[first], per_tape) + np.repeat(start, per_tape)
    size = np.clip(rng.lognormal(np.log(2 * GB), 0.6, size=n), 1e6, 40 * GB).astype(np.int64)
    media = np.where(rng.random(n_tapes) < 0.6, "LTO-8", "LTO-7")
    names = np.array([f"T{i:05d}" for i in range(n_tapes)])
    file_no = np.arange(n)
    dataset = file_no // FILES_PER_DATASET
    written = datetime(2021, 1, 1, tzinfo=UTC)
    main = pl.DataFrame(
        {
            "file_id": file_no,
            "dataset": dataset,
            "size_bytes": size,
            "volume": names[tape],
            "position": position.astype(np.int64),
            "media_type": media[tape],
            "copy_no": np.ones(n, dtype=np.int32),
        }
    )
    n_dup = int(n * dup_share)
    dup_files = rng.choice(n, size=n_dup, replace=False)
    dup_tape = rng.integers(0, n_tapes, size=n_dup)
    dups = pl.DataFrame(
        {
            "file_id": dup_files,
            "dataset": dataset[dup_files],
            "size_bytes": size[dup_files],
            "volume": names[dup_tape],
            "position": (OBJECTS_PER_TAPE + np.arange(n_dup)).astype(np.int64),
            "media_type": media[dup_tape],
            "copy_no": np.full(n_dup, 2, dtype=np.int32),
        }
    )
    both = pl.concat([main, dups])
    return both.with_columns(
        pl.format("/store/ds{}/f{}", pl.col("dataset"), pl.col("file_id")).alias("path"),
        pl.col("file_id").cast(pl.String),
        pl.format("ds{}", pl.col("dataset")).alias("dataset"),
        pl.lit(None, pl.Int64).alias("offset_bytes"),
        pl.lit(None, pl.String).alias("aggregate_id"),
        pl.when(pl.col("copy_no") == 1)
        .then(pl.lit(written))
        .otherwise(pl.lit(written + timedelta(days=30)))
        .alias("written_at"),
        pl.lit("full").alias("tape_state"),
        pl.lit(float(2 * GB)).alias("avg_object_bytes"),
    )


def scenario_requests(catalog: pl.DataFrame, scenario: str, seed: int) -> pl.DataFrame:
    """whole: half of the datasets (their stray copies sit on tapes not otherwise needed);
    scattered: a random third of the files, in random order; mix: three requesters (a quarter
    of the datasets, a random 5% of the files, and a late request for 20 files)."""
    rng = np.random.default_rng(seed)
    main = catalog.filter(pl.col("copy_no") == 1)
    datasets = main["dataset"].unique(maintain_order=True).to_list()
    if scenario == "whole":
        return requests_frame(datasets[: len(datasets) // 2], "dataset")
    paths = main["path"].to_numpy()
    if scenario == "scattered":
        pick = rng.choice(paths.size, size=paths.size // 3, replace=False)
        return requests_frame(paths[pick].tolist())
    a = requests_frame(datasets[: len(datasets) // 4], "dataset", requester="campaign")
    pick = rng.choice(paths.size, size=paths.size // 20, replace=False)
    b = requests_frame(paths[pick].tolist(), requester="analysis")
    c = requests_frame(paths[-20:].tolist(), requester="user")
    out = pl.concat([a, b, c]).with_columns(
        pl.int_range(pl.len(), dtype=pl.Int64).alias("request_no")
    )
    return out.with_columns(pl.col("request_no").add(1).alias("line_no"))


def run_plan(args: argparse.Namespace) -> dict[str, object]:
    catalog = synthetic_catalog(args.files, args.tapes, args.dups, args.seed)
    main = catalog.filter(pl.col("copy_no") == 1)
    requests = requests_frame(main.sort("dataset", "file_id")["path"].to_list())
    options = PlanOptions(drives=tuple(parse_drives(args.drives).items()))
    t, cpu = time.perf_counter(), time.process_time()
    plan = plan_recall(requests, catalog, default_params(), options)
    seconds, cpu_seconds = time.perf_counter() - t, time.process_time() - cpu
    s = plan.summary
    return {
        "files": s["files"],
        "tapes": s["tapes"],
        "seconds": round(seconds, 2),
        "cpu_seconds": round(cpu_seconds, 2),
        "load_average": round(os.getloadavg()[0], 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "makespan_over_lower_bound": s["makespan_over_lower_bound"],
        "makespan_over_schedule_bound": round(s["makespan_s"] / s["schedule_bound_s"], 6),
        "copy_set": s["copy_set"],
        "copy_choice": s["copy_choice"],
        "mounts": s["mounts"],
        "baselines": s["baselines"],
        "speedups": s["speedups"],
    }


def run_quality(args: argparse.Namespace) -> list[dict[str, object]]:
    catalog = synthetic_catalog(args.files, args.tapes, args.dups, args.seed)
    rows = []
    for scenario in ("whole", "scattered", "mix"):
        requests = scenario_requests(catalog, scenario, args.seed)
        policy = "equal" if scenario == "mix" else "by-demand"
        options = PlanOptions(
            drives=tuple(parse_drives(args.drives).items()), sharing=Sharing(policy=policy)
        )
        s = plan_recall(requests, catalog, default_params(), options).summary
        rows.append(
            {
                "scenario": scenario,
                "policy": policy,
                "files": s["files"],
                "mounts": s["mounts"],
                "makespan_h": round(s["makespan_s"] / 3600, 2),
                "fifo_mounts": s["baselines"]["fifo"]["mounts"],
                "fifo_over_plan": s["speedups"]["fifo"],
                "newest_mounts": s["baselines"]["newest_copy"]["mounts"],
                "newest_over_plan": s["speedups"]["newest_copy"],
                "plan_over_lower_bound": s["makespan_over_lower_bound"],
                "plan_over_schedule_bound": round(s["makespan_s"] / s["schedule_bound_s"], 6),
                "completion_h": {
                    k: round(v["completion_s"] / 3600, 2) for k, v in s["requesters"].items()
                },
            }
        )
    return rows


def load_database(dsn: str, catalog: pl.DataFrame) -> None:
    """The synthetic catalog into tape_files and tapes, by COPY."""
    rows = catalog.select(
        pl.lit("bench").alias("source"),
        pl.format("{}:{}", pl.col("volume"), pl.col("position")).alias("copy_id"),
        "file_id",
        "path",
        "dataset",
        pl.lit("AOD").alias("dataset_type"),
        pl.lit("exp").alias("experiment"),
        "size_bytes",
        "volume",
        "position",
        "copy_no",
        pl.col("written_at").dt.strftime("%Y-%m-%dT%H:%M:%SZ"),
        pl.lit(1).alias("ingest_run_id"),
    )
    tapes = catalog.select("volume", "media_type").unique("volume")
    with psycopg.connect(dsn) as conn, conn.cursor() as cur:
        with cur.copy(f"copy tapelens.tape_files ({', '.join(rows.columns)}) from stdin csv") as cp:
            cp.write(rows.write_csv(include_header=False))
        with cur.copy("copy tapelens.tapes (volume, media_type) from stdin csv") as cp:
            cp.write(tapes.write_csv(include_header=False))
        cur.execute("analyze tapelens.tape_files")
        cur.execute("analyze tapelens.tapes")


def run_database(args: argparse.Namespace) -> dict[str, object]:
    """The catalog read of the same recall from the database (byte addresses from the marts
    when they are built, else summed from the catalog), timed on its own in this process."""
    catalog = synthetic_catalog(args.files, args.tapes, args.dups, args.seed)
    main = catalog.filter(pl.col("copy_no") == 1)
    requests = requests_frame(main.sort("dataset", "file_id")["path"].to_list())
    notes: list[str] = []
    with psycopg.connect(args.dsn, autocommit=True) as conn:
        t = time.perf_counter()
        loaded = load_catalog(conn, requests, note=notes.append)
        load_s = time.perf_counter() - t
    return {
        "copies_loaded": loaded.height,
        "load_catalog_s": round(load_s, 2),
        "addresses": "summed from the catalog" if notes else "from the marts",
        "load_average": round(os.getloadavg()[0], 1),
    }


def plan_from_database_cli(args: argparse.Namespace, dsn: str, workdir: Path) -> None:
    """`tapelens plan recall` of every first copy from the database, as a user runs it: the
    catalog read without marts, the address marts built, the read again, then the whole command
    (requests file to plan CSV and summary) timed with its peak RSS."""
    base = [sys.executable, __file__, *sys.argv[1:]]

    def catalog_read() -> dict[str, object]:
        out = subprocess.run(
            [*base, "--child", "db", "--dsn", dsn], capture_output=True, text=True, check=True
        )
        return dict(json.loads(out.stdout))

    print(json.dumps({"catalog read, no marts": catalog_read()}))
    env = {"TAPELENS_DSN": dsn}
    built = measure([TAPELENS, "marts", "build", "--select", "+plan_tape_layouts"], env=env)
    print(json.dumps({"marts build --select +plan_tape_layouts": {"s": round(built.seconds, 1)}}))
    print(json.dumps({"catalog read, addresses from the marts": catalog_read()}))
    catalog = synthetic_catalog(args.files, args.tapes, args.dups, args.seed)
    paths = catalog.filter(pl.col("copy_no") == 1).sort("dataset", "file_id")["path"]
    requests_file = workdir / "requests.txt"
    requests_file.write_text("\n".join(paths.to_list()) + "\n")
    argv = [TAPELENS, "plan", "recall", str(requests_file), "--drives", args.drives]
    argv += ["-o", str(workdir / "plan.csv"), "--summary", str(workdir / "plan.json")]
    timed = measure(argv, env=env)
    summary = json.loads((workdir / "plan.json").read_text())
    print(
        json.dumps(
            {
                "tapelens plan recall (from the database)": {
                    "files": summary["files"],
                    "wall_s": round(timed.seconds, 1),
                    "peak_rss_mb": round(timed.peak_rss_mb),
                    "load_average": round(os.getloadavg()[0], 1),
                    "stderr": timed.stderr.strip().splitlines()[:2],
                }
            }
        )
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--files", type=int, default=1_000_000)
    ap.add_argument("--tapes", type=int, default=20_000)
    ap.add_argument("--dups", type=float, default=0.01, help="share of files with a duplicate")
    ap.add_argument("--drives", default="LTO8:6,LTO7:4")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--quality", action="store_true", help="also the three quality scenarios")
    ap.add_argument(
        "--database", action="store_true", help="also plan from a database (embedded server)"
    )
    ap.add_argument("--dsn", help=argparse.SUPPRESS)
    ap.add_argument("--child", choices=["plan", "quality", "db"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        run = {"plan": run_plan, "quality": run_quality, "db": run_database}[args.child]
        print(json.dumps(run(args)))
        return
    base = [sys.executable, __file__, *sys.argv[1:]]
    print(f"machine: {machine()}")
    out = subprocess.run([*base, "--child", "plan"], capture_output=True, text=True, check=True)
    print(json.dumps(json.loads(out.stdout), indent=1))
    if args.quality:
        out = subprocess.run(
            [*base, "--child", "quality"], capture_output=True, text=True, check=True
        )
        for row in json.loads(out.stdout):
            print(json.dumps(row))
    if args.database:
        with (
            bench_server() as server,
            fresh_database(server) as dsn,
            tempfile.TemporaryDirectory(prefix="tapelens-bench-plan-") as work,
        ):
            catalog = synthetic_catalog(args.files, args.tapes, args.dups, args.seed)
            t = time.perf_counter()
            load_database(dsn, catalog)
            print(f"database: {catalog.height:,} copies loaded in {time.perf_counter() - t:.1f} s")
            del catalog
            plan_from_database_cli(args, dsn, Path(work))


if __name__ == "__main__":
    main()
