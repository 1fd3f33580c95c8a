"""The catalog is never lost: the shrink guard, restoring an older dump, a dump in several
files, and two identical ingests at once, against a real TimescaleDB and the real CLI."""

from __future__ import annotations

import threading
from pathlib import Path

import psycopg
import pytest

from tapelens.errors import ConfigError
from tapelens.ingest.datasets import DatasetRules
from tapelens.ingest.formats.base import ParseOptions
from tapelens.ingest.load import IngestResult, ShrinkGuard, ShrinkRefused, ingest_file, ingest_files
from tests.fixtures.cli import run
from tests.fixtures.fake_formats import FAKE_CATALOG

OPTS = ParseOptions(source="fake")


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


def dump(path: Path, n: int, first: int = 1, volume: str = "V00001L8") -> Path:
    return write(path, [f"{volume} {i} 100 /x/d/f{i}" for i in range(first, first + n)])


def live(dsn: str) -> list[int]:
    with psycopg.connect(dsn) as conn:
        found = conn.execute(
            "select position from tapelens.tape_files where removed_at is null order by position"
        ).fetchall()
    return [r[0] for r in found]


def runs(dsn: str) -> list[tuple[str, str]]:
    with psycopg.connect(dsn) as conn:
        found = conn.execute(
            "select path, status from tapelens.ingest_runs order by run_id"
        ).fetchall()
    return [(Path(p).name, s) for p, s in found]


def test_a_dump_retiring_more_than_the_share_is_refused_unchanged(dsn: str, tmp_path: Path) -> None:
    ingest_file(dsn, FAKE_CATALOG, dump(tmp_path / "full.txt", 100), OPTS)
    # 10 of 100 gone is within the default 10%
    result = ingest_file(dsn, FAKE_CATALOG, dump(tmp_path / "ninety.txt", 90), OPTS)
    assert (result.status, result.removed) == ("loaded", 10)
    # half of the rest is not
    with pytest.raises(ShrinkRefused) as err:
        ingest_file(dsn, FAKE_CATALOG, dump(tmp_path / "half.txt", 45), OPTS)
    message = str(err.value)
    assert "would retire 45 of the 90 live copies (50%, more than the 10% allowed)" in message
    assert "--allow-shrink" in message and "\n" not in message
    assert live(dsn) == list(range(1, 91))
    assert runs(dsn)[-1] == ("half.txt", "failed")
    result = ingest_file(
        dsn, FAKE_CATALOG, dump(tmp_path / "half.txt", 45), OPTS, guard=ShrinkGuard(allow=True)
    )
    assert (result.status, result.removed) == ("loaded", 45)
    assert live(dsn) == list(range(1, 46))


def test_an_empty_dump_is_always_refused(dsn: str, tmp_path: Path) -> None:
    ingest_file(dsn, FAKE_CATALOG, dump(tmp_path / "one.txt", 1), OPTS)
    empty = write(tmp_path / "empty.txt", [])
    with pytest.raises(ShrinkRefused, match="lists no copy and would retire all 1 live copies"):
        ingest_file(dsn, FAKE_CATALOG, empty, OPTS, guard=ShrinkGuard(max_share=1.0))
    assert live(dsn) == [1]


def test_a_per_volume_listing_is_judged_on_its_volumes(dsn: str, tmp_path: Path) -> None:
    ingest_file(dsn, FAKE_CATALOG, dump(tmp_path / "a.txt", 50, volume="V00001L8"), OPTS)
    ingest_file(
        dsn,
        FAKE_CATALOG,
        dump(tmp_path / "b.txt", 50, volume="V00002L8"),
        OPTS,
        partial=True,
    )
    # V00002L8 listed again with 40 of its 50 files: 20% of that volume, refused
    with pytest.raises(ShrinkRefused, match="10 of the 50 live copies"):
        ingest_file(
            dsn, FAKE_CATALOG, dump(tmp_path / "b2.txt", 40, volume="V00002L8"), OPTS, partial=True
        )


def test_an_older_dump_loaded_again_restores_the_catalog(dsn: str, tmp_path: Path) -> None:
    old = dump(tmp_path / "old.txt", 20)
    new = dump(tmp_path / "new.txt", 20, first=3)  # f1, f2 gone; f21, f22 new
    guard = ShrinkGuard(allow=True)
    ingest_file(dsn, FAKE_CATALOG, old, OPTS)
    ingest_file(dsn, FAKE_CATALOG, new, OPTS, guard=guard)
    assert live(dsn) == list(range(3, 23))
    # the new dump is the current state: loading it again changes nothing
    assert ingest_file(dsn, FAKE_CATALOG, new, OPTS).status == "unchanged"
    # the old one is not: it loads and restores its state
    restored = ingest_file(dsn, FAKE_CATALOG, old, OPTS, guard=guard)
    assert (restored.status, restored.removed) == ("loaded", 2)
    assert live(dsn) == list(range(1, 21))
    assert ingest_file(dsn, FAKE_CATALOG, old, OPTS).status == "unchanged"


