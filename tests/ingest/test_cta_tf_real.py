"""CTA `cta-admin tf ls` as cta-admin prints it: coloured header, aligned columns, sizes to one
decimal of a unit, local creation times, the path last (tests/data/catalog/cta-tf-ls.txt)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

from tapelens.ingest.formats import cta_tf, lookup
from tapelens.ingest.formats.base import ParseOptions
from tapelens.ingest.formats.cta_tf import APPROXIMATE, size_of
from tapelens.ingest.load import ShrinkGuard, ingest_file

DATA = Path(__file__).parent.parent / "data" / "catalog"
TABLE = DATA / "cta-tf-ls.txt"


def parsed(
    path: Path, **options: object
) -> tuple[list[dict[str, object]], dict[int, str], list[str]]:
    batches = list(cta_tf.parse(path, options=ParseOptions(source="cta", **options)))  # type: ignore[arg-type]
    rows = [r for b in batches for r in b.frame.iter_rows(named=True)]
    rejects = {r.line_no: r.reason for b in batches for r in b.rejects}
    notes = [n for b in batches for n in b.notes]
    return rows, rejects, notes


def test_sizes_as_data_size_to_str_prints_them() -> None:
    assert size_of("512") == (512, None)
    assert size_of("5242880000") == (5_242_880_000, None)  # older releases: plain bytes
    assert size_of("5.2G") == (5_200_000_000, 50_000_000)
    assert size_of("964.5K") == (964_500, 50)
    assert size_of("12.0M") == (12_000_000, 50_000)
    assert size_of("1.8T") == (1_800_000_000_000, 50_000_000_000)
    for bad in ("1.25G", "5.2X", "G", ".5G", "-1", "1,2G", "12345.6G"):
        assert size_of(bad) is None, bad


def test_the_table_in_utc() -> None:
    rows, rejects, notes = parsed(TABLE)
    by_id = {r["copy_id"]: r for r in rows}
    first = by_id["4211190/1"]
    assert (first["size_bytes"], first["size_bound_bytes"]) == (5_200_000_000, 50_000_000)
    assert first["path"] == "/eos/ctaatlas/archive/data24/raw/run00481/f001.raw"
    assert first["written_at"] == datetime(2024, 6, 2, 13, 20, tzinfo=UTC)
    assert first["line_no"] == 2
    # a path with spaces, kept whole; the padding after it is not part of it
    assert by_id["4211192/2"]["path"] == "/eos/ctaatlas/archive/data24/raw/run 00482/with space.raw"
    # no checksum and no path ("-"): the disk file id stands in, the storage class is the dataset
    bare = by_id["4211194/1"]
    assert (bare["path"], bare["checksum"], bare["dataset"]) == (
        "eosctaatlas:3f2a0c5",
        None,
        "atlas_raw@cta",
    )
    assert (bare["size_bytes"], bare["size_bound_bytes"]) == (512, None)
    assert rejects == {
        8: 'size "5.2X" is neither bytes nor one decimal of K, M, G, T, P or E',
        9: 'size "1.25G" is neither bytes nor one decimal of K, M, G, T, P or E',
    }
    assert APPROXIMATE in notes
    assert "creation times read as local time in UTC (--timezone)" in notes


def test_local_times_in_the_given_zone() -> None:
    rows, rejects, notes = parsed(TABLE, timezone="Europe/Zurich")
    by_id = {r["copy_id"]: r for r in rows}
    # summer time: UTC+2
    assert by_id["4211190/1"]["written_at"] == datetime(2024, 6, 2, 11, 20, tzinfo=UTC)
    # 02:30 on 27 October 2024 happened twice in Zurich: the first (still summer time)
    assert by_id["4211192/2"]["written_at"] == datetime(2024, 10, 27, 0, 30, tzinfo=UTC)
    # 02:30 on 31 March 2024 never happened there: refused, not guessed
    assert rejects[5] == (
        'creation time "2024-03-31 02:30" does not exist in Europe/Zurich'
        " (skipped by daylight saving time)"
    )
    assert "creation times read as local time in Europe/Zurich (--timezone)" in notes


def test_json_sizes_are_exact_and_need_no_zone(tmp_path: Path) -> None:
    doc = {
        "af": {
            "archiveId": "4211190",
            "size": "5242880000",
            "storageClass": "atlas_raw@cta",
            "creationTime": "1717327200",
            "checksum": [{"type": "ADLER32", "value": "7c0a91e3"}],
        },
        "tf": {"vid": "L81234", "copyNb": 1, "fSeq": "1375", "blockId": "2817640"},
        "df": {"diskInstance": "eosctaatlas", "diskId": "66232513", "path": "/eos/a/f001.raw"},
    }
    path = tmp_path / "tf.json"
    path.write_text(json.dumps(doc) + "\n")
    rows, rejects, notes = parsed(path, timezone="Europe/Zurich")
    assert rejects == {} and notes == []
    assert (rows[0]["size_bytes"], rows[0]["size_bound_bytes"]) == (5_242_880_000, None)
    assert rows[0]["written_at"] == datetime(2024, 6, 2, 11, 20, tzinfo=UTC)


def test_a_load_keeps_the_rounding_bound_and_says_so(dsn: str) -> None:
    fmt = lookup("catalog", "cta-tf")
    result = ingest_file(dsn, fmt, TABLE, ParseOptions(source="cta", timezone="Europe/Zurich"))
    assert (result.rows, result.rejects) == (5, 3)
    assert APPROXIMATE in result.notes
    with psycopg.connect(dsn) as conn:
        found = conn.execute(
            "select copy_id, size_bytes, size_bound_bytes from tapelens.tape_files"
            " where copy_id in ('4211191/1', '4211194/1') order by copy_id"
        ).fetchall()
    assert found == [("4211191/1", 964_500, 50), ("4211194/1", 512, None)]


@pytest.mark.parametrize("json_first", [True, False])
def test_an_exact_size_wins_over_a_rounded_one(dsn: str, tmp_path: Path, json_first: bool) -> None:
    doc = {
        "af": {"archiveId": "4211190", "size": "5242880000", "creationTime": "1717327200"},
        "tf": {"vid": "L81234", "copyNb": 1, "fSeq": "1375"},
        "df": {"path": "/eos/ctaatlas/archive/data24/raw/run00481/f001.raw"},
    }
    exact = tmp_path / "tf.json"
    exact.write_text(json.dumps(doc) + "\n")
    fmt = lookup("catalog", "cta-tf")
    zurich = ParseOptions(source="cta", timezone="Europe/Zurich")
    guard = ShrinkGuard(allow=True)
    for path in [exact, TABLE] if json_first else [TABLE, exact]:
        ingest_file(dsn, fmt, path, zurich, guard=guard)
    with psycopg.connect(dsn) as conn:
        found = conn.execute(
            "select size_bytes, size_bound_bytes from tapelens.tape_files"
            " where copy_id = '4211190/1'"
        ).fetchall()
    assert found == [(5_242_880_000, None)]


# The layouts `cta-admin tf ls` printed over CTA's history (github.com/cern-cta/CTA,
# cmdline/ then tools/CtaAdminTextFormatter.cpp, printTapeFileLsHeader and
# print(const TapeFileLsItem&)): 2019-12 to 2021-02 "... creation time, ss vid, ss fseq, path"
# (commits 6e9d922af0, 2357a430d4; the path flush left since 68119ba51f); 2021-02 to 2023-06
# "... creation time, path" (4a444b81b6; tests/data/catalog/cta-tf-ls.txt); 2023-06 to 2025-04
# ending with the creation time (b558b33bd4); since 2025-04 the disk instance named "disk
# buffer" and the CTA instance's name last (9215dcce5a). Every cell right-aligned to its
# column and followed by one space, an empty cell "-" (TextFormatter::flush). The fixtures are
# laid out by those rules.
LAYOUTS = {
    "cta-tf-ls-2020.txt": [
        "/eos/ctacms/raw/2022/run1/a.dat",
        "/eos/ctacms/raw/2022/run1/long name b.dat",
        "/eos/ctacms/raw/c.dat",
    ],
    "cta-tf-ls-2023.txt": ["eosctacms:a10f01", "eosctacms:a10f02", "eosctacms:a10f03"],
    "cta-tf-ls-2025.txt": ["eosctacms:a10f01", "eosctacms:a10f02", "eosctacms:a10f03"],
}


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_every_layout_cta_admin_printed(name: str) -> None:
    rows, rejects, _ = parsed(DATA / name)
    assert rejects == {}
    assert [r["path"] for r in rows] == LAYOUTS[name]
    # the creation time keeps its hour and minute in every layout
    assert [r["written_at"] for r in rows] == [
        datetime(2022, 11, 8, 7, 5, tzinfo=UTC),
        datetime(2022, 11, 8, 7, 6, tzinfo=UTC),
        datetime(2022, 11, 8, 23, 59, tzinfo=UTC),
    ]
    # dataSizeToStr: "999" exact below 1000 bytes, "3.4G" and "1.0K" to one decimal
    assert [(r["size_bytes"], r["size_bound_bytes"]) for r in rows] == [
        (3_400_000_000, 50_000_000),
        (999, None),
        (1_000, 50),
    ]
    assert [r["position"] for r in rows] == [17, 18, 19]
    by_line = list(cta_tf.parse_by_line(DATA / name, options=ParseOptions(source="cta")))
    assert [r["path"] for b in by_line for r in b.frame.iter_rows(named=True)] == LAYOUTS[name]
