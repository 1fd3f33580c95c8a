"""Tape families advice: its time at scale, and what it saves on the synthetic site.

Run: .venv/bin/python bench/bench_families.py [--files 200000] [--replay-files 10000000]
[--advice-files 10000000] [--site-copies 10000000 --workdir DIR | --site-loaded DSN]
[--seed 7] [--dsn DSN] (0 skips a part). Four parts:

1. The write replay at scale: the policy collocate-by-hint (analysis/whatif/families.py) over
   a write stream of --replay-files files (3 pools, datasets of about 100 files arriving over
   nine years, hint groups at four levels), one replay per hint level as the advice runs them.
   The advice's other work, the recall engine over the history's campaigns, grows with the
   campaigns, not with the catalog.
2. The whole advice at scale (analysis/families/advice.py advise, what `plan families` runs
   once the catalog is read): the same stream as the site's live copies, its recorded placement
   the FIFO replay of it with the advice's write drives, twelve recall campaigns of whole
   datasets; the recorded placement and the four levels priced. Reading the copies from the
   database is not in it (part 4 has it).
3. End to end on a generated site of --files files with hints (`tapelens demo generate
   --hints`): ingest, marts, calibration, then the advice (analysis/families/store.py
   advise_from_catalog, as `tapelens plan families --write-drives 6 --batch-bytes 4TB` runs it)
   timed; per pool the advised level against the recorded placement (recall mounts, drive
   hours, tapes per dataset, mean gap; write mounts and partly filled tapes); the level the
   history's campaigns recall (truth); and the advised placement of the largest pool replayed
   in the world's own physics (world/placement_replay.py) against the predicted drive hours.
4. The command end to end at scale (--site-copies, none by default): bench_scale's catalog of
   that many copies (one pool, atlas) with the archive metadata its files would have been sent
   with (site_hints, the ATLAS plugin's shape) and a recall history of twelve campaigns of 100
   whole datasets, written under --workdir, loaded and the marts built, each step a child
   process of the CLI; then `tapelens plan families --write-drives 6 --batch-bytes 4TB` run
   twice, timed with its peak RSS, each of its three reads timed alone, and the peer: the
   copies' query through COPY with its rows dropped. --site-loaded DSN times the command on a
   database that holds such a site already.

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

from bench.bench_scale import CHUNK, plain_copies, write_catalog, write_tapes  # noqa: E402
from bench.common import TAPELENS, bench_server, fresh_database, machine, measure  # noqa: E402
from tapelens.analysis.families.advice import RECORDED, AdviceOptions, advise  # noqa: E402
from tapelens.analysis.families.store import (  # noqa: E402
    SiteAdviceOptions,
    _copies_from,
    advise_from_catalog,
    read_campaigns,
    read_groups,
)
from tapelens.analysis.recall.store.addresses import catalog_objects_sql  # noqa: E402
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
from tapelens.analysis.whatif.store import copies_sql  # noqa: E402
from tapelens.dbt_runs import build  # noqa: E402
from tapelens.frames import POSTGRES, postgres_reader  # noqa: E402
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


# The site at scale (bench_scale's catalog with hints and a recall history): CAMPAIGNS
# campaigns a week apart, each reading CAMPAIGN_DATASETS whole datasets of one data type, two
# reads a second.
CAMPAIGNS = 12
CAMPAIGN_DATASETS = 100
ACTIVITY = "Production Output"
FILES_PER_DATASET = 200  # bench_scale: three datasets interleaved per 600 copies


def site_hints(frame: pl.DataFrame) -> pl.DataFrame:
    """The archive metadata of bench_scale's copies (plain_copies) as the ATLAS policy
    package's plugin sends it and FTS keeps it (json.dumps of its dict: ", " and ": ",
    file_metadata first): simulation AOD, EVNT and HITS by type (AOD as `AOD_mc`), project,
    r-tag and dataset; other types (RAW, DAOD) the dataset alone at level 0. One dataset in
    twenty was sent with empty hints. Columns path, written_at (the catalog's write time),
    size, archive_metadata."""
    name = pl.col("path").str.split("/").list.get(4)  # the dataset's directory
    simulation = pl.col("kind").is_in(["AOD", "EVNT", "HITS"])
    levels = (
        pl.when(simulation)
        .then(
            pl.concat_str(
                pl.lit('{"0": "'),
                pl.when(pl.col("kind") == "AOD").then(pl.lit("AOD_mc")).otherwise("kind"),
                pl.lit('", "1": "mc23_13p6TeV", "2": "r14622", "3": "'),
                name,
                pl.lit('"}'),
            )
        )
        .otherwise(pl.concat_str(pl.lit('{"0": "'), name, pl.lit('"}')))
    )
    announced = pl.concat_str(
        pl.lit(f', "3": {{"length": {FILES_PER_DATASET}, "size": '),
        (pl.col("size") * FILES_PER_DATASET).cast(pl.String),
        pl.lit("}"),
    )
    # A stand-in checksum, printed as Rucio prints adler32: eight lower-case hex digits.
    check = pl.col("i") * 2_654_435_761 % 4_294_967_296
    adler32 = pl.concat_str(
        ((check // 16**k) % 16).replace_strict(list(range(16)), list("0123456789abcdef"))
        for k in range(7, -1, -1)
    )
    full = pl.concat_str(
        pl.lit('{"file_metadata": {"size": '),
        pl.col("size").cast(pl.String),
        pl.lit(', "md5": null, "adler32": "'),
        adler32,
        pl.lit(f'"}}, "additional_hints": {{"activity": "{ACTIVITY}"'),
        pl.when(simulation).then(announced).otherwise(pl.lit("")),
        pl.lit('}, "schema_version": 1, "collocation_hints": '),
        levels,
        pl.lit("}"),
    )
    empty = pl.lit(
        f'{{"collocation_hints": {{}}, "additional_hints": {{"activity": "{ACTIVITY}"}}}}'
    )
    written = pl.from_epoch(pl.col("created") + 3_600, time_unit="s")
    return frame.select(
        "path",
        written.dt.strftime("%Y-%m-%dT%H:%M:%SZ").alias("written_at"),
        "size",
        pl.when(pl.col("ds") % 20 == 7).then(empty).otherwise(full).alias("archive_metadata"),
    )


def write_site_hints(path: Path, copies: int, seed: int) -> int:
    """The hints of every plain copy, zstd-compressed CSV (`ingest hints --format csv`)."""
    import zstandard

    rows = 0
    compressor = zstandard.ZstdCompressor(level=3, threads=2)
    with open(path, "wb") as raw, compressor.stream_writer(raw) as out:
        for start in range(0, copies, CHUNK):
            chunk = site_hints(plain_copies(start, min(start + CHUNK, copies), seed))
            out.write(chunk.write_csv(include_header=start == 0).encode())
            rows += chunk.height
            say(f"hints: {rows:,}/{copies:,}")
    return rows


def write_site_recalls(path: Path, copies: int, seed: int) -> int:
    """The recall history as a canonical transfers CSV: CAMPAIGNS campaigns, each reading
    CAMPAIGN_DATASETS whole datasets of one data type, by a requester of its own."""
    rng = np.random.default_rng(seed)
    datasets = (copies // 600) * 3
    campaigns = []
    for k in range(CAMPAIGNS):
        # A dataset's type is ds % 5 (bench_scale's TYPES); ds's copies are among the 600
        # from (ds // 3) * 600.
        chosen = np.sort(
            rng.choice(np.arange(k % 5, datasets, 5), CAMPAIGN_DATASETS, replace=False)
        )
        files = pl.concat(
            plain_copies(int(ds // 3) * 600, int(ds // 3) * 600 + 600, seed).filter(
                pl.col("ds") == int(ds)
            )
            for ds in chosen
        )
        first = 1_767_225_600 + k * 7 * 86_400  # 2026-01-01, then a week apart
        campaigns.append(
            files.select(
                "path",
                "size",
                pl.lit(f"atlas-reprocessing-{k}").alias("requester"),
                pl.from_epoch(first + pl.int_range(pl.len()) // 2, time_unit="s").alias("at"),
            )
        )
    reads = pl.concat(campaigns).select(
        pl.lit("read").alias("direction"),
        "path",
        pl.col("size").alias("size_bytes"),
        pl.col("at").dt.strftime("%Y-%m-%dT%H:%M:%SZ").alias("started_at"),
        pl.lit(60.0).alias("duration_s"),
        pl.lit("ok").alias("status"),
        "requester",
    )
    reads.write_csv(path)
    return reads.height


def load_site(copies: int, seed: int, work: Path, base: list[str], lines: list[str]) -> int:
    """Write the site's files and load them with the CLI (`base`: its command and database),
    then build the marts, each step timed into `lines`; the reads of the history."""
    catalog, tapes = work / "ls-P.txt.zst", work / "tapes.csv"
    hints, recalls = work / "hints.csv.zst", work / "recalls.csv"
    say(f"writing a site of {copies:,} copies with hints in {work}")
    write_tapes(tapes, copies)
    write_catalog(catalog, copies, seed, newer=False)
    write_site_hints(hints, copies, seed)
    reads = write_site_recalls(recalls, copies, seed)
    loads = (
        ("ingest tapes", ["ingest", "tapes", "--format", "csv", str(tapes)]),
        ("ingest catalog", ["ingest", "catalog", "--format", "hpss-lsp", str(catalog)]),
        ("ingest hints", ["ingest", "hints", "--format", "csv", str(hints)]),
        ("ingest transfers", ["ingest", "transfers", "--format", "csv", str(recalls)]),
        ("marts build", ["marts", "build", *[a for m in MODELS_ONLY for a in ("--exclude", m)]]),
    )
    for name, argv in loads:
        say(name)
        done = measure([*base, *argv])
        lines.append(f"{name}: {done.seconds:.1f} s, peak {done.peak_rss_mb / 1024:.1f} GiB")
        say(lines[-1])
    return reads


def site_at_scale(copies: int, seed: int, work: Path, dsn: str, loaded: bool = False) -> list[str]:
    """`tapelens plan families` end to end on a site of `copies` copies with hints and a
    recall history, each input loaded and the marts built by the CLI first (unless `loaded`:
    the database holds the site already); then the reads of the command timed alone, and the
    peer: the copies' query sent through COPY and dropped."""
    work.mkdir(parents=True, exist_ok=True)
    base = [TAPELENS, "--dsn", dsn, "--home", str(work / "home")]
    lines = [] if not loaded else [f"site loaded before, in {work}"]
    reads = 0 if not loaded else CAMPAIGNS * CAMPAIGN_DATASETS * FILES_PER_DATASET
    if not loaded:
        reads = load_site(copies, seed, work, base, lines)
    advice = [*base, "plan", "families", "--write-drives", str(WRITE_DRIVES)]
    advice += ["--batch-bytes", "4TB", "-o", str(work / "advice.csv")]
    for run in (1, 2):
        say(f"plan families, run {run}")
        done = measure(advice)
        lines.append(
            f"`tapelens plan families --write-drives {WRITE_DRIVES} --batch-bytes 4TB` run"
            f" {run}: {done.seconds:.1f} s ({done.cpu_seconds:.1f} s CPU of the command; load"
            f" average {os.getloadavg()[0]:.1f}), peak {done.peak_rss_mb / 1024:.1f} GiB"
        )
        say(lines[-1])
    reader = postgres_reader(dsn)
    with psycopg.connect(dsn) as conn:
        live = conn.execute(
            "select count(*) from tapelens.tape_files where removed_at is null"
        ).fetchone()
        parts = (
            ("live copies", lambda: _copies_from(reader)),
            ("hint groups", lambda: read_groups(conn, reader)),
            ("recall campaigns", lambda: read_campaigns(None, read=reader)),
        )
        for name, read in parts:
            started = time.perf_counter()
            rows = read().height
            lines.append(
                f"read alone: {name}: {rows:,} rows in {time.perf_counter() - started:.1f} s"
            )
        started, sent = time.perf_counter(), 0
        query = copies_sql(POSTGRES, objects=catalog_objects_sql(reader))
        with conn.cursor() as cur, cur.copy(f"copy ({query}) to stdout") as out:
            for block in out:
                sent += len(block)
        lines.append(
            f"peer: the live copies' query through COPY, dropped: {sent / 1e9:.2f} GB in"
            f" {time.perf_counter() - started:.1f} s"
        )
    lines.insert(
        0, f"site: {live[0] if live else 0:,} live copies, {reads:,} reads in {CAMPAIGNS} campaigns"
    )
    lines.append((work / "advice.csv").read_text())
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=200_000)
    parser.add_argument("--replay-files", type=int, default=10_000_000)
    parser.add_argument("--advice-files", type=int, default=10_000_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--dsn")
    parser.add_argument(
        "--site-copies",
        type=int,
        default=0,
        help="also `plan families` end to end on a site of this many copies (e.g. 10000000)",
    )
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/tapelens-families-site"))
    parser.add_argument(
        "--site-loaded",
        metavar="DSN",
        help="time `plan families` on this database, which holds such a site already",
    )
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
    if args.site_copies:
        with bench_server(args.dsn) as server, fresh_database(server) as dsn:
            for line in site_at_scale(args.site_copies, args.seed, args.workdir, dsn):
                print(line, flush=True)
    if args.site_loaded:
        for line in site_at_scale(0, args.seed, args.workdir, args.site_loaded, loaded=True):
            print(line, flush=True)


if __name__ == "__main__":
    main()
