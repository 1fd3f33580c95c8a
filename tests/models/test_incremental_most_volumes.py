"""An incremental build after a dump that changed most tapes rebuilds the marts whole (every
volume recomputed, no table left full of deleted rows) and still equals a full refresh; after
a dump that changed a few, only those are recomputed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tapelens.dbt_runs import build
from tapelens.ingest.formats.base import ParseOptions
from tapelens.ingest.load import ShrinkGuard, ingest_file
from tests.fixtures.fake_formats import FAKE_CATALOG
from tests.fixtures.marts import GAP_MARTS, MODELS_ONLY, reset, snapshot, watermarks

OPTS = ParseOptions(source="many")
VOLUMES = 120


def dump(path: Path, bigger: set[int]) -> Path:
    """Three files a tape; the tapes in `bigger` hold a fourth."""
    lines = []
    for v in range(VOLUMES):
        files = 4 if v in bigger else 3
        lines += [
            f"M{v:05d}L8 {p} {1000 + p} /many/d{v % 7}/f{v}_{p}.AOD.root"
            for p in range(1, files + 1)
        ]
    path.write_text("".join(f"{line}\n" for line in lines))
    return path


@pytest.mark.slow
def test_most_volumes_changed_rebuilds_a_few_changed_recompute_alone(
    models_dsn: str, dbt_home: Path, tmp_path: Path
) -> None:
    log_dir = dbt_home / "dbt"
    reset(models_dsn)
    ingest_file(models_dsn, FAKE_CATALOG, dump(tmp_path / "a.txt", set()), OPTS)
    build(models_dsn, select=GAP_MARTS, exclude=MODELS_ONLY, log_dir=log_dir)
    first = watermarks(models_dsn, "fct_file_gaps")
    assert len(first) == VOLUMES

    # A few tapes change: the others keep the rows (and watermark) of the first build.
    few = {3, 50, 99}
    ingest_file(models_dsn, FAKE_CATALOG, dump(tmp_path / "b.txt", few), OPTS)
    build(models_dsn, select=GAP_MARTS, exclude=MODELS_ONLY, log_dir=log_dir)
    second = watermarks(models_dsn, "fct_file_gaps")
    changed = {v for v in second if second[v] != first[v]}
    assert changed == {f"M{v:05d}L8" for v in few}

    # Most tapes change: every volume is recomputed, and the result is a full refresh's.
    most = set(range(0, VOLUMES, 3)) | set(range(1, VOLUMES, 3))
    guard = ShrinkGuard(allow=True)
    ingest_file(models_dsn, FAKE_CATALOG, dump(tmp_path / "c.txt", most), OPTS, guard=guard)
    build(models_dsn, select=GAP_MARTS, exclude=MODELS_ONLY, log_dir=log_dir)
    third = watermarks(models_dsn, "fct_file_gaps")
    assert len(set(third.values())) == 1 and len(third) == VOLUMES
    incremental = snapshot(models_dsn)
    build(models_dsn, select=GAP_MARTS, exclude=MODELS_ONLY, full_refresh=True, log_dir=log_dir)
    assert snapshot(models_dsn) == incremental
