"""Ingesting every file of a synthetic site reproduces the generator's truth exactly."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import psycopg
import pytest

from tapelens.world import generate, site_params
from tests.fixtures.generated_site import KEY, load_site, loaded_copies

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("profile", ["bnl", "gridka", "cern", "fnal"])
def test_ingesting_a_site_reproduces_its_truth(profile: str, dsn: str, tmp_path: Path) -> None:
    site = tmp_path / profile
    generate(site, site_params(profile, files=3_000, seed=5))
    load_site(dsn, site, {"tapes", "catalog"})
    truth = pl.read_parquet(site / "truth" / "copies.parquet")
    if "removed" in truth.columns:
        truth = truth.filter(~pl.col("removed"))
    want = truth.select(KEY).sort(KEY)
    got = loaded_copies(dsn).sort(KEY)
    assert got.height == want.height
    assert got.equals(want), got.join(want, on=KEY, how="anti").head()
    with psycopg.connect(dsn) as conn:
        media = conn.execute(
            "select count(*) from tapelens.tapes where media_type = 'unknown'"
        ).fetchone()
    assert media == (0,), "every generated volume has a media type from the inventory"


def test_reingesting_a_site_changes_nothing(dsn: str, tmp_path: Path) -> None:
    site = tmp_path / "bnl"
    generate(site, site_params("bnl", files=2_000, seed=3))
    load_site(dsn, site, {"tapes", "catalog", "mounts", "transfers"})
    with psycopg.connect(dsn) as conn:
        before = conn.execute(
            "select (select count(*) from tapelens.tape_files),"
            " (select count(*) from tapelens.transfers), (select count(*) from tapelens.mounts)"
        ).fetchone()
    load_site(dsn, site, {"tapes", "catalog", "mounts", "transfers"})
    with psycopg.connect(dsn) as conn:
        after = conn.execute(
            "select (select count(*) from tapelens.tape_files),"
            " (select count(*) from tapelens.transfers), (select count(*) from tapelens.mounts)"
        ).fetchone()
    assert before == after and before is not None and all(n > 0 for n in before)
