"""CTA tape daemon logs as CTA's logger writes them (cern-cta/CTA, common/log/Logger.cpp).

- tests/data/logs/cta-taped-2024.log: key="value" lines with sessions that fail or are aborted,
  file lines and their session line on one thread (local times in Europe/Zurich);
- tests/data/logs/cta-taped.log-20230105: CTA 4 (2022) lines, ".%06lu" fractions, parameters
  in context order; the file reads come from each session's tape thread (child process) and
  "Tape session finished" from the drive handler (the parent, one pid and tid for every drive:
  tapeserver/daemon/DriveHandler.cpp, tapeserver/castor/tape/tapeserver/daemon/
  TapeReadSingleThread.cpp, TapeReadTask.hpp, DataTransferSession.cpp at that time); rotated
  by logrotate after New Year, December's lines are of the year before the stamp;
- tests/data/logs/cta-taped-5.jsonl and cta-taped.log-2026-04-11: CTA 5 (2026) JSON and
  key="value" lines, nine-digit fractions, static parameters (drive_name, instance,
  sched_backend) and parameters in name order; a crashed session reported twice by the drive
  handler (taped/daemon/DriveHandler.cpp, processSigChild)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

from tapelens.errors import ConfigError
from tapelens.ingest.formats import cta_taped, lookup
from tapelens.ingest.formats.base import ParseOptions
from tapelens.ingest.load import ingest_file

LOG = Path(__file__).parent.parent / "data" / "logs" / "cta-taped-2024.log"
ZURICH = ParseOptions(source="cta", timezone="Europe/Zurich")


def rows_of(
    fn: object, path: Path, options: ParseOptions
) -> tuple[list[dict], dict[int, str], int]:
    batches = list(fn(path, options=options))  # type: ignore[operator]
    rows = [r for b in batches for r in b.frame.iter_rows(named=True)]
    return (
        rows,
        {r.line_no: r.reason for b in batches for r in b.rejects},
        sum(b.skipped for b in batches),
    )


def test_sessions_with_their_outcome_and_real_times() -> None:
    mounts, rejects, skipped = rows_of(cta_taped.parse_mounts, LOG, ZURICH)
    by_volume = {m["volume"]: m for m in mounts}
    ok = by_volume["L81234"]
    # 13:25 in Zurich (UTC+2) minus the session's 300 s
    assert ok["requested_at"] == datetime(2024, 6, 2, 11, 20, tzinfo=UTC)
    assert ok["dismounted_at"] == datetime(2024, 6, 2, 11, 24, 45, tzinfo=UTC)
    assert (ok["status"], ok["purpose"], ok["line_no"]) == ("complete", "read", 5)
    failed = by_volume["L81999"]
    assert failed["status"] == "failed"
    assert (failed["dismounted_at"] - failed["requested_at"]).total_seconds() == 345
    aborted = by_volume["L82000"]
    assert (aborted["status"], aborted["purpose"]) == ("aborted", "write")
    assert aborted["dismounted_at"] > aborted["mounted_at"]
    # the log crosses into the next year
    assert by_volume["L82002"]["requested_at"].year == 2024
    assert by_volume["L82003"]["requested_at"] == datetime(2024, 12, 31, 23, 8, tzinfo=UTC)
    assert rejects == {10: 'expected key="value" at character 93 of the message'}
    assert skipped == 6  # systemd, kernel, session start, and the three file lines


def test_file_reads_take_their_sessions_tape() -> None:
    reads, rejects, _ = rows_of(cta_taped.parse, LOG, ZURICH)
    by_file = {r["file_id"]: r for r in reads}
    first = by_file["4211190"]
    assert (first["volume"], first["drive"], first["position"]) == (
        "L81234",
        "IBMLIB4-LTO8-05",
        1375,
    )
    # 13:21:40.75 in Zurich, minus the read's 28.75 s
    assert first["started_at"] == datetime(2024, 6, 2, 11, 21, 12, tzinfo=UTC)
    # CTA writes a double quote of a value as a single quote and escapes nothing
    assert by_file["4211191"]["path"] == "/eos/ctaatlas/data24/run '481'/f002.raw"
    error = by_file["4300001"]
    assert (error["status"], error["error"], error["volume"]) == (
        "failed",
        "Medium error: unrecovered read error",
        "L81999",
    )
    assert 10 in rejects


def test_no_year_anywhere_is_a_clear_error(tmp_path: Path) -> None:
    bare = tmp_path / "cta-taped.log"
    bare.write_bytes(LOG.read_bytes())
    with pytest.raises(ConfigError, match="--year"):
        list(cta_taped.parse_mounts(bare, options=ZURICH))
    mounts, _, _ = rows_of(
        cta_taped.parse_mounts, bare, ParseOptions(source="cta", year=2023, timezone="UTC")
    )
    assert mounts[0]["requested_at"] == datetime(2023, 6, 2, 13, 20, tzinfo=UTC)


def test_iso_prefixed_lines_carry_their_zone(tmp_path: Path) -> None:
    log = tmp_path / "taped.log"
    log.write_text(
        '2024-06-02T13:25:00.000000+02:00 tpsrv01 cta-taped: LVL="INFO" PID="1" TID="2"'
        ' MSG="Tape session finished" tapeVid="L81234" tapeDrive="D1" status="success"'
        ' mountTime="45" unloadTime="20" unmountTime="15" totalTime="300"\n'
    )
    mounts, rejects, _ = rows_of(cta_taped.parse_mounts, log, ParseOptions(source="cta"))
    assert rejects == {}
    assert mounts[0]["requested_at"] == datetime(2024, 6, 2, 11, 20, tzinfo=UTC)


def test_failed_sessions_load_and_count(dsn: str) -> None:
    result = ingest_file(dsn, lookup("mounts", "cta-taped"), LOG, ZURICH)
    assert (result.rows, result.rejects) == (5, 1)
    with psycopg.connect(dsn) as conn:
        found = conn.execute(
            "select status, count(*) from tapelens.mounts group by status order by status"
        ).fetchall()
    assert found == [("aborted", 1), ("complete", 3), ("failed", 1)]


ROTATED = LOG.parent / "cta-taped.log-20230105"
JSON5 = LOG.parent / "cta-taped-5.jsonl"
KV5 = LOG.parent / "cta-taped.log-2026-04-11"


def test_reads_find_their_session_by_its_context_not_its_thread() -> None:
    """Two drives' sessions at once on one host; every session line from the drive handler's
    pid and tid, no read from it: each read takes the tape and drive of its mountId."""
    reads, rejects, _ = rows_of(cta_taped.parse, ROTATED, ZURICH)
    assert rejects == {}
    got = {r["file_id"]: (r["volume"], r["drive"], r["position"], r["line_no"]) for r in reads}
    assert got == {
        "4801234": ("L80411", "IBM460-LTO8-11", 812, 4),
        "4801240": ("L80411", "IBM460-LTO8-11", 813, 5),
        "4805511": ("L80977", "IBM460-LTO8-12", 3, 7),
        "4900017": ("L81502", "IBM460-LTO8-11", 1, 11),
        "4901202": ("L81777", "IBM460-LTO8-12", 2, 14),
    }
    # 21:15:20.771320 in Zurich (UTC+1) minus totalTime 29.3692 s
    first = next(r for r in reads if r["file_id"] == "4801234")
    assert first["started_at"] == datetime(2022, 12, 30, 20, 14, 51, tzinfo=UTC)


def test_thread_pairing_alone_would_refuse_every_read(tmp_path: Path) -> None:
    """The same log without the session context on its file lines: nothing but pid and tid
    is left, and the session lines come from another process."""
    bare = tmp_path / ROTATED.name
    lines = ROTATED.read_text().splitlines(keepends=True)
    bare.write_text(
        "".join(
            re.sub(r' (tapeVid|mountId)="[^"]*"', "", ln) if cta_taped.READ_OK in ln else ln
            for ln in lines
        )
    )
    reads, rejects, _ = rows_of(cta_taped.parse, bare, ZURICH)
    assert reads == [] and sorted(rejects) == [4, 5, 7, 11, 14]
    assert rejects[7] == (
        'no "Tape session finished" line follows for hostname "tpsrv102", pid 11044, tid 11061'
    )


def test_sessions_of_a_log_rotated_after_new_year() -> None:
    mounts, rejects, skipped = rows_of(cta_taped.parse_mounts, ROTATED, ZURICH)
    assert rejects == {}
    by_volume = {m["volume"]: m for m in mounts}
    assert set(by_volume) == {"L80411", "L80977", "L81502", "L81777"}
    a = by_volume["L80411"]
    # 21:19:42.53 in Zurich (UTC+1) minus totalTime 340.411 s; mounted 49.2838 s later;
    # dismounted unmountTime 12.2209 s before the end
    assert (a["requested_at"], a["mounted_at"], a["dismounted_at"]) == (
        datetime(2022, 12, 30, 20, 14, 2, tzinfo=UTC),
        datetime(2022, 12, 30, 20, 14, 51, tzinfo=UTC),
        datetime(2022, 12, 30, 20, 19, 30, tzinfo=UTC),
    )
    assert by_volume["L81502"]["requested_at"] == datetime(2023, 1, 4, 9, 2, 11, tzinfo=UTC)
    killed = by_volume["L81777"]
    # killed with its process: no times in the session line; the session began with its tape
    # thread's first line and ended when the drive handler reported it
    assert (killed["status"], killed["requested_at"], killed["dismounted_at"]) == (
        "aborted",
        datetime(2023, 1, 4, 10, 30, 5, tzinfo=UTC),
        datetime(2023, 1, 4, 10, 52, 48, tzinfo=UTC),
    )
    # the systemd line, the session starts, the mount line, the file lines, and the session
    # line of a child that mounted nothing
    assert skipped == 12


@pytest.mark.parametrize("path", [JSON5, KV5], ids=["json", "key-value"])
def test_cta5_lines_and_a_crash_reported_twice(path: Path) -> None:
    options = ParseOptions(source="cta", timezone="Europe/Zurich")
    reads, rejects, _ = rows_of(cta_taped.parse, path, options)
    assert rejects == {}
    assert [(r["file_id"], r["volume"], r["drive"]) for r in reads] == [
        ("7700001", "L90112", "IBM355-LTO9-03"),
        ("7700002", "L90112", "IBM355-LTO9-03"),
        ("7800001", "L90230", "IBM355-LTO9-04"),
    ]
    mounts, rejects, _ = rows_of(cta_taped.parse_mounts, path, options)
    assert rejects == {}
    assert [(m["volume"], m["status"], m["line_no"]) for m in mounts] == [
        ("L90112", "complete", 6),
        ("L90230", "aborted", 8),
    ]
    crashed = mounts[1]
    assert (crashed["requested_at"], crashed["dismounted_at"]) == (
        datetime(2026, 4, 10, 7, 2, tzinfo=UTC),
        datetime(2026, 4, 10, 7, 6, 40, tzinfo=UTC),
    )


def test_both_cta5_forms_load_the_same_rows(dsn: str) -> None:
    options = ParseOptions(source="cta", timezone="Europe/Zurich")
    for path in (JSON5, KV5):
        result = ingest_file(dsn, lookup("transfers", "cta-taped"), path, options)
        assert (result.rows, result.rejects) == (3, 0)
    with psycopg.connect(dsn) as conn:
        found = conn.execute(
            "select file_id, volume, drive, count(*) from tapelens.transfers"
            " where source = 'cta' and volume in ('L90112', 'L90230')"
            " group by file_id, volume, drive order by file_id"
        ).fetchall()
    # the two forms of one log give the same transfers: the second load adds none
    assert found == [
        ("7700001", "L90112", "IBM355-LTO9-03", 1),
        ("7700002", "L90112", "IBM355-LTO9-03", 1),
        ("7800001", "L90230", "IBM355-LTO9-04", 1),
    ]


def test_reads_without_a_mount_id_find_their_session_by_tape_and_time(tmp_path: Path) -> None:
    """Reads that name their tape but no mountId and no drive: the session line of that tape on
    that host takes those within its time span (totalTime before it); a read of the same tape
    before that span belongs to an earlier session whose line is not in the file: it keeps its
    tape, without a drive."""
    log = tmp_path / "cta-taped.log-20230105"
    head = 'tpsrv102 cta-taped: LVL="INFO" PID="{pid}" TID="{tid}" MSG="{msg}" '
    read = 'tapeVid="L7" thread="TapeRead" fileId="{f}" fSeq="{f}" totalTime="5.0" dataVolume="1" '
    lines = [
        "Jan  4 09:00:00.000000 "
        + head.format(pid=5, tid=6, msg=cta_taped.READ_OK)
        + read.format(f=1),
        "Jan  4 10:00:10.000000 "
        + head.format(pid=7, tid=8, msg=cta_taped.READ_OK)
        + read.format(f=2),
        "Jan  4 10:00:20.000000 "
        + head.format(pid=7, tid=8, msg=cta_taped.READ_OK)
        + read.format(f=3),
        "Jan  4 10:01:00.000000 "
        + head.format(pid=1, tid=1, msg=cta_taped.SESSION_END)
        + 'tapeVid="L7" tapeDrive="D9" status="success" totalTime="70.0" ',
    ]
    log.write_text("\n".join(lines) + "\n")
    reads, rejects, _ = rows_of(cta_taped.parse, log, ParseOptions(source="cta"))
    assert rejects == {}
    assert sorted((r["file_id"], r["volume"], r["drive"]) for r in reads) == [
        ("1", "L7", None),
        ("2", "L7", "D9"),
        ("3", "L7", "D9"),
    ]
    # a session line without totalTime: it began mountTime before its first read
    log.write_text(
        "\n".join([*lines[1:3], lines[3].replace('totalTime="70.0"', 'mountTime="10.0"')]) + "\n"
    )
    (mount,), rejects, _ = rows_of(cta_taped.parse_mounts, log, ParseOptions(source="cta"))
    assert rejects == {}
    assert (mount["volume"], mount["requested_at"], mount["mounted_at"]) == (
        "L7",
        datetime(2023, 1, 4, 9, 59, 55, tzinfo=UTC),
        datetime(2023, 1, 4, 10, 0, 5, tzinfo=UTC),
    )
