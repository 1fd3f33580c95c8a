"""`plan repack` gives the same answers from the Spark tables as from PostgreSQL: for every kind
of candidate the same CSV, byte for byte, and the same volumes to repack (--export volumes),
through the command line.

The site is conftest's `both_engines`: one small synthetic site loaded and built on both.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from tapelens.analysis.repack.advisor import KINDS
from tapelens.cli import cli
from tests.spark.conftest import Built, same_frames
from tests.spark.test_plan_equal import on_engine, site_drives

pytest.importorskip("pyspark")
pytest.importorskip("delta")

pytestmark = pytest.mark.slow

# The shared site's duplicates (its outage's retries) all sit on their datasets' tapes: it has
# no stray copy, so that kind is compared on its empty ranking (the screen runs on both engines
# and finds none on either).
NONE_ON_SITE = {"stray-copies"}


def repack(site: Built, engine: str, kinds: tuple[str, ...], out: Path) -> tuple[str, str, str]:
    """What `plan repack` of `kinds` printed on `engine` (its CSV), the volumes it exported and
    what it said on stderr; its gain-cost plot is drawn too."""
    folder = out / engine
    args = ["plan", "repack", "--drives", site_drives(site), "--format", "csv"]
    args += [arg for kind in kinds for arg in ("--kind", kind)]
    args += ["--export", "volumes", "--export-dir", str(folder)]
    args += ["--plot", str(out / f"{engine}.png")]
    result = CliRunner().invoke(cli, ["--dsn", site.dsn, *args, *on_engine(site, engine)])
    assert result.exit_code == 0, f"{engine} {kinds}: {result.output}"
    assert (out / f"{engine}.png").stat().st_size > 1_000
    return result.stdout, (folder / "repack.vids").read_text(), result.stderr


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_is_ranked_the_same(both_engines: Built, kind: str, tmp_path: Path) -> None:
    on_postgres = repack(both_engines, "postgres", (kind,), tmp_path)
    ranked = pl.read_csv(on_postgres[0].encode())
    if kind in NONE_ON_SITE:
        assert ranked.height == 0, f"the site has {kind} candidates now: test them"
    else:
        assert ranked.height > 0, f"the site has no {kind} candidate: {on_postgres[2]}"
        assert set(ranked["kind"]) == {kind}
        assert on_postgres[1].strip(), "no volume to repack"
    on_spark = repack(both_engines, "spark", (kind,), tmp_path)
    # Column by column first, for a message that names what differs.
    same_frames(kind, ranked, pl.read_csv(on_spark[0].encode(), schema=ranked.schema))
    assert on_spark[:2] == on_postgres[:2]
