"""HPSS PVL logs as sites keep them: rotated files named by date, a mount split across files,
files loaded in any order or in separate ingests (tests/data/logs/pvl-rotated/)."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

from tapelens.errors import ConfigError
from tapelens.ingest.formats import hpss_pvl, lookup
from tapelens.ingest.formats.base import ParseOptions
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
        conn.execute("truncate tapelens.mounts, tapelens.ingest_runs cascade")


def test_the_year_comes_from_the_date_stamp_of_the_name() -> None:
    assert hpss_pvl.stamp_of("logfile01_201301052000") == (2013, 1)
    assert hpss_pvl.stamp_of("20130313_000000.log") == (2013, 3)
    assert hpss_pvl.stamp_of("pvl.log-20130105") == (2013, 1)
    assert hpss_pvl.stamp_of("pvl.log") is None
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
