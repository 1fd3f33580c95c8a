"""The families advice kept in the database (migration 026): what `plan families` prints is what
it keeps, a re-run keeps the same rows, a later advice of one pool leaves the other pools' and a
load that fails keeps the advice there was.

On a small generated site with hints (world/hints.py: ATLAS-shaped hints, recall campaigns of
whole hint groups), loaded and its hint marts built as `marts build` builds them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import polars as pl
import psycopg
import pytest

from tapelens.analysis.families.advice import TABLE_SCHEMA, Advice, AdviceOptions
from tapelens.analysis.families.export import named
from tapelens.analysis.families.store import SiteAdviceOptions, store_advice, stored_advice
from tapelens.analysis.whatif.replay import WhatIfParams
from tapelens.errors import DatabaseError
from tests.fixtures.cli import run
from tests.fixtures.generated_site import load_hinted_site

pytestmark = pytest.mark.slow

FILES = 600
SEED = 3
ADVISE = ["plan", "families", "--write-drives", "2", "--batch-bytes", "2TB", "--level", "1"]
ADVISE += ["--level", "3"]
RUN_COLUMNS = (
    "pool, levels, write_drives, open_families, min_family_bytes, sort_window_s, batch_bytes,"
    " written_since, written_until, recall_drives"
)


@dataclass(frozen=True)
class Site:
    dsn: str
    printed: pl.DataFrame  # what the first `plan families` printed, and kept
    families: pl.DataFrame  # what `--by family` printed


@pytest.fixture(scope="module")
def site(module_dsn: str, tmp_path_factory: pytest.TempPathFactory) -> Site:
    load_hinted_site(module_dsn, tmp_path_factory.mktemp("families-store"), FILES, SEED)
    printed = pl.DataFrame(_advise(module_dsn), schema=TABLE_SCHEMA, orient="row")
    families = pl.DataFrame(_advise(module_dsn, "--by", "family", "--no-store"))
    return Site(module_dsn, printed, families)


def _advise(dsn: str, *extra: str) -> list[dict[str, Any]]:
    done = run("--dsn", dsn, *ADVISE, "--format", "json", *extra)
    assert done.returncode == 0, done.stderr
    rows: list[dict[str, Any]] = json.loads(done.stdout)
    return rows


def _kept(dsn: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row kept, the run's time left out."""
    with psycopg.connect(dsn) as conn:
        return {
            "runs": conn.execute(
                f"select {RUN_COLUMNS} from tapelens.family_advice_runs order by pool"
            ).fetchall(),
            "table": conn.execute(
                "select * from tapelens.family_advice order by pool, placement"
            ).fetchall(),
            "families": conn.execute(
                "select * from tapelens.advised_families order by pool, family"
            ).fetchall(),
        }


def _times(dsn: str) -> dict[str, Any]:
    with psycopg.connect(dsn) as conn:
        return dict(
            conn.execute("select pool, advised_at from tapelens.family_advice_runs").fetchall()
        )


def test_what_plan_families_keeps_is_what_it_prints(site: Site) -> None:
    printed, families = site.printed, site.families
    with psycopg.connect(site.dsn) as conn:
        table, kept_families = stored_advice(conn)
        runs = conn.execute(
            "select pool, levels, write_drives, open_families, batch_bytes, recall_drives"
            " from tapelens.family_advice_runs order by pool"
        ).fetchall()
    order = ["pool", "placement"]
    assert printed.height > 2 and table.sort(order).equals(printed.sort(order))
    pools = sorted(set(printed["pool"]))
    assert [r[0] for r in runs] == pools
    assert all(r[1:5] == ([1, 3], 2, 2, 2 * 10**12) for r in runs)
    assert all(r[5] and all(n > 0 for n in r[5].values()) for r in runs)
    # The families as --by family prints them, named as the exports name them.
    exported = named(families).select("pool", "family", "name", "files", "bytes", "tapes")
    assert exported.height > 0
    assert (
        kept_families.select(exported.columns)
        .sort(order[:1] + ["family"])
        .equals(exported.sort(order[:1] + ["family"]))
    )
    # Each family's own level and hint values are the ones its name in the marts carries.
    hinted = kept_families.filter(pl.col("hint_level").is_not_null())
    assert hinted.height > 0
    assert (
        hinted.select(pl.format("{}: {}", "hint_level", "hint_group"))
        .to_series()
        .equals(hinted["family"], check_names=False)
    )
    advised = table.filter(pl.col("advised") & pl.col("level").is_not_null())
    for pool, level in advised.select("pool", "level").iter_rows():
        mine = kept_families.filter(pl.col("pool") == pool)
        assert mine["files"].sum() == advised.filter(pl.col("pool") == pool)["files"][0]
        assert (mine["hint_level"].drop_nulls() <= level).all()


def test_a_rerun_keeps_the_same_rows_and_no_store_keeps_none(site: Site) -> None:
    first, first_times = _kept(site.dsn), _times(site.dsn)
    _advise(site.dsn)
    assert _kept(site.dsn) == first
    later = _times(site.dsn)
    assert later.keys() == first_times.keys()
    assert all(later[p] > first_times[p] for p in later)
    # A dry run with other options changes nothing kept.
    _advise(site.dsn, "--no-store", "--write-drives", "1")
    assert _kept(site.dsn) == first and _times(site.dsn) == later


def _one_pool(table: pl.DataFrame, families: pl.DataFrame, pool: str) -> Advice:
    """The kept advice of one pool as the advisor returns it (families with their pool's
    advised level), its recall figures doubled: a different advice to keep."""
    mine = table.filter(pl.col("pool") == pool)
    level = mine.filter(pl.col("advised"))["level"][0]
    return Advice(
        mine.with_columns(pl.col("recall_hours") * 2),
        families.filter(pl.col("pool") == pool)
        .with_columns(pl.lit(level, dtype=pl.Int64).alias("level"))
        .select("pool", "level", "family", "files", "bytes", "tapes"),
        pl.DataFrame(),
    )


def test_a_later_advice_of_one_pool_leaves_the_others_and_fails_whole(site: Site) -> None:
    with psycopg.connect(site.dsn) as conn:
        table, families = stored_advice(conn)
    pools = sorted(set(table["pool"]))
    assert len(pools) >= 2
    first, rest = pools[0], pools[1:]
    options = SiteAdviceOptions(AdviceOptions(open_families=4, levels=(2, 3)))
    params = WhatIfParams(window_s=3600.0, write_drives=4)
    advice = _one_pool(table, families, first)
    with psycopg.connect(site.dsn) as conn:
        assert store_advice(conn, advice, params, options) == [first]
        again, again_families = stored_advice(conn)
        runs = dict(
            conn.execute("select pool, write_drives from tapelens.family_advice_runs").fetchall()
        )
    others = pl.col("pool").is_in(rest)
    assert again.filter(others).equals(table.filter(others))
    assert again_families.filter(others).equals(families.filter(others))
    mine = again.filter(pl.col("pool") == first)
    assert (
        mine["recall_hours"].to_list()
        == (table.filter(pl.col("pool") == first)["recall_hours"] * 2).to_list()
    )
    assert runs[first] == 4 and all(runs[p] == 2 for p in rest)
    # A family twice is refused by the table's key: nothing of that advice is kept.
    twice = Advice(advice.table, pl.concat([advice.families, advice.families]), pl.DataFrame())
    before = _kept(site.dsn)
    with psycopg.connect(site.dsn) as conn, pytest.raises(DatabaseError, match="duplicate key"):
        store_advice(conn, twice, WhatIfParams(window_s=60.0, write_drives=9), options)
    assert _kept(site.dsn) == before
