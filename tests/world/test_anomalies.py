"""Injected anomalies of the synthetic site: scattered datasets and acknowledgement outages show
in the catalog the way an advisor would see them, their truth labels say which they are, and a
site without them is the same, byte for byte, as before they existed."""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import polars as pl
import pytest

from tapelens.errors import ConfigError
from tapelens.world import generate, site_params
from tests.fixtures.generated_site import KEY, load_site, loaded_copies

SCATTERED = 5
OUTAGES = 2
BACKGROUND_DUPLICATE_SHARE = 0.005  # duplicate_share of the site's lost-acknowledgement retries

# sha256 of the files of site_params("bnl", files=2_000, seed=8), computed by the generator as it
# was before the anomaly knobs existed: a site without anomalies must not change by one byte.
# Truth tables are compared as CSV with the columns added for the anomalies left out.
BASELINE_FILES = {
    "catalog/ls-P.txt": "1de61fe8a24543c398275ba467d2368dd8a4cc03555079c9967d720c546b9e87",
    "catalog/copies.csv": "eaecb1bc846c7666fe9a0457d36ec80d1e78bf5e170336e6eb6f8a64cc0cbdf1",
    "catalog/tapes.csv": "6227613fe38a1af7d170f734d75a163f6b265868f470e42aeb1764bbbc485cec",
    "logs/transfers.csv": "cac913d81c5c0a2336f4bc05bda6ec62164faf6fadd96684a48888147a20fb17",
    "logs/mounts.csv": "ce1e4f1dbaf4434f009c063162cd3c2ad93e50191ec8f7ba02ae17082d06f4a3",
}
BASELINE_TRUTH_CSV = {
    "copies": "cde1b7ace3de0f7751d9c19762b31d1d4b1174b5e1609e24bc2d1f5e1743f00e",
    "datasets": "7aaebb6b7359065bb044f4ec40158d5fb5aef5756a98e975ffa030b1589ab735",
    "tapes": "da2fb1b5411b1c2248fb7ffc044be38ac6b1ac5329ee66719eb7cd1c0c35de63",
    "dataset_tape_gaps": "1e7f1631b52d0828365f6ef814dfe2b81cb4936060837bec849c2ef45a393ffe",
    "gap_by_type_period": "1362ee050453774df75e7dc517e27cccb0deb7430b12cb47e41424dc08a5c16d",
}
NEW_COLUMNS = ("outage", "duplicate_copies", "duplicate_bytes", "outage_copies", "scattered")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("anomalies") / "site"
    # 60k files: at 30k a pool migrates about four times a year, too seldom for a scattered
    # dataset to collect many runs (and locates) per tape.
    params = site_params(
        "bnl",
        files=60_000,
        seed=1,
        scattered_datasets=SCATTERED,
        ack_outages=OUTAGES,
        history=False,
    )
    generate(out, params)
    return out


def truth(site: Path, name: str) -> pl.DataFrame:
    return pl.read_parquet(site / "truth" / f"{name}.parquet")


def per_dataset(site: Path) -> pl.DataFrame:
    """Datasets with the tapes their bytes need, their mean gap and locates per file."""
    tapes = truth(site, "tapes").select("volume", "capacity_bytes")
    gaps = (
        truth(site, "dataset_tape_gaps")
        .join(tapes, on="volume")
        .group_by("dataset")
        .agg(
            gaps=pl.col("n").sum(),
            gap_sum=(pl.col("n") * pl.col("mean").fill_null(0)).sum(),
            locates=pl.col("n_locates").sum(),
            capacity=pl.col("capacity_bytes").max(),
        )
    )
    return (
        truth(site, "datasets")
        .join(gaps, on="dataset")
        .with_columns(
            needed=(pl.col("size_bytes") / pl.col("capacity")).ceil().clip(1),
            mean_gap=pl.col("gap_sum") / pl.col("gaps"),
            locates_per_file=pl.col("locates") / pl.col("files"),
        )
    )


def test_scattered_datasets_spread_over_tapes_with_gaps_and_locates(site: Path) -> None:
    datasets = per_dataset(site)
    scattered = datasets.filter(pl.col("scattered"))
    assert scattered.height == SCATTERED
    assert (scattered["files"] >= 100).all()
    # At least four times the tapes their bytes need (every pool's drives take part in it).
    # Written FIFO before the cutover, they sit on 3 or more times the tapes they need.
    assert (scattered["tapes"] >= 3 * scattered["needed"]).all(), scattered
    others = datasets.filter(~pl.col("scattered"))
    assert scattered["tapes"].mean() >= others.filter(pl.col("files") >= 100)["tapes"].median()
    for row in scattered.iter_rows(named=True):
        # Datasets of about the same number of files, written in one window.
        peers = others.filter(pl.col("files").is_between(row["files"] / 2, row["files"] * 2))
        assert peers.height >= 10
        more_locates = row["locates_per_file"] > 3 * peers["locates_per_file"].median() + 0.005
        larger_gaps = row["mean_gap"] > 1.5 * peers["mean_gap"].median()
        assert more_locates or larger_gaps, (row, peers.median())


