"""The physical model behind the synthetic site: tapes, media, aggregates, datasets, policies."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from tapelens.errors import ConfigError
from tapelens.ingest.datasets import DatasetRules, with_datasets
from tapelens.media import BY_NAME as MEDIA
from tapelens.world import generate, history, site_params
from tapelens.world.tapes import FULL, STATES, place
from tapelens.world.timeline import Timeline, epoch_s
from tapelens.world.writepath import Batches, Objects

GB = 1_000_000_000


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("model") / "site"
    generate(out, site_params("bnl", files=10_000, seed=21))
    return out


def copies(site: Path) -> pl.DataFrame:
    return pl.read_parquet(site / "truth" / "copies.parquet")


def test_drives_fill_tapes_to_capacity_and_change_media() -> None:
    p = site_params(
        "bnl",
        files=10,
        repack_at=None,
        scratch_tapes_per_pool=0,
        readonly_share=0.0,
        disabled_share=0.0,
    )
    timeline = Timeline.between(p.start, p.end, p.growth_per_year)
    n = 120
    objects = Objects(
        pool=np.zeros(n, dtype=np.int16),
        drive=np.zeros(n, dtype=np.int16),
        batch=np.repeat(np.arange(2, dtype=np.int32), n // 2),
        size=np.full(n, 100 * GB, dtype=np.int64),
        members=np.zeros(n, dtype=np.int16),
    )
    when = np.array([epoch_s(date(2016, 6, 1)), epoch_s(date(2020, 6, 1))], dtype=float)
    batches = Batches(np.array([0.3, 0.6]), np.array([0.0, 0.3]), when, np.zeros(2, np.int8))
    placed = place(p, objects, batches, timeline, np.random.default_rng(0))
    per_tape = np.bincount(placed.obj_tape)
    media = [p.media_schedule[int(g)][0] for g in placed.tape_gen]
    # LTO-6 holds 25 objects of 100 GB; the 2020 migration starts fresh LTO-8 tapes (120 each).
    assert media[:3] == ["LTO-6"] * 3 and media[3:] == ["LTO-8"]
    assert per_tape.tolist() == [25, 25, 10, 60]
    # Writes moved on to LTO-9 in 2022: the last LTO-8 tape is closed, not filling.
    assert [STATES[s] for s in placed.tape_state] == ["full"] * 4
    assert placed.obj_pos[:26].tolist() == [*range(1, 26), 1]
    capacity = np.array([MEDIA[m].capacity_bytes for m in media])
    assert (per_tape * 100 * GB <= capacity).all()
    # Write times follow the native rate: 100 GB at 160 MB/s plus the per-object overhead.
    step = placed.obj_time_s[1] - placed.obj_time_s[0]
    assert step == pytest.approx(100 * GB / (160 * 1e6) + p.write_overhead_s)


def test_aggregates_share_a_position_with_packed_offsets(site: Path) -> None:
    live = copies(site).filter(~pl.col("removed"))
    members = live.filter(pl.col("aggregate_id").is_not_null())
    assert members.height > 100
    for (agg,), group in members.group_by("aggregate_id"):
        g = group.sort("offset_bytes")
        assert g.height >= 2
        assert g["position"].n_unique() == 1
        assert agg == f"{g['volume'][0]}:{g['position'][0]}"
        starts = np.concatenate([[0], np.cumsum(g["size_bytes"].to_numpy())[:-1]])
        assert g["offset_bytes"].to_list() == starts.tolist()
    first = members.filter(pl.col("offset_bytes") == 0).row(0, named=True)
    assert first["copy_id"] == f"{first['volume']}:{first['position']}:"
    alone = live.filter(pl.col("aggregate_id").is_null())
    assert alone["offset_bytes"].null_count() == alone.height
    assert alone.group_by("volume", "position").len()["len"].max() == 1


def test_names_give_back_dataset_type_and_experiment(site: Path) -> None:
    live = copies(site).filter(~pl.col("removed"))
    derived = with_datasets(
        live.select("path").with_columns(
            dataset=pl.lit(None, pl.String),
            dataset_type=pl.lit(None, pl.String),
            experiment=pl.lit(None, pl.String),
        ),
        DatasetRules(),
    )
    for column in ("dataset", "dataset_type", "experiment"):
        assert derived[column].equals(live[column]), column
    assert set(live["dataset_type"]) == {"RAW", "AOD", "DAOD", "EVNT", "HITS", "LOG"}
    assert set(live["experiment"]) == {"atlas", "star", "sphenix"}


def test_datasets_are_heavy_tailed_and_sizes_follow_the_type(site: Path) -> None:
    datasets = pl.read_parquet(site / "truth" / "datasets.parquet")
    files = datasets["files"]
    assert files.min() <= 5 and files.max() >= 10 * files.median()
    live = copies(site).filter(~pl.col("removed") & ~pl.col("is_duplicate"))
    median = dict(live.group_by("dataset_type").agg(pl.col("size_bytes").median()).iter_rows())
    assert median["RAW"] > 3 * GB and median["AOD"] > 2 * GB and median["LOG"] < 0.05 * GB
    data = live.filter(pl.col("dataset_type") != "LOG")
    small = (data["size_bytes"] < GB).mean()
    assert 0.1 < small < 0.6


def test_write_policy_follows_the_cutover_and_late_files_exist(site: Path) -> None:
    live = copies(site).filter(~pl.col("removed") & ~pl.col("repacked"))
    cutover = pl.datetime(2020, 10, 1, time_zone="UTC")
    wrong = live.filter(
        ((pl.col("tape_written_at") >= cutover) & (pl.col("write_policy") != "sorted"))
        | ((pl.col("tape_written_at") < cutover) & (pl.col("write_policy") != "fifo"))
    )
    assert wrong.height == 0
    assert 0.01 < live["is_late"].mean() < 0.05
    # A copy reaches tape after it reached the cache; HPSS create time is the arrival.
    assert (live["tape_written_at"] >= live["arrived_at"]).all()
    assert live["written_at"].equals(live["arrived_at"])
    # Retries come later than the copy they repeat.
    every = copies(site).filter(~pl.col("removed"))
    first = every.group_by("file_id").agg(pl.col("written_at").min().alias("first"))
    dups = every.filter(pl.col("is_duplicate")).join(first, on="file_id")
    assert dups.height > 0 and (dups["written_at"] > dups["first"]).all()


def test_tape_states(site: Path) -> None:
    tapes = pl.read_parquet(site / "truth" / "tapes.parquet")
    states = set(tapes["state"])
    assert {"full", "filling", "empty", "repacked"} <= states <= set(STATES)
    assert (tapes["used_bytes"] <= tapes["capacity_bytes"]).all()
    assert tapes.filter(pl.col("state").is_in(["empty", "repacked"]))["copies"].sum() == 0
    assert STATES[FULL] == "full"


def test_operations_history_seam(site: Path) -> None:
    m = (site / "manifest.json").read_text()
    if history.available():
        assert '"mounts"' in m or '"transfers"' in m
        assert (site / "truth" / "campaigns.parquet").is_file()
    else:
        assert not (site / "logs").exists()
        assert '"mounts"' not in m and '"transfers"' not in m


@pytest.mark.parametrize(
    ("overrides", "setting"),
    [
        ({"files": 0}, "files"),
        ({"start": date(2024, 1, 1), "end": date(2023, 1, 1)}, "end"),
        ({"media_schedule": (("LTO-99", date(2000, 1, 1)),)}, "media_schedule"),
        ({"duplicate_share": 1.5}, "duplicate_share"),
    ],
)
def test_invalid_parameters_are_refused(overrides: dict, setting: str) -> None:
    with pytest.raises(ConfigError, match=setting):
        site_params("bnl", **overrides)
    with pytest.raises(ConfigError, match="profile"):
        site_params("nersc")
