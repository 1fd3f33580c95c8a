"""Enstore `enstore info --list` as its client prints it, with package (small-file
aggregation) columns (tests/data/catalog/VPK001.list)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from tapelens.ingest.formats import enstore_list
from tapelens.ingest.formats.base import ParseOptions

LISTING = Path(__file__).parent.parent / "data" / "catalog" / "VPK001.list"


def test_package_columns_members_and_enstore_flags() -> None:
    batches = list(enstore_list.parse(LISTING, options=ParseOptions(source="fnal")))
    frame = pl.concat([b.frame for b in batches]).sort("line_no")
    rejects = {r.line_no: r.reason for b in batches for r in b.rejects}
    got = frame.select("path", "size_bytes", "position", "aggregate_id").rows()
    assert got == [
        ("/pnfs/fs/usr/nova/raw/big.raw", 8589934592, 1, None),
        # Members of one package share its bfid as their aggregate; a name may hold blanks.
        ("/pnfs/fs/usr/nova/sfa/small 1.root", 1048576, 2, "GCMS151234569900000"),
        ("/pnfs/fs/usr/nova/sfa/small2.root", 2097152, 2, "GCMS151234569900000"),
        # "unknown": Enstore could not say the file is deleted; the copy stays.
        ("/pnfs/fs/usr/nova/raw/flag.unknown.raw", 65536, 3, None),
    ]
    assert frame["volume"].unique().to_list() == ["VPK001"]
    assert rejects == {8: "no original name (Enstore printed None)"}
    # header, the blank line after it, the deleted member
    assert sum(b.skipped for b in batches) == 3
