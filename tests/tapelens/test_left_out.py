"""Nothing left out in silence: `plan repack` and `simulate --requests` count on stderr, by
cause, the files on media no given drive reads, and write their list where plan recall writes
its own (FILE.unavailable.csv beside the output); with nothing left to do, they stop with an
error. On a real database: the hand-made site of tests/fixtures/tiny_site.py (dataset C has
C1 on the LTO-8 tape V1 and C2 on the LTO-9 tape V5, which an LTO-8 drive cannot read)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from tests.fixtures import tiny_site as sample
from tests.fixtures.cli import run as tapelens

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def site(module_dsn: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    return sample.with_marts(module_dsn, tmp_path_factory.mktemp("dbt"))


def run(dsn: str, *args: str) -> tuple[int, str, str]:
    """The command's exit code, stdout and stderr, as a user sees them."""
    done = tapelens("--dsn", dsn, *args)
    return done.returncode, done.stdout, done.stderr


def test_plan_repack_lists_the_files_no_given_drive_reads(site: str, tmp_path: Path) -> None:
    out = tmp_path / "repack.csv"
    code, _, err = run(site, "plan", "repack", "--drives", "LTO8:2", "-o", str(out))
    assert code == 0, err
    listed = tmp_path / "repack.unavailable.csv"
    assert f"1 file unavailable (no drive reads LTO-9: 1): {listed}" in err
    assert pl.read_csv(listed).to_dicts() == [
        {
            "path": f"{sample.C}/C2.EVNT.root",
            "file_id": f"{sample.C}/C2.EVNT.root",
            "size_bytes": 3 * sample.GB,
            "reason": "no drive reads LTO-9",
        }
    ]
    # Without -o, the first few are named on stderr, with the option that lists them all.
    code, _, err = run(site, "plan", "repack", "--drives", "LTO8:2")
    assert code == 0, err
    assert "1 file unavailable (no drive reads LTO-9: 1):" in err
    assert f"  {sample.C}/C2.EVNT.root (no drive reads LTO-9)" in err
    # Drives that read every tape leave nothing out, and say nothing of it.
    code, _, err = run(site, "plan", "repack", "--drives", "LTO9:1,LTO7:1")
    assert code == 0, err
    assert "unavailable" not in err


def test_plan_repack_with_no_drive_for_any_candidate_is_an_error(site: str) -> None:
    code, _, err = run(site, "plan", "repack", "--drives", "LTO5:2")
    assert code != 0
    assert "nothing to weigh on drives LTO-5:2: the candidates' files have no readable copy" in err
    assert "Traceback" not in err


def requests(tmp_path: Path, names: list[str]) -> Path:
    path = tmp_path / "requests.csv"
    stamp = datetime(2024, 5, 1, tzinfo=UTC).isoformat()
    path.write_text("path,requester,submitted_at\n" + "".join(f"{n},ann,{stamp}\n" for n in names))
    return path


def test_simulate_requests_lists_the_files_no_given_drive_reads(site: str, tmp_path: Path) -> None:
    wanted = [f"{sample.C}/C1.EVNT.root", f"{sample.C}/C2.EVNT.root", f"{sample.A}/A1.AOD.root"]
    summary = tmp_path / "sim.json"
    args = ["simulate", "--requests", str(requests(tmp_path, wanted)), "--drives", "LTO8:1"]
    code, out, err = run(site, *args, "--summary", str(summary), "--format", "json")
    assert code == 0, err
    listed = tmp_path / "sim.unavailable.csv"
    assert f"1 file unavailable (no drive reads LTO-9: 1): {listed}" in err
    assert pl.read_csv(listed)["path"].to_list() == [f"{sample.C}/C2.EVNT.root"]
    assert '"files": 2' in out  # C1 and A1, from V1
    # A file whose every copy no drive reads is all the list asks: nothing to simulate.
    only = requests(tmp_path, [f"{sample.C}/C2.EVNT.root"])
    code, _, err = run(site, "simulate", "--requests", str(only), "--drives", "LTO8:1")
    assert code != 0
    assert "nothing to simulate: no requested file has a readable copy" in err
    assert "1 file unavailable (no drive reads LTO-9: 1):" in err
