"""dbt models benchmark: `tapelens marts build` (full, then incremental after one more
catalog) against the limit measured in the same run: a hand-written SQL script
(marts_by_hand.sql) that builds every table of the full build, with the same rows (row counts
and digests of each table are compared; the run stops if one differs).

    .venv/bin/python bench/bench_models.py --copies 10000000 --new 100000
    .venv/bin/python bench/bench_models.py --copies 10000000 --steps full,report
    .venv/bin/python bench/bench_models.py --copies 50000 --steps first

After the full build, `tapelens report gaps --by type` (table and JSON) is timed as a user runs
it (the whole command, best of 3) against its target of 2 s. --steps measures a subset;
a partial run writes only its report table into the section a complete run wrote. --steps
first times the first and the second `marts build` of a new home on a new database, split
into start-up (imports, dbt start, parsing), models and tests; it prints its table only.

The site is synthetic, made in the database with generate_series: volumes of --per-volume
tape objects, datasets of three interleaved streams (mean gap about 3), 10% of positions in
small-file aggregates, 0.5% of files with a second copy on another volume, 1% of tapes
repacked. Prints the figures and writes them under "## dbt models" in bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, TAPELENS, bench_server, fresh_database, machine, measure  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
SECTION = "## dbt models"
MODELS_ONLY = ["--exclude", "resource_type:test", "--exclude", "resource_type:unit_test"]
STEPS = ("full", "hand", "incremental", "tested", "report")
# A first build on a fresh box (new home, new database): run alone with --steps first.
FIRST = "first"
FIRST_INTRO = "First build of a new installation"
# `report gaps --by type` reads agg_gap_by_type_period; the target is under 2 s at
# 10 M copies, start-up of the command included.
REPORT_TARGET_S = 2.0
REPORT_RUNS = 3
REPORTS = (
    ("report gaps --by type", ["gaps", "--by", "type"]),
    ("report gaps --by type --format json", ["gaps", "--by", "type", "--format", "json"]),
)
REPORT_INTRO = "Report commands on the marts of the full build"

# One catalog of `n` copies starting at copy number `first`, on volumes named with `prefix`.
COPIES_SQL = """
insert into tapelens.tape_files (source, copy_id, file_id, path, dataset, dataset_type,
    experiment, size_bytes, volume, position, offset_bytes, aggregate_id, copy_no, written_at,
    ingest_run_id)
select 'bench', volume || ':' || position || ':' || coalesce(offset_bytes::text, ''),
       path, path, dataset, dataset_type, 'atlas', size_bytes, volume, position, offset_bytes,
       case when offset_bytes is not null then volume || ':' || position end, 1,
       timestamptz '2019-01-01' + i * interval '10 seconds', %(run_id)s
from (
    select i, volume, raw,
           case when raw %% 100 < 10 then raw - raw %% 100 + 1 else raw + 1 end as position,
           case when raw %% 100 < 10 then (raw %% 100) * 1000000 end as offset_bytes,
           '/atlas/' || types.t || '/ds' || ds || '/f' || i || '.' || types.t || '.root' as path,
           '/atlas/' || types.t || '/ds' || ds as dataset,
           types.t as dataset_type,
           100000000 + (i * 7919) %% 3000000000 as size_bytes
    from (
        select i, %(prefix)s || lpad((i / %(per_volume)s)::text, 6, '0') as volume,
               i %% %(per_volume)s as raw,
               -- three datasets written interleaved over 600 consecutive files
               (i / 600) * 3 + i %% 3 as ds
        from generate_series(%(first)s::bigint, %(first)s + %(n)s - 1) as i
    ) as numbered
    cross join lateral (
        select (array['AOD', 'RAW', 'EVNT', 'HITS', 'DAOD'])[1 + ds %% 5] as t
    ) as types
) as copies
"""

DUPLICATES_SQL = """
insert into tapelens.tape_files (source, copy_id, file_id, path, dataset, dataset_type,
    experiment, size_bytes, volume, position, offset_bytes, aggregate_id, copy_no, written_at,
    ingest_run_id)
select source, 'dup:' || copy_id, file_id, path, dataset, dataset_type, experiment, size_bytes,
       'DUP' || lpad((row_number() over (order by copy_id) / 5000)::text, 5, '0'),
       row_number() over (order by copy_id), null, null, 2, written_at + interval '1 day',
       ingest_run_id
from tapelens.tape_files
where offset_bytes is null and hashtext(copy_id) % 200 = 0
"""

TAPES_SQL = """
insert into tapelens.tapes (volume, barcode, media_type, capacity_bytes, state)
select volume, volume || 'L8', 'LTO-8', null,
       case when hashtext(volume) % 100 = 0 then 'repacked' else 'full' end
