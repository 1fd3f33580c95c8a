"""The synthetic site end to end (bnl): determinism, realism, and native files agreeing with the
truth. The HPSS listing is parsed here with a few lines of Polars, independently of the ingest
parsers, so that a disagreement between files and truth cannot hide behind shared code."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from tapelens.world import generate, site_params

CUTOVER = datetime(2020, 10, 1, tzinfo=UTC)
LOCATE = 100


def checksums(root: Path) -> dict[str, str]:
    return {
        str(f.relative_to(root)): hashlib.sha256(f.read_bytes()).hexdigest()
        for f in sorted(root.rglob("*"))
        if f.is_file()
    }


@pytest.fixture(scope="module")
def bnl_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bnl") / "site"
    generate(out, site_params("bnl", files=50_000, seed=6))
    return out


def read_listing(site: Path) -> pl.DataFrame:
    """FILE lines of ls -P with a volume: path, position, offset, volume, create time."""
    lines = pl.read_csv(
        site / "catalog" / "ls-P.txt",
        has_header=False,
        separator="\n",
        new_columns=["line"],
        quote_char=None,
    )["line"]
    fields = lines.str.split("\t")
    rows = pl.DataFrame({"f": fields}).filter(pl.col("f").list.first() == "FILE")
    frame = rows.select(
        path=pl.col("f").list.get(1),
        size=pl.col("f").list.get(2).cast(pl.Int64),
        section=pl.col("f").list.get(4),
        pv=pl.col("f").list.get(5),
        created=pl.concat_str(pl.col("f").list.get(9), pl.col("f").list.get(10), separator=" "),
    )
    return (
        frame.filter(pl.col("pv") != "")
        .with_columns(
            volume=pl.col("pv").str.slice(0, 6),
            position=pl.col("section").str.split("+").list.get(0).cast(pl.Int64),
            offset=pl.col("section").str.split("+").list.get(1).cast(pl.Int64),
            written_at=pl.col("created")
            .str.strptime(pl.Datetime("us"), "%m/%d/%Y %H:%M:%S")
            .dt.replace_time_zone("UTC"),
            dataset=pl.col("path").str.replace(r"/[^/]*$", ""),
            dataset_type=pl.col("path")
            .str.extract(r"/([^/]*)$", 1)
            .str.to_uppercase()
            .str.extract(r"(?:^|[._-])(DAOD|AOD|EVNT|HITS|RAW|LOG)(?:$|[._-])", 1),
        )
        .drop("created", "section", "pv")
    )


def gaps_from_listing(site: Path) -> pl.DataFrame:
    listing = read_listing(site)
    tapes = pl.read_csv(site / "catalog" / "tapes.csv")
    repacked = tapes.filter(pl.col("state") == "repacked")["volume"]
    members = listing.group_by("volume", "position").len().filter(pl.col("len") > 1).drop("len")
    ordered = (
        listing.filter(~pl.col("volume").is_in(repacked.implode()))
        .join(members.with_columns(member=pl.lit(True)), on=["volume", "position"], how="left")
        .with_columns(pl.col("member").fill_null(False))
        .sort("volume", "dataset", "position", "offset", "written_at")
        .with_columns(posdiff=pl.col("position").diff().over("volume", "dataset"))
    )
    counted = ordered.filter(
        ~pl.col("member") & pl.col("posdiff").is_not_null() & (pl.col("posdiff") < LOCATE)
    )
    return (
        counted.with_columns(
            period=pl.when(pl.col("written_at") < CUTOVER)
            .then(pl.lit("before"))
            .otherwise(pl.lit("after"))
        )
        .group_by("dataset_type", "period")
        .agg(
            n=pl.len().cast(pl.Int64),
            mu=pl.col("posdiff").cast(pl.Float64).mean(),
            sigma=pl.col("posdiff").cast(pl.Float64).std(),
        )
        .sort("dataset_type", "period")
    )


@pytest.mark.slow
def test_same_seed_gives_identical_files(tmp_path: Path) -> None:
    params = site_params("bnl", files=3_000, seed=3, gzip=True)
    generate(tmp_path / "a", params)
    generate(tmp_path / "b", params)
    a, b = checksums(tmp_path / "a"), checksums(tmp_path / "b")
    assert a == b
    assert "catalog/ls-P.txt.gz" in a and "truth/copies.parquet" in a
    # Regenerating into an existing site replaces it with the same bytes.
    generate(tmp_path / "a", params)
    assert checksums(tmp_path / "a") == a
    generate(tmp_path / "c", site_params("bnl", files=3_000, seed=4, gzip=True))
    assert checksums(tmp_path / "c")["catalog/ls-P.txt.gz"] != a["catalog/ls-P.txt.gz"]


def test_truth_gaps_have_the_published_shape(bnl_site: Path) -> None:
    truth = pl.read_parquet(bnl_site / "truth" / "gap_by_type_period.parquet")
    pooled = (
        truth.filter(pl.col("n") > 0)
        .group_by("period")
        .agg(mu=(pl.col("mu") * pl.col("n")).sum() / pl.col("n").sum(), n=pl.col("n").sum())
    )
    mu = dict(pooled.select("period", "mu").iter_rows())
    assert 2.0 <= mu["before"] <= 3.0, pooled
    assert 1.05 <= mu["after"] <= 1.5, pooled
    # Every data type with enough files is interleaved before and sorted after the cutover
    # (per type the ranges of a 50k-file site are wider than the pooled ones).
    per_type = truth.filter((pl.col("n") >= 300) & (pl.col("dataset_type") != "LOG"))
    wide = per_type.pivot("period", index="dataset_type", values="mu").drop_nulls()
    assert wide.height >= 4
    for row in wide.to_dicts():
        assert 1.5 <= row["before"] <= 3.5, row
        assert 1.0 <= row["after"] <= 2.0, row
        assert row["after"] < row["before"], row


def test_native_listing_reproduces_the_truth_gaps(bnl_site: Path) -> None:
    truth = (
        pl.read_parquet(bnl_site / "truth" / "gap_by_type_period.parquet")
        .filter(pl.col("n") > 0)
        .select("dataset_type", "period", "n", "mu", "sigma")
        .sort("dataset_type", "period")
    )
    recomputed = gaps_from_listing(bnl_site).select(truth.columns)
    assert recomputed["n"].to_list() == truth["n"].to_list()
    assert recomputed["dataset_type"].to_list() == truth["dataset_type"].to_list()
    for a, b in zip(recomputed.iter_rows(), truth.iter_rows(), strict=True):
        assert a[3] == pytest.approx(b[3], rel=1e-12)
        assert (a[4] is None and b[4] is None) or a[4] == pytest.approx(b[4], rel=1e-9)


def test_duplicates_share_and_the_pathological_file(bnl_site: Path) -> None:
    dups = pl.read_parquet(bnl_site / "truth" / "duplicates.parquet")
    share = dups.height / 50_000
    assert 0.003 <= share <= 0.008
    worst = dups.sort("copies", descending=True).row(0, named=True)
    assert worst["copies"] >= 24
    assert 2 <= worst["volumes"] <= 10
    # The listing shows every duplicate as another FILE line with the same path.
    listing = read_listing(bnl_site)
    per_path = listing.group_by("path").len().filter(pl.col("len") > 1)
    assert per_path.height == dups.height
    assert per_path.sort("len")["len"][-1] == worst["copies"]


def test_truth_copies_match_the_listing(bnl_site: Path) -> None:
    copies = pl.read_parquet(bnl_site / "truth" / "copies.parquet")
    live = copies.filter(~pl.col("removed"))
    listing = read_listing(bnl_site)
    assert listing.height == live.height
    got = listing.select("path", "volume", "position", "size").sort(pl.all())
    want = live.select("path", "volume", "position", pl.col("size_bytes").alias("size")).sort(
        pl.all()
    )
    assert got.equals(want)
    # Copies moved by a repack are flagged removed and sit on tapes in state repacked.
    tapes = pl.read_csv(bnl_site / "catalog" / "tapes.csv")
    state = dict(tapes.select("volume", "state").iter_rows())
    removed = copies.filter(pl.col("removed"))
    assert removed.height > 0
    assert {state[v] for v in removed["volume"].unique()} == {"repacked"}
    assert live.filter(pl.col("repacked")).height == removed.height


def test_dataset_tape_gaps_add_up(bnl_site: Path) -> None:
    per_tape = pl.read_parquet(bnl_site / "truth" / "dataset_tape_gaps.parquet")
    by_type = pl.read_parquet(bnl_site / "truth" / "gap_by_type_period.parquet")
    assert per_tape["n"].sum() == by_type["n"].sum()
    assert per_tape["n_locates"].sum() == by_type["n_locates"].sum()
    # A few datasets are scattered over many tapes; most sit on a handful.
    datasets = pl.read_parquet(bnl_site / "truth" / "datasets.parquet")
    assert datasets["tapes"].max() >= 3 * datasets["tapes"].median()
    assert (bnl_site / "truth" / "README.md").read_text().count(".parquet") >= 6


def test_an_interrupted_run_leaves_no_half_site(tmp_path: Path) -> None:
    params = site_params("bnl", files=2_000, seed=5)

    def interrupt(stage: str, done: int, total: int) -> None:
        if stage == "catalogs":
            raise KeyboardInterrupt

    fresh = tmp_path / "fresh"
    with pytest.raises(KeyboardInterrupt):
        generate(fresh, params, interrupt)
    assert not fresh.exists()
    assert list(tmp_path.iterdir()) == []  # nothing written aside is left either

    # Over an earlier site, an interrupted run keeps that site whole.
    earlier = tmp_path / "earlier"
    site = generate(earlier, params)
    assert site.out_dir == earlier and site.manifest == earlier / "manifest.json"
    before = {f: f.read_bytes() for f in earlier.rglob("*") if f.is_file()}
    with pytest.raises(KeyboardInterrupt):
        generate(earlier, site_params("bnl", files=2_000, seed=6), interrupt)
    assert {f: f.read_bytes() for f in earlier.rglob("*") if f.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["earlier"]
    assert set(site.outputs) == {str(f.relative_to(earlier)) for f in before}
