"""Transfer and mount log parsers on hand-written edge cases (tests/data/logs/): exact frames."""

from __future__ import annotations

import gzip
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
import psycopg
import pytest
from polars.testing import assert_frame_equal

from tapelens.errors import ConfigError, ParseError
from tapelens.ingest.canonical import MOUNTS, SCHEMAS, TRANSFERS
from tapelens.ingest.formats import (
    cta_taped,
    dcache_billing,
    hpss_pvl,
    lookup,
    mounts_csv,
    staging_csv,
    transfers_csv,
)
from tapelens.ingest.formats.base import Batch, ParseOptions
from tapelens.ingest.formats.logfields import hpss_cartridge, year_from_name
from tapelens.ingest.load import ingest_file

DATA = Path(__file__).parent.parent / "data" / "logs"
ParseFn = Callable[..., Iterator[Batch]]


@dataclass
class Parsed:
    frame: pl.DataFrame
    rejects: dict[int, str]  # line number -> reason
    skipped: int
    batches: list[Batch]


def parse_all(fn: ParseFn, path: str | Path, **options: Any) -> Parsed:
    batches = list(fn(path, options=ParseOptions(source="test", **options)))
    rejects = {r.line_no: r.reason for b in batches for r in b.rejects}
    assert sum(len(b.rejects) for b in batches) == len(rejects), "a line refused twice"
    frame = pl.concat([b.frame for b in batches])
    if "line_no" in frame.columns:  # the rows' own line numbers: in range, then set aside
        assert frame["line_no"].is_between(1, 10**9).all()
        frame = frame.drop("line_no")
    return Parsed(frame, rejects, sum(b.skipped for b in batches), batches)


def line_count(path: Path) -> int:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return len(data.splitlines())


def accounted(parsed: Parsed, path: Path) -> None:
    """Every line is a row, a reject or a counted skip."""
    assert len(parsed.frame) + len(parsed.rejects) + parsed.skipped == line_count(path)


