"""HPSS PVL logs as sites keep them: rotated files named by date, a mount split across files,
files loaded in any order or in separate ingests (tests/data/logs/pvl-rotated/), and a rotation
that cuts mounts in the middle, in the PVL's own line shapes (tests/data/logs/pvl-midmount/:
each call logged as it enters, PVLS0001, and as it returns, PVLS0002, with the same fields; a
completion retried on another drive; PVR and STK lines between) as published with HPSS PVL
traces and their parsers (maesker/RoboticTapeLibrary, src/TraceAnalyser/whpss/db/
events_pattern.anydb)."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

from tapelens.errors import ConfigError
from tapelens.ingest.formats import hpss_pvl, lookup
from tapelens.ingest.formats.base import ParseOptions
from tapelens.ingest.formats.logfields import name_stamp
from tapelens.ingest.load import ingest_file, ingest_files

DIR = Path(__file__).parent.parent / "data" / "logs" / "pvl-rotated"
ROTATED = [DIR / f"pvl.log-2013010{d}" for d in (5, 6, 7)]
OPTS = ParseOptions(source="hpss")
FMT = lookup("mounts", "hpss-pvl")


def t(month: int, day: int, hms: str, year: int = 2013) -> datetime:
    h, m, s = (int(x) for x in hms.split(":"))
    return datetime(year, month, day, h, m, s, tzinfo=UTC)


EXPECTED = {
    ("A85532", "102108", t(1, 4, "23:50:00"), t(1, 5, "00:01:10"), t(1, 6, "02:00:00"), "complete"),
    ("B00001", "102109", t(1, 4, "22:59:58"), t(1, 4, "23:00:04"), t(1, 4, "23:30:00"), "complete"),
    ("C00001", "102110", t(1, 5, "10:00:00"), t(1, 5, "10:05:00"), t(1, 6, "03:00:00"), "complete"),
}


def mounts(dsn: str) -> set[tuple[object, ...]]:
    with psycopg.connect(dsn) as conn:
        found = conn.execute(
            "select volume, drive, requested_at, mounted_at, dismounted_at, status"
            " from tapelens.mounts"
        ).fetchall()
    return set(found)


def reset(dsn: str) -> None:
    with psycopg.connect(dsn) as conn:
        conn.execute(
            "truncate tapelens.mounts, tapelens.mount_pieces, tapelens.ingest_runs cascade"
        )


def test_the_year_comes_from_the_date_stamp_of_the_name() -> None:
    assert name_stamp("logfile01_201301052000") == (2013, 1)
    assert name_stamp("20130313_000000.log") == (2013, 3)
    assert name_stamp("pvl.log-20130105") == (2013, 1)
    assert name_stamp("pvl.log") is None
    # stamped in January, holding December's lines: those are of the year before
    batches = list(hpss_pvl.parse(DIR / "logfile01_201301052000", options=OPTS))
    (row,) = [r for b in batches for r in b.frame.iter_rows(named=True)]
    assert (row["requested_at"], row["dismounted_at"]) == (
        t(12, 31, "23:00:00", 2012),
        t(1, 1, "00:30:00"),
    )
    later = list(hpss_pvl.parse(DIR / "20130313_000000.log", options=OPTS))
    (row,) = [r for b in later for r in b.frame.iter_rows(named=True)]
    assert row["requested_at"] == t(12, 31, "23:00:00", 2012)


def test_no_stamp_and_no_year_is_an_error(tmp_path: Path) -> None:
    bare = tmp_path / "pvl.log"
    bare.write_bytes(ROTATED[0].read_bytes())
    with pytest.raises(ConfigError, match="--year"):
        list(hpss_pvl.parse(bare, options=OPTS))


def test_a_repeated_completion_counts_once_and_exiting_lines_are_skips() -> None:
    batches = list(hpss_pvl.parse(ROTATED[0], options=OPTS))
    rows = [r for b in batches for r in b.frame.iter_rows(named=True)]
    assert [(r["volume"], r["status"]) for r in rows] == [
        ("B00001", "complete"),
        ("A85532", "no_mount"),
    ]
    assert rows[0]["line_no"] == 6  # the dismount closed it
    assert sum(b.skipped for b in batches) == 7 and not any(b.rejects for b in batches)


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
def test_rotated_files_in_any_order_in_one_command(dsn: str, order: tuple[int, ...]) -> None:
    reset(dsn)
    ingest_files(dsn, FMT, [ROTATED[i] for i in order], OPTS)
    assert mounts(dsn) == EXPECTED


def test_a_mount_left_open_is_completed_by_a_later_ingest(dsn: str) -> None:
    reset(dsn)
    ingest_file(dsn, FMT, ROTATED[1], OPTS)
    assert {(m[0], m[5]) for m in mounts(dsn)} == {
        ("A85532", "no_dismount"),
        ("C00001", "no_dismount"),
    }
    ingest_file(dsn, FMT, ROTATED[2], OPTS)
    ingest_file(dsn, FMT, ROTATED[0], OPTS)
    assert mounts(dsn) == EXPECTED
    # loading them again changes nothing
    assert {r.status for r in ingest_files(dsn, FMT, ROTATED, OPTS)} == {"unchanged"}
    assert mounts(dsn) == EXPECTED


MID = Path(__file__).parent.parent / "data" / "logs" / "pvl-midmount"
CUT = [MID / "pvl.log-20130313", MID / "pvl.log-20130314"]


def m(volume: str, drive: str, times: str, status: str) -> tuple[object, ...]:
    """A mount row from "MM/DD HH:MM:SS" requested, mounted and dismounted times (2013)."""
    at = [t(int(x[:2]), int(x[3:5]), x[6:]) for x in times.split(", ")]
    return (volume, drive, *at, status)


WHOLE = {
    m("MS0362", "4007", "03/12 23:05:51, 03/12 23:05:59, 03/12 23:23:32", "complete"),
    # completed on 101113, unreadable there, completed again by the same job on 101102
    m("JD0412", "101102", "03/12 23:10:00, 03/12 23:12:40, 03/12 23:30:00", "complete"),
    # completion entered in the first file, returned in the second, dismounted there
    m("WB1879", "102108", "03/12 23:40:10, 03/12 23:42:36, 03/13 00:43:57", "complete"),
    # requested in the first file, mounted and dismounted in the second
    m("CB6324", "101113", "03/12 23:55:00, 03/13 00:01:22, 03/13 01:10:00", "complete"),
    # mounted, then the client cancelled the job: the PVR dismounts, the PVL logs no dismount
    m("RB5860", "101115", "03/13 01:00:00, 03/13 01:05:40, 03/13 01:12:12", "aborted"),
}


def pieces(dsn: str) -> set[tuple[object, ...]]:
    with psycopg.connect(dsn) as conn:
        return set(conn.execute("select volume, kind, at from tapelens.mount_pieces").fetchall())


def rows(path: Path) -> list[dict[str, object]]:
    return [r for b in hpss_pvl.parse(path, options=OPTS) for r in b.frame.iter_rows(named=True)]


def test_a_file_that_starts_mid_mount_ends_the_mount_at_its_dismount() -> None:
    got = {r["volume"]: r for r in rows(CUT[1])}
    # the completion's Entering line is in the file before: its Exiting line mounts it
    wb = got["WB1879"]
    assert (wb["mounted_at"], wb["dismounted_at"], wb["drive"], wb["status"]) == (
        t(3, 12, "23:42:38"),
        t(3, 13, "00:43:57"),
        "102108",
        "no_request",
    )
    assert got["CB6324"]["status"] == "no_request"
    cancelled = got["RB5860"]
    assert (cancelled["dismounted_at"], cancelled["status"]) == (t(3, 13, "01:12:12"), "aborted")


def test_a_file_that_ends_mid_mount_leaves_a_request_that_is_no_mount() -> None:
    got = {r["volume"]: r for r in rows(CUT[0])}
    assert got["WB1879"]["status"] == "no_dismount"
    assert got["JD0412"]["drive"] == "101102"
    request = got["CB6324"]
    assert (request["status"], request["requested_at"], request["dismounted_at"]) == (
        "no_mount",
        t(3, 12, "23:55:00"),
        None,
    )


@pytest.mark.parametrize("order", [(0, 1), (1, 0)], ids=["in-order", "reversed"])
def test_a_rotation_cut_mid_mount_loads_one_mount_per_mount(
    dsn: str, order: tuple[int, int]
) -> None:
    reset(dsn)
    first, second = (CUT[i] for i in order)
    ingest_file(dsn, FMT, first, OPTS)
    alone = mounts(dsn)
    assert not any(row[5] == "no_mount" for row in alone)  # a request is not a mount
    ingest_file(dsn, FMT, second, OPTS)
    assert mounts(dsn) == WHOLE
    assert pieces(dsn) == set()
    # loading either again changes nothing
    for path in CUT:
        assert ingest_file(dsn, FMT, path, OPTS).status == "unchanged"
    assert mounts(dsn) == WHOLE


def test_a_request_never_mounted_stays_a_piece(dsn: str) -> None:
    reset(dsn)
    ingest_file(dsn, FMT, CUT[0], OPTS)
    assert pieces(dsn) == {("CB6324", "request", t(3, 12, "23:55:00"))}
    assert {row[0] for row in mounts(dsn)} == {"MS0362", "JD0412", "WB1879"}
    # every mount of the second file is whole once the first is in
    ingest_file(dsn, FMT, CUT[1], OPTS)
    assert pieces(dsn) == set()


@pytest.mark.parametrize("order", [(0, 1), (1, 0)], ids=["in-order", "reversed"])
def test_a_rotation_cut_mid_mount_in_one_command(dsn: str, order: tuple[int, int]) -> None:
    reset(dsn)
    ingest_files(dsn, FMT, [CUT[i] for i in order], OPTS)
    assert mounts(dsn) == WHOLE
    assert pieces(dsn) == set()


def test_every_call_read_from_its_exiting_line_when_its_entering_line_is_elsewhere(
    tmp_path: Path,
) -> None:
    """A file whose first lines return calls entered in the file before: each is its event."""
    log = tmp_path / "pvl.log-20130314"
    log.write_text(
        '03/13 00:00:01 RQST PVLS0002 Exiting, function = "pvl_MountAdd", jobid = "31",'
        ' arg = "AA000100"\n'
        '03/13 00:00:02 RQST PVLS0002 Exiting, function = "pvl_DismountVolume",'
        ' arg = "BB000100"\n'
        '03/13 00:03:00 RQST PVLS0001 Entering, function = "pvl_MountCompleted", jobid = "31",'
        ' drive = "7", arg = "AA0001"\n'
        '03/13 00:03:01 RQST PVLS0002 Exiting, function = "pvl_MountCompleted", jobid = "31",'
        ' drive = "7", arg = "AA0001"\n'
    )
    got = {r["volume"]: r for r in rows(log)}
    assert (got["AA0001"]["requested_at"], got["AA0001"]["mounted_at"]) == (
        t(3, 13, "00:00:01"),
        t(3, 13, "00:03:00"),
    )
    assert (got["BB0001"]["status"], got["BB0001"]["dismounted_at"]) == (
        "no_mount",
        t(3, 13, "00:00:02"),
    )
