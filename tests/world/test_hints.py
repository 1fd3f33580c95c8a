"""The synthetic site's archive metadata: what Rucio's plugins would send, read back by the real
hints reader into the real database, held to the generator's truth.

The shapes follow the ATLAS policy package's ATLASArchiveMetadataPlugin
(get_atlas_archive_metadata: per data type and project a branch of levels, the dataset alone
otherwise) and dmwm/CMSRucio src/policy/CMSRucioPolicy/algorithms/tape_colocation.py (kind of
data, tier, era, parent container); FTS keeps it in t_file.archive_metadata as
`mysql -B` prints it (cern-fts/fts3 src/db/schema/mysql/fts-schema-10.0.1.sql).
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import psycopg
import pytest

from tapelens.world import generate, site_params
from tapelens.world.hints import EMPTY_DATASET_SHARE, GROUP_SEPARATOR
from tests.fixtures.cli import run
from tests.fixtures.generated_site import load_site

pytestmark = pytest.mark.slow

FILES = 8_000
SEED = 5


def stored_hints(dsn: str) -> pl.DataFrame:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "select file_key, status, level_0, level_1, level_2, level_3, length_3, size_3,"
            " experiment from tapelens.write_hints"
        ).fetchall()
    names = ["file_key", "status", "level_0", "level_1", "level_2", "level_3"]
    names += ["length_3", "size_3", "experiment"]
    return pl.DataFrame(rows, schema=names, orient="row", infer_schema_length=None)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("hints") / "site"
    generate(out, site_params("bnl", files=FILES, seed=SEED, hints=True))
    return out


def test_the_fts_export_loads_as_the_truth_says(dsn: str, site: Path) -> None:
    load_site(dsn, site, {"tapes", "catalog", "hints"})
    truth = pl.read_parquet(site / "truth" / "hints.parquet")
    stored = stored_hints(dsn)
    assert stored.height == truth.height == FILES
    # Every record names its file as the catalog does (the door's path mapped back).
    with psycopg.connect(dsn) as conn:
        keys = {r[0] for r in conn.execute("select path from tapelens.tape_files").fetchall()}
    assert set(stored["file_key"]) <= keys
    joined = truth.join(stored, left_on="file_id", right_on="file_key", suffix="_db")
    assert joined.height == FILES
    counts = dict(joined.group_by("status_db").len().iter_rows())
    assert counts == dict(truth.group_by("status").len().iter_rows())
    assert {"ok", "empty", "absent"} == set(counts)
    empty_share = counts["empty"] / FILES
    assert 0.3 * EMPTY_DATASET_SHARE < empty_share < 3 * EMPTY_DATASET_SHARE
    ok = joined.filter(pl.col("status_db") == "ok")
    for k in range(4):
        assert ok[f"level_{k}"].to_list() == ok[f"level_{k}_db"].to_list()
    # Announced sizes: what the dataset held when the file was sent, never more than it ends
    # with, and less for the datasets still being filled.
    announced = ok.filter(pl.col("length_3").is_not_null())
    assert (announced["length_3"] <= announced["dataset_files"]).all()
    assert (announced["size_3"] <= announced["dataset_bytes"]).all()
    short = (announced["length_3"] < announced["dataset_files"]).mean()
    assert short is not None and 0.05 < float(short) < 0.9


def test_atlas_shapes_follow_the_policy_package(site: Path) -> None:
    truth = pl.read_parquet(site / "truth" / "hints.parquet")
    raw = truth.filter(pl.col("path").str.contains("/RAW/"))
    assert raw.height and (raw["level_0"] == "RAW").all()
    assert raw["level_1"].str.starts_with("data").all()
    assert (raw["level_2"] == "physics_Main").all()
    derived = truth.filter(pl.col("path").str.contains("/DAOD_PHYS/"))
    # The plugin's fallback: the dataset alone, at level 0.
    assert derived.height and derived["level_1"].is_null().all()
    assert (derived["group_3"] == derived["level_0"]).all()
    mc_aod = truth.filter(pl.col("level_0") == "AOD_mc")
    assert mc_aod.height
    joined = pl.concat_str(["level_0", "level_1", "level_2"], separator=GROUP_SEPARATOR)
    assert mc_aod.select((pl.col("group_2") == joined).all()).item()


def test_campaigns_recall_whole_groups_of_the_recall_level(site: Path) -> None:
    manifest = json.loads((site / "manifest.json").read_text())
    level = manifest["params"]["hint_recall_level"]
    campaigns = pl.read_parquet(site / "truth" / "campaigns.parquet")
    assert campaigns.height and (campaigns["kind"] == "groups").all()
    truth = pl.read_parquet(site / "truth" / "hints.parquet")
    reads = pl.read_parquet(site / "truth" / "transfers.parquet")
    asked = (
        reads.select("campaign_id", "file_id")
        .unique()
        .join(truth.select("file_id", pl.col(f"group_{level}").alias("group")), on="file_id")
    )
    sizes = truth.group_by(pl.col(f"group_{level}").alias("group")).len()
    per_group = asked.group_by("campaign_id", "group").len().join(sizes, on="group")
    # Every group a campaign touches is asked for whole (files on unreadable tapes aside).
    whole = (per_group["len"] >= 0.95 * per_group["len_right"]).mean()
    assert whole is not None and float(whole) > 0.9


def test_cms_pool_sends_the_cms_shape(tmp_path: Path) -> None:
    out = tmp_path / "gridka"
    generate(out, site_params("gridka", files=3_000, seed=3, hints=True, history=False))
    truth = pl.read_parquet(out / "truth" / "hints.parquet")
    cms = truth.filter(pl.col("experiment") == "cms")
    assert cms.height
    assert set(cms["level_0"].unique()) <= {"raw", "data", "mc"}
    assert cms["level_3"].str.contains(r"^/[^/]+/Run[^/]+-v1/[A-Z]+$").all()
    lines = (out / "hints" / "t_file.tsv").read_text().splitlines()
    assert lines[0].split("\t")[-1] == "archive_metadata"
    assert any('"collocation_hints": {}' in line for line in lines[1:])


def test_cta_site_keys_its_records_by_archive_id(dsn: str, tmp_path: Path) -> None:
    """CTA's front end receives the metadata with each archive request: the cern profile
    writes it keyed by the archive id its catalog names files by (`--format csv`)."""
    out = tmp_path / "cern"
    generate(out, site_params("cern", files=2_000, seed=4, hints=True, history=False))
    load_site(dsn, out, {"hints"})
    truth = pl.read_parquet(out / "truth" / "hints.parquet")
    stored = stored_hints(dsn)
    assert stored["file_key"].str.contains(r"^\d+$").all()
    joined = truth.join(stored, left_on="file_id", right_on="file_key")
    assert joined.height == truth.height == stored.height
    assert (joined["status"] == joined["status_right"]).all()


def test_ingest_manifest_loads_the_hints_with_the_catalog(dsn: str, tmp_path: Path) -> None:
    out = tmp_path / "site"
    generate(out, site_params("bnl", files=1_000, seed=9, hints=True, history=False))
    done = run("--dsn", dsn, "ingest", "manifest", str(out / "manifest.json"))
    assert done.returncode == 0, done.stderr
    assert "t_file.tsv" in done.stderr
    stored = stored_hints(dsn)
    assert stored.height == 1_000
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "select count(*) from tapelens.write_hints h"
            " where exists (select 1 from tapelens.tape_files f where f.path = h.file_key)"
        ).fetchone()
    assert row is not None and row[0] == 1_000