def t(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def expected(kind: str, rows: list[dict[str, Any]]) -> pl.DataFrame:
    schema = SCHEMAS[kind]
    full = [{name: row.get(name) for name in schema} | {"source": "test"} for row in rows]
    return pl.DataFrame(full, schema=schema, orient="row")


def billing_row(**fields: Any) -> dict[str, Any]:
    return {"status": "ok", **fields}


# dCache billing ---------------------------------------------------------------------------------


def test_billing_restore_store_failures_skips_and_rejects() -> None:
    path = DATA / "billing-2021.11.02"
    got = parse_all(dcache_billing.parse, path)
    host = "f01-080-128_T"
    want = expected(
        "transfers",
        [
            # written at 00:00:10 after 15.311 s: started the day before, to the second
            billing_row(
                direction="read",
                host=host,
                file_id="0000A3C5B52E5E1D4CD6B1B8E1A4F3B0C2D1",
                path="/pnfs/gridka.de/atlas/data22/AOD/f12.pool.root.1",
                size_bytes=3791544320,
                started_at=t("2021-11-01 23:59:55"),
                duration_s=15.311,
                queued_s=0.904,
            ),
            billing_row(
                direction="write",
                host=host,
                file_id="0000B1C5B52E5E1D4CD6B1B8E1A4F3B0C2D2",
                path="/pnfs/gridka.de/atlas/data22/RAW/r1.data",
                size_bytes=1048576,
                started_at=t("2021-11-02 03:13:59"),
                duration_s=8.2,
                queued_s=120.0,
            ),
            billing_row(
                direction="read",
                host=host,
                file_id="0000C2C5B52E5E1D4CD6B1B8E1A4F3B0C2D3",
                path="/pnfs/gridka.de/atlas/data22/AOD/f13.pool.root.1",
                size_bytes=734003,
                started_at=t("2021-11-02 03:14:00"),
                duration_s=60.0,
                queued_s=0.0,
                status="failed",
                error="Tape read error: media error on A85532",
            ),
            billing_row(
                direction="read",
                host="f01-080-129_T",
                file_id="0000D4C5B52E5E1D4CD6B1B8E1A4F3B0C2D4",
                path=None,  # dCache wrote [Unknown]
                size_bytes=100,
                started_at=t("2021-11-02 03:16:59"),
                duration_s=1.0,
                queued_s=0.0,
            ),
            billing_row(
                direction="read",
                host=host,
                file_id="0000F6",
                path='/pnfs/gridka.de/odd dir/with ] bracket; and "quotes".root',
                size_bytes=5,
                started_at=t("2021-11-02 03:18:59"),
                duration_s=1.5,
                queued_s=0.01,
                status="failed",
                error='failed: {code} \\"x\\"',
            ),
        ],
    )
    assert_frame_equal(got.frame, want)
    assert got.rejects == {
        9: 'time "25:61:00" is not HH:MM:SS',
        10: 'date "11.31" is not a day of 2021',
        11: 'size "12x" is not an integer',
        12: "not a billing record (MM.dd HH:MM:SS [cellType:cellName:type] ...)",
        14: 'transferTime "-5" is not a non-negative number',
        15: "expected [pnfsid,size] [path] storageClass@hsm transferTime queuingTime "
        '{rc:"message"}',
    }
    assert got.skipped == 4  # a blank line and transfer, request and remove records
    accounted(got, path)


def test_billing_year_rolls_over_with_the_month() -> None:
    # --year is the first line's year, and overrides the name's stamp
    got = parse_all(dcache_billing.parse, DATA / "billing-2021.12.31", year=2021)
    assert got.frame["started_at"].to_list() == [
        t("2021-12-31 23:59:57"),
        t("2022-01-01 00:00:30"),  # 00:00:30 - 0.5 s rounds half up
        t("2022-01-01 00:00:59"),
    ]
    assert got.frame["direction"].to_list() == ["read", "read", "write"]


def test_billing_without_a_year_names_the_option() -> None:
    path = DATA / "billing.log"
    with pytest.raises(ConfigError, match="--year"):
        parse_all(dcache_billing.parse, path)
    assert parse_all(dcache_billing.parse, path, year=2020).frame["started_at"].to_list() == [
        t("2020-02-29 11:59:59")
    ]
    assert parse_all(dcache_billing.parse, path, year=2021).rejects == {
        1: 'date "02.29" is not a day of 2021'
    }


def test_billing_gzip_and_non_utf8() -> None:
    gz = DATA / "billing-2021.11.03.gz"
    got = parse_all(dcache_billing.parse, gz)
    assert got.frame.select("path", "started_at", "queued_s").rows() == [
        ("/pnfs/d/g1.root", t("2021-11-02 05:59:58"), 0.007)
    ]
    assert (got.skipped, got.rejects) == (2, {})
    accounted(got, gz)

    latin1 = DATA / "billing-latin1-2021.11.02"
    got = parse_all(dcache_billing.parse, latin1)
    assert got.frame["path"].to_list() == ["/pnfs/c/ok.root"]
    assert got.rejects == {1: "not valid UTF-8 (byte 56)"}
    raw = got.batches[-1].rejects[0].raw
    assert "caf\\xe9.root" in raw
    accounted(got, latin1)


def test_billing_strict_stops_at_the_first_bad_line() -> None:
    with pytest.raises(ParseError) as err:
        parse_all(dcache_billing.parse, DATA / "billing-2021.11.02", strict=True)
    assert (err.value.line, err.value.reason) == (9, 'time "25:61:00" is not HH:MM:SS')
    with pytest.raises(ParseError, match=r":1: not valid UTF-8"):
        parse_all(dcache_billing.parse, DATA / "billing-latin1-2021.11.02", strict=True)
    clean = parse_all(dcache_billing.parse, DATA / "billing-2021.12.31", year=2021, strict=True)
    assert len(clean.frame) == 3


def test_billing_batches_are_bounded() -> None:
    got = parse_all(dcache_billing.parse, DATA / "billing-2021.11.02", batch_rows=2)
    assert [len(b.frame) for b in got.batches] == [2, 2, 1]
    assert len(got.frame) == 5


def test_year_from_name() -> None:
    assert year_from_name("/x/billing-2021.11.02.gz") == 2021
    assert year_from_name("billing-1999") == 1999
    assert year_from_name("billing.log") is None
    assert year_from_name("billing-20211102") is None  # digits run on: not a year alone
    assert year_from_name("2020-to-2021.log") is None  # two years: ambiguous


# CTA tape daemon --------------------------------------------------------------------------------

T0 = 1717327200  # 2024-06-02 11:20:00 UTC


def cta_time(offset_s: float) -> datetime:
    return datetime.fromtimestamp(T0 + offset_s, UTC)


def test_cta_files_take_the_tape_of_their_session() -> None:
    path = DATA / "cta-taped.jsonl"
    got = parse_all(cta_taped.parse, path)
    b = {"volume": "L85678", "drive": "IBMLIB4-LTO8-12", "host": "tpsrv01", "direction": "read"}
    a = {"volume": "L81234", "drive": "IBMLIB4-LTO8-03", "host": "tpsrv01", "direction": "read"}
    want = expected(
        "transfers",
        [
            # pid 200's session finished first: its files come out first
            b
            | {
                "file_id": "5000001",
                "position": 7,
                "size_bytes": 1000,
                "started_at": cta_time(110 - 5),
                "duration_s": 5.0,
                "locate_s": 3.0,
                "status": "ok",
            },
            b
            | {
                "file_id": "5000002",
                "position": 8,
                "started_at": cta_time(130),
                "status": "failed",
                "error": "Positioning failed: block id mismatch",
            },
            a
            | {
                "file_id": "4211190",
                "position": 1375,
                "size_bytes": 5242880000,
                "started_at": cta_time(100.75 - 28.75),
                "duration_s": 28.75,  # totalTime: positioning included
                "locate_s": 12.25,
                "status": "ok",
            },
            # no totalTime: positionTime + transferTime, 100.9 s rounds to 101 s
            a
            | {
                "file_id": "4211191",
                "position": 1376,
                "size_bytes": 1048576,
                "started_at": cta_time(101),
                "duration_s": 10.5,
                "locate_s": 0.5,
                "status": "ok",
            },
        ],
    )
    assert_frame_equal(got.frame, want)
    assert got.rejects == {
        4: 'no "Tape session finished" line follows for hostname "tpsrv01", pid 100, tid 102',
        8: "not a JSON object",
        10: 'fSeq "13x7" is not a number',
        11: 'no "fileId"',
        13: "its session line 14 was refused",
        14: 'no "tapeVid"',
        16: "not a JSON object",
        18: "fileId contains a NUL character",
    }
    assert got.skipped == 6  # session start, position, 3 session ends, blank line
    accounted(got, path)


def test_cta_sessions_as_mounts() -> None:
    path = DATA / "cta-taped.jsonl"
    got = parse_all(cta_taped.parse_mounts, path)
    want = expected(
        "mounts",
        [
            # totalTime given: requested = end - totalTime, mounted after mountTime (20 s),
            # dismounted before unmountTime (10 s)
            {
                "volume": "L85678",
                "drive": "IBMLIB4-LTO8-12",
                "requested_at": cta_time(200 - 120),
                "mounted_at": cta_time(200 - 120 + 20),
                "dismounted_at": cta_time(200 - 10),
                "purpose": "read",
                "status": "complete",
            },
            # no totalTime: requested = first file's start (72 s) minus mountTime (30 s)
            {
                "volume": "L81234",
                "drive": "IBMLIB4-LTO8-03",
                "requested_at": cta_time(72 - 30),
                "mounted_at": cta_time(72),
                "dismounted_at": cta_time(300 - 12),
                "purpose": "read",
                "status": "complete",
            },
            # no files: requested = end minus mount, position, unload and unmount times
            {
                "volume": "L80001",
                "drive": "IBMLIB4-LTO8-05",
                "requested_at": cta_time(400 - 20),
                "mounted_at": cta_time(400 - 20 + 10),
                "dismounted_at": cta_time(400 - 5),
                "purpose": "write",
                "status": "complete",
            },
        ],
    )
    assert_frame_equal(got.frame, want)
    assert got.rejects == {8: "not a JSON object", 14: 'no "tapeVid"', 16: "not a JSON object"}
    accounted(got, path)


def test_cta_strict_and_batches() -> None:
    with pytest.raises(ParseError) as err:
        parse_all(cta_taped.parse, DATA / "cta-taped.jsonl", strict=True)
    assert err.value.line == 8
    got = parse_all(cta_taped.parse, DATA / "cta-taped.jsonl", batch_rows=1)
    assert all(len(b.frame) <= 1 for b in got.batches)
    assert len(got.frame) == 4


def test_cta_long_session_is_cut_into_batches(tmp_path: Path) -> None:
    line = (
        '{{"epoch_time":{e},"hostname":"h","pid":1,"tid":2,"message":"{m}","fileId":{i},'
        '"fSeq":{i},"transferTime":1.0,"totalTime":2.0,"dataVolume":10}}'
    )
    lines = [line.format(e=T0 + i, m=cta_taped.READ_OK, i=i) for i in range(1, 8)]
    lines.append(
        f'{{"epoch_time":{T0 + 9},"hostname":"h","pid":1,"tid":2,'
        f'"message":"{cta_taped.SESSION_END}","tapeVid":"V1"}}'
    )
    path = tmp_path / "taped.log"
    path.write_text("\n".join(lines) + "\n")
    got = parse_all(cta_taped.parse, path, batch_rows=3)
    assert [len(b.frame) for b in got.batches] == [3, 3, 1]
    assert got.frame["position"].to_list() == list(range(1, 8))
    assert set(got.frame["volume"]) == {"V1"}


# Staging CSV ------------------------------------------------------------------------------------


def test_staging_csv() -> None:
    path = DATA / "staging.csv"
    got = parse_all(staging_csv.parse, path)
    base = {"direction": "read", "status": "ok"}
    want = expected(
        "transfers",
        [
            base
            | {
                "volume": "A85532",  # physical volume A8553200 -> cartridge
                "path": "/star/run19/daq/st_physics_1.daq",
                "position": 5081,
                "size_bytes": 734003,
                "started_at": t("2021-03-13 23:40:00"),
                "duration_s": 330.0,
                "queued_s": 2400.0,
            },
            base
            | {
                "volume": "A85532",
                "path": "/star/run19/daq/st_physics_2.daq",
                "position": 5082,
                "size_bytes": 1000,
                "started_at": t("2021-03-13 23:40:00"),  # 00:40 at +01:00
                "duration_s": 360.0,
                "queued_s": 2400.0,
            },
            {
                "direction": "read",
                "volume": "X03527",
                "path": "/star/run19/daq/st_physics_3.daq",
                "position": 12,
                "size_bytes": 2000,
                "started_at": t("2021-03-13 23:41:00"),
                "queued_s": 2460.0,
                "status": "failed",
                "error": "failed",
            },
            base
            | {
                "volume": "A85532",
                "path": '/star/run19/daq/comma, "quoted".daq',
                "position": 5083,
                "size_bytes": 4000,
                "started_at": t("2021-03-13 23:40:00"),  # unix seconds
                "duration_s": 300.0,
                "queued_s": 2400.0,
            },
            base
            | {
                "volume": "A85532",
                "path": "/star/run19/daq/st_physics_10.daq",
                "position": 5088,
                "size_bytes": 6000,
                "started_at": t("2021-03-13 23:52:00"),
                "duration_s": 60.0,
                "queued_s": 3120.0,
            },
        ],
    )
    assert_frame_equal(got.frame, want)
    assert got.rejects == {
        8: 'end_time "2021-03-13 23:49:00" is before queued_time "2021-03-13 23:50:00"',
        9: 'position "50x4" is not an integer',
        10: 'status "lost" is neither done-like nor failed-like',
        11: 'end_time "2021-03-13 25:51:00" is not an ISO 8601 time',
        12: "3 fields where 8 are expected",
    }
    assert got.skipped == 4  # two headers, a blank line, a queued request
    accounted(got, path)


def test_staging_csv_without_header_uses_the_documented_order(tmp_path: Path) -> None:
    path = tmp_path / "staging.csv"
    path.write_text("/a/f,A8553200,3,10,,2021-01-01 00:00:00,2021-01-01 00:00:09,done\n")
    got = parse_all(staging_csv.parse, path)
    assert got.frame.select("volume", "position", "duration_s", "queued_s").rows() == [
        ("A85532", 3, 9.0, None)
    ]


def test_hpss_cartridge() -> None:
    assert hpss_cartridge("A8553200") == "A85532"
    assert hpss_cartridge("A85532") == "A85532"
    assert hpss_cartridge("A85532L8") == "A85532L8"  # a barcode keeps its media suffix
    assert hpss_cartridge("VTS104L7") == "VTS104L7"
    assert hpss_cartridge("A85532²³") == "A85532²³"  # only ASCII digits name a side


# Generic CSVs -----------------------------------------------------------------------------------


def test_transfers_csv() -> None:
    path = DATA / "transfers.csv"
    got = parse_all(transfers_csv.parse, path)
    want = expected(
        "transfers",
        [
            {
                "direction": "read",
                "volume": "L81234",
                "drive": "D1",
                "host": "tpsrv01",
                "file_id": "4211190",
                "path": "/eos/atlas/f1",
                "position": 1375,
                "size_bytes": 5242880000,
                "started_at": t("2024-06-02 11:21:12"),
                "duration_s": 16.5,
                "queued_s": 3.0,
                "locate_s": 12.25,
                "status": "ok",
                "requester": "atlas001",
            },
            {
                "direction": "write",
                "volume": "VTS104L7",  # names lose blanks, paths keep them
                "host": "pool1",
                "path": " /pnfs/with leading space",
                "size_bytes": 100,
                "started_at": t("2024-06-02 11:30:00"),
                "duration_s": 1.5,
                "status": "ok",
            },
            {
                "direction": "read",
                "volume": "L81234",
                "path": "/eos/atlas/f2",
                "started_at": t("2024-06-02 11:00:00"),  # 13:00 at +02:00
                "status": "failed",
                "error": "media error",
            },
        ],
    )
    assert_frame_equal(got.frame, want)
    assert got.rejects == {
        6: 'direction "sideways" is not one of read, write',
        7: 'started_at "yesterday" is not an ISO 8601 time',
        8: 'size_bytes "-1" is below 0',
        9: "started_at is empty",
        10: 'status "done" is not one of ok, failed',
        11: "2 fields where 16 are expected",
    }
    accounted(got, path)


def test_transfers_csv_header_without_a_required_column(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("direction,path\nread,/a\nread,/b\n")
    got = parse_all(transfers_csv.parse, path)
    assert got.rejects == {
        1: 'header has no "started_at" column',
        2: 'the header (line 1) has no "started_at" column',
        3: 'the header (line 1) has no "started_at" column',
    }
    with pytest.raises(ParseError, match=r"t.csv:1: header has no"):
        parse_all(transfers_csv.parse, path, strict=True)


def test_transfers_csv_mapping_and_columns(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("Dir,Start,File\nwrite,2024-01-01T00:00:00Z,/a\n")
    mapping = {"Dir": "direction", "Start": "started_at", "File": "path"}
    got = parse_all(transfers_csv.parse, path, mapping=mapping)
    assert got.frame.select("direction", "started_at", "path").rows() == [
        ("write", t("2024-01-01 00:00:00"), "/a")
    ]
    bare = tmp_path / "bare.csv"
    bare.write_text("/b,read,2024-01-01 00:00:01\n")
    got = parse_all(transfers_csv.parse, bare, columns=("path", "direction", "started_at"))
    assert got.frame.select("path", "direction").rows() == [("/b", "read")]


def test_mounts_csv_canonical() -> None:
    path = DATA / "mounts.csv"
    got = parse_all(mounts_csv.parse, path)
    want = expected(
        "mounts",
        [
            {
                "volume": "L81234",
                "drive": "D1",
                "requested_at": t("2024-06-02 11:00:00"),
                "mounted_at": t("2024-06-02 11:01:00"),
                "dismounted_at": t("2024-06-02 12:00:00"),
                "purpose": "read",
                "status": "complete",
            },
            {
                "volume": "L85678",
                "drive": "D2",
                "mounted_at": t("2024-06-02 11:05:00"),
                "purpose": "write",
                "status": "no_dismount",
            },
        ],
    )
    assert_frame_equal(got.frame, want)
    assert got.rejects == {
        4: 'dismounted_at "2024-06-02T11:04:00Z" is before mounted_at "2024-06-02T11:05:00Z"',
        5: 'requested_at "2024-06-02T11:06:00Z" is after mounted_at "2024-06-02T11:05:00Z"',
        6: 'status "broken" is not one of complete, no_dismount, no_mount, no_request',
        7: "volume is empty",
    }
    accounted(got, path)


def test_mounts_csv_acsls_minimum() -> None:
    path = DATA / "mounts-acsls.csv"
    got = parse_all(mounts_csv.parse, path)
    want = expected(
        "mounts",
        [
            {
                "volume": "VR1234",
                "drive": "0.0.1.2",
                "mounted_at": t("2020-05-01 10:00:00"),
                "dismounted_at": t("2020-05-01 11:30:00"),
                "purpose": "unknown",
                "status": "complete",
            },
            {
                "volume": "VR1235",
                "drive": "0.0.1.3",
                "requested_at": t("2020-05-01 10:04:10"),
                "mounted_at": t("2020-05-01 10:05:00"),
                "dismounted_at": t("2020-05-01 10:45:00"),
                "purpose": "unknown",
                "status": "complete",
            },
            {
                "volume": "VR1237",
                "drive": "0.0.1.4",
                "mounted_at": t("2020-05-01 10:05:00"),
                "purpose": "unknown",
                "status": "no_dismount",
            },
        ],
    )
    assert_frame_equal(got.frame, want)
    assert got.rejects == {3: "3 fields, not a layout this format knows"}
    accounted(got, path)


# HPSS PVL ---------------------------------------------------------------------------------------


def test_pvl_pairs_events_across_the_new_year_and_keeps_unpaired_ones() -> None:
    path = DATA / "pvl.log"
    got = parse_all(hpss_pvl.parse, path, year=2021)
    u = {"purpose": "unknown"}
    want = expected(
        "mounts",
        [
            # a dismount with no mount before it: mounted_at is the dismount time
            u
            | {
                "volume": "X03527",
                "mounted_at": t("2021-12-31 23:50:00"),
                "dismounted_at": t("2021-12-31 23:50:00"),
                "status": "no_mount",
            },
            u
            | {
                "volume": "A85532",
                "drive": "102108",
                "requested_at": t("2021-12-31 22:00:00"),
                "mounted_at": t("2021-12-31 22:01:00"),
                "dismounted_at": t("2022-01-01 00:10:00"),
                "status": "complete",
            },
            u
            | {
                "volume": "B12345",
                "drive": "102109",
                "mounted_at": t("2022-01-01 00:20:00"),
                "dismounted_at": t("2022-01-01 01:00:00"),
                "status": "no_request",
            },
            # requested, never completed, then dismounted: two pieces, neither a mount (the
            # dismount here, the request at the end of the log)
            u
            | {
                "volume": "F00004",
                "mounted_at": t("2022-01-01 03:10:00"),
                "dismounted_at": t("2022-01-01 03:10:00"),
                "status": "no_mount",
            },
            # left open at the end of the log
            u
            | {
                "volume": "D00002",
                "requested_at": t("2022-01-01 02:00:00"),
                "mounted_at": t("2022-01-01 02:00:00"),
                "status": "no_mount",
            },
            u
            | {
                "volume": "F00004",
                "requested_at": t("2022-01-01 03:00:00"),
                "mounted_at": t("2022-01-01 03:00:00"),
                "status": "no_mount",
            },
            u
            | {
                "volume": "E00003",
                "drive": "102110",
                "requested_at": t("2022-01-01 02:30:00"),
                "mounted_at": t("2022-01-01 02:31:00"),
                "status": "no_dismount",
            },
        ],
    )
    assert_frame_equal(got.frame, want)
    assert got.rejects == {
        10: 'date "13/45" is not MM/DD',
        11: "pvl_MountAdd without jobid",
        12: 'time "25:00:00" is not HH:MM:SS',
        13: "not a PVL log line (MM/DD HH:MM:SS ...)",
    }
    # pvr_Mount, an Exiting line, a blank line, and the other event lines of three mounts
    assert got.skipped == 7
    accounted(got, path)


def test_pvl_needs_a_year_and_strict_stops() -> None:
    with pytest.raises(ConfigError, match="--year"):
        parse_all(hpss_pvl.parse, DATA / "pvl.log")
    with pytest.raises(ParseError) as err:
        parse_all(hpss_pvl.parse, DATA / "pvl.log", year=2021, strict=True)
    assert (err.value.line, err.value.reason) == (10, 'date "13/45" is not MM/DD')


def test_pvl_open_mounts_at_the_end_respect_batch_rows(tmp_path: Path) -> None:
    line = (
        '01/0{d} 00:00:00 RQST PVLS0001 Entering, function = "pvl_MountAdd", '
        'jobid = "{j}", arg = "VOL00{j}00"'
    )
    path = tmp_path / "pvl.log"
    path.write_text("".join(line.format(d=1 + j // 3, j=j) + "\n" for j in range(7)))
    got = parse_all(hpss_pvl.parse, path, year=2020, batch_rows=3)
    assert [len(b.frame) for b in got.batches] == [3, 3, 1]
    assert set(got.frame["status"]) == {"no_mount"}
    assert got.frame["volume"].to_list() == [f"VOL00{j}" for j in range(7)]


def test_schemas_match_the_canonical_tables() -> None:
    for fn, path, schema, opts in [
        (dcache_billing.parse, "billing-2021.12.31", TRANSFERS, {"year": 2021}),
        (hpss_pvl.parse, "pvl.log", MOUNTS, {"year": 2021}),
    ]:
        got = parse_all(fn, DATA / path, **opts)
        assert got.frame.schema == pl.Schema(schema)


# Through the loader ------------------------------------------------------------------------------


LOADS = [
    # kind, --format, file, year, rows, rejects
    ("transfers", "dcache-billing", "billing-2021.11.02", None, 5, 6),
    ("transfers", "cta-taped", "cta-taped.jsonl", None, 4, 8),
    ("mounts", "cta-taped", "cta-taped.jsonl", None, 3, 3),
    ("transfers", "staging-csv", "staging.csv", None, 5, 5),
    ("transfers", "csv", "transfers.csv", None, 3, 6),
    ("mounts", "csv", "mounts-acsls.csv", None, 3, 1),
    ("mounts", "hpss-pvl", "pvl.log", 2021, 7, 4),
]


def test_rows_and_rejects_load_into_the_canonical_tables(dsn: str) -> None:
    for kind, name, path, year, rows, rejects in LOADS:
        fmt = lookup(kind, name)
        result = ingest_file(dsn, fmt, DATA / path, ParseOptions(source=fmt.source, year=year))
        assert (name, result.rows, result.rejects) == (name, rows, rejects)
        with psycopg.connect(dsn) as conn:
            refused = conn.execute(
                "select count(*) from tapelens.ingest_rejects where run_id = %s", (result.run_id,)
            ).fetchone()
        assert refused == (rejects,)
    with psycopg.connect(dsn) as conn:
        stored = conn.execute(
            "select (select count(*) from tapelens.transfers),"
            " (select count(*) from tapelens.mounts),"
            " (select count(*) from tapelens.mount_pieces)"
        ).fetchone()
    # the PVL log's requests never mounted and dismounts of cartridges it never mounted are
    # pieces of mounts, not mounts
    assert stored == (5 + 4 + 5 + 3, 3 + 3 + 3, 4)