from (select distinct volume from tapelens.tape_files) as v
on conflict (volume) do nothing
"""

# The hand-written limit: every mart table the full build materialises, same rows (see the
# script's header). The marts over transfers and mounts are empty on this synthetic site (it has
# no logs); the script builds them from dbt's compiled SQL so that the comparison covers every
# table, at no measurable cost.
HAND_SCRIPT = Path(__file__).resolve().parent / "marts_by_hand.sql"
HAND_SCHEMA = "bench_hand"
FROM_COMPILED = ("fct_mounts_daily", "fct_transfer_rates", "fct_drive_usage")
# Every table `marts build` materialises, with its dbt schema.
BUILT_TABLES = (
    ("tapelens_intermediate", "int_copies__duplicated"),
    ("tapelens_intermediate", "int_dataset_volumes__ranked"),
    ("tapelens_marts", "fct_file_gaps"),
    ("tapelens_marts", "fct_dataset_tape_gaps"),
    ("tapelens_marts", "agg_gap_by_type_period"),
    ("tapelens_marts", "dim_datasets"),
    ("tapelens_marts", "fct_duplicate_copies"),
    ("tapelens_marts", "fct_tape_occupancy"),
    ("tapelens_marts", "plan_tape_objects"),
    ("tapelens_marts", "plan_tape_layouts"),
    ("tapelens_marts", "fct_mounts_daily"),
    ("tapelens_marts", "fct_transfer_rates"),
    ("tapelens_marts", "fct_drive_usage"),
)
# The models of the dbt project (staging views included), as the build counts them.
MODEL_COUNT = sum(
    1
    for folder in ("staging", "intermediate", "marts")
    for _ in (ROOT / "models" / folder).glob("*.sql")
)
# The build session's memory for sorts and hashes, the same on both sides.
SESSION_WORK_MEM = "256MB"


# For the first-build step: reads of one first copy in twenty, as tape logs give them (half
# with volume and position, half by file id alone as billing logs do), and the mounts that
# served them, loaded as an ingest leaves them (not analysed).
READS_SQL = """
insert into tapelens.transfers (source, direction, volume, drive, host, file_id, path, position,
    size_bytes, started_at, duration_s, status, ingest_run_id)
select 'bench', 'read', case when n % 2 = 0 then volume end, 'D' || n % 4, 'pool1',
       case when n % 2 = 1 then file_id end, case when n % 2 = 0 then path end,
       case when n % 2 = 0 then position end, size_bytes,
       timestamptz '2024-01-01' + (n / 50) * interval '1 hour' + (n % 50) * interval '30 s',
       size_bytes / 3e8, 'ok', 1
from (
    select row_number() over (order by volume, position, copy_id) as n, *
    from tapelens.tape_files
    where copy_no = 1 and hashtext(copy_id) % 20 = 0
) as picked
"""
MOUNTS_SQL = """
insert into tapelens.mounts (source, volume, drive, mounted_at, dismounted_at, purpose,
    ingest_run_id)
select 'bench', volume, min(drive), min(started_at) - interval '2 minutes',
       max(started_at) + interval '10 minutes', 'read', 1
from tapelens.transfers
where volume is not null
group by volume, date_trunc('hour', started_at)
"""


def add_logs(dsn: str) -> None:
    with psycopg.connect(dsn) as conn:
        conn.execute(READS_SQL)
        conn.execute(MOUNTS_SQL)


def load_site(dsn: str, copies: int, per_volume: int) -> None:
    with psycopg.connect(dsn) as conn:
        conn.execute(
            COPIES_SQL,
            {"first": 0, "n": copies, "per_volume": per_volume, "prefix": "B", "run_id": 1},
        )
        conn.execute(DUPLICATES_SQL)
        conn.execute(TAPES_SQL)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("vacuum analyze tapelens.tape_files")
        conn.execute("vacuum analyze tapelens.tapes")


def add_catalog(dsn: str, first: int, n: int, per_volume: int) -> None:
    """One more catalog: n copies on new volumes, loaded as an ingest would (a later run id)."""
    with psycopg.connect(dsn) as conn:
        conn.execute(
            COPIES_SQL,
            {"first": first, "n": n, "per_volume": per_volume, "prefix": "N", "run_id": 2},
        )
        conn.execute(TAPES_SQL)


def hand_statements(home: Path) -> list[str]:
    """The statements of the hand-written script, then the transfer and mount marts."""
    statements = [part.strip() for part in HAND_SCRIPT.read_text().split("\n;;\n")]
    compiled = home / "dbt" / "target" / "compiled" / "tapelens" / "models" / "marts"
    for name in FROM_COMPILED:
        body = (compiled / f"{name}.sql").read_text()
        statements.append(f"create unlogged table {HAND_SCHEMA}.{name} as {body}")
    return [s for s in statements if s]


def timed_hand(dsn: str, home: Path) -> float:
    """Wall seconds of the whole hand-written script, in one session."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"set work_mem = '{SESSION_WORK_MEM}'")
        started = time.perf_counter()
        for statement in hand_statements(home):
            began = time.perf_counter()
            conn.execute(statement)  # type: ignore[arg-type]
            code = [ln for ln in statement.splitlines() if not ln.lstrip().startswith("--")]
            first = " ".join(" ".join(code).split())[:70]
            print(f"  hand {time.perf_counter() - began:6.1f} s  {first}", file=sys.stderr)
        return time.perf_counter() - started


