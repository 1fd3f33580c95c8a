"""The drive inventory: a site's CSV (clear errors by line), drives worked out from the mount
logs, the listing, and every command that needs drives taking them by default."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import psycopg
import pytest
from click.testing import CliRunner

from tapelens.cli import cli
from tapelens.errors import InputError, ParseError
from tapelens.ingest.drives import drives_from_mounts, inventory, read_drives_csv, store_drives


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "drives.csv"
    path.write_text(text)
    return path


def test_a_site_csv_in_any_spelling_of_the_types(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "\ufeffDrive,Drive_Type,Library,State\n# spare bay\nd1,LTO8,L1,online\nd2,lto-9,,\n"
        "j1,3592-JF,L2,OFFLINE\n",
    )
    drives = read_drives_csv(path)
    assert drives.rows() == [
        ("d1", "LTO-8", "L1", "online"),
        ("d2", "LTO-9", None, "online"),
        ("j1", "3592-JF", "L2", "offline"),
    ]


@pytest.mark.parametrize(
    "text,line,reason",
    [
        ("name,type\nd1,LTO8\n", 1, "the header names no drive column"),
        ("drive,drive_type\nd1,LTO8\nd2,LTO99\n", 3, "unknown drive type 'LTO99'"),
        ("drive,drive_type\nd1,LTO8,extra\n", 2, "expected 2 fields"),
        ("drive,drive_type,state\nd1,LTO8,broken\n", 2, "state 'broken': expected online or"),
        ("drive,drive_type\nd1,LTO8\nd1,LTO9\n", 3, "drive 'd1' listed twice"),
    ],
)
def test_a_bad_line_is_named(tmp_path: Path, text: str, line: int, reason: str) -> None:
    with pytest.raises(ParseError) as caught:
        read_drives_csv(write(tmp_path, text))
    assert caught.value.line == line and reason in caught.value.reason
    with pytest.raises(InputError, match="no drives"):
        read_drives_csv(write(tmp_path, "# nothing\n"))


def test_loading_twice_changes_nothing_and_mounts_give_drive_types(
    dsn: str, tmp_path: Path
) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "insert into tapelens.tapes (volume, media_type, state) values"
            " ('T7', 'LTO-7', 'full'), ('T8', 'LTO-8', 'full'), ('T9', 'LTO-9', 'full')"
        )
        conn.execute(
            "insert into tapelens.mounts (source, volume, drive, mounted_at, ingest_run_id)"
            " values ('s', 'T7', 'a', '2024-01-01', 1), ('s', 'T8', 'a', '2024-01-02', 1),"
            " ('s', 'T9', 'b', '2024-01-03', 1), ('s', 'T8', 'b', '2024-01-04', 1),"
            " ('s', 'T7', null, '2024-01-05', 1)"
        )
        derived = drives_from_mounts(conn)
        # a mounts LTO-7 and LTO-8 (an LTO-8 drive); b mounts LTO-8 and LTO-9 (an LTO-9 drive)
        assert derived.select("drive", "drive_type").rows() == [("a", "LTO-8"), ("b", "LTO-9")]
        assert store_drives(conn, derived) == (2, 0)
        assert store_drives(conn, derived) == (0, 0)
        listed = inventory(conn)
        assert listed.select("drive", "mounts").rows() == [("a", 2), ("b", 2)]

    # The inventory is what the planner takes without --drives.
    runner = CliRunner()
    result = runner.invoke(cli, ["--dsn", dsn, "drives", "--format", "csv"])
    assert result.exception is None and result.stdout.splitlines()[0].startswith("drive,")
    site = write(tmp_path, "drive,drive_type,state\na,LTO8,offline\nc,LTO7,online\n")
    result = runner.invoke(cli, ["--dsn", dsn, "drives", "load", str(site)])
    assert result.exception is None, result.exception
    with psycopg.connect(dsn) as conn:
        assert inventory(conn).select("drive", "drive_type", "state").rows() == [
            ("c", "LTO-7", "online"),
            ("a", "LTO-8", "offline"),
            ("b", "LTO-9", "online"),
        ]


def test_a_plan_without_drives_takes_the_inventory_or_says_how(dsn: str, tmp_path: Path) -> None:
    asked = tmp_path / "asked.txt"
    asked.write_text("/store/f1\n")
    runner = CliRunner()
    none = runner.invoke(cli, ["--dsn", dsn, "plan", "recall", str(asked)])
    assert isinstance(none.exception, InputError)
    assert "tapelens drives load" in str(none.exception)
    with psycopg.connect(dsn, autocommit=True) as conn:
        store_drives(
            conn,
            pl.DataFrame(
                {"drive": ["d1"], "drive_type": ["LTO-8"], "library": [None], "state": ["online"]},
                schema={
                    "drive": pl.String,
                    "drive_type": pl.String,
                    "library": pl.String,
                    "state": pl.String,
                },
            ),
        )
        conn.execute(
            "insert into tapelens.tape_files (source, copy_id, file_id, path, dataset,"
            " dataset_type, experiment, size_bytes, volume, position, written_at, ingest_run_id)"
            " values ('s', 'c1', '/store/f1', '/store/f1', 'D', 'RAW', 'e', 1000000000, 'T8', 3,"
            " '2023-01-01', 1)"
        )
        conn.execute(
            "insert into tapelens.tapes (volume, media_type, state) values ('T8', 'LTO-8', 'full')"
        )
    planned = runner.invoke(cli, ["--dsn", dsn, "plan", "recall", str(asked), "--summary", "-"])
    assert planned.exception is None, planned.exception
    assert '"LTO-8": 1' in planned.stdout
