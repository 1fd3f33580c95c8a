"""Tape families advice: its time at scale, and what it saves on the synthetic site.

Run: .venv/bin/python bench/bench_families.py [--files 200000] [--replay-files 10000000]
[--advice-files 10000000] [--seed 7] [--dsn DSN] (0 skips a part). Three parts:

1. The write replay at scale: the policy collocate-by-hint (analysis/whatif/families.py) over
   a write stream of --replay-files files (3 pools, datasets of about 100 files arriving over
   nine years, hint groups at four levels), one replay per hint level as the advice runs them.
   The advice's other work, the recall engine over the history's campaigns, grows with the
   campaigns, not with the catalog.
2. The whole advice at scale (analysis/families/advice.py advise, what `plan families` runs
   once the catalog is read): the same stream as the site's live copies, its recorded placement
   the FIFO replay of it with the advice's write drives, twelve recall campaigns of whole
   datasets; the recorded placement and the four levels priced. Reading the copies from the
   database is not in it (docs/scaling.md has the catalog reads at this size).
3. End to end on a generated site of --files files with hints (`tapelens demo generate
   --hints`): ingest, marts, calibration, then the advice (analysis/families/store.py
   advise_from_catalog, as `tapelens plan families --write-drives 6 --batch-bytes 4TB` runs it)
   timed; per pool the advised level against the recorded placement (recall mounts, drive
   hours, tapes per dataset, mean gap; write mounts and partly filled tapes); the level the
   history's campaigns recall (truth); and the advised placement of the largest pool replayed
   in the world's own physics (world/placement_replay.py) against the predicted drive hours.

Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import bench_server, fresh_database, machine  # noqa: E402
from tapelens.analysis.families.advice import RECORDED, AdviceOptions, advise  # noqa: E402
from tapelens.analysis.families.store import (  # noqa: E402
    SiteAdviceOptions,
    advise_from_catalog,
    read_campaigns,
)
from tapelens.analysis.throughput import store as throughput_store  # noqa: E402
from tapelens.analysis.throughput.model import default_params  # noqa: E402
from tapelens.analysis.whatif.families import FamilyPolicy  # noqa: E402
from tapelens.analysis.whatif.replay import (  # noqa: E402
    WhatIfParams,
    prepare_hints,
    replay,
    replay_families,
)
from tapelens.analysis.whatif.stats import RecallSetup  # noqa: E402
from tapelens.dbt_runs import build  # noqa: E402
from tapelens.frames import postgres_reader  # noqa: E402
from tapelens.ingest.formats.base import ParseOptions  # noqa: E402
from tapelens.ingest.load import ingest_file  # noqa: E402
from tapelens.ingest.manifest import read_manifest  # noqa: E402
from tapelens.world import generate, site_params  # noqa: E402
from tapelens.world.placement_replay import replay_campaigns  # noqa: E402

TB = 1_000_000_000_000
YEAR_S = 365 * 86_400.0
WRITE_DRIVES = 6
MODELS_ONLY = ["resource_type:test", "resource_type:unit_test"]


def say(message: str) -> None:
    print(f"  {message}", file=sys.stderr, flush=True)


def synthetic_stream(n: int, rng: np.random.Generator) -> pl.DataFrame:
    """n files in datasets of about 100, three pools, four hint levels (type, project,
    version, dataset), arriving over nine years, each dataset over about a week."""
    n_ds = max(n // 100, 1)
    ds = np.sort(rng.integers(0, n_ds, n))
    ds_start = rng.uniform(0, 9 * YEAR_S, n_ds)
    arrived = ds_start[ds] + rng.uniform(0, 7 * 86_400.0, n)
    kind = rng.integers(0, 5, n_ds)
    year = (ds_start / YEAR_S).astype(np.int64)
    version = rng.integers(0, 20, n_ds)
    pool = rng.choice(3, n_ds, p=[0.8, 0.12, 0.08])
    g0 = np.char.add("t", kind.astype(str))
    g1 = np.char.add(np.char.add(g0, " | y"), year.astype(str))
    g2 = np.char.add(np.char.add(g1, " | v"), version.astype(str))
    g3 = np.char.add(np.char.add(g2, " | d"), np.arange(n_ds).astype(str))
    codes = pl.DataFrame(
        {
            "d": np.arange(n_ds),
            "pool": np.array(["atlas", "star", "sphenix"])[pool],
            "group_0": g0,
            "group_1": g1,
            "group_2": g2,
            "group_3": g3,
        }
    )
    return (
        pl.DataFrame(
            {
                "d": ds,
                "size_bytes": rng.lognormal(np.log(2e9), 0.5, n).astype(np.int64),
                "arrived_at": arrived,
            }
        )
        .join(codes, on="d", how="left")
        .with_columns(
            pl.col("group_3").alias("dataset"),
            pl.lit("AOD").alias("dataset_type"),
            pl.int_range(pl.len()).cast(pl.String).alias("file_name"),
        )
        .drop("d")
    )


def replay_at_scale(n: int, seed: int) -> list[str]:
    say(f"building a write stream of {n:,} files")
    stream = synthetic_stream(n, np.random.default_rng(seed))
    params = WhatIfParams(window_s=86_400.0, batch_bytes=4 * TB, aggregate=False)
    open_map = (("atlas", 4), ("star", 1), ("sphenix", 1))
    lines = [f"write stream: {n:,} files, {stream['dataset'].n_unique():,} datasets"]
    started, cpu = time.perf_counter(), time.process_time()
    prepared = prepare_hints(stream)
    total, total_cpu = time.perf_counter() - started, time.process_time() - cpu
    lines.append(
        f"prepared once (sorted by arrival, hint groups coded): {total:.1f} s"
        f" ({total_cpu:.1f} s CPU)"
    )
    for level in range(4):
        started, cpu = time.perf_counter(), time.process_time()
        placed, cost = replay_families(prepared, params, FamilyPolicy(level, open_map))
        took, took_cpu = time.perf_counter() - started, time.process_time() - cpu
        total += took
        total_cpu += took_cpu
        tapes = int(cost.frame["tapes"].sum())
        mounts = int(cost.frame["write_mounts"].sum())
        lines.append(
            f"level {level}: {took:6.1f} s ({took_cpu:.1f} s CPU), {tapes:,} tapes,"
            f" {mounts:,} write mounts,"
            f" {placed['family'].n_unique():,} families"
        )
        say(lines[-1])
        del placed
    lines.append(
        f"prepared and replayed at four levels: {total:.1f} s ({total_cpu:.1f} s CPU;"
        f" load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)"
    )
    return lines


def advice_at_scale(n: int, seed: int) -> list[str]:
    say(f"the advice over {n:,} copies")
    stream = synthetic_stream(n, np.random.default_rng(seed)).with_columns(
        pl.int_range(pl.len()).cast(pl.String).alias("file_id")
    )
    params = WhatIfParams(
        window_s=86_400.0, batch_bytes=4 * TB, aggregate=False, write_drives=WRITE_DRIVES
    )
    recorded = replay(stream, params).with_columns(
        pl.from_epoch(pl.col("written_at"), "s").alias("written_at")
    )
    copies = recorded.select(
        "file_id", "dataset", "dataset_type", "size_bytes", "volume", "position",
        "offset_bytes", "aggregate_id", "start_bytes", "media_type", "written_at",
    )  # fmt: skip
    del recorded
    chosen = stream["dataset"].unique().sort().sample(12, seed=seed)
    campaigns = stream.filter(pl.col("dataset").is_in(chosen.implode())).select(
        pl.col("dataset").alias("campaign"), "file_id"
    )
    model = default_params()["LTO-8"]
    recall = RecallSetup({"LTO-8": 4}, {"LTO-8": model})
    # A peer under the same load: one Polars sort of the copies into tape order.
    started, cpu = time.perf_counter(), time.process_time()
    copies.sort("volume", "position")
    peer, peer_cpu = time.perf_counter() - started, time.process_time() - cpu
    started, cpu = time.perf_counter(), time.process_time()
    before = resource.getrusage(resource.RUSAGE_SELF)
    advice = advise(copies, stream, campaigns, recall, params, AdviceOptions(WRITE_DRIVES), say)
    took, took_cpu = time.perf_counter() - started, time.process_time() - cpu
    after = resource.getrusage(resource.RUSAGE_SELF)
    advised = advice.table.filter(pl.col("advised"))
    picks = ", ".join(f"{r['pool']} {r['placement']}" for r in advised.iter_rows(named=True))
    return [
        f"advice over {n:,} copies ({campaigns.height:,} files in 12 campaigns): {took:.1f} s"
        f" ({took_cpu:.1f} s CPU; load average {os.getloadavg()[0]:.1f} on"
        f" {os.cpu_count()} cores); advised: {picks}",
        f"of which user {after.ru_utime - before.ru_utime:.1f} s, kernel"
        f" {after.ru_stime - before.ru_stime:.1f} s, {after.ru_minflt - before.ru_minflt:,} page"
        f" faults; the process peaked at {after.ru_maxrss / 2**20:.1f} GiB resident",
        f"peer: sorting the {n:,} copies by volume and position with Polars: {peer:.1f} s"
        f" ({peer_cpu:.1f} s CPU); the advice is {took_cpu / max(peer_cpu, 1e-9):.0f} times"
        " its CPU",
    ]


def end_to_end(files: int, seed: int, dsn: str) -> list[str]:
    lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-families-") as tmp:
        site = Path(tmp) / "site"
        say(f"generating {files:,} files with hints")
        generate(site, site_params("bnl", files=files, seed=seed, hints=True))
        say("loading")
        for item in read_manifest(site / "manifest.json"):
            options = ParseOptions(
                source=item.source or item.format.source, extra=item.extra, **item.options
            )
            ingest_file(dsn, item.format, item.path, options)
        say("marts")
        build(dsn, select=["+fct_hinted_files", "+fct_transfer_rates"], exclude=MODELS_ONLY)
        drives = dict(
            pl.read_parquet(site / "truth" / "drives.parquet")
            .group_by("drive_type")
            .len()
            .iter_rows()
        )
        level = json.loads((site / "manifest.json").read_text())["params"]["hint_recall_level"]
        with psycopg.connect(dsn, autocommit=True) as conn:
            throughput_store.calibrate_and_store(conn)
            params = WhatIfParams(window_s=86_400.0, batch_bytes=4 * TB, write_drives=WRITE_DRIVES)
            options = SiteAdviceOptions(AdviceOptions(open_families=WRITE_DRIVES), drives=drives)
            started, cpu = time.perf_counter(), time.process_time()
            advice = advise_from_catalog(conn, params, options, say, postgres_reader(dsn))
            took, took_cpu = time.perf_counter() - started, time.process_time() - cpu
            campaigns = read_campaigns(conn)
    table = advice.table
    lines.append(
        f"site: {files:,} files; the history's campaigns recall whole groups of level {level};"
        f" advice in {took:.1f} s ({took_cpu:.1f} s CPU of this process; load average"
        f" {os.getloadavg()[0]:.1f})"
    )
    shown = ("pool", "placement", "families", "recall_mounts", "recall_hours")
    shown += ("tapes_per_dataset", "mean_gap", "write_mounts", "partly_filled_tapes")
    with pl.Config(tbl_cols=20, tbl_width_chars=160, tbl_rows=40, float_precision=2):
        lines.append(str(table.select(*shown, "advised")))
    for row in table.filter(pl.col("advised") & pl.col("level").is_not_null()).iter_rows(
        named=True
    ):
        was = table.filter((pl.col("pool") == row["pool"]) & (pl.col("placement") == RECORDED)).row(
            0, named=True
        )
        lines.append(
            f"{row['pool']}: level {row['level']}: recall mounts {was['recall_mounts']} ->"
            f" {row['recall_mounts']}, drive hours {was['recall_hours']:.1f} ->"
            f" {row['recall_hours']:.1f}"
        )
    changed = table.filter(pl.col("advised") & pl.col("level").is_not_null())
    for row in table.filter(pl.col("advised") & pl.col("level").is_null()).iter_rows(named=True):
        lines.append(f"{row['pool']}: keep the recorded placement")
    largest = changed.sort("files", descending=True).row(0, named=True)
    placement = advice.placement.filter(pl.col("pool") == largest["pool"])
    world = replay_campaigns(placement, campaigns, drives, np.random.default_rng(seed))
    hours = float(world["drive_hours"].sum())
    lines.append(
        f"{largest['pool']} advised placement replayed in the world: {int(world['mounts'].sum())}"
        f" mounts (predicted {largest['recall_mounts']}), {hours:.1f} drive hours (predicted"
        f" {largest['recall_hours']:.1f}, {100 * (largest['recall_hours'] / hours - 1):+.1f} %)"
    )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=200_000)
    parser.add_argument("--replay-files", type=int, default=10_000_000)
    parser.add_argument("--advice-files", type=int, default=10_000_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--dsn")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    if args.replay_files:
        for line in replay_at_scale(args.replay_files, args.seed):
            print(line, flush=True)
    if args.advice_files:
        for line in advice_at_scale(args.advice_files, args.seed):
            print(line, flush=True)
    if args.files:
        with bench_server(args.dsn) as server, fresh_database(server) as dsn:
            for line in end_to_end(args.files, args.seed, dsn):
                print(line, flush=True)


if __name__ == "__main__":
    main()
