"""Incremental marts after real loads in quick succession equal a full refresh.

The watermark is the ingest run id, not a clock: a second load committed within the same second
as the build before it must still be picked up.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tapelens.dbt_runs import build
from tapelens.ingest.formats.base import ParseOptions
from tapelens.ingest.load import ShrinkGuard, ingest_file
from tests.fixtures.fake_formats import FAKE_CATALOG
from tests.fixtures.marts import GAP_MARTS, MODELS_ONLY, reset, rows, snapshot

OPTS = ParseOptions(source="wm")


def catalog(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(f"{line}\n" for line in lines))
    return path


@pytest.mark.slow
def test_a_load_right_after_a_build_reaches_the_incremental_marts(
    models_dsn: str, dbt_home: Path, tmp_path: Path
) -> None:
    log_dir = dbt_home / "dbt"
    reset(models_dsn)
    first = [
        f"W0000{v}L8 {p} {100 * p} /wm/data/ds{v}/f{v}_{p}.AOD.root"
        for v in (1, 2)
        for p in (1, 2, 5, 9)
    ]
    ingest_file(models_dsn, FAKE_CATALOG, catalog(tmp_path / "a.txt", first), OPTS)
    build(models_dsn, select=GAP_MARTS, exclude=MODELS_ONLY, log_dir=log_dir)
    # At once, within the same second: W00001 loses a file and gains two; W00002 is unchanged.
    second = [line for line in first if "f1_5." not in line] + [
        "W00001L8 12 700 /wm/data/ds1/f1_12.AOD.root",
        "W00001L8 14 800 /wm/data/ds2/f2_14.AOD.root",
    ]
    guard = ShrinkGuard(allow=True)
    ingest_file(models_dsn, FAKE_CATALOG, catalog(tmp_path / "b.txt", second), OPTS, guard=guard)
    build(models_dsn, select=GAP_MARTS, exclude=MODELS_ONLY, log_dir=log_dir)
    incremental = snapshot(models_dsn)
    gaps = rows(
        models_dsn,
        "select f.path from tapelens_marts.fct_file_gaps"
        " join tapelens.tape_files f using (source, copy_id, written_at)",
    )
    assert len(gaps) == len(incremental["tapelens_marts.fct_file_gaps"])
    assert {r["path"] for r in gaps} == {line.split()[3] for line in second}
    build(models_dsn, select=GAP_MARTS, exclude=MODELS_ONLY, full_refresh=True, log_dir=log_dir)
    assert snapshot(models_dsn) == incremental
