"""dCache's bring-online scheduler reading the tape info files `export dcache-tapeinfo` writes.

TapeInfoRead.java reads them as dCache/dcache's JsonFileTapeInfoProvider.java (Gson into a
Map, Double sizes, String tape ids) and CsvFileTapeInfoProvider.java (split at commas) do, and
looks each request up by its SURL's raw path as TapeRecallSchedulingStrategy.java does
(modules/srm-server/src/main/java/org/dcache/srm/); compiled with the machine's javac against
the Gson dCache's pom.xml pins. The test sends the SURLs a client would send for the catalog's
files and compares what dCache finds with the catalog.
"""

from __future__ import annotations

import urllib.parse
from pathlib import Path

import polars as pl
import psycopg
import pytest

from tests.consumers.run import dcache_reads
from tests.fixtures.cli import run

SITE = "srm://dcache.example.org:8443"
HPSS, PNFS = "/hpss/atlas", "/pnfs/example.org/data/atlas"
FILES = [
    # (path in HPSS, bytes, volume, removed)
    (f"{HPSS}/data18/RAW/run00348885/f1.data", 4_294_967_296, "H00001", False),
    (f"{HPSS}/data18/RAW/run00348885/f2.data", 1, "H00001", False),
    (f"{HPSS}/data18/RAW/run00348885/f3.data", 999_001, "H00002", False),
    (f"{HPSS}/user/a name with blanks.root", 52_428_800, "H00002", False),
    (f'{HPSS}/user/Zürich "quoted".root', 7_340_032, "H00001", False),
    (f"{HPSS}/data18/RAW/run00348885/gone.data", 7_000_000, "H00002", True),
    ("/hpss/cms/unmapped.root", 1_000, "H00001", False),
]


@pytest.fixture(scope="module")
def classes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tapeinfo-classes")


def _load(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "insert into tapelens.tapes (volume, media_type, state) values"
            " ('H00001', 'LTO-8', 'full'), ('H00002', 'LTO-9', 'filling')"
        )
        for n, (path, size, volume, removed) in enumerate(FILES, start=1):
            conn.execute(
                "insert into tapelens.tape_files (source, copy_id, file_id, path, dataset,"
                " dataset_type, experiment, size_bytes, volume, position, written_at,"
                " ingest_run_id, removed_at) values ('hpss', %s, %s, %s, 'D', 'RAW', 'atlas',"
                " %s, %s, %s, '2022-01-01', 1, %s)",
                (str(n), path, path, size, volume, n, "2023-01-01" if removed else None),
            )


def _surl(hpss_path: str) -> str:
    """The SURL a client sends for the file: its dCache path, percent-encoded."""
    return SITE + urllib.parse.quote(hpss_path.replace(HPSS, PNFS, 1))


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_dcache_finds_every_mapped_file_on_its_tape(
    dsn: str, tmp_path: Path, classes: Path, fmt: str
) -> None:
    _load(dsn)
    out = tmp_path / "tapeinfo"
    exported = run(
        "--dsn", dsn, "export", "dcache-tapeinfo", "-o", str(out), "--format", fmt,
        "--path-map", f"{HPSS}={PNFS}",
    )  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    assert f"1 files left out (1 no --path-map prefix matched): {out / 'left-out.csv'}" in (
        exported.stderr
    )
    assert pl.read_csv(out / "left-out.csv")["path"].to_list() == ["/hpss/cms/unmapped.root"]

    with psycopg.connect(dsn) as conn:
        live = conn.execute(
            "select path, volume, size_bytes from tapelens.tape_files where removed_at is null"
        ).fetchall()
        tapes = dict(
            (v, (c, f))
            for v, c, f in conn.execute(
                "select f.volume, m.capacity_bytes, sum(f.size_bytes)::bigint"
                " from tapelens.tape_files f join tapelens.tapes t using (volume)"
                " join tapelens.media_types m using (media_type) group by 1, 2"
            )
        )
    mapped = [(p, v, s) for p, v, s in live if p.startswith(HPSS + "/")]
    seen, tape_info = dcache_reads(out, fmt, [_surl(p) for p, _, _ in live], classes)
    # Each mapped file is found under its request's raw path, on its tape, its size in kB
    # rounded up; the unmapped one is not found, and no other key is read.
    assert {k: v for k, v in seen.items() if v is not None} == {
        urllib.parse.urlsplit(_surl(p)).path: (v, -(-s // 1000)) for p, v, s in mapped
    }
    assert [k for k, v in seen.items() if v is None] == ["/hpss/cms/unmapped.root"]
    assert tape_info == {
        v: (-(-c // 1000), -(-f // 1000)) for v, (c, f) in tapes.items() if v in tape_info
    }
    assert set(tape_info) == {v for _, v, _ in mapped}


@pytest.mark.slow
def test_a_catalog_outside_dcaches_namespace_is_refused_with_the_map_to_give(
    dsn: str, tmp_path: Path
) -> None:
    _load(dsn)
    out = tmp_path / "tapeinfo"
    refused = run("--dsn", dsn, "export", "dcache-tapeinfo", "-o", str(out))
    assert refused.returncode != 0
    assert len(refused.stderr.strip().splitlines()) == 1
    assert "SRM request" in refused.stderr and "--path-map /hpss/" in refused.stderr
    assert not out.exists()
