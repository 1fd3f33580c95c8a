"""The synthetic site's operations history: physics in closed form, schedulers, retries, logs.

Catalogs are built by hand. Files meant to stay on tape unrequested are written after the
campaign window: they still take their place (and bytes) on the tape, but no campaign can ask
for them.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import json
import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from tapelens.errors import ConfigError
from tapelens.media import BY_NAME
from tapelens.world.logs import write_logs, write_truth
from tapelens.world.operations import History, OperationsParams, simulate_history
from tapelens.world.physics import (
    MB,
    Head,
    PhysicsParams,
    default_physics,
    mean_locate_s,
    read_step,
    read_timeline,
)

GB = 1_000_000_000
EARLY = datetime(2020, 1, 1, tzinfo=UTC)
LATE = datetime(2030, 1, 1, tzinfo=UTC)  # after every campaign: never requested
WINDOW = {"start": datetime(2021, 3, 1, tzinfo=UTC), "end": datetime(2021, 4, 1, tzinfo=UTC)}


def quiet(media: str, **changes: object) -> PhysicsParams:
    """Default physics of a media type without noise (closed forms hold exactly)."""
    return replace(default_physics(BY_NAME[media]), rate_noise=0.0, locate_noise=0.0, **changes)  # type: ignore[arg-type]


def catalog(
    rows: list[dict[str, object]], media: dict[str, str]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """copies and tapes frames from (volume, position, size_bytes[, written_at, offset_bytes])."""
    full = []
    for row in rows:
        volume, position = row["volume"], row["position"]
        offset = row.get("offset_bytes")
        name = row.get("name", f"f_{volume}_{position}_{offset or 0}.root")
        dataset = row.get("dataset", f"/exp/data/{volume}")
        full.append(
            {
                "volume": volume,
                "position": position,
                "offset_bytes": offset,
                "aggregate_id": f"{volume}:{position}" if offset is not None else None,
                "size_bytes": row["size_bytes"],
                "path": f"{dataset}/{name}",
                "file_id": row.get("file_id", f"{dataset}/{name}"),
                "dataset": dataset,
                "written_at": row.get("written_at", EARLY),
            }
        )
    copies = pl.DataFrame(
        full,
        schema={
            "volume": pl.String,
            "position": pl.Int64,
            "offset_bytes": pl.Int64,
            "aggregate_id": pl.String,
            "size_bytes": pl.Int64,
            "path": pl.String,
            "file_id": pl.String,
            "dataset": pl.String,
            "written_at": pl.Datetime("us", "UTC"),
        },
    )
    tapes = pl.DataFrame(
        {"volume": list(media), "media_type": list(media.values()), "state": ["full"] * len(media)}
    )
    return copies, tapes


def one_campaign(**changes: object) -> OperationsParams:
    base: dict[str, object] = {
        "campaigns": 1,
        "kinds": ("scattered",),
        "schedulers": ("sorted",),
        "files_per_campaign": 1000,
        "drives": (("LTO-7", 1),),
        "robots": 1,
        "failure_probability": 0.0,
        "idle_dismount_s": 0.0,
        "physics": (quiet("LTO-7"),),
        **WINDOW,
    }
    base.update(changes)
    return OperationsParams(**base)  # type: ignore[arg-type]


def run(
    copies: pl.DataFrame, tapes: pl.DataFrame, params: OperationsParams, seed: int = 1
) -> History:
    return simulate_history(copies, tapes, params, np.random.default_rng(seed))


def seconds(value: datetime) -> float:
    return value.timestamp()


# -- physics in closed form --------------------------------------------------------------------


def test_default_physics_follows_the_media_catalog() -> None:
    lto7 = default_physics(BY_NAME["LTO-7"])
    assert (lto7.robot_s, lto7.load_s, lto7.rewind_s, lto7.unload_s) == (11, 13, 62, 22)
    assert lto7.rate_mb_s < BY_NAME["LTO-7"].native_rate_mb_s
    assert mean_locate_s(lto7, BY_NAME["LTO-7"].capacity_bytes) == pytest.approx(59, rel=0.01)
    assert lto7.locate_s(0.0) == pytest.approx(lto7.locate_base_s)
    assert lto7.locate_s(10 * lto7.capacity_bytes) == pytest.approx(lto7.locate_max_s)


def test_one_file_on_a_fresh_mount() -> None:
    """robot + load + locate(first) + overhead + size/rate + rewind + unload."""
    rows = [
        {"volume": "V1", "position": p, "size_bytes": 3 * GB, "written_at": LATE} for p in (1, 2)
    ]
    rows.append({"volume": "V1", "position": 3, "size_bytes": 2 * GB})
    copies, tapes = catalog(rows, {"V1": "LTO-7"})
    h = run(copies, tapes, one_campaign())
    p = quiet("LTO-7")
    (t,) = h.transfers.iter_rows(named=True)
    (m,) = h.mounts.iter_rows(named=True)
    first = float(p.locate_between_s(0, 6 * GB, from_load_point=True))
    read_s = first + p.overhead_s + 2 * GB / (p.rate_mb_s * MB)
    assert t["duration_s"] == pytest.approx(read_s, abs=1e-3)
    assert t["locate_s"] == pytest.approx(first, abs=1e-3)
    assert t["status"] == "ok" and t["address_bytes"] == 6 * GB and t["mount_id"] == m["mount_id"]
    assert seconds(m["mounted_at"]) - seconds(m["requested_at"]) == p.robot_s + p.load_s
    assert t["started_at"] == m["mounted_at"]
    total = p.robot_s + p.load_s + read_s + p.rewind_s + p.unload_s
    assert seconds(m["dismounted_at"]) - seconds(m["requested_at"]) == pytest.approx(total, abs=1)


def test_adjacent_files_stream_and_a_far_file_locates() -> None:
    sizes = {p: 1 * GB for p in range(1, 61)}
    wanted = {2, 3, 4, 5, 9, 60}  # 2..5 adjacent, 9 after a gap of 4, 60 far away
    rows = [
        {
            "volume": "V1",
            "position": p,
            "size_bytes": s,
            "written_at": EARLY if p in wanted else LATE,
        }
        for p, s in sizes.items()
    ]
    copies, tapes = catalog(rows, {"V1": "LTO-7"})
    h = run(copies, tapes, one_campaign())
    p = quiet("LTO-7")
    stream_s = GB / (p.rate_mb_s * MB)
    t = h.transfers.sort("position")
    assert t["position"].to_list() == sorted(wanted)
    assert h.mounts.height == 1
    got = dict(zip(t["position"], t["duration_s"], strict=True))
    locates = dict(zip(t["position"], t["locate_s"], strict=True))
    first = float(p.locate_between_s(0, 1 * GB, from_load_point=True))
    assert got[2] == pytest.approx(first + p.overhead_s + stream_s, abs=1e-3)
    for pos in (3, 4, 5):
        assert got[pos] == pytest.approx(p.overhead_s + stream_s, abs=1e-3)
        assert locates[pos] == 0
    # gap 4 (posdiff <= 10): the three files in between are read through
    assert got[9] == pytest.approx(3 * stream_s + p.overhead_s + stream_s, abs=1e-3)
    # gap 51: a locate over the 50 GB in between (from the end of 9 to the start of 60), no
    # read-through
    far = float(p.locate_between_s(9 * GB, 59 * GB))
    assert locates[60] == pytest.approx(far, abs=1e-3)
    assert got[60] == pytest.approx(far + p.overhead_s + stream_s, abs=1e-3)
    assert far < 50 * stream_s


def test_aggregate_members_are_one_tape_object() -> None:
    member = 100_000_000
    rows = [{"volume": "V1", "position": 1, "size_bytes": 5 * GB, "written_at": LATE}]
    rows += [
        {"volume": "V1", "position": 2, "offset_bytes": k * member, "size_bytes": member}
        for k in range(3)
    ]
    copies, tapes = catalog(rows, {"V1": "LTO-7"})
    h = run(copies, tapes, one_campaign())
    p = quiet("LTO-7")
    t = h.transfers.sort("address_bytes")
    stream_s = member / (p.rate_mb_s * MB)
    first, *rest = t["duration_s"].to_list()
    locate = float(p.locate_between_s(0, 5 * GB, from_load_point=True))
    assert first == pytest.approx(locate + p.overhead_s + stream_s, abs=1e-3)
    assert rest == pytest.approx([stream_s, stream_s], abs=1e-3)  # no overhead, no locate


def test_a_subset_of_copies_keeps_the_tape_addresses_it_is_given() -> None:
    rows = [{"volume": "V1", "position": p, "size_bytes": p * GB} for p in range(1, 8)]
    copies, tapes = catalog(rows, {"V1": "LTO-7"})
    full = run(copies, tapes, one_campaign())
    subset = copies.filter(pl.col("position") >= 5).with_columns(
        object_start_bytes=(pl.col("position") * (pl.col("position") - 1) // 2) * GB
    )
    part = run(subset, tapes, one_campaign())
    keep = full.transfers.filter(pl.col("position") >= 5)
    assert part.transfers["address_bytes"].to_list() == keep["address_bytes"].to_list()
    assert part.transfers["address_bytes"].to_list() == [10 * GB, 15 * GB, 21 * GB]


def test_scalar_and_vector_physics_agree() -> None:
    rng = np.random.default_rng(5)
    p = default_physics(BY_NAME["LTO-8"])
    n = 300
    position = np.sort(rng.integers(1, 400, n))
    position[rng.random(n) < 0.2] = rng.integers(1, 400)  # some steps backwards
    sizes = rng.integers(1, 5, 400) * GB
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    obj = starts[position - 1]
    addr = obj + rng.integers(0, 2, n) * 1000 * (position % 3 == 0)
    size = rng.integers(1, 3 * GB, n)
    rate_m, loc_m = rng.lognormal(0, 0.1, n), rng.lognormal(0, 0.1, n)
    head = Head(7, int(starts[7]))
    tl = read_timeline(p, position, obj, addr, size, rate_m, loc_m, head)
    pos, byte = head.position, head.bytes
    for i in range(n):
        one = read_step(p, pos, byte, int(position[i]), int(obj[i]), int(addr[i]), int(size[i]),
                        float(rate_m[i]), float(loc_m[i]))  # fmt: skip
        assert one == pytest.approx((tl.positioning_s[i], tl.overhead_s[i], tl.read_s[i]))
        pos, byte = int(position[i]), int(addr[i] + size[i])
    assert tl.head == Head(pos, byte)


# -- schedulers, drives, retries -----------------------------------------------------------------


def interleaved_site(tapes_n: int = 3, per_tape: int = 20) -> tuple[pl.DataFrame, pl.DataFrame]:
    rows = [
        {"volume": f"V{v}", "position": p, "size_bytes": GB, "dataset": "/exp/data/mixed"}
        for v in range(tapes_n)
        for p in range(1, per_tape + 1)
    ]
    return catalog(rows, {f"V{v}": "LTO-7" for v in range(tapes_n)})


def test_sorted_mounts_each_tape_once_fifo_remounts_interleaved_requests() -> None:
    copies, tapes = interleaved_site()
    h = run(copies, tapes, one_campaign(campaigns=2, schedulers=("sorted", "fifo")), seed=3)
    by = {c["scheduler"]: c for c in h.campaigns.iter_rows(named=True)}
    assert by["sorted"]["requested_files"] == by["fifo"]["requested_files"] == 60
    assert by["sorted"]["mounts"] == by["sorted"]["tapes"] == 3
    assert by["fifo"]["mounts"] > 3 * by["fifo"]["tapes"]
    sorted_reads = h.transfers.filter(pl.col("campaign_id") == by["sorted"]["campaign_id"])
    for _, reads in sorted_reads.group_by("mount_id"):
        assert reads.sort("started_at")["position"].is_sorted()
    assert by["sorted"]["finished_at"] - by["sorted"]["started_at"] < (
        by["fifo"]["finished_at"] - by["fifo"]["started_at"]
    )


def test_drives_only_mount_media_they_read() -> None:
    media = {"A": "LTO-6", "B": "LTO-8", "C": "3592-JE", "D": "LTO-7"}
    rows = [{"volume": v, "position": p, "size_bytes": GB} for v in media for p in range(1, 6)]
    copies, tapes = catalog(rows, media)
    params = one_campaign(
        drives=(("LTO-7", 1), ("LTO-9", 1)), physics=(), schedulers=("fifo",), idle_dismount_s=60
    )
    h = run(copies, tapes, params)
    drive_type = dict(h.drives.select("drive", "drive_type").iter_rows())
    for volume, drive, media_type in h.mounts.select("volume", "drive", "media_type").iter_rows():
        assert media_type == media[volume]
        assert drive_type[drive] in BY_NAME[media_type].readable_by
    assert set(h.mounts["volume"]) == {"A", "B", "D"}  # no drive reads 3592 media
    assert h.campaigns["unavailable_files"].to_list() == [5]


def test_failed_reads_come_back_at_the_next_retry_cycle() -> None:
    copies, tapes = interleaved_site(4, 25)
    params = one_campaign(
        campaigns=2,
        schedulers=("sorted", "fifo"),
        failure_probability=0.3,
        max_attempts=3,
        retry_interval_s=3600.0,
        drives=(("LTO-7", 2),),
    )
    h = run(copies, tapes, params, seed=11)
    t = h.transfers.with_columns(
        (pl.col("started_at") + pl.duration(milliseconds=pl.col("duration_s") * 1000)).alias("end")
    )
    failed = t.filter(pl.col("status") == "failed")
    assert failed.height > 10 and (failed["error"].is_not_null()).all()
    starts = dict(h.campaigns.select("campaign_id", "started_at").iter_rows())
    for row in failed.iter_rows(named=True):
        later = t.filter(
            (pl.col("file_id") == row["file_id"])
            & (pl.col("campaign_id") == row["campaign_id"])
            & (pl.col("attempt") == row["attempt"] + 1)
        )
        if row["attempt"] == 2:
            assert later.is_empty()
            continue
        (retry,) = later.iter_rows(named=True)
        assert retry["started_at"] >= row["end"]
        cycle = (retry["started_at"] - starts[row["campaign_id"]]) // timedelta(hours=1)
        assert cycle >= 1 and retry["queued_s"] >= 0
    gave_up = failed.filter(pl.col("attempt") == 2).height
    assert h.campaigns["unrecovered_files"].sum() == gave_up
    assert (h.campaigns["failed_transfers"].sum(), h.campaigns["transfers"].sum()) == (
        failed.height,
        t.height,
    )


def test_the_newest_copy_written_before_the_campaign_is_read() -> None:
    rows = [
        {"volume": "OLD", "position": 1, "size_bytes": GB, "file_id": "f1", "name": "f1"},
        {"volume": "NEW", "position": 1, "size_bytes": GB, "file_id": "f1", "name": "f1",
         "written_at": datetime(2020, 6, 1, tzinfo=UTC)},
        {"volume": "LATER", "position": 1, "size_bytes": GB, "file_id": "f1", "name": "f1",
         "written_at": datetime(2025, 1, 1, tzinfo=UTC)},
    ]  # fmt: skip
    copies, tapes = catalog(rows, {"OLD": "LTO-7", "NEW": "LTO-7", "LATER": "LTO-7"})
    h = run(copies, tapes, one_campaign())
    assert h.transfers["volume"].to_list() == ["NEW"]
    disabled = tapes.with_columns(
        pl.when(pl.col("volume") == "NEW")
        .then(pl.lit("disabled"))
        .otherwise("state")
        .alias("state")
    )
    assert run(copies, disabled, one_campaign()).transfers["volume"].to_list() == ["OLD"]


def busy_site() -> tuple[pl.DataFrame, pl.DataFrame]:
    rng = np.random.default_rng(2)
    media = {f"L7{v}": "LTO-7" for v in range(6)} | {f"L8{v}": "LTO-8" for v in range(6)}
    rows = []
    for v in media:
        for p in range(1, 41):
            k = int(rng.integers(0, 12))  # dataset k is written over days 20k..20k+10
            written = EARLY + timedelta(days=20 * k + float(rng.uniform(0, 10)))
            size = int(rng.integers(1, 40)) * GB // 10
            rows.append(
                {"volume": v, "position": p, "size_bytes": size, "dataset": f"/exp/data/ds{k}",
                 "written_at": written}
            )  # fmt: skip
    return catalog(rows, media)


def test_a_mixed_history_is_consistent_in_time() -> None:
    copies, tapes = busy_site()
    params = OperationsParams(
        campaigns=6, files_per_campaign=120, failure_probability=0.05, drives_per_media=2, robots=1
    )
    h = run(copies, tapes, params, seed=4)
    t = h.transfers.join(
        h.mounts.select("mount_id", "volume", "drive", "mounted_at", "dismounted_at"),
        on="mount_id",
        suffix="_mount",
    ).with_columns(
        (pl.col("started_at") + pl.duration(milliseconds=pl.col("duration_s") * 1000)).alias("end")
    )
    assert (t["volume"] == t["volume_mount"]).all() and (t["drive"] == t["drive_mount"]).all()
    assert (t["started_at"] >= t["mounted_at"]).all() and (t["end"] <= t["dismounted_at"]).all()
    m = h.mounts
    assert (m["requested_at"] <= m["mounted_at"]).all()
    assert (m["mounted_at"] < m["dismounted_at"]).all()
    assert (m["dismounted_at"] < m["put_away_at"]).all()
    for key, start in (("drive", "requested_at"), ("volume", "mounted_at")):
        previous = m.sort(key, "mounted_at").with_columns(
            pl.col("dismounted_at").shift().over(key).alias("before")
        )
        assert previous.filter(pl.col("before") > pl.col(start)).is_empty(), key
    writes = copies.group_by("file_id").agg(pl.col("written_at").min())
    read = t.join(writes, on="file_id", suffix="_first")
    assert (read["started_at"] > read["written_at"]).all()
    assert set(h.physics["media_type"]) == {"LTO-7", "LTO-8"}
    assert h.campaigns["transfers"].sum() == h.transfers.height


def test_same_seed_same_history_other_seed_other_history() -> None:
    copies, tapes = busy_site()
    params = OperationsParams(campaigns=3, files_per_campaign=80, failure_probability=0.05)
    a, b, c = (
        run(copies, tapes, params, 7),
        run(copies, tapes, params, 7),
        run(copies, tapes, params, 8),
    )
    assert a.transfers.equals(b.transfers) and a.mounts.equals(b.mounts)
    assert a.campaigns.equals(b.campaigns)
    assert not a.transfers.equals(c.transfers)


def test_parameters_are_checked() -> None:
    with pytest.raises(ConfigError, match="schedulers"):
        OperationsParams(schedulers=("lifo",))
    with pytest.raises(ConfigError, match="drives"):
        OperationsParams(drives=(("LTO-42", 2),))
    with pytest.raises(ConfigError, match="profile"):
        write_logs("nowhere", run(*busy_site(), one_campaign(campaigns=0)), Path("."), False)


# -- logs --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def history() -> History:
    """A history over a new year (one PVL season) with failures, on two media types."""
    copies, tapes = busy_site()
    params = OperationsParams(
        campaigns=5,
        files_per_campaign=60,
        failure_probability=0.05,
        drives_per_media=2,
        start=datetime(2020, 12, 1, tzinfo=UTC),
        end=datetime(2021, 2, 1, tzinfo=UTC),
    )
    return run(copies, tapes, params, seed=9)


def digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize("profile", ["bnl", "gridka", "cern", "fnal"])
def test_logs_are_byte_identical_for_the_same_history(
    history: History, profile: str, tmp_path: Path
) -> None:
    for zipped in (False, True):
        first = write_logs(profile, history, tmp_path / f"a{zipped}", zipped)
        again = write_logs(profile, history, tmp_path / f"b{zipped}", zipped)
        assert first == again
        assert digest(tmp_path / f"a{zipped}") == digest(tmp_path / f"b{zipped}")
        for entry in first:
            assert (tmp_path / f"a{zipped}" / entry["path"]).is_file()
            assert entry["kind"] in ("mounts", "transfers")
            assert entry["path"].endswith(".gz") == zipped
    write_truth(history, tmp_path / "t1")
    write_truth(history, tmp_path / "t2")
    assert digest(tmp_path / "t1") == digest(tmp_path / "t2")
    assert pl.read_parquet(tmp_path / "t1" / "transfers.parquet").equals(history.transfers)


def truth_transfers(history: History) -> list[tuple[object, ...]]:
    return sorted(
        history.transfers.select("path", "started_at", "size_bytes", "duration_s", "status").rows()
    )


def text_of(path: Path) -> str:
    data = path.read_bytes()
    return (gzip.decompress(data) if path.suffix == ".gz" else data).decode("utf-8")


def test_dcache_billing_reads_back(history: History, tmp_path: Path) -> None:
    entries = write_logs("gridka", history, tmp_path, True)
    record = re.compile(
        r"(\d\d)\.(\d\d) (\d\d):(\d\d):(\d\d) \[pool:[^:]+:restore\] \[\w+,(\d+)\] \[(.*)\] "
        r"\S+@osm (\d+) (\d+) \{(\d+):\"(.*)\"\}"
    )
    rows = []
    billing = [e for e in entries if e["format"] == "dcache-billing"]
    assert {e["options"]["year"] for e in billing} == {2020, 2021}
    for entry in billing:
        assert re.search(r"billing-\d{4}\.\d\d\.\d\d\.gz$", entry["path"])
        for line in text_of(tmp_path / entry["path"]).splitlines():
            m = record.fullmatch(line)
            assert m, line
            month, day, hh, mi, ss = (int(g) for g in m.groups()[:5])
            end = datetime(entry["options"]["year"], month, day, hh, mi, ss, tzinfo=UTC)
            ms = int(m[8])
            start = end - timedelta(seconds=round(ms / 1000))
            rows.append((m[7], start, int(m[6]), ms / 1000, "ok" if m[10] == "0" else "failed"))
    assert sorted(rows) == truth_transfers(history)


def test_cta_taped_log_reads_back(history: History, tmp_path: Path) -> None:
    (entry, _) = [
        e for e in write_logs("cern", history, tmp_path, False) if e["format"] == "cta-taped"
    ]
    files: dict[tuple[str, int, int], list[dict[str, object]]] = {}
    transfers, mounts = [], []
    for line in text_of(tmp_path / entry["path"]).splitlines():
        obj = json.loads(line)
        assert {"epoch_time", "hostname", "pid", "tid"} <= set(obj)
        key = (obj["hostname"], obj["pid"], obj["tid"])
        if obj["message"] == "Tape session finished":
            for f in files.pop(key, []):
                transfers.append((f["fileId"], obj["tapeVid"], f["start"], f["dataVolume"],
                                  f["transferTime"], f["status"]))  # fmt: skip
            end = obj["epoch_time"]
            requested = round(end - obj["totalTime"])
            mounted = round(requested + obj["mountTime"])
            dismounted = round(end - obj["unmountTime"])
            mounts.append((obj["tapeVid"], obj["tapeDrive"], requested, mounted, dismounted))
        else:
            obj["start"] = round(obj["epoch_time"] - obj["totalTime"])
            obj["status"] = (
                "ok" if obj["message"] == "File successfully read from tape" else "failed"
            )
            assert ("errorMessage" in obj) == (obj["status"] == "failed")
            files.setdefault(key, []).append(obj)
    assert not files
    truth = history.transfers.select(
        "file_id",
        "volume",
        pl.col("started_at").dt.epoch("s"),
        "size_bytes",
        "duration_s",
        "status",
    )
    assert sorted(transfers) == sorted(truth.rows())
    truth_mounts = history.mounts.select(
        "volume",
        "drive",
        *[pl.col(c).dt.epoch("s") for c in ("requested_at", "mounted_at", "dismounted_at")],
    )
    assert sorted(mounts) == sorted(truth_mounts.rows())


def test_staging_csv_reads_back(history: History, tmp_path: Path) -> None:
    entries = write_logs("bnl", history, tmp_path, False)
    (entry,) = [e for e in entries if e["format"] == "staging-csv"]
    rows = []
    with open(tmp_path / entry["path"], newline="") as f:
        for r in csv.DictReader(f):
            queued = datetime.fromisoformat(r["queued_time"]).replace(tzinfo=UTC)
            ended = datetime.fromisoformat(r["end_time"]).replace(tzinfo=UTC)
            rows.append(
                (r["file"], queued, int(r["size"]), (ended - queued).total_seconds(), r["status"])
            )
    assert sorted(rows) == truth_transfers(history)


def pvl_mounts(lines: list[str], year: int) -> list[tuple[object, ...]]:
    """Pair MountAdd -> MountCompleted (jobid) -> DismountVolume (volume); a month going
    backwards is a new year."""
    event = re.compile(r"(\d\d)/(\d\d) (\d\d):(\d\d):(\d\d) RQST \w+ Entering,? (.*)")
    open_jobs: dict[str, list[object]] = {}
    mounted: dict[str, list[object]] = {}
    done, last_month = [], 0
    for line in lines:
        m = event.fullmatch(line)
        assert m, line
        month = int(m[1])
        year += month < last_month
        last_month = month
        at = datetime(year, month, int(m[2]), int(m[3]), int(m[4]), int(m[5]), tzinfo=UTC)
        fields = dict(re.findall(r'(\w+) = "([^"]*)"', m[6]))
        if fields.get("function") == "pvl_MountAdd":
            open_jobs[fields["jobid"]] = [fields["arg"][:-2], None, at]
        elif fields.get("function") == "pvl_MountCompleted":
            volume, _, requested = open_jobs.pop(fields["jobid"])
            assert volume == fields["arg"]
            mounted[fields["arg"]] = [volume, fields["drive"], requested, at]
        elif fields.get("function") == "pvl_DismountVolume":
            done.append((*mounted.pop(fields["arg"][:-2]), at))
    assert not open_jobs and not mounted
    return sorted(done)


def truth_mounts(history: History) -> list[tuple[object, ...]]:
    cols = ("volume", "drive", "requested_at", "mounted_at", "dismounted_at")
    return sorted(history.mounts.select(cols).rows())


def test_pvl_log_reads_back_across_the_new_year(history: History, tmp_path: Path) -> None:
    entries = [e for e in write_logs("bnl", history, tmp_path, True) if e["format"] == "hpss-pvl"]
    assert len(entries) == 1 and entries[0]["options"] == {"year": 2020}
    lines = text_of(tmp_path / entries[0]["path"]).splitlines()
    months = [int(line[:2]) for line in lines]
    assert months[0] == 12 and months[-1] in (1, 2)
    assert sum(b < a for a, b in zip(months, months[1:], strict=False)) == 1  # one rollover
    robot_moves = [line for line in lines if " pvr_Mount, " in line]
    assert len(robot_moves) == history.mounts.height == len(lines) // 4
    assert pvl_mounts(lines, 2020) == truth_mounts(history)


def test_pvl_files_follow_july_to_june_seasons(tmp_path: Path) -> None:
    copies, tapes = busy_site()
    params = OperationsParams(
        campaigns=4, files_per_campaign=30, start=datetime(2020, 5, 1, tzinfo=UTC),
        end=datetime(2020, 9, 1, tzinfo=UTC),
    )  # fmt: skip
    h = run(copies, tapes, params, seed=2)
    entries = [e for e in write_logs("bnl", h, tmp_path, False) if e["format"] == "hpss-pvl"]
    assert [e["options"]["year"] for e in entries] == [2020, 2020]
    seasons = [text_of(tmp_path / e["path"]).splitlines() for e in entries]
    assert {line[:2] for line in seasons[0]} <= {"05", "06"}
    assert {line[:2] for line in seasons[1]} <= {"07", "08", "09"}
    assert [Path(e["path"]).name[:8] for e in entries] == ["pvl-2020"] * 2
    found = pvl_mounts(seasons[0], 2020) + pvl_mounts(seasons[1], 2020)
    assert sorted(found) == truth_mounts(h)


def test_canonical_csvs_read_back(history: History, tmp_path: Path) -> None:
    entries = write_logs("fnal", history, tmp_path, False)
    csvs = {e["kind"]: tmp_path / e["path"] for e in entries if e["format"] == "csv"}
    transfers = pl.read_csv(csvs["transfers"], try_parse_dates=True)
    mounts = pl.read_csv(csvs["mounts"], try_parse_dates=True)
    assert transfers.columns[:3] == ["source", "direction", "volume"]
    got = sorted(
        transfers.select("path", "started_at", "size_bytes", "duration_s", "status").rows()
    )
    assert got == truth_transfers(history)
    cols = ["volume", "drive", "requested_at", "mounted_at", "dismounted_at"]
    assert sorted(mounts.select(cols).rows()) == truth_mounts(history)
    kinds = [e["kind"] for e in entries]
    assert kinds == sorted(kinds)  # mounts before transfers, the loader's order
    assert {e["format"] for e in entries} == {"csv", "dcache-billing"}
