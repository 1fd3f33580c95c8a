"""The families advice on the synthetic site, against the truth the generator knows.

The site (world/hints.py) sends its files to tape with ATLAS-shaped hints and its recall
campaigns ask for whole groups of one hint level (hint_recall_level). The advice must pick that
level for the site's largest pool, and the recall drive hours it predicts for the advised
placement must match the world's own replay of that placement (world/placement_replay.py: the
world's library and physics, no code shared with the recall engine) within 10 %, with the same
mounts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import psycopg
import pytest

from tapelens.analysis.families.advice import RECORDED, Advice, AdviceOptions
from tapelens.analysis.families.export import FILES as EXPORT_FILES
from tapelens.analysis.families.export import family_of, named
from tapelens.analysis.families.store import SiteAdviceOptions, advise_from_catalog, read_campaigns
from tapelens.analysis.throughput import store as throughput_store
from tapelens.analysis.whatif.replay import WhatIfParams
from tapelens.dbt_runs import build
from tapelens.world import generate, site_params
from tapelens.world.placement_replay import replay_campaigns
from tests.fixtures.cli import run
from tests.fixtures.generated_site import load_site

pytestmark = pytest.mark.slow

FILES = 20_000
SEED = 5
TB = 1_000_000_000_000
HOURS_TOLERANCE = 0.10
# Six production streams per pool write datasets at once, so that a family broader than a
# dataset interleaves several of them day after day.
SITE = {"production_streams": 6, "late_share": 0.0}
OPEN_FAMILIES = 12
WRITE_DRIVES = 6
MODELS_ONLY = ["resource_type:test", "resource_type:unit_test"]


@dataclass(frozen=True)
class Advised:
    dsn: str
    site: Path
    drives: dict[str, int]
    advice: Advice
    campaigns: pl.DataFrame


@pytest.fixture(scope="module")
def advised(module_dsn: str, tmp_path_factory: pytest.TempPathFactory) -> Advised:
    root = tmp_path_factory.mktemp("families")
    site = root / "site"
    generate(site, site_params("bnl", files=FILES, seed=SEED, hints=True, **SITE))
    load_site(module_dsn, site, {"tapes", "catalog", "mounts", "transfers", "hints"})
    build(
        module_dsn,
        select=["+fct_hinted_files", "+fct_transfer_rates"],
        exclude=MODELS_ONLY,
        log_dir=root / "dbt",
    )
    drives = dict(
        pl.read_parquet(site / "truth" / "drives.parquet").group_by("drive_type").len().iter_rows()
    )
    with psycopg.connect(module_dsn, autocommit=True) as conn:
        throughput_store.calibrate_and_store(conn)
        params = WhatIfParams(window_s=86_400.0, batch_bytes=4 * TB, write_drives=WRITE_DRIVES)
        options = SiteAdviceOptions(AdviceOptions(open_families=OPEN_FAMILIES), drives=drives)
        advice = advise_from_catalog(conn, params, options)
        campaigns = read_campaigns(conn)
    return Advised(module_dsn, site, drives, advice, campaigns)


def test_advice_picks_the_level_the_recall_pattern_rewards(advised: Advised) -> None:
    manifest = json.loads((advised.site / "manifest.json").read_text())
    level = manifest["params"]["hint_recall_level"]
    table = advised.advice.table
    atlas = table.filter((pl.col("pool") == "atlas") & pl.col("advised")).row(0, named=True)
    assert atlas["level"] == level
    # One advised level per pool, and the advice beats the placement the site has.
    assert table.filter(pl.col("advised")).group_by("pool").len()["len"].to_list() == [1] * 3
    recorded = table.filter((pl.col("pool") == "atlas") & (pl.col("placement") == RECORDED))
    assert atlas["recall_hours"] < recorded["recall_hours"][0]
    assert atlas["recall_mounts"] < recorded["recall_mounts"][0]
    assert atlas["tapes_per_dataset"] < recorded["tapes_per_dataset"][0]
    # A pool whose recorded placement no level beats is told to keep it; every file of the
    # other pools is placed once, in a family of the advised level or a broader one.
    for row in table.filter(pl.col("advised") & pl.col("level").is_null()).iter_rows(named=True):
        mine = table.filter((pl.col("pool") == row["pool"]) & pl.col("level").is_not_null())
        assert row["placement"] == RECORDED
        assert mine["recall_hours"].min() >= row["recall_hours"]
    changed = table.filter(pl.col("advised") & pl.col("level").is_not_null())
    placement = advised.advice.placement
    assert placement["file_id"].n_unique() == placement.height == changed["files"].sum()
    families = advised.advice.families.filter(pl.col("pool") == "atlas")
    assert families["files"].sum() == atlas["files"]
    assert families["family"].str.extract(r"^(\d):").cast(pl.Int64).max() == level


def test_predicted_recall_hours_match_the_worlds_replay(advised: Advised) -> None:
    atlas = advised.advice.table.filter((pl.col("pool") == "atlas") & pl.col("advised"))
    placement = advised.advice.placement.filter(pl.col("pool") == "atlas")
    world = replay_campaigns(
        placement, advised.campaigns, advised.drives, np.random.default_rng(SEED)
    )
    predicted = atlas.row(0, named=True)
    assert world.height == predicted["campaigns"]
    assert int(world["mounts"].sum()) == predicted["recall_mounts"]
    hours = float(world["drive_hours"].sum())
    assert abs(hours / predicted["recall_hours"] - 1) <= HOURS_TOLERANCE, (
        hours,
        predicted["recall_hours"],
    )


def test_plan_families_prints_the_advice(advised: Advised) -> None:
    spec = ",".join(f"{t}:{n}" for t, n in sorted(advised.drives.items()))
    common = ["--dsn", advised.dsn, "plan", "families", "--write-drives", str(WRITE_DRIVES)]
    common += ["--open-families", str(OPEN_FAMILIES), "--batch-bytes", "4TB", "--drives", spec]
    done = run(*common, "--format", "json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    mine = {(r["pool"], r["placement"]): r for r in rows}
    table = advised.advice.table
    for row in table.iter_rows(named=True):
        assert mine[(row["pool"], row["placement"])]["recall_mounts"] == row["recall_mounts"]
    assert "atlas: collocate by hint level 3" in done.stderr
    by_family = run(*common, "--by", "family", "--level", "3", "--format", "csv")
    assert by_family.returncode == 0, by_family.stderr
    assert by_family.stdout.splitlines()[0] == "pool,level,family,files,bytes,tapes"
    exported = run(*common, "--export", "dcache", "--export-dir", str(advised.site / "families"))
    assert exported.returncode == 0, exported.stderr
    mapping = json.loads((advised.site / "families" / EXPORT_FILES["dcache"]).read_text())
    # The HSM script's lookup puts each hinted file where the advised placement put it.
    names = {
        (pool, family): name
        for pool, family, name in named(advised.advice.families)
        .select("pool", "family", "name")
        .iter_rows()
    }
    truth = pl.read_parquet(advised.site / "truth" / "hints.parquet").filter(
        pl.col("status") == "ok"
    )
    placed = advised.advice.placement.select("file_id", "pool", "family")
    checked = truth.join(placed, on="file_id")
    assert checked.height > 0.8 * placed.height
    for row in checked.iter_rows(named=True):
        hints = {str(k): row[f"level_{k}"] for k in range(4) if row[f"level_{k}"]}
        assert family_of(mapping, row["pool"], hints) == names[(row["pool"], row["family"])], row
    bad = run(*common, "--sort", "nonesuch")
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
    assert "--sort nonesuch: no such column" in bad.stderr
