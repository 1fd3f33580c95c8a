"""The model's database side and commands, on small hand-made rows in a real TimescaleDB.

The transfer-rates mart is built by dbt elsewhere; here a table of the same name and columns
stands in for it, so that these tests need no dbt run.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import polars as pl
import psycopg
import pytest
from click.testing import CliRunner

from tapelens.analysis.throughput import store
from tapelens.analysis.throughput.calibrate import Fit
from tapelens.analysis.throughput.model import ModelParams, file_times
from tapelens.cli import cli
from tapelens.errors import DatabaseError, TapelensError
from tapelens.media import BY_NAME

GB = 1_000_000_000
T0 = datetime(2024, 3, 1, tzinfo=UTC)
TRUE = ModelParams.from_media(
    BY_NAME["LTO-8"], rate_mb_s=280.0, overhead_s=3.0, read_through_max_gap=6
)
MART = """
create schema tapelens_marts;
create table tapelens_marts.fct_transfer_rates (
    transfer_key text, source text, started_at timestamptz, volume text, media_type text,
    position bigint, offset_bytes bigint, size_bytes bigint, duration_s double precision,
    locate_s double precision, rate_mb_s double precision, session_id text,
    read_posdiff bigint, read_gap_class text
);
"""


def load_site(dsn: str, tapes: int = 24, objects: int = 80, reads: int = 12, seed: int = 3) -> None:
    """Tapes of `objects` contiguous files; each mounted once to read `reads` of them, with
    durations from the model (TRUE) and 3% noise; the catalog, tapes, mounts and mart rows."""
    rng = np.random.default_rng(seed)
    catalog, wanted = [], []
    for t in range(tapes):
        volume = f"A{t:05d}L8"
        sizes = rng.integers(GB // 2, 6 * GB, objects)
        start = 0
        for p in range(1, objects + 1):
            catalog.append((volume, p, int(sizes[p - 1]), start))
            start += int(sizes[p - 1])
        picks = np.sort(rng.choice(np.arange(1, objects + 1), reads, replace=False))
        wanted += [(volume, int(p), int(sizes[p - 1]), catalog[-objects + p - 1][3]) for p in picks]
    files = pl.DataFrame(
        wanted, schema=["volume", "position", "size_bytes", "start_bytes"], orient="row"
    ).with_columns(media_type=pl.lit("LTO-8"))
    timed = file_times(files, {"LTO-8": TRUE}).sort("volume", "position")
    noisy = timed["duration_s"].to_numpy() * np.exp(rng.normal(0, 0.03, timed.height))
    timed = timed.with_columns(pl.Series("duration_s", noisy)).with_columns(
        (pl.col("duration_s").cum_sum().over("volume") - pl.col("duration_s")).alias("after_s")
    )
    with psycopg.connect(dsn) as conn, conn.cursor() as cur:
        cur.execute(MART)
        cur.executemany(
            "insert into tapelens.tapes (volume, media_type) values (%s, 'LTO-8')",
            [(f"A{t:05d}L8",) for t in range(tapes)],
        )
        cur.executemany(
            """insert into tapelens.tape_files (source, copy_id, file_id, path, dataset,
                   dataset_type, experiment, size_bytes, volume, position, copy_no, written_at,
                   ingest_run_id)
               values ('test', %s, %s, %s, %s, 'AOD', 'atlas', %s, %s, %s, 1, %s, 1)""",
            [
                (f"{v}/{p}", f"{v}/{p}", f"/d/{v}/{p}", f"ds-{v}", size, v, p, T0)
                for v, p, size, _ in catalog
            ],
        )
        mount_at = {}
        for i, volume in enumerate(sorted(set(timed["volume"]))):
            requested = T0 + timedelta(hours=4 * i)
            mount_at[volume] = requested + timedelta(seconds=TRUE.mount_s)
            last = timed.filter(pl.col("volume") == volume)
            end_s = float((last["after_s"] + last["duration_s"]).max())  # type: ignore[arg-type]
            cur.execute(
                """insert into tapelens.mounts (source, volume, drive, requested_at, mounted_at,
                       dismounted_at, purpose, ingest_run_id)
                   values ('test', %s, 'd1', %s, %s, %s, 'read', 1)""",
                [
                    volume,
                    requested,
                    mount_at[volume],
                    mount_at[volume] + timedelta(seconds=end_s + TRUE.dismount_s),
                ],
            )
        cur.executemany(
            """insert into tapelens_marts.fct_transfer_rates (transfer_key, source, started_at,
                   volume, media_type, position, size_bytes, duration_s, rate_mb_s, session_id,
                   read_posdiff)
               values (%s, 'test', %s, %s, 'LTO-8', %s, %s, %s, %s, %s, %s)""",
            [
                (
                    f"{r['volume']}/{r['position']}",
                    mount_at[r["volume"]] + timedelta(seconds=r["after_s"]),
                    r["volume"],
                    r["position"],
                    r["size_bytes"],
                    r["duration_s"],
                    r["size_bytes"] / 1e6 / r["duration_s"],
                    f"mount:{r['volume']}",
                    r["gap_objects"],
                )
                for r in timed.iter_rows(named=True)
            ],
        )


def run(dsn: str, *args: str) -> tuple[int, str, str, BaseException | None]:
    result = CliRunner().invoke(cli, ["--dsn", dsn, *args])
    exc = result.exception if not isinstance(result.exception, SystemExit) else None
    return result.exit_code, result.stdout, result.stderr, exc


@pytest.fixture
def site_dsn(dsn: str) -> str:
    load_site(dsn)
    return dsn


def test_observed_reads_carry_byte_addresses_from_the_catalog(site_dsn: str) -> None:
    with psycopg.connect(site_dsn) as conn:
        reads = store.read_observed_reads(conn)
        mounts = store.read_mounts(conn)
        catalog = conn.execute(
            "select volume, position, sum(size_bytes) over (partition by volume order by"
            " position) - size_bytes from tapelens.tape_files"
        ).fetchall()
    assert reads.height == 24 * 12 and mounts.height == 24
    assert set(reads.columns) >= {"started_at", "gap", "session_id", "start_bytes", "volume"}
    assert reads["started_at"].dtype == pl.Datetime("us", "UTC")
    expected = {(v, p): s for v, p, s in catalog}
    got = {(v, p): s for v, p, s in reads.select("volume", "position", "start_bytes").rows()}
    assert got == {k: expected[k] for k in got}
    assert set(mounts["media_type"]) == {"LTO-8"}


@pytest.mark.slow
def test_calibrate_stores_and_show_uses_it(site_dsn: str, tmp_path: Path) -> None:
    code, out, err, exc = run(site_dsn, "throughput", "calibrate", "--min-reads", "100")
    assert exc is None and code == 0, err
    assert "LTO-8" in out and "fit 1: n=288" in out
    with psycopg.connect(site_dsn) as conn:
        [fit] = store.fits(conn)
    assert fit.status == "current" and not fit.forced and fit.n_mounts == 24
    assert fit.params.rate_mb_s == pytest.approx(TRUE.rate_mb_s, rel=0.10)
    assert fit.params.overhead_s == pytest.approx(TRUE.overhead_s, rel=0.15)
    assert fit.params.read_through_max_gap == TRUE.read_through_max_gap
    assert fit.params.mount_s == pytest.approx(TRUE.mount_s, rel=0.01)
    assert fit.data_from is not None and fit.data_from >= T0
    plot = tmp_path / "fit.png"
    show = ("throughput", "show", "--format", "csv", "--plot", str(plot))
    code, out, err, exc = run(site_dsn, *show)
    assert exc is None and code == 0, err
    rows = {r["media_type"]: r for r in csv.DictReader(io.StringIO(out))}
    assert rows["LTO-8"]["source"].startswith("calibrated ")
    assert "on 288 reads" in rows["LTO-8"]["source"]
    assert rows["LTO-7"]["source"] == "default (BNL LTO-7 measurements (docs/domain.md))"
    # The geometry's scale is fitted, stored with the rest and shown; defaults keep 1.
    assert float(rows["LTO-8"]["locate_scale"]) == pytest.approx(fit.params.locate_scale)
    assert fit.params.locate_scale > 0 and fit.params.locate_scale != 1.0
    assert float(rows["LTO-7"]["locate_scale"]) == 1.0
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_thin_data_is_refused_unless_forced(site_dsn: str) -> None:
    code, _, err, exc = run(site_dsn, "throughput", "calibrate")  # default: 200 reads, 20 mounts
    assert exc is None and code == 0, err
    since = (T0 + timedelta(hours=4 * 20)).strftime("%Y-%m-%d %H:%M:%S")
    code, out, err, exc = run(site_dsn, "throughput", "calibrate", "--since", since)
    assert isinstance(exc, TapelensError) and "no parameters stored" in str(exc)
    assert "reads (need 200)" in err and "mounts (need 20)" in err
    assert "keeping the parameters calibrated" in err and "--force" in err
    with psycopg.connect(site_dsn) as conn:
        assert [f.n_reads for f in store.fits(conn)] == [288]
    code, out, err, exc = run(site_dsn, "throughput", "calibrate", "--since", since, "--force")
    assert exc is None and code == 0, err
    with psycopg.connect(site_dsn) as conn:
        current = store.fits(conn)
        history = store.fits(conn, current_only=False)
    assert [(f.n_reads, f.forced) for f in current] == [(48, True)]
    assert [f.status for f in history] == ["current", "superseded"]


def test_validate_prints_errors_by_gap_class(site_dsn: str) -> None:
    code, out, err, exc = run(site_dsn, "throughput", "validate", "--format", "json")
    assert exc is None and code == 0, err
    rows = json.loads(out)
    classes = [r["gap_class"] for r in rows]
    assert classes[-1] == "all" and "read_through" in classes
    overall = rows[-1]
    assert overall["media_type"] == "LTO-8" and overall["median_abs_pct_error"] < 10
    assert "held out" in err and "LTO-8: fitted on" in err


def test_save_fit_keeps_one_current_row_per_media(dsn: str) -> None:
    fit = Fit("LTO-7", ModelParams.from_media(BY_NAME["LTO-7"]), 500, 30, 0.9, 5.0, T0, T0)
    with psycopg.connect(dsn) as conn:
        first = store.save_fit(conn, fit)
        second = store.save_fit(conn, replace(fit, params=replace(fit.params, rate_mb_s=250.0)))
        in_use = store.params_in_use(conn)
        rows = conn.execute(
            "select fit_id, status from tapelens.model_params order by fit_id"
        ).fetchall()
        with pytest.raises(psycopg.errors.UniqueViolation):
            conn.execute(
                "update tapelens.model_params set status = 'current' where fit_id = %s", [first]
            )
    assert rows == [(first, "superseded"), (second, "current")]
    params, source = in_use["LTO-7"]
    assert params.rate_mb_s == 250.0 and source.startswith("calibrated ")
    assert in_use["LTO-8"][1].startswith("default (")


def test_missing_mart_says_what_to_do(dsn: str) -> None:
    code, _, _, exc = run(dsn, "throughput", "calibrate")
    assert isinstance(exc, DatabaseError)
    assert "tapelens marts build" in str(exc)


def test_predict_datasets_prices_the_placement(dsn: str) -> None:
    rows = []
    # dataset 'together' fills positions 1..10 of A00001L8; 'apart' every third position of
    # A00002L8, other people's 10 GB files in between.
    for p in range(1, 31):
        owner = "apart" if p % 3 == 1 else "others"
        rows.append(("A00002L8", p, owner, 10 * GB))
    rows += [("A00001L8", p, "together", 10 * GB) for p in range(1, 11)]
    with psycopg.connect(dsn) as conn, conn.cursor() as cur:
        cur.executemany(
            """insert into tapelens.tape_files (source, copy_id, file_id, path, dataset,
                   dataset_type, experiment, size_bytes, volume, position, copy_no, written_at,
                   ingest_run_id)
               values ('test', %s, %s, %s, %s, 'AOD', 'atlas', %s, %s, %s, 1, %s, 1)""",
            [(f"{v}/{p}", f"{v}/{p}", f"/{d}/{p}", d, s, v, p, T0) for v, p, d, s in rows],
        )
    code, out, err, exc = run(dsn, "predict", "datasets", "--drives", "LTO8:2", "--format", "csv")
    assert exc is None and code == 0, err
    table = {r["dataset"]: r for r in csv.DictReader(io.StringIO(out))}
    assert set(table) == {"together", "apart", "others"}
    apart, together = table["apart"], table["together"]
    assert int(apart["live_files"]) == 10 and int(apart["ideal_tapes"]) == 1
    assert float(apart["slowdown"]) > 2.0  # reads through two foreign files per wanted file
    assert float(together["placement_cost_s"]) == pytest.approx(0.0, abs=1.0)
    assert float(apart["now_rate_mb_s"]) < float(apart["ideal_rate_mb_s"])
    # No --drives, no drive inventory and no tape inventory: nothing says which drives read
    # the tapes, and predict stops as plan recall does rather than assume a drive.
    code, out, err, exc = run(dsn, "predict", "datasets", "--dataset", "together")
    assert code != 0 and "--drives" in str(exc or err)
    code, out, err, exc = run(
        dsn, "predict", "datasets", "--dataset", "together", "--drives", "LTO8:1"
    )
    assert exc is None and code == 0, err
    assert out.splitlines()[0].split()[:4] == ["dataset", "live_files", "readable_files", "now_s"]
    assert len(out.splitlines()) == 2
