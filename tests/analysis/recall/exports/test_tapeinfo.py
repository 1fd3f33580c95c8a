"""dCache's tape information files in the shape its bring-online clustering reads: tapes.json
(`"<tape>": {"capacity": kB, "filled": kB}`), tapefiles.json (`"<full request path>": {"size":
kB, "tapeid": "<tape>"}`) and the CSV forms tapes.txt (`tape,capacity,filled`) and tapefiles.txt
(`path,size,tape`), keyed by the path of the SRM request; ENDIT's tape hints keyed by pnfsid.
What the consumers' own readers make of them: tests/consumers/."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import psycopg
import pytest
from click.testing import CliRunner

from tapelens.analysis.geometry import order_reads
from tapelens.analysis.recall.exports.tapeinfo import (
    endit_hints,
    hint_json,
    parse_path_map,
    read_pnfsid_map,
    tapeinfo,
    write_tapeinfo,
)
from tapelens.analysis.throughput.model import default_params
from tapelens.cli import cli
from tapelens.errors import InputError, ParseError
from tests.fixtures.cli import run

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
    info, files, left_out = tapeinfo(COPIES, TAPES, mapping)
    assert left_out.height == 0
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
    assert not list(tmp_path.glob("*/.*partial"))


def test_what_the_files_cannot_say_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="FROM=TO"):
        parse_path_map(["/hpss"])
    comma = COPIES.with_columns(pl.lit("/pnfs/a,b").alias("path")).head(1)
    info, files, _ = tapeinfo(comma, TAPES)
    with pytest.raises(InputError, match="comma"):
        write_tapeinfo(info, files, tmp_path, "csv")
    clash = parse_path_map(["/hpss/atlas/d1/a=/pnfs/x", "/hpss/atlas/d1/b=/pnfs/x"])
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
            " ('s', '1', '/f/1', '/hpss/f/1', 'D', 'RAW', 'e', 5000, 'A00001L8', 1, '2022-01-01',"
            " 1, null),"
            " ('s', '2', '/f/2', '/hpss/f/2', 'D', 'RAW', 'e', 7000, 'A00001L8', 2, '2022-01-01',"
            " 1, '2023-01-01'),"
            " ('s', '3', '/f/3', '/hpss/f/3', 'D', 'RAW', 'e', 9000, 'B00001L8', 1, '2022-01-01',"
            " 1, null),"
            " ('s', '4', '/g/4', '/hpss/g/4', 'D', 'RAW', 'e', 3000, 'A00001L8', 3, '2022-01-01',"
            " 1, null)"
        )
    out = tmp_path / "tapeinfo"
    export = ["--dsn", dsn, "export", "dcache-tapeinfo", "-o", str(out)]
    result = CliRunner().invoke(cli, [*export, "--path-map", "/hpss/f=/pnfs/example.org/f"])
    assert result.exception is None, result.exception
    # /f/2 is no longer listed, /f/3 only on a broken tape; the removed copy still fills A.
    assert json.loads((out / "tapefiles.json").read_text()) == {
        "/pnfs/example.org/f/1": {"size": 5, "tapeid": "A00001L8"}
    }
    assert json.loads((out / "tapes.json").read_text()) == {
        "A00001L8": {"capacity": 12_000_000_000, "filled": 15}
    }
    # /hpss/g/4 no prefix matched: left out, counted with its cause and listed beside the files.
    assert f"1 files left out (1 no --path-map prefix matched): {out / 'left-out.csv'}" in (
        result.stderr
    )
    assert pl.read_csv(out / "left-out.csv").rows() == [
        ("/hpss/g/4", "/g/4", "no --path-map prefix matched")
    ]
    # Without a map no path is dCache's: refused in one line naming --path-map, nothing written.
    bare = run(*export[:-1], str(tmp_path / "bare"))
    assert bare.returncode != 0
    assert "has a dCache path" in bare.stderr and "--path-map /hpss/f=/pnfs/" in bare.stderr
    assert len(bare.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "bare").exists()


PNFSIDS = ["0000A1B2C3D4E5F60718293A4B5C6D7E8F90", "00003F1E2D3C4B5A69788796A5B4C3D2E1F0"]


def test_endit_hints_are_keyed_by_pnfsid() -> None:
    # A catalog of what ENDIT archived names each object <dir_out>/<pnfsid>: the base name is
    # the key. The newest copy of the second file is alone on T2.
    endit = COPIES.with_columns(
        pl.col("path").replace({"/hpss/atlas/d1/a": PNFSIDS[0], "/hpss/atlas/d1/b": PNFSIDS[1]})
    ).with_columns(("/grid/pool/out/" + pl.col("path")).alias("path"))
    hints, left_out = endit_hints(endit)
    assert json.loads(hint_json(hints)) == {
        PNFSIDS[0]: {"volid": "T1", "order": 0, "size": 1},
        PNFSIDS[1]: {"volid": "T2", "order": 0, "size": 2_000_000},
    }
    assert left_out.height == 0
    # Other names are not keys ENDIT looks up: refused, saying what to give.
    with pytest.raises(InputError, match=r"none of the 2 files .* give --pnfsid-map FILE"):
        endit_hints(COPIES)
    # Through a site's path -> pnfsid list, after the path map; the unlisted file is left out.
    pnfsids = pl.DataFrame({"path": ["/pnfs/example.org/atlas/d1/b"], "pnfsid": [PNFSIDS[1]]})
    mapping = parse_path_map(["/hpss/atlas=/pnfs/example.org/atlas"])
    hints, left_out = endit_hints(COPIES, pnfsids=pnfsids, path_map=mapping)
    assert json.loads(hint_json(hints)) == {
        PNFSIDS[1]: {"volid": "T2", "order": 0, "size": 2_000_000}
    }
    assert left_out.rows() == [("/hpss/atlas/d1/a", "a", "not in the pnfsid map")]
    with pytest.raises(InputError, match="--path-map FROM=TO"):
        endit_hints(COPIES, pnfsids=pnfsids)


def test_the_pnfsid_map_is_read_as_psql_prints_chimera(tmp_path: Path) -> None:
    # `psql --csv -c "select inumber2path(inumber) as path, ipnfsid from t_inodes ..."`: a
    # header, quoted fields where a path holds a comma or a line break (dCache/dcache,
    # modules/chimera/src/main/resources/org/dcache/chimera/changelog/changeset-2.15.xml
    # defines inumber2path). A short PNFS id is padded as dCache's PnfsId pads it.
    good = tmp_path / "chimera.csv"
    good.write_text(
        f'path,ipnfsid\n"/pnfs/e/a,b",{PNFSIDS[0]}\n"/pnfs/e/new\nline",{PNFSIDS[1].lower()}\n'
        "/pnfs/e/old,1A2B\n"
    )
    frame, refused = read_pnfsid_map(good)
    assert frame.rows() == [
        ("/pnfs/e/a,b", PNFSIDS[0]),
        ("/pnfs/e/new\nline", PNFSIDS[1]),
        ("/pnfs/e/old", "00000000000000000000" + "1A2B"),
    ]
    assert refused.height == 0
    # A bad line is refused alone, its line number and reason kept; --strict stops at it.
    bad = tmp_path / "bad.csv"
    bad.write_text(
        f"path,ipnfsid\n/pnfs/e/a,{PNFSIDS[0]}\n/pnfs/e/c,not-hex\n/pnfs/e/a,{PNFSIDS[1]}\n"
        '"/pnfs/e/two\nlines"\n/pnfs/e/d\n'
    )
    frame, refused = read_pnfsid_map(bad)
    assert frame.rows() == [("/pnfs/e/a", PNFSIDS[0])]
    assert refused.rows() == [
        (3, "/pnfs/e/c,not-hex", "expected a pnfsid of 24 or 36 hex digits, got 'not-hex'"),
        (4, f"/pnfs/e/a,{PNFSIDS[1]}", "the path '/pnfs/e/a' is listed before"),
        (5, "/pnfs/e/two\nlines", "expected 2 columns, got 1"),
        (7, "/pnfs/e/d", "expected 2 columns, got 1"),
    ]
    with pytest.raises(ParseError, match=r"bad.csv:3: expected a pnfsid of 24 or 36 hex digits"):
        read_pnfsid_map(bad, strict=True)
    headless = tmp_path / "headless.csv"
    headless.write_text(f"/pnfs/e/a,{PNFSIDS[0]}\n")
    with pytest.raises(ParseError, match=r"headless.csv:1: expected a header naming"):
        read_pnfsid_map(headless)


def test_endit_hints_in_rao_order_follow_the_tapes_geometry() -> None:
    # Scattered files on one LTO-8 tape: the hint's order is the recommended access order.
    positions = [7, 2_400, 3_100, 150, 4_900, 60, 2_000, 5_500, 900, 3_700, 1_300, 4_200, 5_999]
    copies = pl.DataFrame(
        {
            "file_id": [f"f{p}" for p in positions],
            "path": [f"/d/{p:036X}" for p in positions],
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
    params = default_params()
    by_position, _ = endit_hints(copies, params_by_media=params)
    rao, _ = endit_hints(copies, order="rao", params_by_media=params)
    assert by_position.sort("order")["pnfsid"].to_list() == [f"{p:036X}" for p in sorted(positions)]
    ranked = order_reads(copies, "LTO-8")
    assert rao.sort("order")["pnfsid"].to_list() == [
        f"{int(f[1:]):036X}" for f in ranked["file_id"]
    ]
    assert ranked["file_id"].to_list() != [f"f{p}" for p in sorted(positions)]
