"""CSV exports as Windows tools and spreadsheets write them: a byte order mark, CRLF line ends."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
from polars.testing import assert_frame_equal

from tapelens.ingest.formats import catalog_csv, mounts_csv, staging_csv, tapes_csv, transfers_csv
from tapelens.ingest.formats.base import ParseOptions

ROOT = Path(__file__).parent.parent / "data"


@pytest.mark.parametrize(
    ("module", "name"),
    [
        (catalog_csv, "catalog/copies.csv"),
        (tapes_csv, "catalog/tapes.csv"),
        (mounts_csv, "logs/mounts.csv"),
        (transfers_csv, "logs/transfers.csv"),
        (staging_csv, "logs/staging.csv"),
    ],
)
def test_a_byte_order_mark_and_crlf_read_like_plain(
    tmp_path: Path, module: ModuleType, name: str
) -> None:
    plain = ROOT / name
    windows = tmp_path / plain.name
    windows.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes().replace(b"\n", b"\r\n"))
    opts = ParseOptions(source="x")
    a = list(module.parse(plain, options=opts))
    b = list(module.parse(windows, options=opts))
    for x, y in zip(a, b, strict=True):
        assert_frame_equal(x.frame, y.frame)
        assert [(r.line_no, r.reason) for r in x.rejects] == [
            (r.line_no, r.reason) for r in y.rejects
        ]
        assert x.skipped == y.skipped


def test_spaces_after_the_commas_are_not_part_of_the_values(tmp_path: Path) -> None:
    """An export written with ", " between columns (as spreadsheets and `psql -A -F ', '` do):
    the volume, copy id and path are the values without their padding, so the copy joins with
    its tape and with the same file in other formats; a path keeps a space at its end (part of
    a name, as hpss-lsp keeps it)."""
    export = tmp_path / "padded.csv"
    export.write_text(
        "path, volume, position, size_bytes, written_at, checksum\n"
        " /a/b/f1.root, A85532, 12, 100, 2023-01-01T00:00:00Z, ad:1\n"
        "/a/b/ends in space , A85532 ,13,50,2023-01-01T00:00:00Z,\n"
    )
    batches = list(catalog_csv.parse(export, options=ParseOptions(source="s")))
    rows = [r for b in batches for r in b.frame.iter_rows(named=True)]
    assert [(r["path"], r["file_id"], r["volume"], r["copy_id"]) for r in rows] == [
        ("/a/b/f1.root", "/a/b/f1.root", "A85532", "A85532:12:"),
        ("/a/b/ends in space ", "/a/b/ends in space ", "A85532", "A85532:13:"),
    ]
    assert [r["checksum"] for r in rows] == ["ad:1", None]
