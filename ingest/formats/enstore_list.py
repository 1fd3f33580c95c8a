"""Fermilab Enstore `enstore info --list VOL`: the files of one volume.

    label  bfid  size  location_cookie  delflag  original_name

printed as "%-Ns %-20s %10s %-22s %-7s %s" (N the label's length), a header line and a blank
line first; delflag is Enstore's "active", "deleted" or "unknown". With package information
(small files aggregated into packages) three columns come before the name:

    label  bfid  size  location_cookie  delflag  package_id  archive_status  cache_status  name

and the header says so; a member of a package (package_id not its own bfid) gets the package
as its aggregate_id. The original name is the rest of the line (it may hold blanks); "None"
(a file Enstore knows no name of) is refused. Position = the last field of
the location cookie (`%04d_%09d_%07d`); written_at = the unix time inside the bfid (prefix
letters, ten digits of unix time, then a counter). Deleted files (flag "yes") are skipped,
counted. Identity (contract): volume = label, file_id = path = original name, copy_id = bfid,
copy_no 1 - or 2 for a bfid that options.extra["alt_map"] (lines "bfid alt_bfid") lists as the
alternate copy of another.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import polars as pl

from tapelens.ingest.canonical import conform_with_lines
from tapelens.ingest.formats.base import Batch, LineReader, ParseOptions
from tapelens.ingest.formats.fields import is_message, quote_expr
from tapelens.ingest.formats.linewise import Lines, refuse, run

KIND = "catalog"
FORMAT = "enstore-list"

COLUMNS = ("label", "bfid", "size", "cookie", "flag", "package_id", "name")
PLAIN_FIELDS = 6  # label bfid size location_cookie delflag original_name
PACKAGE_FIELDS = 9  # ... delflag package_id archive_status cache_status original_name
DELETED = frozenset({"yes", "y", "deleted"})
LIVE = ("no", "n", "active", "unknown", "none")
COOKIE = r"^[0-9]+_[0-9]+_([0-9]+)$"
BFID_TIME = r"^[A-Za-z_]*([0-9]{10})[0-9]*$"
LAST_BFID_TIME = 4_102_444_800  # 2100-01-01: ten digits that are not a plausible time are refused


def parse(path: str | Path, *, options: ParseOptions) -> Iterator[Batch]:
    """Parse one volume's file list into tape_files rows."""
    alternates = _alternates(options.extra.get("alt_map"))

    n_fields = PLAIN_FIELDS

    def handle(no: int, text: str, out: Lines) -> None:
        nonlocal n_fields
        head = text.lstrip()
        if head[:5].lower() == "label":
            # The header says which layout follows.
            n_fields = PACKAGE_FIELDS if "package_id" in head.split() else PLAIN_FIELDS
            out.skip()
            return
        if not head or is_message(text):
            out.skip()
            return
        f = head.split(None, n_fields - 1)
        if len(f) < n_fields or not f[-1].strip():
            found = len(head.split())
            out.reject(no, text, f"expected {n_fields} whitespace-separated fields, found {found}")
        elif f[4].lower() in DELETED:
            out.skip()
        else:
            package = f[5] if n_fields == PACKAGE_FIELDS else None
            out.keep(no, text, (*f[:5], package, f[-1]))

    def finish(lines: Lines) -> pl.DataFrame:
        frame = lines.frame().with_columns(
            pl.col("size").str.to_integer(strict=False).alias("size_bytes"),
            pl.col("cookie").str.extract(COOKIE, 1).str.to_integer(strict=False).alias("position"),
            pl.col("bfid").str.extract(BFID_TIME, 1).str.to_integer(strict=False).alias("unix_s"),
        )
        good = refuse(
            frame,
            [
                (
                    ~pl.col("flag").str.to_lowercase().is_in(LIVE),
                    pl.format(
                        "delete flag {} is not active, deleted or unknown",
                        quote_expr(pl.col("flag")),
                    ),
                ),
                (
                    pl.col("size_bytes").is_null() | (pl.col("size_bytes") < 0),
                    pl.format("size {} is not a number of bytes", quote_expr(pl.col("size"))),
                ),
                (
                    pl.col("position").is_null(),
                    pl.format(
                        "location cookie {} is not NNNN_NNNNNNNNN_NNNNNNN",
                        quote_expr(pl.col("cookie")),
                    ),
                ),
                (
                    pl.col("unix_s").is_null() | (pl.col("unix_s") >= LAST_BFID_TIME),
                    pl.format("bfid {} holds no unix time", quote_expr(pl.col("bfid"))),
                ),
                (
                    pl.col("name").str.strip_chars() == "None",
                    pl.lit("no original name (Enstore printed None)"),
                ),
            ],
            lines,
        )
        package = pl.col("package_id")
        member = package.is_not_null() & (package != "None") & (package != pl.col("bfid"))
        return conform_with_lines(
            "catalog",
            good.select(
                "line_no",
                pl.lit(options.source).alias("source"),
                pl.col("bfid").alias("copy_id"),
                pl.col("name").alias("file_id"),
                pl.col("name").alias("path"),
                "size_bytes",
                pl.col("label").alias("volume"),
                "position",
                pl.when(member).then(pl.col("package_id")).alias("aggregate_id"),
                pl.when(pl.col("bfid").is_in(alternates)).then(2).otherwise(1).alias("copy_no"),
                pl.from_epoch("unix_s", time_unit="s")
                .dt.replace_time_zone("UTC")
                .alias("written_at"),
            ),
        )

    yield from run(path, options, COLUMNS, handle, finish)


def _alternates(path: object) -> list[str]:
    """The bfids listed as alternate copies in an alt map ("bfid alt_bfid" per line)."""
    if not path:
        return []
    found = set()
    with LineReader(str(path)) as reader:
        for line in reader:
            parts = line.text.replace(",", " ").split()
            if len(parts) >= 2 and not is_message(line.text):
                found.add(parts[1])
    return sorted(found)
