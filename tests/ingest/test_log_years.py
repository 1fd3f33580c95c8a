"""The one year rule of the logs whose lines print no year (logfields.LogYears), on each reader:
CTA taped (syslog prefix), HPSS PVL and dCache billing.

Rotated names as logrotate's dateext writes them (cta-taped.log-20220331, messages-20230105),
dCache's billing-YYYY.MM.DD (dCache/dcache, modules/dcache/src/main/java/org/dcache/services/
billing/cells/BillingCell.java: the date formats "MM.dd HH:mm:ss" and "yyyy.MM.dd") and the
YYYY-MM-DD form."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tapelens.errors import ConfigError
from tapelens.ingest.formats import cta_taped, dcache_billing, hpss_pvl
from tapelens.ingest.formats.base import Batch, ParseOptions
from tapelens.ingest.formats.logfields import YearTracker, name_stamp

TAPELENS = str(Path(sys.executable).parent / "tapelens")  # the installed command
MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]


def cta_line(month: int, day: int, n: int) -> str:
    # CTA's own prefix: "%b %e %T" and the fraction (common/log/Logger.cpp)
    return (
        f'{MONTHS[month - 1]} {day:>2} 10:00:{n:02d}.000000 tpsrv01 cta-taped: LVL="INFO"'
        f' PID="1" TID="1" MSG="Tape session finished" tapeVid="V{n:05d}" mountId="{n}"'
        ' tapeDrive="D1" status="success" mountTime="1.0" unmountTime="1.0" totalTime="10.0" '
    )


def pvl_line(month: int, day: int, n: int) -> str:
    return (
        f"{month:02d}/{day:02d} 10:00:{n:02d} RQST PVLS0001 Entering,"
        f' function = "pvl_MountCompleted", jobid = "{n}", drive = "1", arg = "V{n:05d}"'
    )


def billing_line(month: int, day: int, n: int) -> str:
    return (
        f"{month:02d}.{day:02d} 10:00:{n:02d} [pool:p1:restore] [0000{n:04d},10]"
        f' [/pnfs/a/f{n}] a:tape@osm 0 0 {{0:""}}'
    )


Reader = Callable[..., Iterator[Batch]]
READERS: list[tuple[str, Reader, Callable[[int, int, int], str], str]] = [
    ("cta-taped", cta_taped.parse_mounts, cta_line, "requested_at"),
    ("hpss-pvl", hpss_pvl.parse, pvl_line, "mounted_at"),
    ("dcache-billing", dcache_billing.parse, billing_line, "started_at"),
]
IDS = [r[0] for r in READERS]


def years(fn: Reader, path: Path, column: str, **options: Any) -> list[int]:
    batches = list(fn(path, options=ParseOptions(source="s", **options)))
    assert not [r for b in batches for r in b.rejects]
    return [r[column].year for b in batches for r in b.frame.iter_rows(named=True)]


def write(tmp_path: Path, name: str, lines: list[str]) -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def test_date_stamps_a_name_can_carry() -> None:
    assert name_stamp("cta-taped.log-20220331") == (2022, 3)
    assert name_stamp("/var/log/messages-20230105.gz") == (2023, 1)
    assert name_stamp("billing-2021.11.02") == (2021, 11)
    assert name_stamp("pvl-2013-01-05.log") == (2013, 1)
    assert name_stamp("logfile01_201301052000") == (2013, 1)  # the time may follow
    assert name_stamp("cta-taped.log") is None
    assert name_stamp("cta-taped-2024.log") is None  # a year alone is not a stamp
    assert name_stamp("a-2021.1102") is None  # the separator twice, or not at all
    assert name_stamp("pvl-20130131-20130201") is None  # two months: which one?
    assert name_stamp("-") is None


@pytest.mark.parametrize(("fmt", "fn", "line", "column"), READERS, ids=IDS)
@pytest.mark.parametrize("stamp", ["20230105", "2023-01-05", "2023.01.05"])
def test_december_lines_in_a_file_rotated_in_january(
    tmp_path: Path,
    fmt: str,
    fn: Reader,
    line: Callable[[int, int, int], str],
    column: str,
    stamp: str,
) -> None:
    path = write(tmp_path, f"{fmt}.log-{stamp}", [line(12, 30, 1), line(12, 31, 2), line(1, 4, 3)])
    assert years(fn, path, column) == [2022, 2022, 2023]


@pytest.mark.parametrize(("fmt", "fn", "line", "column"), READERS, ids=IDS)
def test_a_line_of_the_stamps_month_is_of_the_stamps_year(
    tmp_path: Path, fmt: str, fn: Reader, line: Callable[[int, int, int], str], column: str
) -> None:
    path = write(tmp_path, f"{fmt}.log-20220331", [line(3, 24, 1), line(3, 31, 2)])
    assert years(fn, path, column) == [2022, 2022]
    # a month later than the stamp's is the year before: a file that spans most of a year
    path = write(tmp_path, f"{fmt}.log-20220331", [line(4, 2, 1), line(3, 30, 2)])
    assert years(fn, path, column) == [2021, 2022]


@pytest.mark.parametrize(("fmt", "fn", "line", "column"), READERS, ids=IDS)
def test_year_overrides_the_stamp(
    tmp_path: Path, fmt: str, fn: Reader, line: Callable[[int, int, int], str], column: str
) -> None:
    path = write(tmp_path, f"{fmt}.log-20230105", [line(12, 30, 1), line(1, 4, 2)])
    # --year is the first line's year; the log then crosses into the next
    assert years(fn, path, column, year=2019) == [2019, 2020]


@pytest.mark.parametrize(("fmt", "fn", "line", "column"), READERS, ids=IDS)
def test_no_stamp_and_no_year_is_one_clear_error(
    tmp_path: Path, fmt: str, fn: Reader, line: Callable[[int, int, int], str], column: str
) -> None:
    path = write(tmp_path, f"{fmt}.log", [line(12, 30, 1)])
    with pytest.raises(ConfigError) as err:
        years(fn, path, column)
    message = str(err.value)
    assert "\n" not in message
    assert f"{fmt}.log" in message and "--year" in message


def test_a_line_a_moment_out_of_order_does_not_start_a_new_year() -> None:
    """Several processes write one log: a line stamped just before the month turned can follow
    one stamped just after it."""
    tracker = YearTracker(2022)
    seen = []
    for month in (3, 4, 3, 4, 12, 1, 12, 1, 2):
        seen.append(tracker.peek(month))
        tracker.commit(month)
    assert seen == [2022, 2022, 2022, 2022, 2022, 2023, 2022, 2023, 2023]


def test_stamped_lines_are_dated_one_by_one(tmp_path: Path) -> None:
    """With a stamp, a line out of order across New Year keeps its own year."""
    path = write(
        tmp_path,
        "cta-taped.log-20230105",
        [cta_line(1, 1, 1), cta_line(12, 31, 2), cta_line(1, 1, 3)],
    )
    got = list(cta_taped.parse_mounts(path, options=ParseOptions(source="s")))
    starts = [r["requested_at"] for b in got for r in b.frame.iter_rows(named=True)]
    assert starts == [
        datetime(2023, 1, 1, 9, 59, 51, tzinfo=UTC),
        datetime(2022, 12, 31, 9, 59, 52, tzinfo=UTC),
        datetime(2023, 1, 1, 9, 59, 53, tzinfo=UTC),
    ]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("kind", "fmt", "line"),
    [
        ("transfers", "cta-taped", cta_line),
        ("mounts", "hpss-pvl", pvl_line),
        ("transfers", "dcache-billing", billing_line),
    ],
    ids=IDS,
)
def test_the_command_says_it_in_one_line(
    dsn: str, tmp_path: Path, kind: str, fmt: str, line: Callable[[int, int, int], str]
) -> None:
    path = write(tmp_path, "current.log", [line(12, 30, 1)])
    command = [TAPELENS, "--dsn", dsn, "ingest", kind, "--format", fmt]
    result = subprocess.run([*command, str(path)], capture_output=True, text=True, check=False)
    assert result.returncode == 2
    said = result.stderr.strip().splitlines()
    assert len(said) == 1 and "current.log" in said[0] and "--year" in said[0]
    stamped = write(tmp_path, "current.log-20230105", [line(12, 30, 1)])
    result = subprocess.run([*command, str(stamped)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
