"""dCache's tape information files in the shape its bring-online clustering reads: tapes.json
(`"<tape>": {"capacity": kB, "filled": kB}`), tapefiles.json (`"<full request path>": {"size":
kB, "tapeid": "<tape>"}`) and the CSV forms tapes.txt (`tape,capacity,filled`) and tapefiles.txt
(`path,size,tape`)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import psycopg
import pytest
from click.testing import CliRunner

from tapelens.analysis.geometry import order_reads
from tapelens.analysis.recall.tapeinfo import (
    endit_hints,
    parse_path_map,
    tapeinfo,
    write_tapeinfo,
)
from tapelens.cli import cli
from tapelens.errors import InputError

T0 = datetime(2022, 1, 1, tzinfo=UTC)
T1 = datetime(2023, 1, 1, tzinfo=UTC)
COPIES = pl.DataFrame(
    {
        "file_id": ["a", "b", "b"],
        "path": ["/hpss/atlas/d1/a", "/hpss/atlas/d1/b", "/hpss/atlas/d1/b"],
        "size_bytes": [1, 2_000_000, 2_000_000],
        "volume": ["T1", "T1", "T2"],
        "written_at": [T0, T0, T1],
        "copy_no": [1, 1, 2],
        "position": [9, 4, 1],
        "offset_bytes": [None, None, None],
    },
    schema_overrides={"offset_bytes": pl.Int64},
)
TAPES = pl.DataFrame(
    {
        "volume": ["T1", "T2", "T3"],
        "capacity_bytes": [12_000_000_000_000, 18_000_000_000_000, 1],
        "filled_bytes": [3_000_000_001, 2_000_000, 0],
    }
)


def test_the_newest_copy_in_kb_rounded_up_under_the_requested_path(tmp_path: Path) -> None:
    mapping = parse_path_map(["/hpss/atlas=/pnfs/example.org/data/atlas"])
    info, files = tapeinfo(COPIES, TAPES, mapping)
    written = write_tapeinfo(info, files, tmp_path / "json")
    assert [p.name for p in written] == ["tapes.json", "tapefiles.json"]
    assert json.loads(written[0].read_text()) == {
        "T1": {"capacity": 12_000_000_000, "filled": 3_000_001},
        "T2": {"capacity": 18_000_000_000, "filled": 2_000},
    }
    assert json.loads(written[1].read_text()) == {
        "/pnfs/example.org/data/atlas/d1/a": {"size": 1, "tapeid": "T1"},
        "/pnfs/example.org/data/atlas/d1/b": {"size": 2_000, "tapeid": "T2"},
    }
    csv = write_tapeinfo(info, files, tmp_path / "csv", "csv")
    assert [p.name for p in csv] == ["tapes.txt", "tapefiles.txt"]
    assert csv[0].read_text() == "T1,12000000000,3000001\nT2,18000000000,2000\n"
    assert csv[1].read_text() == (
        "/pnfs/example.org/data/atlas/d1/a,1,T1\n/pnfs/example.org/data/atlas/d1/b,2000,T2\n"
    )


def test_what_the_files_cannot_say_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="FROM=TO"):
        parse_path_map(["/hpss"])
    comma = COPIES.with_columns(pl.lit("/hpss/a,b").alias("path")).head(1)
    info, files = tapeinfo(comma, TAPES)
    with pytest.raises(InputError, match="comma"):
        write_tapeinfo(info, files, tmp_path, "csv")
    clash = parse_path_map(["/hpss/atlas/d1/a=/x", "/hpss/atlas/d1/b=/x"])
    with pytest.raises(InputError, match="share the path"):
        tapeinfo(COPIES, TAPES, clash)


def test_the_command_exports_the_live_readable_catalog(dsn: str, tmp_path: Path) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "insert into tapelens.tapes (volume, media_type, state) values"
            " ('A00001L8', 'LTO-8', 'full'), ('B00001L8', 'LTO-8', 'broken')"
        )
        conn.execute(
            "insert into tapelens.tape_files (source, copy_id, file_id, path, dataset,"
            " dataset_type, experiment, size_bytes, volume, position, written_at, ingest_run_id,"
            " removed_at) values"
            " ('s', '1', '/f/1', '/f/1', 'D', 'RAW', 'e', 5000, 'A00001L8', 1, '2022-01-01', 1,"
            " null),"
            " ('s', '2', '/f/2', '/f/2', 'D', 'RAW', 'e', 7000, 'A00001L8', 2, '2022-01-01', 1,"
            " '2023-01-01'),"
            " ('s', '3', '/f/3', '/f/3', 'D', 'RAW', 'e', 9000, 'B00001L8', 1, '2022-01-01', 1,"
            " null)"
        )
    out = tmp_path / "tapeinfo"
    result = CliRunner().invoke(cli, ["--dsn", dsn, "export", "dcache-tapeinfo", "-o", str(out)])
    assert result.exception is None, result.exception
    # /f/2 is no longer listed, /f/3 only on a broken tape; the removed copy still fills A.
    assert json.loads((out / "tapefiles.json").read_text()) == {
        "/f/1": {"size": 5, "tapeid": "A00001L8"}
    }
    assert json.loads((out / "tapes.json").read_text()) == {
        "A00001L8": {"capacity": 12_000_000_000, "filled": 12}
    }


def test_endit_hints_name_volume_order_and_size() -> None:
    # The newest copy of b is alone on T2; a is on T1. ENDIT keys a file by its name in
    # Spectrum Protect: without directories unless asked for the whole path.
    more = pl.concat(
        [
            COPIES,
            pl.DataFrame(
                {
                    "file_id": ["c"],
                    "path": ["/hpss/atlas/d2/c"],
                    "size_bytes": [10],
                    "volume": ["T1"],
                    "written_at": [T0],
                    "copy_no": [1],
                    "position": [3],
                    "offset_bytes": [None],
                },
                schema=COPIES.schema,
            ),
        ]
    )
    assert endit_hints(more) == {
        "c": {"volid": "T1", "order": 0, "size": 10},
        "a": {"volid": "T1", "order": 1, "size": 1},
        "b": {"volid": "T2", "order": 0, "size": 2_000_000},
    }
    assert "/hpss/atlas/d2/c" in endit_hints(more, full_names=True)
    clash = more.with_columns(pl.lit("/x/same").alias("path"))
    with pytest.raises(InputError, match="--full-names"):
        endit_hints(clash.filter(pl.col("file_id") != "b"))


def test_the_endit_command_writes_the_hint_file(dsn: str, tmp_path: Path) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "insert into tapelens.tapes (volume, media_type, state) values ('V1', 'LTO-8', 'full')"
        )
        conn.execute(
            "insert into tapelens.tape_files (source, copy_id, file_id, path, dataset,"
            " dataset_type, experiment, size_bytes, volume, position, written_at, ingest_run_id)"
            " values"
            " ('s', '1', '/d/0000A', '/d/0000A', 'D', 'RAW', 'e', 50, 'V1', 7, '2022-01-01', 1),"
            " ('s', '2', '/d/0000B', '/d/0000B', 'D', 'RAW', 'e', 60, 'V1', 2, '2022-01-01', 1)"
        )
    out = tmp_path / "hints.json"
    result = CliRunner().invoke(cli, ["--dsn", dsn, "export", "endit-hints", "-o", str(out)])
    assert result.exception is None, result.exception
    assert json.loads(out.read_text()) == {
        "0000B": {"volid": "V1", "order": 0, "size": 60},
        "0000A": {"volid": "V1", "order": 1, "size": 50},
    }
    assert not list(tmp_path.glob(".*partial"))


def test_endit_hints_in_rao_order_follow_the_tapes_geometry() -> None:
    # Scattered files on one LTO-8 tape: the hint's order is the recommended access order.
    positions = [7, 2_400, 3_100, 150, 4_900, 60, 2_000, 5_500, 900, 3_700, 1_300, 4_200, 5_999]
    copies = pl.DataFrame(
        {
            "file_id": [f"f{p}" for p in positions],
            "path": [f"/d/f{p}" for p in positions],
            "size_bytes": 500_000_000,
            "volume": "V1",
            "media_type": "LTO-8",
            "written_at": T0,
            "copy_no": 1,
            "position": positions,
            "offset_bytes": None,
            "avg_object_bytes": 2e9,
        },
        schema_overrides={"offset_bytes": pl.Int64},
    )
    by_position = endit_hints(copies)
    rao = endit_hints(copies, order="rao")
    assert sorted(by_position, key=lambda n: by_position[n]["order"]) == [
        f"f{p}" for p in sorted(positions)
    ]
    ranked = order_reads(copies, "LTO-8")
    assert sorted(rao, key=lambda n: rao[n]["order"]) == ranked["file_id"].to_list()
    assert ranked["file_id"].to_list() != [f"f{p}" for p in sorted(positions)]
