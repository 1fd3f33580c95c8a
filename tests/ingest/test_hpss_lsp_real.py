"""HPSS `hsi ls -P` with the padding and entry types real listings carry
(tests/data/catalog/hpss-ls-P-padded.txt)."""

from __future__ import annotations

import gzip
import tempfile
from pathlib import Path

import polars as pl
import psycopg
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from tapelens.ingest.formats import hpss_lsp, lookup
from tapelens.ingest.formats.base import ParseOptions
from tapelens.ingest.load import ingest_file
from tests.props import examples

LISTING = Path(__file__).parent.parent / "data" / "catalog" / "hpss-ls-P-padded.txt"
OPTS = ParseOptions(source="hpss")


def parsed(path: Path, **options: object) -> tuple[pl.DataFrame, dict[int, str], int]:
    opts = ParseOptions(source="hpss", **options)  # type: ignore[arg-type]
    batches = list(hpss_lsp.parse(path, options=opts))
    frame = pl.concat([b.frame for b in batches]).sort("line_no", "copy_no")
    return (
        frame,
        {r.line_no: r.reason for b in batches for r in b.rejects},
        sum(b.skipped for b in batches),
    )


def test_padded_fields_blank_cartridges_and_entry_types() -> None:
    frame, rejects, skipped = parsed(LISTING)
    got = frame.select("path", "size_bytes", "volume", "position", "offset_bytes", "copy_no")
    assert got.rows() == [
        ("/home/projects/e3sm/run1/zstash/000000.tar", 68719476736, "EA1548", 3, None, 1),
        ("/home/projects/e3sm/run1/zstash/000001.tar", 1073741824, "EA1548", 7, None, 1),
        ("/home/projects/e3sm/run1/small/a.nc", 40960, "EA1548", 12, 0, 1),
        ("/home/projects/e3sm/run1/small/b.nc", 81920, "EA1548", 12, 40960, 1),
    ]
    assert frame["line_no"].to_list() == [3, 4, 6, 7]
    # One position for two volumes: one copy on both cartridges.
    assert frame["other_volumes"].to_list() == [None, "EB0211", None, None]
    # comment, directory, zero-length file on no cartridge (" "), hard link, link
    assert skipped == 5
    assert rejects == {10: 'size "12 34" is not a number of bytes'}


def test_compressed_and_line_by_line_read_the_same(tmp_path: Path) -> None:
    plain, rejects, skipped = parsed(LISTING)
    packed = tmp_path / "listing.txt.gz"
    packed.write_bytes(gzip.compress(LISTING.read_bytes()))
    again, rejects2, skipped2 = parsed(packed)
    assert_frame_equal(plain, again)
    assert (rejects, skipped) == (rejects2, skipped2)
    tiny, rejects3, _ = parsed(LISTING, batch_rows=1)
    assert_frame_equal(plain, tiny)
    assert rejects3 == rejects


def test_loads(dsn: str) -> None:
    result = ingest_file(dsn, lookup("catalog", "hpss-lsp"), LISTING, OPTS)
    assert (result.rows, result.rejects, result.skipped) == (4, 1, 5)
    assert result.notes == (hpss_lsp.SEVERAL_CARTRIDGES,)
    with psycopg.connect(dsn) as conn:
        stored = conn.execute(
            "select volume, other_volumes from tapelens.tape_files where path like %s",
            ("%/000001.tar",),
        ).fetchall()
    assert stored == [("EA1548", "EB0211")]


# hsi 4.0 pads every field after its tab with spaces, the path and DIRECTORY names included:
# the shapes of the lines ORNL-TechInt/hpss-crawler captured from hsi (hpssic/test/
# test_Checkable.py, test_fdparse_Pf, test_fdparse_Pf0, test_fdparse_Pd; its parser,
# hpssic/Checkable.py fdparse, splits on tabs and strips the name). Fixture written from those
# shapes: tests/data/catalog/hpss-ls-P-hsi4.txt.
HSI4 = LISTING.with_name("hpss-ls-P-hsi4.txt")
HSI4_PATHS = [
    "/home/hsi4/run7/events_0001.root",
    "/home/hsi4/run7/events_0002.root",
    "/home/hsi4/run7/with inner  spaces.dat",
    "/home/hsi4/run7/ends in space ",  # a trailing space is part of the name: hsi pads before
]


def test_a_padded_path_is_the_path(tmp_path: Path) -> None:
    frame, rejects, skipped = parsed(HSI4)
    assert frame["path"].to_list() == HSI4_PATHS
    assert frame["file_id"].to_list() == HSI4_PATHS
    assert (frame["position"].to_list(), frame["offset_bytes"].to_list()) == (
        [4107, 4107, 4110, 4111],
        [0, 734003200, None, None],
    )
    assert rejects == {} and skipped == 2  # the directory, the empty file on no cartridge
    # The line-by-line path (taken for a block holding a path with a tab) reads them the same.
    odd = tmp_path / "with-tab.txt"
    tab_line = HSI4.read_text().splitlines()[1].replace("events_0001", "a\tb", 1)
    odd.write_text(HSI4.read_text() + tab_line + "\n")
    again, _, _ = parsed(odd)
    assert again["path"].to_list() == [*HSI4_PATHS, "/home/hsi4/run7/a\tb.root"]


def test_a_padded_and_an_unpadded_listing_name_the_same_files(dsn: str, tmp_path: Path) -> None:
    """The same files listed with and without padding are the same catalog rows: a newer dump
    without padding retires none of them and adds none."""
    unpadded = tmp_path / "ls-P-unpadded.txt"
    unpadded.write_text(
        "\n".join(
            "\t".join(field.lstrip(" ") for field in line.split("\t"))
            for line in HSI4.read_text().splitlines()
        )
        + "\n"
    )
    first = ingest_file(dsn, lookup("catalog", "hpss-lsp"), HSI4, OPTS)
    assert first.rows == 4
    second = ingest_file(dsn, lookup("catalog", "hpss-lsp"), unpadded, OPTS)
    assert second.removed == 0  # no copy of the first dump went missing from the second
    with psycopg.connect(dsn) as conn:
        paths = [
            r[0]
            for r in conn.execute(
                "select path from tapelens.tape_files where removed_at is null order by path"
            )
        ]
    assert paths == sorted(HSI4_PATHS)


NAME_CHARS = "abcXYZ019._- "


@settings(max_examples=examples(60), deadline=None)
@given(
    names=st.lists(
        st.text(NAME_CHARS, min_size=1, max_size=12).filter(lambda n: n.strip(" ") != ""),
        min_size=1,
        max_size=6,
    ),
    pads=st.lists(st.integers(0, 9), min_size=6, max_size=6),
)
def test_any_padding_before_a_path_is_dropped_and_the_name_kept(
    names: list[str], pads: list[int]
) -> None:
    """Whatever padding hsi puts before the path, and whatever spaces a name holds inside or
    at its end, the path read is the path written."""
    paths = [f"/home/p/{i}/{name}" for i, name in enumerate(names)]
    lines = [
        "FILE\t"
        + " " * pads[i % len(pads)]
        + path
        + f"\t 100\t 100\t {i + 1}+0\t X0412300\t 5081\t 0\t 1\t 06/11/2012\t 09:41:07"
        + "\t 06/12/2012\t 10:02:55"
        for i, path in enumerate(paths)
    ]
    with tempfile.TemporaryDirectory() as tmp:
        listing = Path(tmp) / "ls-P.txt"
        listing.write_text("\n".join(lines) + "\n")
        frame, rejects, _ = parsed(listing)
    assert rejects == {}
    assert frame["path"].to_list() == paths
