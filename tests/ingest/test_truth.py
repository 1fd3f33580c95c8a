"""Ingesting every file of a synthetic site reproduces the generator's truth exactly."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import psycopg
import pytest

from tapelens.ingest.formats.base import ParseOptions
from tapelens.ingest.load import ingest_file
from tapelens.ingest.manifest import read_manifest
from tapelens.synth import generate, site_params

KEY = ["file_id", "volume", "position", "offset_bytes", "copy_no", "written_at"]


def load_site(dsn: str, site: Path, kinds: set[str]) -> None:
    for item in read_manifest(site / "manifest.json"):
        if item.format.kind not in kinds:
            continue
        options = ParseOptions(
            source=item.source or item.format.source, extra=item.extra, **item.options
        )
        result = ingest_file(dsn, item.format, item.path, options)
        assert result.rejects == 0, result.rejects_summary


def loaded_copies(dsn: str) -> pl.DataFrame:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "select file_id, volume, position, offset_bytes, copy_no, written_at"
            " from tapelens.tape_files where removed_at is null"
        ).fetchall()
    return pl.DataFrame(rows, schema=KEY, orient="row").with_columns(
        pl.col("position").cast(pl.Int64),
        pl.col("offset_bytes").cast(pl.Int64),
        pl.col("copy_no").cast(pl.Int32),
        pl.col("written_at").dt.convert_time_zone("UTC").dt.cast_time_unit("us"),
    )


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
