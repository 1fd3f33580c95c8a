"""The repack advisor's stray-copy tapes, on a site a flaky front end filled with them.

A year of a busy pool's writes (200k files on LTO-6, FIFO migrations): tapes fill in days, as
at a real site, so a retry written one migration after its first copy lands on another tape.
Twelve two-day outages of the front end each lose a fifth of the acknowledgements of the
writes waiting then; every lost file is written again, one by one among the new files of the
next migration. The tapes those retries landed on hold stray copies of many datasets, each
an extra mount for a tape client that recalls the newest copy. The advisor sees only the
catalog and the marts; ranked by net gain, its top stray-copy candidates must be those tapes.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

import polars as pl
import psycopg
import pytest

from tapelens.analysis.recall.datasets.stored import write_placement_costs
from tapelens.analysis.repack.advisor import RepackOptions
from tapelens.analysis.repack.store import RepackAdvice, advise
from tapelens.dbt_runs import build
from tapelens.world import generate, site_params
from tests.fixtures.generated_site import load_site

pytestmark = pytest.mark.slow

DRIVES = {"LTO-6": 6}
SITE = {
    "files": 200_000,
    "seed": 5,
    "history": False,
    "start": date(2016, 1, 1),
    "end": date(2016, 12, 31),
    "policy_after": "fifo",
    "repack_at": None,
    "ack_outages": 12,
    "ack_outage_hours": 48.0,
    "ack_outage_loss": 0.2,
}
PRECISION = 0.8  # precision of the top 10 against the truth
MODELS_ONLY = ["resource_type:test", "resource_type:unit_test"]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("strays") / "site"
    generate(out, site_params("bnl", **SITE))
    return out


@pytest.fixture(scope="module")
def advised(module_dsn: str, site: Path) -> RepackAdvice:
    load_site(module_dsn, site, {"tapes", "catalog"})
    build(module_dsn, exclude=MODELS_ONLY, log_dir=site.parent / "dbt")
    with psycopg.connect(module_dsn) as conn:
        write_placement_costs(conn)  # what `marts build` does after dbt
    options = RepackOptions(
        drives=tuple(DRIVES.items()), top=10, screen=40, kinds=("stray-copies",)
    )
    with psycopg.connect(module_dsn, autocommit=True) as conn:
        return advise(conn, options)


def stray_copies(site: Path) -> pl.DataFrame:
    """Per tape, from the truth: the live retries it holds of datasets none of whose original
    copies are on it (stray), and how many of those the outages wrote (outage)."""
    copies = pl.read_parquet(site / "truth" / "copies.parquet").filter(~pl.col("removed"))
    originals = copies.filter(~pl.col("is_duplicate")).select("dataset", "volume").unique()
    stray = copies.filter(pl.col("is_duplicate")).join(
        originals, on=["dataset", "volume"], how="anti"
    )
    return stray.group_by("volume").agg(
        pl.len().alias("stray"), pl.col("outage").sum().alias("outage")
    )


def filled_by_outages(per_tape: pl.DataFrame) -> set[str]:
    """The tapes the outages filled with stray copies: more outage strays than the ordinary
    retries left on any tape of the site."""
    background = int((per_tape["stray"] - per_tape["outage"]).max())
    return set(per_tape.filter(pl.col("outage") > background)["volume"].to_list())


def test_the_tapes_the_outages_filled_with_stray_copies_rank_on_top(
    advised: RepackAdvice, site: Path
) -> None:
    truth = filled_by_outages(stray_copies(site))
    assert len(truth) >= 10
    ranked = advised.candidates.filter(pl.col("kind") == "stray-copies")
    top = ranked["target"].head(10).to_list()
    assert sum(t in truth for t in top) / len(top) >= PRECISION, (top, sorted(truth))
    # Each of them pays back within the horizon: retiring its strays saves tape clients a
    # mount per affected dataset, for the price of reading the kept copies once.
    best = ranked.head(10)
    assert (best["saving_per_recall_drive_h"] > 0).all()
    assert (best["net_gain_h"] > 0).all()
    assert (best["repack_write_h"] == 0).all()


def test_the_advisor_counts_the_stray_copies_the_generator_wrote(
    advised: RepackAdvice, site: Path
) -> None:
    per_tape = stray_copies(site)
    truth = filled_by_outages(per_tape)
    found = advised.candidates.filter(pl.col("kind") == "stray-copies").with_columns(
        pl.col("evidence").str.extract(r"^(\d+) stray", 1).cast(pl.Int64).alias("stray")
    )
    counted = dict(found.select("target", "stray").iter_rows())
    expected = dict(per_tape.select("volume", "stray").iter_rows())
    # It sees neither which copy was the retry nor the generator's notion of a dataset's
    # tapes, so within a few.
    for volume in truth:
        assert counted[volume] == pytest.approx(expected[volume], rel=0.1, abs=3), volume
