"""Catalog and inventory parsers on hand-written edge cases (tests/data/catalog)."""

from __future__ import annotations

import gzip
import io
import sys
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from tapelens.errors import ConfigError, InputError, ParseError
from tapelens.ingest.canonical import TAPE_FILES, TAPES
from tapelens.ingest.formats import (
    catalog_csv,
    cta_tf,
    enstore_list,
    hpss_lsp,
    tapes_csv,
    tsm_contents,
    tsm_qcontent,
)
from tapelens.ingest.formats.base import ParseOptions, Reject

DATA = Path(__file__).parent.parent / "data" / "catalog"
COLUMNS = (
    "copy_id",
    "file_id",
    "path",
    "size_bytes",
    "volume",
    "position",
    "offset_bytes",
    "aggregate_id",
    "copy_no",
    "written_at",
)


def parse(
    module: ModuleType, path: str | Path, **options: Any
) -> tuple[pl.DataFrame, list[Reject], int]:
    opts = ParseOptions(source=options.pop("source", "test"), **options)
    batches = list(module.parse(path, options=opts))
    schema = TAPES if module.KIND == "tapes" else TAPE_FILES
    for b in batches:
        if "line_no" in b.frame.columns:  # each row's own input line, set aside
            assert (b.frame["line_no"].drop_nulls() >= 1).all()
            b.frame = b.frame.drop("line_no")
        assert b.frame.schema == pl.Schema(schema)
        assert b.frame.height <= opts.batch_rows
    frame = pl.concat([b.frame for b in batches])
    rejects = [r for b in batches for r in b.rejects]
    assert [r.line_no for r in rejects] == sorted(r.line_no for r in rejects)
    return frame, rejects, sum(b.skipped for b in batches)


