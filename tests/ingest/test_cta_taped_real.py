"""CTA tape daemon logs in CTA's key="value" syslog form, with sessions that fail or are aborted
(tests/data/logs/cta-taped-2024.log, local times in Europe/Zurich)."""

from __future__ import annotations

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
    assert by_file["4211191"]["path"] == '/eos/ctaatlas/data24/run "481"/f002.raw'
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
