"""The recall planner's byte addresses: looked up in the marts where the last build has seen a
tape as it is, summed from the catalog where a later load may have changed it, and the same
either way."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import psycopg
import pytest

from tapelens.analysis.recall.store.catalog import load_catalog
from tapelens.dbt_runs import build
from tapelens.ingest.formats.base import ParseOptions
from tapelens.ingest.load import ShrinkGuard, ingest_file
from tests.fixtures.fake_formats import FAKE_CATALOG
from tests.fixtures.marts import MODELS_ONLY, reset

OPTS = ParseOptions(source="addr")
ADDRESS_MARTS = ["+plan_tape_layouts"]


def catalog(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(f"{line}\n" for line in lines))
    return path


def expected_addresses(dsn: str) -> pl.DataFrame:
    """Each live copy's byte address, worked out here from every stored copy: the objects
    before it on its tape, removed copies included (their bytes stay until a repack)."""
    with psycopg.connect(dsn) as conn:
        stored = pl.DataFrame(
            conn.execute(
                "select path, volume, position, size_bytes, removed_at is null"
                " from tapelens.tape_files"
            ).fetchall(),
            schema=["path", "volume", "position", "size_bytes", "live"],
            orient="row",
        )
    objects = (
        stored.group_by("volume", "position")
        .agg(pl.col("size_bytes").sum().alias("object_bytes"))
        .sort("volume", "position")
        .with_columns(
            (pl.col("object_bytes").cum_sum().over("volume") - pl.col("object_bytes")).alias(
                "start_bytes"
            ),
            pl.col("object_bytes").mean().over("volume").alias("avg_object_bytes"),
        )
    )
    return (
        stored.filter("live")
        .join(objects, on=["volume", "position"])
        .select("path", "volume", "start_bytes", "avg_object_bytes")
        .sort("path", "volume")
    )


def planned_addresses(dsn: str, paths: list[str]) -> tuple[pl.DataFrame, list[str]]:
    notes: list[str] = []
    requests = pl.DataFrame({"kind": ["path"] * len(paths), "key": paths})
    with psycopg.connect(dsn, autocommit=True) as conn:
        found = load_catalog(conn, requests, note=notes.append)
    addresses = found.select("path", "volume", "start_bytes", "avg_object_bytes").sort(
        "path", "volume"
    )
    return addresses, notes


@pytest.mark.slow
def test_addresses_from_the_marts_and_from_the_catalog_agree(
    models_dsn: str, dbt_home: Path, tmp_path: Path
) -> None:
    log_dir = dbt_home / "dbt"
    reset(models_dsn)
    first = [
        f"A0000{v}L8 {p} {1000 * p + v} /addr/d{v}/f{v}_{p}.AOD.root"
        for v in (1, 2, 3)
        for p in (1, 2, 4, 7, 8)
    ]
    ingest_file(models_dsn, FAKE_CATALOG, catalog(tmp_path / "a.txt", first), OPTS)
    paths = [line.split()[3] for line in first]

    # No marts yet: every tape is summed from the catalog, and the user is told why.
    found, notes = planned_addresses(models_dsn, paths)
    assert found.equals(expected_addresses(models_dsn))
    assert len(notes) == 1 and "of 3 tapes" in notes[0] and "not built" in notes[0]

    build(models_dsn, select=ADDRESS_MARTS, exclude=MODELS_ONLY, log_dir=log_dir)
    found, notes = planned_addresses(models_dsn, paths)
    assert found.equals(expected_addresses(models_dsn))
    assert notes == []

    # A listing of A00001 alone: one file gone (its bytes stay on the tape), one larger. Only
    # that tape is summed again; the other two still come from the marts.
    listing = [f"A00001L8 {p} {5000 * p} /addr/d1/f1_{p}.AOD.root" for p in (1, 2, 7, 8)]
    guard = ShrinkGuard(allow=True)
    ingest_file(
        models_dsn,
        FAKE_CATALOG,
        catalog(tmp_path / "b.txt", listing),
        OPTS,
        partial=True,
        guard=guard,
    )
    live = [p for p in paths if p != "/addr/d1/f1_4.AOD.root"]
    found, notes = planned_addresses(models_dsn, live)
    assert found.equals(expected_addresses(models_dsn))
    assert len(notes) == 1 and "of 1 tape summed" in notes[0] and "after the last" in notes[0]

    # A whole-catalog dump may change any tape: all are summed until the next build.
    ingest_file(models_dsn, FAKE_CATALOG, catalog(tmp_path / "c.txt", first[5:]), OPTS, guard=guard)
    found, notes = planned_addresses(models_dsn, live)
    assert found.equals(expected_addresses(models_dsn))
    assert len(notes) == 1 and "2 tapes" in notes[0]  # A00001 holds no live copy now

    build(models_dsn, select=ADDRESS_MARTS, exclude=MODELS_ONLY, log_dir=log_dir)
    found, notes = planned_addresses(models_dsn, live)
    assert found.equals(expected_addresses(models_dsn))
    assert notes == []