def t(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def expect(rows: list[tuple[Any, ...]], columns: tuple[str, ...] = COLUMNS) -> pl.DataFrame:
    schema = {c: TAPE_FILES[c] for c in columns}
    return pl.DataFrame(rows, schema=schema, orient="row")


def reasons(rejects: list[Reject]) -> list[tuple[int, str]]:
    return [(r.line_no, r.reason) for r in rejects]


# ------------------------------------------------------------------------------------ hpss-lsp

AOD = "/atlas/data22/AOD/r14190/data22.0043.AOD.r14190_tid314_00/AOD.314._000012.pool.root.1"
STAR = "/star/run19/daq/st_physics_20071_raw_100000"
HPSS_CLEAN = [
    ("A85532:1022:", AOD, AOD, 3791544320, "A85532", 1022, None, None, 1, t("2023-01-01 22:14:09")),
    (
        "X03527:5120:211820",
        STAR + "2.daq",
        STAR + "2.daq",
        734003,
        "X03527",
        5120,
        211820,
        "X03527:5120",
        1,
        t("2019-03-14 07:12:43"),
    ),
    (
        "X03527:5120:945823",
        STAR + "3.daq",
        STAR + "3.daq",
        1000,
        "X03527",
        5120,
        945823,
        "X03527:5120",
        1,
        t("2019-03-14 07:12:43"),
    ),
    # One position for two volumes: one copy, starting on the first cartridge.
    (
        "A11111:1187:",
        "/atlas/mc16/EVNT/spans.two.cartridges.root",
        "/atlas/mc16/EVNT/spans.two.cartridges.root",
        1610612736000,
        "A11111",
        1187,
        None,
        None,
        1,
        t("2021-12-31 23:59:59"),
    ),
    *[
        (f"{vol}:{pos}:", p, p, 4096, vol, pos, None, None, n, t("2021-12-31 23:59:59"))
        for n, vol, pos, p in (
            (1, "A11111", 8, "/atlas/mc16/EVNT/own.positions.root"),
            (2, "B22222", 9, "/atlas/mc16/EVNT/own.positions.root"),
        )
    ],
    # The aggregate's first member is listed after the other members: still offset 0.
    (
        "X03527:5120:",
        STAR + "1.daq",
        STAR + "1.daq",
        211820,
        "X03527",
        5120,
        0,
        "X03527:5120",
        1,
        t("2019-03-14 07:12:43"),
    ),
    # Same section number on another volume: a lone file.
    (
        "A85532:5120:",
        "/star/run19/daq/lone.daq",
        "/star/run19/daq/lone.daq",
        5,
        "A85532",
        5120,
        None,
        None,
        1,
        t("2019-03-14 07:12:43"),
    ),
    (
        "L81234:3:",
        "/cern/L81234/plain.root",
        "/cern/L81234/plain.root",
        77,
        "L81234",
        3,
        None,
        None,
        1,
        t("2024-02-29 00:00:00"),
    ),
]


def by_copy(frame: pl.DataFrame) -> pl.DataFrame:
    """HPSS rows in a fixed order (the parser emits lone files after aggregate members)."""
    return frame.sort("file_id", "copy_no", "copy_id")


def test_hpss_listing_rows_copies_and_aggregates() -> None:
    frame, rejects, skipped = parse(hpss_lsp, DATA / "ls-P.txt", source="bnl")
    assert_frame_equal(by_copy(frame.select(COLUMNS)), by_copy(expect(HPSS_CLEAN)))
    assert frame["source"].unique().to_list() == ["bnl"]
    assert frame.select("dataset", "dataset_type", "experiment").null_count().row(0) == (9, 9, 9)
    # The copy that needs two cartridges names the second.
    spanning = frame.filter(pl.col("other_volumes").is_not_null())
    assert spanning.select("path", "volume", "other_volumes").rows() == [
        ("/atlas/mc16/EVNT/spans.two.cartridges.root", "A11111", "B22222")
    ]
    assert rejects == []
    assert skipped == 2  # the zero-length file without a volume, the DIRECTORY line


def test_hpss_gzip_reads_like_plain() -> None:
    plain = parse(hpss_lsp, DATA / "ls-P.txt")
    packed = parse(hpss_lsp, DATA / "ls-P.txt.gz")
    assert_frame_equal(by_copy(plain[0]), by_copy(packed[0]))
    assert plain[1:] == packed[1:]


def test_hpss_edge_cases_refused_with_reasons() -> None:
    frame, rejects, skipped = parse(hpss_lsp, DATA / "ls-P-edge.txt")
    assert reasons(rejects) == [
        (3, 'position "12x+0" is not section+offset'),
        (4, 'size "abc" is not a number of bytes'),
        (5, "expected 13 tab-separated fields, found 9"),
        (6, 'create time "13/45/2020 25:00:00" is not MM/DD/YYYY HH:MM:SS'),
        (
            11,
            'position "18+0,19+0" lists 2 copies, volume list "A1111100,B2222201,C3333300" lists 3',
        ),
        (12, 'volume list "A1111100,,B2222201" has an empty entry'),
        (13, "no volume for a file of 10 bytes"),
        (14, "not valid UTF-8 (byte 16)"),
        (17, 'expected a FILE or DIRECTORY line, found "garbage without tabs"'),
    ]
    assert rejects[7].raw.startswith("FILE\t/atlas/caf\\xe9.root\t")
    assert rejects[0].raw.endswith(
        "\t12x+0\tA8553200\t41\t0\t1\t01/01/2023\t22:14:09\t01/01/2023\t22:14:09"
    )
    # comment, blank, hsi warning, DIRECTORY, SYMLINK
    assert skipped == 5
    assert by_copy(frame).select("path", "offset_bytes").rows() == [
        ("/atlas/data22/AOD/agg.a.root", 0),
        ("/atlas/data22/AOD/agg.b.root", 100),
        ("/atlas/data22/AOD/ok.root", None),
        ("/atlas/data22/AOD/zero.on.tape.root", None),
        ('/atlas/odd/"quoted";semi\\back.root', None),
        ("/atlas/odd/with\ttab.root", None),
    ]
    assert frame.height + len(rejects) + skipped == 20  # every line accounted for


def test_hpss_strict_stops_at_first_bad_line() -> None:
    with pytest.raises(ParseError) as err:
        list(hpss_lsp.parse(DATA / "ls-P-edge.txt", options=ParseOptions("s", strict=True)))
    assert err.value.line == 3
    assert str(err.value).endswith(':3: position "12x+0" is not section+offset')


def test_hpss_fast_and_line_by_line_paths_agree(tmp_path: Path) -> None:
    # A blank line sends the whole block down the line-by-line path.
    odd = tmp_path / "odd.txt"
    odd.write_bytes((DATA / "ls-P.txt").read_bytes() + b"\n")
    fast, _, skipped_fast = parse(hpss_lsp, DATA / "ls-P.txt")
    slow, _, skipped_slow = parse(hpss_lsp, odd)
    assert_frame_equal(by_copy(fast), by_copy(slow))
    assert skipped_slow == skipped_fast + 1


@pytest.mark.parametrize("packed", [False, True], ids=["plain: two passes", "gzip: spill"])
def test_hpss_aggregates_across_blocks_and_small_batches(tmp_path: Path, packed: bool) -> None:
    times = "01/01/2023\t00:00:00\t01/01/2023\t00:00:00"
    line = "FILE\t/d/f{i}\t{size}\t{size}\t{sec}+{off}\tA0000{vol}00\t1\t0\t1\t" + times + "\n"
    lines = [line.format(i=i, size=10, sec=i, off=0, vol=i % 9) for i in range(14000)]
    # Section 5 of volume A00005 also holds a member at offset 10, listed far below its first.
    lines.append(line.format(i="member", size=10, sec=5, off=10, vol=5))
    text = "".join(lines).encode()
    assert len(text) > 1 << 20  # more than one block
    path = tmp_path / ("big.txt.gz" if packed else "big.txt")
    path.write_bytes(gzip.compress(text) if packed else text)
    frame, rejects, skipped = parse(hpss_lsp, path, batch_rows=1000)
    assert (frame.height, rejects, skipped) == (14001, [], 0)
    members = by_copy(frame.filter(pl.col("aggregate_id").is_not_null()))
    assert members.select("path", "offset_bytes").rows() == [("/d/f5", 0), ("/d/fmember", 10)]


def test_hpss_reads_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    data = (DATA / "ls-P.txt").read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    frame, _, _ = parse(hpss_lsp, "-")
    assert frame.height == len(HPSS_CLEAN)


# -------------------------------------------------------------------------------- tsm-contents

RAW18 = "/pnfs/gridka.de/atlas/data18/RAW/"
AOD18 = "/pnfs/gridka.de/atlas/data18/AOD/"
FIRST = "data18.003588.RAW._lb0120._0001.data"


def test_tsm_contents_ranks_aggregates_and_archive_dates() -> None:
    frame, rejects, skipped = parse(
        tsm_contents, DATA / "contents.csv", extra={"archives": str(DATA / "archives.csv")}
    )
    rows = [
        (
            "10441881235",
            RAW18 + FIRST,
            4021002371,
            "VTS104L7",
            1,
            None,
            None,
            t("2018-10-02 11:20:05"),
        ),
        (
            "10441881236",
            AOD18 + "small.1.root",
            100,
            "VTS104L7",
            2,
            0,
            "VTS104L7:2",
            t("2018-10-03 01:00:00"),
        ),
        (
            "10441881237",
            AOD18 + "small.2.root",
            250,
            "VTS104L7",
            2,
            100,
            "VTS104L7:2",
            t("2018-10-03 01:00:01"),
        ),
        # A comma inside FILE_NAME is kept.
        (
            "10441881238",
            AOD18 + "small,3.root",
            50,
            "VTS104L7",
            2,
            350,
            "VTS104L7:2",
            t("2018-10-03 01:00:02"),
        ),
        (
            "10441881239",
            RAW18 + "spanning.data",
            9000000000,
            "VTS104L7",
            3,
            None,
            None,
            t("2018-10-04"),
        ),
        # The continuation segment takes rank 1 of VTS105L7; the duplicate ("1/1") follows it.
        (
            "10441881240",
            RAW18 + FIRST,
            4021002371,
            "VTS105L7",
            2,
            None,
            None,
            t("2018-10-05 12:00:00"),
        ),
        # Refused lines still hold their place (no.archive 3, bad.aggregated 4, bad.size 5);
        # the line with too few fields cannot be placed.
        ("10441881244", RAW18 + "last.data", 20, "VTS105L7", 6, None, None, t("2018-10-07")),
    ]
    cols = (
        "copy_id",
        "path",
        "size_bytes",
        "volume",
        "position",
        "offset_bytes",
        "aggregate_id",
        "written_at",
    )
    assert_frame_equal(frame.select(cols), expect(rows, cols))
    assert (frame["file_id"] == frame["path"]).all() and (frame["copy_no"] == 1).all()
    assert reasons(rejects) == [
        (11, 'OBJECT_ID "10441881241" has no row in the archives file'),
        (12, 'AGGREGATED "4/3" is not No or i/n'),
        (13, "expected 13 comma-separated fields, found 7"),
        (14, 'FILE_SIZE "12 MB" is not a number of bytes'),
    ]
    assert skipped == 4  # server message, header, blank line, continuation segment


def test_tsm_contents_needs_archives() -> None:
    with pytest.raises(ConfigError, match="archives"):
        list(tsm_contents.parse(DATA / "contents.csv", options=ParseOptions("tsm")))


def test_tsm_contents_columns_option_without_header(tmp_path: Path) -> None:
    path = tmp_path / "contents.csv"
    path.write_text("10441881235,/gridka.de/x/a.data,/pnfs,VTS1L7,No,1/1,42\n")
    columns = (
        "OBJECT_ID",
        "FILE_NAME",
        "FILESPACE_NAME",
        "VOLUME_NAME",
        "AGGREGATED",
        "SEGMENT",
        "FILE_SIZE",
    )
    frame, rejects, _ = parse(
        tsm_contents, path, columns=columns, extra={"archives": str(DATA / "archives.csv")}
    )
    assert rejects == []
    assert frame.select("path", "volume", "size_bytes", "copy_id").row(0) == (
        "/pnfs/gridka.de/x/a.data",
        "VTS1L7",
        42,
        "10441881235",
    )


def test_tsm_contents_strict_names_first_bad_line(tmp_path: Path) -> None:
    def strict(archives: Path) -> None:
        options = ParseOptions("tsm", strict=True, extra={"archives": str(archives)})
        list(tsm_contents.parse(DATA / "contents.csv", options=options))

    with pytest.raises(ParseError, match=r"contents.csv:11: OBJECT_ID \"10441881241\" has no row"):
        strict(DATA / "archives.csv")
    # The archives export is checked too.
    broken = tmp_path / "archives.csv"
    broken.write_text((DATA / "archives.csv").read_text() + "N,/pnfs,/a/,b,notanumber,yesterday\n")
    with pytest.raises(ParseError, match=r"archives.csv:10: no OBJECT_ID and ARCHIVE_DATE in"):
        strict(broken)
    # Leniently, a bad archives line is passed over.
    frame, _, _ = parse(tsm_contents, DATA / "contents.csv", extra={"archives": str(broken)})
    assert frame.height == 7


# -------------------------------------------------------------------------------- tsm-qcontent

LISTED = "2024-03-01T00:00:00Z"


def test_tsm_qcontent_sizes_ranks_and_volume_from_file_name() -> None:
    frame, rejects, skipped = parse(
        tsm_qcontent, DATA / "VTS104L7.qcontent.txt", extra={"listed_at": LISTED}
    )
    when = t("2024-03-01")
    rows = [
        ("VTS104L7:1:", RAW18 + "f1.data", 73191, "VTS104L7", 1, None, None, when),
        ("VTS104L7:2:", AOD18 + "a1.root", 1536, "VTS104L7", 2, 0, "VTS104L7:2", when),
        (
            "VTS104L7:2:1536",
            AOD18 + "a2.root",
            2 * 1024**2,
            "VTS104L7",
            2,
            1536,
            "VTS104L7:2",
            when,
        ),
        # rank 3 is the continuation segment of cont.data
        ("VTS104L7:4:", RAW18 + "big.data", 1610612736, "VTS104L7", 4, None, None, when),
        ("VTS104L7:6:", RAW18 + "with\ttab.data", 0, "VTS104L7", 6, None, None, when),
    ]
    cols = (
        "copy_id",
        "path",
        "size_bytes",
        "volume",
        "position",
        "offset_bytes",
        "aggregate_id",
        "written_at",
    )
    assert_frame_equal(frame.select(cols), expect(rows, cols))
    assert reasons(rejects) == [
        (7, 'size "12 XB" is not a number of bytes'),
        (10, "expected 13 tab-separated fields, found 3"),
    ]
    assert skipped == 3  # blank, continuation segment, server message


def test_tsm_qcontent_rounded_sizes_keep_their_bound() -> None:
    """A size printed in a unit above bytes stands for any count within half a unit of its last
    digit: "1.5 KB" is 1,536 +- 51 bytes, "2 MB" 2 MiB +- 512 KiB, "1.5 GB" +- 0.05 GiB; a count
    of bytes ("73,191 B") is exact. The load says the sizes are approximate."""
    batches = list(
        tsm_qcontent.parse(
            DATA / "VTS104L7.qcontent.txt", options=ParseOptions("tsm", extra={"listed_at": LISTED})
        )
    )
    rows = [r for b in batches for r in b.frame.iter_rows(named=True)]
    assert [(r["size_bytes"], r["size_bound_bytes"]) for r in rows] == [
        (73191, None),
        (1536, 1024 // 20),
        (2 * 1024**2, 1024**2 // 2),
        (1610612736, 1024**3 // 20),
        (0, None),
    ]
    assert [n for b in batches for n in b.notes] == [tsm_qcontent.APPROXIMATE]


def test_tsm_qcontent_volume_option_and_required_settings(tmp_path: Path) -> None:
    frame, _, _ = parse(
        tsm_qcontent, DATA / "VTS104L7.qcontent.txt", volume="X1L7", extra={"listed_at": LISTED}
    )
    assert frame["volume"].unique().to_list() == ["X1L7"]
    with pytest.raises(ConfigError, match="listed-at"):
        list(tsm_qcontent.parse(DATA / "VTS104L7.qcontent.txt", options=ParseOptions("tsm")))
    anonymous = tmp_path / "listing.txt"
    anonymous.write_text("")
    with pytest.raises(ConfigError, match="--volume"):
        list(
            tsm_qcontent.parse(anonymous, options=ParseOptions("tsm", extra={"listed_at": LISTED}))
        )


# -------------------------------------------------------------------------------------- cta-tf

CTA_COLS = (
    "copy_id",
    "file_id",
    "path",
    "dataset",
    "size_bytes",
    "volume",
    "position",
    "copy_no",
    "written_at",
    "checksum",
)


def test_cta_text_table() -> None:
    frame, rejects, skipped = parse(cta_tf, DATA / "tf-L81234.txt")
    rows = [
        ("4211190/1", "4211190", "eosatlas:3f2a0c1", "atlas_raw", 5242880000, "L81234", 1375, 1,
         t("2024-06-02 11:20"), "ADLER32:7c0a91e3"),
        ("4211191/2", "4211191", "eosatlas:3f2a0c2", "atlas_raw", 1024, "L81234", 1376, 2,
         t("2024-06-02 11:21"), "ADLER32:00000001"),
    ]  # fmt: skip
    assert_frame_equal(frame.select(CTA_COLS), expect(rows, CTA_COLS))
    assert frame["offset_bytes"].null_count() == 2
    assert reasons(rejects) == [
        (5, 'fseq "13x76" is not a number'),
        (6, 'creation time "2024-13-02 11:21" is not YYYY-MM-DD HH:MM'),
        (7, "expected 16 whitespace-separated fields, found 4"),
    ]
    assert skipped == 2  # header, blank


def test_cta_json_lines() -> None:
    frame, rejects, skipped = parse(cta_tf, DATA / "tf-L81234.json")
    rows = [
        ("4211190/1", "4211190", "/eos/atlas/atlasdatadisk/rucio/data24/RAW/f1.data", None,
         5242880000, "L81234", 1375, 1, t("2024-06-02 11:20"), "ADLER32:7c0a91e3"),
        ("4211191/2", "4211191", "eosatlas:3f2a0c2", "atlas_raw", 1024, "L81234", 1376, 2,
         t("2024-06-02 11:21"), "ADLER32:00000001"),
        ("4211195/1", "4211195", '/eos/atlas/odd "quoted";semi\\back', None, 7, "L81235", 1, 1,
         t("2024-06-02 11:22"), None),
    ]  # fmt: skip
    assert_frame_equal(frame.select(CTA_COLS), expect(rows, CTA_COLS))
    assert reasons(rejects) == [
        (4, 'fseq "-3" is not a number'),
        (5, "not JSON (Expecting ',' delimiter)"),
        (6, "expected a JSON object with af, tf and df"),
    ]
    assert skipped == 1


def test_cta_json_array_and_gzip(tmp_path: Path) -> None:
    lines = [x for x in (DATA / "tf-L81234.json").read_text().splitlines()[:2]]
    path = tmp_path / "tf.json.gz"
    path.write_bytes(gzip.compress(("[\n" + ",\n".join(lines) + "\n]\n").encode()))
    frame, rejects, skipped = parse(cta_tf, path)
    assert frame["copy_id"].to_list() == ["4211190/1", "4211191/2"]
    assert (rejects, skipped) == ([], 2)


# -------------------------------------------------------------------------------- enstore-list


def test_enstore_list() -> None:
    frame, rejects, skipped = parse(enstore_list, DATA / "VR1234.list")
    minos = "/pnfs/fs/usr/minos/raw/2009/"
    rows = [
        ("CDMS124880530600000", minos + "f123.root", minos + "f123.root", 5159052972, "VR1234",
         123, None, None, 1, datetime.fromtimestamp(1248805306, UTC)),
        ("CDMS124880540100001", minos + "with space.root", minos + "with space.root", 100,
         "VR1234", 124, None, None, 1, datetime.fromtimestamp(1248805401, UTC)),
    ]  # fmt: skip
    assert_frame_equal(frame.select(COLUMNS), expect(rows))
    assert reasons(rejects) == [
        (6, 'size "1x0" is not a number of bytes'),
        (7, 'location cookie "0000_000000000" is not NNNN_NNNNNNNNN_NNNNNNN'),
        (8, 'bfid "CDMSXYZ" holds no unix time'),
        (9, "expected 6 whitespace-separated fields, found 5"),
    ]
    assert skipped == 3  # header, deleted file, blank


def test_line_formats_cut_batches_alike() -> None:
    whole, rejects, skipped = parse(enstore_list, DATA / "VR1234.list")
    small, small_rejects, small_skipped = parse(enstore_list, DATA / "VR1234.list", batch_rows=1)
    assert_frame_equal(whole, small)
    assert (rejects, skipped) == (small_rejects, small_skipped)


def test_enstore_alt_map_and_bad_bytes(tmp_path: Path) -> None:
    alt = tmp_path / "alt_map.txt"
    alt.write_text("CDMS124880530600000 CDMS124880540100001\n")
    listing = tmp_path / "VR1234.list"
    listing.write_bytes(
        (DATA / "VR1234.list").read_bytes() + b"VR1234 CDMS1248805306 1 0_0_9 no /p\xff\n"
    )
    frame, rejects, _ = parse(enstore_list, listing, extra={"alt_map": str(alt)})
    assert frame["copy_no"].to_list() == [1, 2]
    assert reasons(rejects)[-1] == (10, "not valid UTF-8 (byte 36)")


# ------------------------------------------------------------------------------- generic csv


def test_canonical_copies_csv() -> None:
    frame, rejects, skipped = parse(catalog_csv, DATA / "copies.csv", source="bnl")
    odd = '/atlas/a/with,comma "q".root'
    rows = [
        ("A85532:12:", "/atlas/a/f1.root", "/atlas/a/f1.root", 100, "A85532", 12, None, None, 1,
         t("2023-01-01 22:14:09")),
        ("A85532:13:", "/atlas/a/f2.root", "/atlas/a/f2.root", 50, "A85532", 13, 0, "A85532:13", 1,
         t("2023-01-02")),
        ("A85532:13:50", "/atlas/a/f3.root", "/atlas/a/f3.root", 60, "A85532", 13, 50,
         "A85532:13", 1, t("2023-01-01 23:00")),
        ("B11111:1:", odd, odd, 7, "B11111", 1, None, None, 2, t("2023-01-03")),
    ]  # fmt: skip
    assert_frame_equal(frame.select(COLUMNS), expect(rows))
    assert frame["checksum"].to_list() == [None, "ad:1", None, None]
    assert reasons(rejects) == [
        (6, 'size_bytes "-5" is not a whole number >= 0'),
        (7, 'written_at "yesterday" is not an ISO 8601 time'),
        (8, "volume is empty"),
        (9, "expected 15 comma-separated fields, found 3"),
    ]
    assert skipped == 1


def test_csv_with_mapping_file_and_document() -> None:
    by_file, rejects, _ = parse(
        catalog_csv, DATA / "hpss-export.csv", extra={"mapping": str(DATA / "hpss-export.yaml")}
    )
    assert by_file.select("volume", "position", "offset_bytes", "written_at").row(0) == (
        "A7450800",
        393,
        0,
        t("2019-04-26 02:25:11"),
    )
    assert reasons(rejects) == [
        (3, 'written_at "2019-04-26T02:25:11" is not a time (%Y-%m-%d %H:%M:%S)')
    ]
    flat = {"tapenum": "volume", "pos": "position", "size": "size_bytes", "ctime": "written_at"}
    by_doc, rejects, _ = parse(catalog_csv, DATA / "hpss-export.csv", mapping=flat)
    assert rejects == [] and by_doc.height == 2
    assert by_doc["offset_bytes"].null_count() == 2  # not mapped
    assert by_doc["copy_id"].to_list() == ["A7450800:393:", "A7450800:394:"]


def test_csv_mapping_errors() -> None:
    with pytest.raises(ConfigError, match="'tape' .* is not a tape_files column"):
        list(
            catalog_csv.parse(
                DATA / "hpss-export.csv", options=ParseOptions("s", mapping={"tapenum": "tape"})
            )
        )
    with pytest.raises(ConfigError, match="no column for volume, position, size_bytes, written_at"):
        list(catalog_csv.parse(DATA / "hpss-export.csv", options=ParseOptions("s")))


def test_parquet_typed_and_text_columns(tmp_path: Path) -> None:
    path = tmp_path / "copies.parquet"
    pl.DataFrame(
        {
            "path": ["/a/x", "/a/y", "/a/z"],
            "tapenum": ["A1", "A1", "A1"],
            "pos": [1, 2, -3],
            "size": ["10", "20", "30"],
            "ctime": [datetime(2020, 1, 1), datetime(2020, 1, 2), datetime(2020, 1, 3)],
        }
    ).write_parquet(path)
    mapping = {"tapenum": "volume", "pos": "position", "size": "size_bytes", "ctime": "written_at"}
    frame, rejects, _ = parse(catalog_csv, path, mapping=mapping)
    assert frame.select("path", "position", "size_bytes", "written_at").rows() == [
        ("/a/x", 1, 10, t("2020-01-01")),
        ("/a/y", 2, 20, t("2020-01-02")),
    ]
    assert reasons(rejects) == [(3, 'position "-3" is not a whole number >= 0')]
    assert '"tapenum": "A1"' in rejects[0].raw


# ------------------------------------------------------------------------------ tapes inventory


def test_tapes_inventory_media_types() -> None:
    frame, rejects, skipped = parse(tapes_csv, DATA / "tapes.csv")
    L8, SL, RAW = "A85532L8", "SL8500-1", "atlas_raw"
    expected = pl.DataFrame(
        [
            ("A85532", L8, "LTO-8", SL, RAW, 12000000000000, "full", "inventory", "full"),
            ("A85533", "A85533L8", "LTO-8", SL, RAW, None, "filling", "barcode", "filling"),
            ("VTS104L7", None, "LTO-7", "TS4500", "gridka", None, "unknown", "barcode", None),
            ("X03527", None, "unknown", None, None, None, "readonly", "unknown", "readonly"),
            ("J00001", "J00001JD", "3592-JD", "TS4500", "cms", None, "full", "barcode", "full"),
            ("A85534", "A85534L8", "LTO-8", SL, RAW, None, "full", "inventory", "FULL"),
        ],
        schema=TAPES,
        orient="row",
    )
    assert_frame_equal(frame, expected)
    assert [line for line, _ in reasons(rejects)] == [8, 9, 10, 11, 13]
    assert reasons(rejects)[0] == (8, 'volume "A85532" already listed on line 2')
    assert rejects[1].reason.startswith('media type "LTO-X" is not one of LTO-5, LTO-6')
    assert skipped == 2


@pytest.mark.parametrize(
    "module", [hpss_lsp, tsm_qcontent, cta_tf, enstore_list, catalog_csv, tapes_csv]
)
def test_empty_input_gives_no_rows(tmp_path: Path, module: ModuleType) -> None:
    path = tmp_path / "VTS1L7.qcontent.txt"
    path.write_bytes(b"")
    frame, rejects, skipped = parse(module, path, extra={"listed_at": LISTED})
    assert (frame.height, rejects, skipped) == (0, [], 0)


def test_cta_json_decoded_whole_or_line_by_line_alike(tmp_path: Path) -> None:
    good = [x for x in (DATA / "tf-L81234.json").read_text().splitlines() if '"vid":"L8123' in x]
    clean, mixed = tmp_path / "clean.json", tmp_path / "mixed.json"
    clean.write_text("\n".join(good) + "\n")  # decoded by Polars in one go
    mixed.write_text("\n".join([*good, "{not json"]) + "\n")  # decoded line by line
    whole, refused, _ = parse(cta_tf, clean)
    by_line, rejects, _ = parse(cta_tf, mixed)
    assert whole.height == 3
    assert_frame_equal(whole, by_line)
    assert refused == rejects[:1] and reasons(refused) == [(3, 'fseq "-3" is not a number')]
    assert [r.line_no for r in rejects] == [3, 5]


@pytest.mark.parametrize("packed", [False, True])
def test_text_starting_like_a_magic_number_is_text(tmp_path: Path, packed: bool) -> None:
    """Only a whole compression header means compressed: a listing line may begin with "BZh"."""
    text = b"BZh\tnot a listing line\n"
    path = tmp_path / "odd.txt"
    path.write_bytes(gzip.compress(text) if packed else text)
    batches = list(hpss_lsp.parse(path, options=ParseOptions(source="t")))
    assert sum(b.frame.height for b in batches) == 0
    assert [r.line_no for b in batches for r in b.rejects] == [1]


def test_corrupt_compressed_input_is_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "listing.gz"
    lines = b"".join(b"FILE\t/a/%d\t%d\n" % (i, i * 7919 % 10007) for i in range(20000))
    packed = gzip.compress(lines)
    path.write_bytes(packed[: len(packed) // 2])  # a dump cut off in the middle
    with pytest.raises(InputError, match=r"listing\.gz:\d+: cannot read"):
        list(hpss_lsp.parse(path, options=ParseOptions(source="t")))


def test_tsm_archives_read_in_blocks_keep_the_columns_of_each_header(
    tmp_path: Path,
) -> None:
    # Two exports run together: the second's header puts ARCHIVE_DATE before OBJECT_ID, and
    # the blocks after it are read under its columns, as a line-by-line reading does. An
    # object listed twice keeps its first date.
    from tapelens.ingest.formats.tsm_contents import Archives

    def line(oid: int, cols: str) -> str:
        date = f"2024-02-{1 + oid % 28:02d} 10:{oid % 60:02d}:00.000000"
        if cols == "first":
            return f"NODE,/pnfs,/d/,f{oid},{oid},{date},owner,"
        return f"NODE,/pnfs,{date},/d/,f{oid},{oid},owner,"

    lines = ["NODE_NAME,FILESPACE_NAME,HL_NAME,LL_NAME,OBJECT_ID,ARCHIVE_DATE,OWNER,DESCRIPTION"]
    lines += [line(o, "first") for o in range(1, 1500)]
    lines += ["NODE_NAME,FILESPACE_NAME,ARCHIVE_DATE,HL_NAME,LL_NAME,OBJECT_ID,OWNER,DESCRIPTION"]
    lines += [line(o, "second") for o in range(1500, 3000)]
    lines += [line(7, "second").replace("2024-02", "2025-03")]  # a later date for object 7
    path = tmp_path / "archives.csv"
    path.write_text("\n".join(lines) + "\n")

    at_once = Archives.read(path, block_bytes=4096)  # about 60 blocks
    one_by_one = Archives.read(path, by_blocks=False, block_bytes=4096)
    assert at_once.ids.tolist() == one_by_one.ids.tolist() == list(range(1, 3000))
    assert at_once.dates_us.tolist() == one_by_one.dates_us.tolist()
    seven = datetime(2024, 2, 8, 10, 7, tzinfo=UTC)
    assert at_once.dates_us[6] == int(seven.timestamp() * 1_000_000)
    late = datetime(2024, 2, 1 + 2999 % 28, 10, 2999 % 60, tzinfo=UTC)
    assert at_once.dates_us[-1] == int(late.timestamp() * 1_000_000)


def test_tsm_archives_in_any_order_give_the_same_dates(tmp_path: Path) -> None:
    # An export in object id order is taken as it is (no sort); the same lines shuffled, or
    # with an object listed twice, are sorted, and the first date listed wins either way.
    import random

    from tapelens.ingest.formats.tsm_contents import Archives

    header = "NODE_NAME,FILESPACE_NAME,HL_NAME,LL_NAME,OBJECT_ID,ARCHIVE_DATE,OWNER,DESCRIPTION"
    lines = [
        f"NODE,/pnfs,/d/,f{o},{o},2024-03-{1 + o % 28:02d} 08:{o % 60:02d}:00.000000,owner,"
        for o in range(1, 2000)
    ]
    shuffled = lines[:]
    random.Random(3).shuffle(shuffled)
    twice = [*lines, lines[9].replace("2024-03", "2025-04")]  # object 10 again, later

    def read(rows: list[str], name: str) -> Archives:
        path = tmp_path / name
        path.write_text("\n".join([header, *rows]) + "\n")
        return Archives.read(path, block_bytes=4096)

    in_order, any_order, repeated = (
        read(lines, "a.csv"),
        read(shuffled, "b.csv"),
        read(twice, "c.csv"),
    )
    assert in_order.ids.tolist() == any_order.ids.tolist() == list(range(1, 2000))
    assert repeated.ids.tolist() == list(range(1, 2000))
    assert in_order.dates_us.tolist() == any_order.dates_us.tolist()
    assert in_order.dates_us.tolist() == repeated.dates_us.tolist()
    ten = datetime(2024, 3, 11, 8, 10, tzinfo=UTC)
    assert repeated.dates_us[9] == int(ten.timestamp() * 1_000_000)