def test_files_of_one_dump_load_as_their_union(dsn: str, tmp_path: Path) -> None:
    whole = dump(tmp_path / "whole.txt", 30)
    ingest_file(dsn, FAKE_CATALOG, whole, OPTS)
    parts = [dump(tmp_path / "p1.txt", 15), dump(tmp_path / "p2.txt", 15, first=16)]
    # one after the other, each part would retire the other half; together they retire nothing
    results = ingest_files(dsn, FAKE_CATALOG, parts, OPTS)
    assert [(r.status, r.rows, r.removed) for r in results] == [
        ("loaded", 15, 0),
        ("loaded", 15, 0),
    ]
    assert live(dsn) == list(range(1, 31))
    again = ingest_files(dsn, FAKE_CATALOG, parts, OPTS)
    assert [r.status for r in again] == ["unchanged", "unchanged"]
    # a part that cannot be read fails the whole dump, and nothing of it changes anything
    bad = write(tmp_path / "p3.txt", ["V00001L8 x 1 /x/d/bad"])
    with pytest.raises(Exception, match=r"p3\.txt:1"):
        ingest_files(
            dsn,
            FAKE_CATALOG,
            [dump(tmp_path / "q1.txt", 10), bad],
            ParseOptions(source="fake", strict=True),
        )
    assert live(dsn) == list(range(1, 31))


def test_two_identical_ingests_at_once_load_once(dsn: str, tmp_path: Path) -> None:
    f = dump(tmp_path / "same.txt", 5_000)
    options = ParseOptions(source="fake", batch_rows=500, extra={"delay_per_batch": 0.05})
    results: list[IngestResult] = []
    errors: list[BaseException] = []

    def load() -> None:
        try:
            results.append(ingest_file(dsn, FAKE_CATALOG, f, options))
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    threads = [threading.Thread(target=load) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(r.status for r in results) == ["loaded", "unchanged"]
    assert [s for _, s in runs(dsn)] == ["loaded"]
    assert len(live(dsn)) == 5_000


def test_a_regex_the_engine_cannot_run_is_refused_up_front() -> None:
    with pytest.raises(ConfigError, match="look-around"):
        DatasetRules(dataset=r"(?<=/data/)(?P<dataset>[^/]+)")


CSV_HEADER = "path,volume,position,size_bytes,written_at"


def csv_dump(path: Path, positions: range) -> Path:
    rows = [f"/x/d/f{i},V00009L8,{i},100,2021-01-01T00:00:00Z" for i in positions]
    return write(path, [CSV_HEADER, *rows])


@pytest.mark.slow
def test_cli_guard_union_and_bad_rule(dsn: str, tmp_path: Path) -> None:
    base = ["--dsn", dsn, "ingest", "catalog", "--format", "csv", "--source", "cli"]
    assert run(*base, str(csv_dump(tmp_path / "all.csv", range(1, 41)))).returncode == 0
    shrunk = csv_dump(tmp_path / "shrunk.csv", range(1, 11))
    refused = run(*base, str(shrunk))
    assert refused.returncode != 0
    assert "Traceback" not in refused.stderr
    assert "would retire 30 of the 40 live copies" in refused.stderr
    assert "--allow-shrink" in refused.stderr
    two = run(
        *base,
        str(csv_dump(tmp_path / "h1.csv", range(1, 21))),
        str(csv_dump(tmp_path / "h2.csv", range(21, 41))),
    )
    assert two.returncode == 0, two.stderr
    assert "marked removed" not in two.stderr
    accepted = run(*base, "--allow-shrink", str(shrunk))
    assert accepted.returncode == 0 and "30 copies marked removed" in accepted.stderr
    bad_rule = run(*base, "--dataset-rule", "(?<=/x/)(?P<dataset>[^/]+)", str(shrunk))
    assert bad_rule.returncode != 0 and "Traceback" not in bad_rule.stderr
    assert "look-around" in bad_rule.stderr


def test_values_the_database_would_refuse_are_refused_with_their_line(
    dsn: str, tmp_path: Path
) -> None:
    from tapelens.ingest.formats import lookup

    long = "/x/" + "d" * 3000
    csv_text = (
        "path,volume,position,size_bytes,written_at\r\n"
        '"/a/b\rc",V00001L8,1,10,2021-01-01T00:00:00Z\r\n'
        "/a/ok,V00001L8,2,10,2021-01-01T00:00:00Z\r\n"
        f"{long},V00001L8,3,10,2021-01-01T00:00:00Z\r\n"
        "/a/late,V00001L8,4,10,3021-01-01T00:00:00Z\r\n"
    )
    path = tmp_path / "export.csv"
    path.write_text(csv_text, newline="")
    result = ingest_file(dsn, lookup("catalog", "csv"), path, ParseOptions(source="csv"))
    assert (result.rows, result.rejects) == (1, 3)
    with psycopg.connect(dsn) as conn:
        refused = conn.execute(
            "select line_no, reason from tapelens.ingest_rejects order by line_no"
        ).fetchall()
    assert [no for no, _ in refused] == [2, 4, 5]
    assert refused[0][1] == "path holds a line break (CR or LF)"
    assert refused[1][1].startswith("path is 3003 bytes long, longer than the 2,048")
    assert "outside the years 1950-2100" in refused[2][1]