def table_digest(conn: psycopg.Connection[Any], table: str) -> tuple[int, int]:
    """Row count and an order-free digest of the rows' text (equal rows, equal digests)."""
    row = conn.execute(
        f"select count(*), coalesce(sum(hashtextextended(t::text, 0)::numeric), 0) from {table} t"
    ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def compare_hand(dsn: str) -> list[str]:
    """The tables whose rows differ between the dbt build and the hand-written script."""
    differ = []
    with psycopg.connect(dsn) as conn:
        for schema, name in BUILT_TABLES:
            built = table_digest(conn, f"{schema}.{name}")
            hand = table_digest(conn, f"{HAND_SCHEMA}.{name}")
            status = "same" if built == hand else "DIFFERENT"
            print(f"  {name}: {built[0]:,} rows, {status}", file=sys.stderr)
            if built != hand:
                differ.append(name)
    return differ


def models_build(dsn: str, home: Path, *extra: str) -> float:
    argv = [TAPELENS, "--dsn", dsn, "--home", str(home), "marts", "build", *extra]
    return measure(argv).seconds


def build_split(dsn: str, home: Path) -> dict[str, float]:
    """One `marts build` (models and tests) split from dbt's run_results.json: the command's
    wall time, the time before the first node started (Python imports, dbt start-up, parsing,
    catalog queries), the models and the tests (wall spans, two threads), and the tail."""
    launched = time.time()
    total = models_build(dsn, home)
    doc = json.loads((home / "dbt" / "target" / "run_results.json").read_text())
    spans: dict[str, list[tuple[float, float, str]]] = {"model": [], "test": []}
    for result in doc["results"]:
        times = [
            datetime.fromisoformat(t[key].replace("Z", "+00:00")).timestamp()
            for t in result["timing"]
            for key in ("started_at", "completed_at")
            if t.get(key)
        ]
        if times:
            kind = "model" if result["unique_id"].startswith("model.") else "test"
            spans[kind].append((min(times), max(times), result["unique_id"].split(".")[-1]))
    every = spans["model"] + spans["test"]
    first_start = min(s[0] for s in every)
    last_end = max(s[1] for s in every)
    split = {
        "total": total,
        "start": first_start - launched,
        "nodes": last_end - first_start,
        "models": sum(s[1] - s[0] for s in spans["model"]),
        "tests": sum(s[1] - s[0] for s in spans["test"]),
        "tail": launched + total - last_end,
    }
    slowest = sorted(spans["model"], key=lambda s: s[0] - s[1])[:5]
    for began, ended, name in slowest:
        print(f"    {name}: {ended - began:.1f} s", file=sys.stderr)
    return split


def first_build(dsn: str, copies: int, per_volume: int) -> dict[str, dict[str, float]]:
    """A first and a second `marts build` in a new home on a new database, split."""
    with tempfile.TemporaryDirectory(prefix="tapelens-first-home-") as tmp:
        home = Path(tmp)
        splits = {}
        for which in ("first", "second"):
            splits[which] = build_split(dsn, home)
            print(f"  {which} build: {splits[which]}", file=sys.stderr)
    return splits


def first_table(splits: dict[str, dict[str, float]]) -> str:
    labels = {
        "total": "whole command",
        "start": "start-up to the first model (imports, dbt start, parse, catalog)",
        "nodes": "models and tests, wall (two threads)",
        "models": f"the {MODEL_COUNT} models, summed",
        "tests": "data and unit tests, summed",
        "tail": "after the last test (results, exit)",
    }
    lines = ["| part | first build, s | second build, s | first / second |", "|---|---:|---:|---:|"]
    for key, label in labels.items():
        first, second = splits["first"][key], splits["second"][key]
        ratio = f"{first / second:.2f}" if second > 0.05 else "-"
        lines.append(f"| {label} | {first:.1f} | {second:.1f} | {ratio} |")
    return "\n".join(lines)


def count(dsn: str, query: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(query).fetchone()
    return int(row[0]) if row else 0


def report_seconds(dsn: str, home: Path, extra: list[str]) -> float:
    """Best of REPORT_RUNS wall times of one `tapelens report` command, whole process."""
    argv = [TAPELENS, "--dsn", dsn, "--home", str(home), "report", *extra]
    best = float("inf")
    for _ in range(REPORT_RUNS):
        timed = measure(argv)
        if "dataset_type" not in timed.stdout:
            raise SystemExit(f"{' '.join(extra)} printed no gap table:\n{timed.stdout[-500:]}")
        best = min(best, timed.seconds)
    return best


def parse_steps(text: str) -> list[str]:
    steps = [s.strip() for s in text.split(",") if s.strip()]
    unknown = sorted(set(steps) - set(STEPS) - {FIRST})
    if unknown or not steps:
        raise argparse.ArgumentTypeError(
            f"steps are a comma-separated list of {', '.join(STEPS)}; got {text!r}"
        )
    return steps


def steps_table(seconds: dict[str, float], new: str) -> str:
    """The build table: the rows of the steps that ran, each against the hand SQL if it ran."""
    labels = {
        "hand": f"hand-written SQL of the same {len(BUILT_TABLES)} tables (the limit)",
        "full": f"`marts build --full-refresh`, the {MODEL_COUNT} models",
        "incremental": f"`marts build`, incremental, after one {new} catalog",
        "tested": "`marts build --full-refresh`, with data and unit tests",
    }
    hand_s = seconds.get("hand")
    lines = ["| step | seconds | vs hand SQL |", "|---|---:|---:|"]
    for step in ("hand", "full", "incremental", "tested"):
        if step in seconds:
            ratio = f"{seconds[step] / hand_s:.2f}" if hand_s else "-"
            lines.append(f"| {labels[step]} | {seconds[step]:.1f} | {ratio} |")
    return "\n".join(lines)


def report_block(report_s: dict[str, float], copies: int, steps: list[str]) -> str:
    """The report table, introduced by REPORT_INTRO (a partial run replaces this block)."""
    partial = "" if set(steps) == set(STEPS) else f" --steps {','.join(steps)}"
    lines = [
        f"{REPORT_INTRO} (`bench/bench_models.py --copies {copies}{partial}`);"
        f" wall seconds of the whole command, best of {REPORT_RUNS}:",
        "",
        f"| command | best of {REPORT_RUNS}, s | target |",
        "|---|---:|---|",
    ]
    for label, seconds in report_s.items():
        verdict = "met" if seconds < REPORT_TARGET_S else "NOT met"
        lines.append(f"| `tapelens {label}` | {seconds:.2f} | < {REPORT_TARGET_S:g} s: {verdict} |")
    return "\n".join(lines)


def section_of(old: str) -> re.Match[str] | None:
    return re.compile(rf"^{re.escape(SECTION)}\n.*?(?=^## |\Z)", re.M | re.S).search(old)


def write_results(text: str) -> None:
    """Replace this benchmark's section of RESULTS.md, keeping every other section."""
    old = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
    block = f"{SECTION}\n\n{text.strip()}\n\n"
    found = section_of(old)
    new = (
        old[: found.start()] + block + old[found.end() :]
        if found
        else old.rstrip() + "\n\n" + block
    )
    RESULTS.write_text(new)


def block_pattern(intro: str) -> re.Pattern[str]:
    """A block of the section: its introducing paragraph and the table under it."""
    return re.compile(rf"^{re.escape(intro)}.*?(?=\n\n(?!\|)|\n*\Z)", re.M | re.S)


def merge_report(block: str, copies: int | None, intro: str = REPORT_INTRO) -> bool:
    """Put the table of a partial run into the section written by a complete run (at the same
    size unless copies is None), replacing an earlier one; False (nothing written) otherwise."""
    old = RESULTS.read_text() if RESULTS.exists() else ""
    found = section_of(old)
    size = re.search(r"--copies (\d+)", found.group(0)) if found else None
    if not found or (copies is not None and (not size or int(size.group(1)) != copies)):
        return False
    body = found.group(0)
    earlier = block_pattern(intro)
    if earlier.search(body):
        body = earlier.sub(lambda _: block, body, count=1)
    else:
        body = body.rstrip() + "\n\n" + block
    write_results(body[len(SECTION) :])
    return True


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--copies", type=int, default=10_000_000)
    ap.add_argument("--new", type=int, default=100_000, help="copies in the added catalog")
    ap.add_argument("--per-volume", type=int, default=5_000)
    ap.add_argument(
        "--steps",
        type=parse_steps,
        default=list(STEPS),
        help=f"comma-separated steps to measure, of {','.join(STEPS)} (default: all); "
        "e.g. full,report",
    )
    ap.add_argument("--dsn", default=None, help="server to use (default: embedded, temporary)")
    ap.add_argument("--home", type=Path, default=Path("/tmp/tapelens-models-bench-home"))
    ap.add_argument("--no-write", action="store_true", help="do not update RESULTS.md")
    args = ap.parse_args()
    steps: list[str] = args.steps
    seconds: dict[str, float] = {}
    report_s: dict[str, float] = {}
    with bench_server(args.dsn) as server, fresh_database(server) as dsn:
        print(f"machine: {machine()}", file=sys.stderr)
        started = time.perf_counter()
        load_site(dsn, args.copies, args.per_volume)
        rows = count(dsn, "select count(*) from tapelens.tape_files")
        print(f"site: {rows:,} copies in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        if FIRST in steps:
            add_logs(dsn)
            reads = count(dsn, "select count(*) from tapelens.transfers")
            # nothing built yet: this is the first build a new installation makes
            first = (
                f"{FIRST_INTRO} (`bench/bench_models.py --copies {args.copies} --steps first`:"
                f" {rows:,} copies, {reads:,} reads, a new home and a new database; the first"
                " and the second `tapelens marts build`, models and tests; wall seconds):\n\n"
                + first_table(first_build(dsn, args.copies, args.per_volume))
            )
            print(first)
            if not args.no_write and merge_report(first, None, FIRST_INTRO):
                print(f"RESULTS.md: first-build table replaced in {SECTION!r}", file=sys.stderr)
            return
        # The first build parses the project; time the second, a full refresh, like a user's.
        models_build(dsn, args.home, *MODELS_ONLY)
        if "full" in steps:
            seconds["full"] = models_build(dsn, args.home, "--full-refresh", *MODELS_ONLY)
        if "report" in steps:
            # on the marts of the full build, before the added catalog
            for label, extra in REPORTS:
                report_s[label] = report_seconds(dsn, args.home, extra)
                print(
                    f"{label}: {report_s[label]:.2f} s (target < {REPORT_TARGET_S:g} s)",
                    file=sys.stderr,
                )
        if "hand" in steps:
            seconds["hand"] = timed_hand(dsn, args.home)
            differ = compare_hand(dsn)
            if differ:
                raise SystemExit(f"hand-written SQL and dbt differ on: {', '.join(differ)}")
        if "incremental" in steps:
            add_catalog(dsn, args.copies, args.new, args.per_volume)
            seconds["incremental"] = models_build(dsn, args.home, *MODELS_ONLY)
        if "tested" in steps:
            seconds["tested"] = models_build(dsn, args.home, "--full-refresh")
        volumes = count(dsn, "select count(distinct volume) from tapelens_marts.fct_file_gaps")
    text = f"""
Machine: {machine()}. Synthetic site made with generate_series: {rows:,} copies on {volumes:,}
volumes of {args.per_volume:,} tape objects (three interleaved datasets per 600 files, 10% of
positions in aggregates, 0.5% duplicates, 1% of tapes repacked); `bench/bench_models.py
--copies {args.copies} --new {args.new}`. Times are wall seconds of the whole command.

{steps_table(seconds, f"{args.new:,}-copy")}
"""
    block = report_block(report_s, args.copies, steps) if report_s else ""
    print(text + (f"\n{block}\n" if block else ""))
    if args.no_write:
        return
    if set(steps) == set(STEPS):
        # keep the first-build table, which only --steps first measures, and the notes under it
        found = section_of(RESULTS.read_text()) if RESULTS.exists() else None
        first = block_pattern(FIRST_INTRO).search(found.group(0)) if found else None
        kept = found.group(0)[first.start() :].strip() if found and first else ""
        write_results(text + f"\n{block}\n" + (f"\n{kept}\n" if kept else ""))
    elif block and merge_report(block, args.copies):
        print(f"RESULTS.md: report table replaced in {SECTION!r}", file=sys.stderr)
    else:
        print(
            f"RESULTS.md not written: a partial run (--steps) only adds its report table to a "
            f"section written by a complete run of --copies {args.copies}",
            file=sys.stderr,
        )


if __name__ == "__main__":
    main()
