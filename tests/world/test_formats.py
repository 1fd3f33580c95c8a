"""Every profile writes its native formats as docs/formats/ shows them, parsed minimally here."""

from __future__ import annotations

import csv
import gzip
import hashlib
import json
from pathlib import Path

import polars as pl
import pytest

from tapelens.media import media_from_barcode
from tapelens.world import generate, site_params

FILES = 5_000


def live_truth(site: Path) -> pl.DataFrame:
    return pl.read_parquet(site / "truth" / "copies.parquet").filter(~pl.col("removed"))


def manifest(site: Path) -> dict:
    return json.loads((site / "manifest.json").read_text())


@pytest.fixture(scope="module")
def sites(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("profiles")
    out = {}
    for profile in ("gridka", "cern", "fnal"):
        out[profile] = root / profile
        generate(out[profile], site_params(profile, files=FILES, seed=11, history=False))
    return out


@pytest.mark.parametrize("profile", ["gridka", "cern", "fnal"])
def test_manifest_lists_existing_inputs_in_load_order(sites: dict[str, Path], profile: str) -> None:
    site = sites[profile]
    m = manifest(site)
    assert (m["profile"], m["seed"], m["files"]) == (profile, 11, FILES)
    kinds = [e["kind"] for e in m["inputs"]]
    assert kinds[0] == "tapes" and "catalog" in kinds
    assert kinds == sorted(kinds, key=["tapes", "catalog", "mounts", "transfers"].index)
    for e in m["inputs"] + m["alternates"]:
        assert (site / e["path"]).is_file(), e
        assert e["options"]["source"] == m["source"]


@pytest.mark.parametrize("profile", ["gridka", "cern", "fnal"])
def test_inventory_barcodes_carry_the_media(sites: dict[str, Path], profile: str) -> None:
    tapes = pl.read_csv(sites[profile] / "catalog" / "tapes.csv")
    assert tapes.columns == [
        "volume",
        "barcode",
        "media_type",
        "library",
        "pool",
        "capacity_bytes",
        "state",
    ]
    for row in tapes.iter_rows(named=True):
        media = media_from_barcode(row["barcode"])
        assert media is not None and media.media_type == row["media_type"], row
    families = set(tapes["media_type"].str.slice(0, 4))
    assert families == ({"3592"} if profile == "cern" else {"LTO-"})
    assert tapes["media_type"].n_unique() >= 2  # media generations change over the years
    used = set(live_truth(sites[profile])["volume"])
    assert used <= set(tapes["volume"])


def test_tsm_contents_archives_and_qcontent(sites: dict[str, Path]) -> None:
    site = sites["gridka"]
    truth = live_truth(site)
    with open(site / "catalog" / "contents.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == truth.height
    # Position = rank on the volume; aggregate members share it, AGGREGATED is i/n.
    rank: dict[str, int] = {}
    positions = []
    for r in rows:
        agg = r["AGGREGATED"]
        if agg == "No" or agg.startswith("1/"):
            rank[r["VOLUME_NAME"]] = rank.get(r["VOLUME_NAME"], 0) + 1
        positions.append((r["OBJECT_ID"], r["VOLUME_NAME"], rank[r["VOLUME_NAME"]]))
    want = truth.select("copy_id", "volume", "position").sort("copy_id")
    got = pl.DataFrame(positions, schema=["copy_id", "volume", "position"], orient="row")
    assert got.sort("copy_id").equals(want.cast(got.schema))
    assert any(r["AGGREGATED"] != "No" for r in rows)
    paths = {r["FILESPACE_NAME"] + r["FILE_NAME"] for r in rows}
    assert paths == set(truth["path"])
    with open(site / "catalog" / "archives.csv", newline="") as fh:
        archives = {r["OBJECT_ID"]: r["ARCHIVE_DATE"] for r in csv.DictReader(fh)}
    assert set(archives) == {r["OBJECT_ID"] for r in rows}
    first = truth.sort("copy_id").row(0, named=True)
    assert archives[first["copy_id"]].startswith(first["written_at"].strftime("%Y-%m-%d %H:%M:%S"))
    qfiles = sorted((site / "catalog" / "qcontent").glob("*.qcontent.txt"))
    assert {f.name.split(".")[0] for f in qfiles} == set(truth["volume"])
    lines = [ln.split("\t") for f in qfiles for ln in f.read_text().splitlines()]
    assert len(lines) == truth.height and all(len(ln) == 13 for ln in lines)
    units = {ln[8].split(" ")[1] for ln in lines}
    assert {"B", "KB", "MB"} <= units
    assert all(bytes.fromhex(ln[6]).decode() == ln[5] for ln in lines[:50])


def test_cta_json_and_text(sites: dict[str, Path]) -> None:
    site = sites["cern"]
    truth = live_truth(site)
    records = [json.loads(ln) for ln in (site / "catalog" / "tf-ls.jsonl").read_text().splitlines()]
    assert len(records) == truth.height
    got = pl.DataFrame(
        {
            "copy_id": [f"{r['af']['archiveId']}/{r['tf']['copyNb']}" for r in records],
            "path": [r["df"]["path"] for r in records],
            "volume": [r["tf"]["vid"] for r in records],
            "position": [int(r["tf"]["fSeq"]) for r in records],
            "written_s": [int(r["af"]["creationTime"]) for r in records],
        }
    ).sort("copy_id")
    want = truth.select(
        "copy_id", "path", "volume", "position", written_s=pl.col("written_at").dt.epoch("s")
    ).sort("copy_id")
    assert got.equals(want.cast(got.schema))
    # Duplicates are further copy numbers of the same archive id.
    dup = truth.filter(pl.col("copy_no") > 1)
    assert dup.height > 0 and set(dup["file_id"]) <= set(
        truth.filter(pl.col("copy_no") == 1)["file_id"]
    )
    text = (site / "catalog" / "tf-ls.txt").read_text().splitlines()
    assert text[0].startswith("archive id") and len(text) == truth.height + 1
    assert all(len(ln.split()) == 16 for ln in text[1:])


def test_enstore_lists_per_volume(sites: dict[str, Path]) -> None:
    site = sites["fnal"]
    truth = live_truth(site)
    rows = []
    for f in sorted((site / "catalog" / "enstore").glob("*.list")):
        lines = f.read_text().splitlines()
        assert lines[0].split() == [
            "label",
            "bfid",
            "size",
            "location_cookie",
            "delflag",
            "original_name",
        ]
        for ln in lines[1:]:
            label, bfid, size, cookie, flag, name = ln.split()
            assert label == f.stem and flag == "active"
            rows.append((bfid, label, int(cookie.split("_")[-1]), name, int(bfid[4:14])))
    got = pl.DataFrame(rows, schema=["copy_id", "volume", "position", "path", "t"], orient="row")
    want = truth.select(
        "copy_id", "volume", "position", "path", t=pl.col("written_at").dt.epoch("s")
    )
    assert got.sort("copy_id").equals(want.sort("copy_id").cast(got.schema))


@pytest.mark.slow
@pytest.mark.parametrize("profile", ["gridka", "cern"])
def test_chunked_writes_do_not_change_the_bytes(tmp_path: Path, profile: str) -> None:
    def digest(root: Path) -> dict[str, str]:
        return {
            str(f.relative_to(root)): hashlib.sha256(f.read_bytes()).hexdigest()
            for f in sorted(root.rglob("*"))
            if f.is_file() and f.name not in ("manifest.json", "copies.parquet")
        }

    small = site_params(profile, files=3_000, seed=5, history=False, chunk_rows=1_000)
    generate(tmp_path / "small", small)
    generate(tmp_path / "big", site_params(profile, files=3_000, seed=5, history=False))
    assert digest(tmp_path / "small") == digest(tmp_path / "big")
    # Parquet row groups follow the chunks; the rows do not.
    a = pl.read_parquet(tmp_path / "small" / "truth" / "copies.parquet")
    b = pl.read_parquet(tmp_path / "big" / "truth" / "copies.parquet")
    assert a.equals(b)


def test_gzip_outputs_are_reproducible_gzip(tmp_path: Path) -> None:
    generate(tmp_path / "s", site_params("fnal", files=2_000, seed=1, gzip=True, history=False))
    listed = [e["path"] for e in manifest(tmp_path / "s")["inputs"]]
    assert listed and all(p.endswith(".gz") for p in listed)
    raw = (tmp_path / "s" / listed[0]).read_bytes()
    assert raw[:2] == b"\x1f\x8b" and raw[4:8] == b"\x00\x00\x00\x00"  # no mtime
    assert gzip.decompress(raw).decode().startswith("volume,barcode,media_type")
