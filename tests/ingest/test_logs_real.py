"""dCache billing in local time, as pools write it (tests/data/logs/billing-2021.11.02)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from tapelens.ingest.formats import dcache_billing
from tapelens.ingest.formats.base import ParseOptions

LOGS = Path(__file__).parent.parent / "data" / "logs"


def test_billing_times_are_local_to_the_pool(tmp_path: Path) -> None:
    log = tmp_path / "billing-2021.03.28"
    log.write_text(
        "03.28 01:59:30 [pool:f01-080-128_T:restore] [0000A3C5B52E,3791544320]"
        ' [/pnfs/gridka.de/atlas/f1] atlas:tape@osm 30000 904 {0:""}\n'
        "03.28 02:30:00 [pool:f01-080-128_T:restore] [0000A3C5B52F,10]"
        ' [/pnfs/gridka.de/atlas/f2] atlas:tape@osm 1000 10 {0:""}\n'
        "03.28 03:10:00 [pool:f01-080-128_T:restore] [0000A3C5B530,10]"
        ' [/pnfs/gridka.de/atlas/f3] atlas:tape@osm 1000 10 {10007:"Tape read error"}\n'
    )
    utc = list(dcache_billing.parse(log, options=ParseOptions(source="d")))
    local = list(
        dcache_billing.parse(log, options=ParseOptions(source="d", timezone="Europe/Berlin"))
    )
    first_utc = utc[0].frame.row(0, named=True)
    rows = [r for b in local for r in b.frame.iter_rows(named=True)]
    rejects = {r.line_no: r.reason for b in local for r in b.rejects}
    assert first_utc["started_at"] == datetime(2021, 3, 28, 1, 59, tzinfo=UTC)
    # 01:59:30 in Berlin (UTC+1 before the change) minus the 30 s transfer
    assert rows[0]["started_at"] == datetime(2021, 3, 28, 0, 59, tzinfo=UTC)
    # 02:30 never happened in Berlin on 28 March 2021
    assert rejects == {2: "2021-03-28 02:30:00 does not exist in Europe/Berlin"}
    failed = rows[1]
    assert (failed["status"], failed["error"]) == ("failed", "Tape read error")
    assert failed["started_at"] == datetime(2021, 3, 28, 1, 9, 59, tzinfo=UTC)
