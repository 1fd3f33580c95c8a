"""The placement what-if: replaying the synthetic site's writes reproduces its truth.

The generator writes FIFO before its cutover and sorted by directory after, in migrations
triggered by volume or age, dealt to write drives, small files packed into aggregates; a replay
of its original writes with the same settings must find the same mean gaps per dataset type
and period (truth/gap_by_type_period.parquet) within 10%, and collocation a mean gap near 1.
"""

from __future__ import annotations

import csv
import io
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from tapelens.analysis.whatif.replay import WhatIfParams, replay
from tapelens.analysis.whatif.stats import summarise
from tapelens.cli import cli
from tapelens.media import BY_NAME as MEDIA
from tapelens.world import generate, site_params
from tapelens.world.params import SiteParams, drives_per_pool
from tapelens.world.timeline import epoch_s
from tests.fixtures.generated_site import load_site

FILES = 40_000
SEED = 3
PARAMS = site_params("bnl", files=FILES, seed=SEED, history=False)
TOLERANCE = 0.10  # the bound on replayed vs true mean gap
MIN_GAPS = 100  # type x period cells with fewer gaps are too noisy to compare


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("whatif-bnl")
    generate(out, PARAMS)
    return out


def generator_settings(p: SiteParams) -> WhatIfParams:
    """The synthetic site's own write path, as replay parameters."""
    pools = [name for name, _ in p.experiments]
    return WhatIfParams(
        policy="sorted-by-directory" if p.policy_after == "sorted" else "fifo",
        policy_before="fifo",
        switch_at_s=float(epoch_s(p.cutover)),
        window_s=p.migration_max_age_days * 86_400.0,
        batch_bytes=p.migration_batch_bytes,
        drives_by_pool=tuple(zip(pools, drives_per_pool(p).tolist(), strict=True)),
        drive_bytes=p.migration_drive_bytes,
        media=tuple((m, float(epoch_s(day))) for m, day in p.media_schedule),
        aggregate=p.aggregate,
        aggregate_max_file_bytes=p.aggregate_max_file_bytes,
        aggregate_max_bytes=p.aggregate_max_bytes,
        aggregate_max_members=p.aggregate_max_members,
    )


def original_writes(site: Path) -> pl.DataFrame:
    """The truth's write stream: every file's original write (no retries, no repack copies)."""
    copies = pl.read_parquet(site / "truth" / "copies.parquet")
    return copies.filter(~pl.col("is_duplicate") & ~pl.col("repacked")).select(
        "path",
        "dataset",
        "dataset_type",
        "size_bytes",
        "arrived_at",
        pl.col("experiment").alias("pool"),
    )


def test_replay_of_the_generator_policies_matches_the_truth(site: Path) -> None:
    stream = original_writes(site)
    assert stream.height == FILES
    placed = replay(stream, generator_settings(PARAMS))
    got = summarise(placed, "arrived_at", float(epoch_s(PARAMS.cutover)))
    truth = pl.read_parquet(site / "truth" / "gap_by_type_period.parquet")
    both = truth.filter(pl.col("n") >= MIN_GAPS).join(
        got.select("dataset_type", "period", "mean_gap", pl.col("n").alias("n_replay")),
        on=["dataset_type", "period"],
        how="left",
    )
    assert both.height >= 8, both
    off = both.filter(((pl.col("mean_gap") / pl.col("mu")) - 1).abs() > TOLERANCE)
    assert off.height == 0, both
    # FIFO before the cutover interleaves datasets; sorted migrations after it much less.
    periods = both.pivot("period", index="dataset_type", values="mean_gap").drop_nulls()
    assert periods.height >= 4, both
    assert (periods["after"] < 0.75 * periods["before"]).all(), both


def test_collocation_gives_a_gap_of_one_and_fills_tapes(site: Path) -> None:
    stream = original_writes(site)
    settings = generator_settings(PARAMS)
    placed = replay(stream, replace(settings, policy="collocate", switch_at_s=None))
    got = summarise(placed, "arrived_at")
    assert (got["mean_gap"].drop_nulls() <= 1.05).all(), got
    assert got.filter(pl.col("dataset_type") == "all")["n"][0] > FILES // 2
    # Every tape: positions 1..k in write order, never beyond its media's capacity.
    tapes = placed.group_by("volume").agg(
        pl.col("media_type").first(),
        pl.col("position").n_unique().alias("objects"),
        pl.col("position").max().alias("last"),
        pl.col("size_bytes").sum().alias("bytes"),
    )
    assert (tapes["objects"] == tapes["last"]).all()
    capacity = pl.col("media_type").replace_strict(
        {m: MEDIA[m].capacity_bytes for m, _ in PARAMS.media_schedule}, return_dtype=pl.Int64
    )
    assert tapes.filter(pl.col("bytes") > capacity).height == 0
    # A dataset that fits on one tape is on one tape.
    per_dataset = placed.group_by("dataset").agg(
        pl.col("volume").n_unique().alias("tapes"), pl.col("size_bytes").sum().alias("bytes")
    )
    smallest = min(MEDIA[m].capacity_bytes for m, _ in PARAMS.media_schedule)
    small = per_dataset.filter(pl.col("bytes") < smallest)
    assert (small["tapes"] == 1).all()


def test_fifo_interleaves_more_than_sorted_writes(site: Path) -> None:
    stream = original_writes(site)
    settings = generator_settings(PARAMS)
    gaps = {}
    for policy in ("fifo", "sorted-by-directory"):
        params = replace(settings, policy=policy, switch_at_s=None)
        table = summarise(replay(stream, params), "arrived_at")
        gaps[policy] = table.filter(pl.col("dataset_type") == "all")["mean_gap"][0]
    assert gaps["fifo"] > 1.5 * gaps["sorted-by-directory"], gaps


@pytest.mark.slow
def test_cli_compares_policies_with_the_actual_placement(dsn: str, tmp_path: Path) -> None:
    small = tmp_path / "site"
    generate(small, site_params("bnl", files=3_000, seed=5, history=False))
    load_site(dsn, small, {"tapes", "catalog"})
    chart = tmp_path / "gaps.png"
    args = ["--dsn", dsn, "whatif", "placement", "--policy", "fifo", "--policy", "collocate"]
    args += ["--split-at", "2020-10-01", "--format", "csv", "--plot", str(chart)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert {r["placement"] for r in rows} == {"fifo", "collocate", "actual"}
    assert chart.stat().st_size > 0
    # The actual row measures the catalog with the published conventions: the truth's figures.
    truth = pl.read_parquet(small / "truth" / "gap_by_type_period.parquet")
    actual = {(r["dataset_type"], r["period"]): r for r in rows if r["placement"] == "actual"}
    for want in truth.filter(pl.col("n") > 0).iter_rows(named=True):
        got = actual[(want["dataset_type"], want["period"])]
        assert int(got["n"]) == want["n"]
        assert float(got["mean_gap"]) == pytest.approx(want["mu"], rel=1e-9)
        assert int(got["locates"]) == want["n_locates"]
    collocated = [r for r in rows if r["placement"] == "collocate" and r["mean_gap"]]
    assert collocated and all(float(r["mean_gap"]) <= 1.05 for r in collocated)
    assert all(float(r["recall_rate_mb_s"]) > 0 for r in rows if r["dataset_type"] == "all")
