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
