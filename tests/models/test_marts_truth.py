"""On every synthetic profile, the gap and duplicate marts equal the generator's ground truth.

Each profile's site is generated, its inventory and catalogs ingested through the native
parsers, and the marts built once with the site's cutover; then every row of the truth tables
(world/truth_files.py states their conventions) is compared with the mart's: counts
exactly, mean and sigma to a relative 1e-9.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import polars as pl
import pytest

from tapelens.dbt_runs import build
from tapelens.frames import read_frame
from tapelens.world import generate, site_params
from tests.fixtures.generated_site import load_site
from tests.fixtures.marts import reset

pytestmark = pytest.mark.slow

PROFILES = ("bnl", "gridka", "cern", "fnal")
FILES = 10_000
SEED = 7
# Not the dbt default (2020-10-01): a mart that missed the site's cutover would split wrongly.
CUTOVER = date(2021, 7, 1)
REL = 1e-9
# The three marts compared and everything they read; their data and unit tests run elsewhere
# (test_marts), on the hand-made site.
SELECT = ["+agg_gap_by_type_period", "+fct_dataset_tape_gaps", "+fct_duplicate_copies"]
MODELS_ONLY = ["resource_type:test", "resource_type:unit_test"]
M = "tapelens_marts"


@dataclass(frozen=True)
class BuiltSite:
    profile: str
    dsn: str
    truth: Path


@pytest.fixture(scope="module", params=PROFILES)
def site(
    request: pytest.FixtureRequest,
    models_dsn: str,
    dbt_home: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[BuiltSite]:
    """One profile's site, ingested and built; pytest runs every test of a profile in turn."""
    profile: str = request.param
    out = tmp_path_factory.mktemp(profile)
    generate(out, site_params(profile, files=FILES, seed=SEED, history=False, cutover=CUTOVER))
    cutover = json.loads((out / "manifest.json").read_text())["params"]["cutover"]
    reset(models_dsn)
    load_site(models_dsn, out, {"tapes", "catalog"})
    build(
        models_dsn,
        select=SELECT,
        exclude=MODELS_ONLY,
        vars={"cutover_date": cutover},
        log_dir=dbt_home / "dbt",
    )
    yield BuiltSite(profile, models_dsn, out / "truth")


def assert_same_keys(got: pl.DataFrame, want: pl.DataFrame, key: list[str], what: str) -> None:
    extra = got.join(want, on=key, how="anti").select(key)
    missing = want.join(got, on=key, how="anti").select(key)
    assert extra.height == 0 and missing.height == 0, (
        f"{what}: {extra.height} rows not in the truth, e.g. {extra.head(3).rows()}; "
        f"{missing.height} truth rows missing, e.g. {missing.head(3).rows()}"
    )


def close(a: pl.Expr, b: pl.Expr) -> pl.Expr:
    """Both null, or both set and equal to a relative REL."""
    within = ((a - b).abs() <= REL * pl.max_horizontal(a.abs(), b.abs())).fill_null(False)
    return (a.is_null() & b.is_null()) | (a.is_not_null() & b.is_not_null() & within)


def assert_rows_match(
    got: pl.DataFrame,
    want: pl.DataFrame,
    key: list[str],
    exact: list[str],
    approx: list[str],
    what: str,
) -> None:
    """Same keys; per key, `exact` columns equal (nulls equal) and `approx` ones close."""
    assert_same_keys(got, want, key, what)
    joined = want.join(got, on=key, how="inner", suffix="_mart", nulls_equal=True)
    assert joined.height == want.height, f"{what}: duplicate keys in the mart"
    for column in exact + approx:
        a, b = pl.col(column), pl.col(f"{column}_mart")
        ok = a.eq_missing(b) if column in exact else close(a, b)
        bad = joined.filter(~ok).select(*key, column, f"{column}_mart")
        assert bad.height == 0, (
            f"{what}: {column} differs on {bad.height} of {joined.height} rows, e.g. "
            f"{bad.head(5).rows()}"
        )


def test_gap_by_type_and_cutover_period_equals_truth(site: BuiltSite) -> None:
    got = read_frame(
        site.dsn,
        f"select dataset_type, period, n, mu, sigma, n_locates, files, n_aggregate_members"
        f" from {M}.agg_gap_by_type_period where period_kind = 'cutover'",
    )
    want = pl.read_parquet(site.truth / "gap_by_type_period.parquet")
    assert want.height > 0 and want["n"].sum() > 0
    assert set(want["period"]) == {"before", "after"}
    # The truth lists a type and period when it holds a copy outside aggregates; the mart also
    # has one where every copy is an aggregate member (n = 0, mu null).
    only_aggregates = got.filter(pl.col("files") == pl.col("n_aggregate_members"))
    assert (only_aggregates["n"] == 0).all()
    got = got.filter(pl.col("files") > pl.col("n_aggregate_members"))
    assert_rows_match(
        got,
        want,
        key=["dataset_type", "period"],
        exact=["n", "n_locates"],
        approx=["mu", "sigma"],
        what=f"{site.profile} agg_gap_by_type_period",
    )


def test_dataset_tape_gaps_equal_truth(site: BuiltSite) -> None:
    got = read_frame(
        site.dsn,
        f"select dataset, volume, dataset_type, experiment, files as n_copies,"
        f" n_aggregate_members as n_aggregated, n_counted_gaps as n, mean_posdiff as mean,"
        f" sigma_posdiff as sigma, n_locates from {M}.fct_dataset_tape_gaps",
    )
    want = pl.read_parquet(site.truth / "dataset_tape_gaps.parquet")
    assert want.height > 0 and want["n_locates"].sum() > 0
    if site.profile in ("bnl", "gridka"):  # the profiles that write small-file aggregates
        assert want["n_aggregated"].sum() > 0
    assert_rows_match(
        got,
        want,
        key=["dataset", "volume"],
        exact=["dataset_type", "experiment", "n_copies", "n_aggregated", "n", "n_locates"],
        approx=["mean", "sigma"],
        what=f"{site.profile} fct_dataset_tape_gaps",
    )


def test_duplicate_copies_equal_truth(site: BuiltSite) -> None:
    got = read_frame(
        site.dsn,
        f"select file_id, path, copies, n_volumes as volumes, volumes as volume_list"
        f" from {M}.fct_duplicate_copies",
    )
    want = pl.read_parquet(site.truth / "duplicates.parquet")
    assert (want["copies"] > 2).any(), "a file with more than two copies"
    # volume lists compared as sets of names, whatever the database's collation
    sort_lists = pl.col("volume_list").list.sort()
    assert_rows_match(
        got.with_columns(sort_lists),
        want.with_columns(sort_lists),
        key=["file_id"],
        exact=["path", "copies", "volumes", "volume_list"],
        approx=[],
        what=f"{site.profile} fct_duplicate_copies",
    )