def test_scattered_files_are_not_late(site: Path) -> None:
    copies = truth(site, "copies")
    names = truth(site, "datasets").filter(pl.col("scattered"))["dataset"]
    mine = copies.filter(pl.col("dataset").is_in(names.implode()))
    assert mine.height > 0 and not mine["is_late"].any()
    # Their files still arrive over a long spread, not in a window of days.
    spans = mine.group_by("dataset").agg(
        span=(pl.col("arrived_at").max() - pl.col("arrived_at").min()).dt.total_days()
    )
    assert (spans["span"] > 100).all(), spans


def test_outage_retries_are_labelled_and_fill_tapes_with_stray_copies(site: Path) -> None:
    copies = truth(site, "copies")
    live = copies.filter(~pl.col("removed"))
    outage = live.filter(pl.col("outage"))
    assert outage.height > 0 and outage["is_duplicate"].all()
    # Each outage retry repeats a copy written by an earlier migration.
    # (The original write, not a repack's copy of it: repacks move old tapes' copies later.)
    first = copies.filter(~pl.col("is_duplicate") & ~pl.col("repacked")).select(
        "file_id", first_tape=pl.col("tape_written_at")
    )
    joined = outage.join(first, on="file_id")
    assert joined.height == outage.height
    assert (joined["tape_written_at"] > joined["first_tape"]).all()

    tapes = truth(site, "tapes").filter(pl.col("copies") > 0)
    counted = (
        live.group_by("volume")
        .agg(dups=pl.col("is_duplicate").sum(), outages=pl.col("outage").sum())
        .cast({"dups": pl.Int64, "outages": pl.Int64})
    )
    check = tapes.join(counted, on="volume", how="left")
    assert check["duplicate_copies"].to_list() == check["dups"].to_list()
    assert check["outage_copies"].to_list() == check["outages"].to_list()
    # The bursts of retries stand out: the tapes that took one hold a share of duplicate copies
    # far above the site's background, and above every tape that took none.
    shares = tapes.with_columns(share=pl.col("duplicate_copies") / pl.col("copies"))
    burst = shares.filter(pl.col("outage_copies") >= 50)
    quiet = shares.filter(pl.col("outage_copies") == 0)
    assert burst.height >= 4
    assert burst["share"].min() > 10 * BACKGROUND_DUPLICATE_SHARE, burst
    assert burst["share"].min() > quiet["share"].max()
    assert shares["share"].max() > 20 * BACKGROUND_DUPLICATE_SHARE


def test_a_site_without_anomalies_is_unchanged(tmp_path: Path) -> None:
    for params in (
        site_params("bnl", files=2_000, seed=8),
        site_params("bnl", files=2_000, seed=8, scattered_datasets=0, ack_outages=0),
    ):
        out = tmp_path / "site"
        generate(out, params)
        for rel, digest in BASELINE_FILES.items():
            assert hashlib.sha256((out / rel).read_bytes()).hexdigest() == digest, rel
        for name, digest in BASELINE_TRUTH_CSV.items():
            table = truth(out, name)
            new = [c for c in NEW_COLUMNS if c in table.columns]
            for column in set(new) & {"outage", "outage_copies", "scattered"}:
                assert table[column].cast(pl.Int64).sum() == 0, (name, column)
            csv = table.drop(new).write_csv()
            assert hashlib.sha256(csv.encode()).hexdigest() == digest, name
        readme = (out / "truth" / "README.md").read_text()
        assert "Injected anomalies" not in readme


def test_manifest_and_readme_show_the_anomalies(site: Path) -> None:
    manifest = (site / "manifest.json").read_text()
    assert f'"scattered_datasets": {SCATTERED}' in manifest
    assert f'"ack_outages": {OUTAGES}' in manifest
    readme = (site / "truth" / "README.md").read_text()
    assert f"{SCATTERED} scattered datasets" in readme and f"{OUTAGES} acknowledgement" in readme


def test_ingesting_a_site_with_anomalies_reproduces_its_truth(dsn: str, tmp_path: Path) -> None:
    out = tmp_path / "site"
    generate(
        out,
        site_params("bnl", files=3_000, seed=5, scattered_datasets=2, ack_outages=3, history=False),
    )
    assert truth(out, "copies")["outage"].any()
    load_site(dsn, out, {"tapes", "catalog"})
    want = truth(out, "copies").filter(~pl.col("removed")).select(KEY).sort(KEY)
    got = loaded_copies(dsn).sort(KEY)
    assert got.equals(want), got.join(want, on=KEY, how="anti").head()


@pytest.mark.parametrize(
    ("overrides", "setting"),
    [
        ({"scattered_datasets": -1}, "scattered_datasets"),
        ({"scattered_spread_days": 0.0}, "scattered_spread_days"),
        ({"scattered_min_files": 0}, "scattered_min_files"),
        ({"ack_outages": -2}, "ack_outages"),
        ({"ack_outage_hours": -1.0}, "ack_outage_hours"),
        ({"ack_outage_hours": math.nan}, "ack_outage_hours"),
    ],
)
def test_invalid_anomaly_knobs_are_refused(overrides: dict[str, float], setting: str) -> None:
    with pytest.raises(ConfigError, match=setting):
        site_params("bnl", **overrides)
