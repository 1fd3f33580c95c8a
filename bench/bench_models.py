"""dbt models benchmark: `tapelens models build` (full, then incremental after one more
catalog) against the limit measured in the same run: one hand-written SQL statement computing
fct_dataset_tape_gaps from the same rows.

    .venv/bin/python bench/bench_models.py --copies 10000000 --new 100000

The site is synthetic, made in the database with generate_series: volumes of --per-volume
tape objects, datasets of three interleaved streams (mean gap about 3), 10% of positions in
small-file aggregates, 0.5% of files with a second copy on another volume, 1% of tapes
repacked. Prints the figures and writes them under "## dbt models" in bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import TAPELENS, bench_server, fresh_database, machine, measure  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
SECTION = "## dbt models"
MODELS_ONLY = ["--exclude", "resource_type:test", "--exclude", "resource_type:unit_test"]

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

# The same statistics as fct_dataset_tape_gaps, in one statement, written for speed.
HAND_SQL = """
create table bench_hand_dataset_tape_gaps as
with live as (
    select f.source, f.copy_id, f.dataset, f.volume, f.position, f.offset_bytes,
           f.aggregate_id, f.size_bytes, f.written_at
    from tapelens.tape_files f
    left join tapelens.tapes t on t.volume = f.volume
    where f.removed_at is null and coalesce(t.state, 'unknown') <> 'repacked'
),
objects as (
    select volume, position, sum(size_bytes) as b from live group by volume, position
),
cumulated as (
    select volume, position,
           sum(b) over (partition by volume order by position rows unbounded preceding) as e, b
    from objects
),
gaps as (
    select l.dataset, l.volume, l.size_bytes, l.offset_bytes, l.aggregate_id,
           l.position - lag(l.position) over w as posdiff,
           (c.e - c.b) - lag(c.e) over w as gap_bytes
    from live l join cumulated c on c.volume = l.volume and c.position = l.position
    window w as (partition by l.dataset, l.volume
                 order by l.position, l.offset_bytes nulls first, l.written_at, l.source,
                          l.copy_id)
),
classed as (
    select *,
           offset_bytes is null and aggregate_id is null and posdiff between 1 and 99 as rt
    from gaps
)
select dataset, volume, count(*) as files, sum(size_bytes) as size_bytes,
       count(*) filter (where rt) as n_read_through,
       avg(posdiff::numeric(40, 20)) filter (where rt) as mean_posdiff,
       stddev_samp(posdiff::numeric(40, 20)) filter (where rt) as sigma_posdiff,
       count(*) filter (where offset_bytes is null and aggregate_id is null
                        and posdiff >= 100) as n_locates,
       count(*) filter (where offset_bytes is not null or aggregate_id is not null
                        or posdiff = 0) as n_aggregate_members,
       sum(size_bytes)::numeric / nullif(sum(size_bytes) + sum(
           case when posdiff between 1 and 99 then greatest(gap_bytes, 0) else 0 end), 0)
           as rate_factor
from classed
group by dataset, volume
"""


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
    """One more catalog: n copies on new volumes, loaded as an ingest would (last_seen_at now)."""
    with psycopg.connect(dsn) as conn:
        conn.execute(
            COPIES_SQL,
            {"first": first, "n": n, "per_volume": per_volume, "prefix": "N", "run_id": 2},
        )
        conn.execute(TAPES_SQL)


def timed_sql(dsn: str, statement: str) -> float:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("drop table if exists bench_hand_dataset_tape_gaps")
        started = time.perf_counter()
        conn.execute(statement)
        return time.perf_counter() - started


def models_build(dsn: str, home: Path, *extra: str) -> float:
    argv = [TAPELENS, "--dsn", dsn, "--home", str(home), "models", "build", *extra]
    return measure(argv).seconds


def count(dsn: str, query: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(query).fetchone()
    return int(row[0]) if row else 0


def write_results(text: str) -> None:
    """Replace this benchmark's section of RESULTS.md, keeping every other section."""
    old = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
    pattern = re.compile(rf"^{re.escape(SECTION)}\n.*?(?=^## |\Z)", re.M | re.S)
    block = f"{SECTION}\n\n{text.strip()}\n\n"
    new = pattern.sub(block, old) if pattern.search(old) else old.rstrip() + "\n\n" + block
    RESULTS.write_text(new)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--copies", type=int, default=10_000_000)
    ap.add_argument("--new", type=int, default=100_000, help="copies in the added catalog")
    ap.add_argument("--per-volume", type=int, default=5_000)
    ap.add_argument("--dsn", default=None, help="server to use (default: embedded, temporary)")
    ap.add_argument("--home", type=Path, default=Path("/tmp/tapelens-models-bench-home"))
    ap.add_argument("--no-write", action="store_true", help="do not update RESULTS.md")
    args = ap.parse_args()
    with bench_server(args.dsn) as server, fresh_database(server) as dsn:
        print(f"machine: {machine()}", file=sys.stderr)
        started = time.perf_counter()
        load_site(dsn, args.copies, args.per_volume)
        rows = count(dsn, "select count(*) from tapelens.tape_files")
        print(f"site: {rows:,} copies in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        # The first build parses the project; time the second, a full refresh, like a user's.
        models_build(dsn, args.home, *MODELS_ONLY)
        full_s = models_build(dsn, args.home, "--full-refresh", *MODELS_ONLY)
        hand_s = timed_sql(dsn, HAND_SQL)
        add_catalog(dsn, args.copies, args.new, args.per_volume)
        incremental_s = models_build(dsn, args.home, *MODELS_ONLY)
        tested_s = models_build(dsn, args.home, "--full-refresh")
        volumes = count(dsn, "select count(distinct volume) from tapelens_marts.fct_file_gaps")
    inc_ratio = incremental_s / hand_s
    tested_ratio = tested_s / hand_s
    new = f"{args.new:,}-copy"
    text = f"""
Machine: {machine()}. Synthetic site made with generate_series: {rows:,} copies on {volumes:,}
volumes of {args.per_volume:,} tape objects (three interleaved datasets per 600 files, 10% of
positions in aggregates, 0.5% duplicates, 1% of tapes repacked); `bench/bench_models.py
--copies {args.copies} --new {args.new}`. Times are wall seconds of the whole command.

| step | seconds | vs hand SQL |
|---|---:|---:|
| hand-written SQL, fct_dataset_tape_gaps alone (the limit) | {hand_s:.1f} | 1.0 |
| `models build --full-refresh`, the 19 models | {full_s:.1f} | {full_s / hand_s:.1f} |
| `models build`, incremental, after one {new} catalog | {incremental_s:.1f} | {inc_ratio:.1f} |
| `models build --full-refresh`, with data and unit tests | {tested_s:.1f} | {tested_ratio:.1f} |
"""
    print(text)
    if not args.no_write:
        write_results(text)


if __name__ == "__main__":
    main()
