"""The lines of an HPSS `hsi ls -P` listing: fields, checks and reasons (see hpss_lsp.py).

A block of lines becomes a frame with one row per line: its text fields, typed columns and an
outcome code. The fast path reads the fields with Polars' CSV reader; blocks with unusual bytes
or shapes are split line by line, and both give the same frame.
"""

from __future__ import annotations

import polars as pl

from tapelens.ingest.canonical import UTC_TIME
from tapelens.ingest.formats.base import Reject
from tapelens.ingest.formats.blocks import (
    REFUSED,
    Block,
    fast_path_ok,
    read_tab_columns,
    split_lines,
)
from tapelens.ingest.formats.fields import message_expr, quote_expr

N_FIELDS = 13
# Entries that are not files with data: counted skips.
SKIP_TYPES = ("DIRECTORY", "LINK", "SYMLINK", "HARDLINK", "FIFO", "SOCKET")
# Fields hsi may pad with spaces after the tab (right-aligned numbers, a blank cartridge " ");
# the path's padding is taken off by unpadded_path.
PADDED = ("type", "size", "pos", "vol", "cdate", "ctime")
TIME_FORMAT = "%m/%d/%Y %H:%M:%S"
# Columns of a FILE line (0-based); the line-splitting path counts from the end after the path.
_COLUMNS = {"type": 0, "path": 1, "size": 2, "pos": 4, "vol": 5, "cdate": 9, "ctime": 10}
_FROM_END = {"size": -11, "pos": -9, "vol": -8, "cdate": -4, "ctime": -3}
# (volume id, section) are packed in an int64 downstream: sections stay below 2**40.
SECTION_BITS = 40
SECTION_LIMIT = 1 << SECTION_BITS
# The columns of a placed copy.
KEEP = (
    "line_no",
    "copy_no",
    "path",
    "size_bytes",
    "written_at",
    "volume",
    "section",
    "offset",
    "other_volumes",
)

# Line outcomes.
OK, SKIP, REFUSED_ALREADY = 0, 1, 2
R_TYPE, R_FIELDS, R_SIZE, R_NOVOL, R_TIME, R_COUNT, R_POS, R_VOL = range(3, 11)


def unpadded_path(path: pl.Expr) -> pl.Expr:
    """The path without the spaces hsi pads it with after the tab.

    hsi right-aligns the fields of `ls -P` in their width, so padding comes before a value,
    never after it (ORNL-TechInt/hpss-crawler, hpssic/test/test_Checkable.py, lines captured
    from hsi 4.0: "FILE\t /home/tpb/LoadL_admin\t 88787\t   88787..."). An HPSS path is
    absolute: the spaces before its first "/" are padding. Spaces inside a path, and trailing
    spaces (part of a name: no padding follows a value), are kept; a path that does not start
    with "/" after its spaces is kept as printed.
    """
    return pl.when(path.str.contains(r"^ +/")).then(path.str.strip_chars_start(" ")).otherwise(path)


def cartridges(volumes: pl.Series) -> pl.Series:
    """Physical volumes to cartridges (A8553200 -> A85532), worked out once per distinct name."""
    names = volumes.unique()
    vol = pl.col(names.name)
    short = pl.when(vol.str.contains(r"^.{6}[0-9]{2}$")).then(vol.str.slice(0, 6)).otherwise(vol)
    return volumes.replace_strict(names, names.to_frame().select(short).to_series())


def fields_of(block: Block) -> tuple[pl.DataFrame, list[Reject], bool]:
    """Per line: line_no, type, nf (field count), the FILE fields as text, raw text when known.

    Returns (frame, rejects for undecodable lines, whether the fast path was taken).
    """
    if fast_path_ok(block):
        frame = read_tab_columns(block, N_FIELDS + 1, {**_COLUMNS, "last": 12, "extra": 13})
        if frame is not None:
            t = pl.col("type")
            odd = ~t.is_in(("FILE", *SKIP_TYPES)) | (
                (t == "FILE") & ((pl.col("last") == "") | (pl.col("extra") != ""))
            )
            if not frame.select(odd.any()).item():
                frame = frame.drop("last", "extra").with_columns(
                    pl.int_range(pl.len(), dtype=pl.Int64)
                    .add(block.first_line_no)
                    .alias("line_no"),
                    pl.lit(N_FIELDS, pl.Int32).alias("nf"),
                    pl.lit(None, pl.String).alias("raw"),
                )
                return frame, [], True
    return fields_by_lines(block)


def fields_by_lines(block: Block) -> tuple[pl.DataFrame, list[Reject], bool]:
    """fields_of for any block: lines split in Python, fields split by Polars."""
    lines, rejects = split_lines(block)
    parts, nf = pl.col("parts"), pl.col("nf")
    frame = (
        pl.DataFrame({"raw": pl.Series(lines, dtype=pl.String)})
        .with_columns(
            pl.int_range(pl.len(), dtype=pl.Int64).add(block.first_line_no).alias("line_no"),
            pl.col("raw").str.split("\t").alias("parts"),
        )
        .with_columns(
            parts.list.len().cast(pl.Int32).alias("nf"),
            parts.list.first().fill_null("").alias("type"),
        )
    )
    joined = parts.list.slice(1, nf - (N_FIELDS - 1)).list.join("\t")
    path = pl.when(nf > N_FIELDS).then(joined).otherwise(parts.list.get(1, null_on_oob=True))
    cols = [path.fill_null("").alias("path")] + [
        pl.when(nf >= N_FIELDS).then(parts.list.get(i, null_on_oob=True)).fill_null("").alias(name)
        for name, i in _FROM_END.items()
    ]
    return frame.with_columns(cols).drop("parts"), rejects, False


def checked(fields: pl.DataFrame, fast: bool) -> pl.DataFrame:
    """Typed columns and a code per line; copies of single-volume lines are checked here too."""
    fields = fields.with_columns(
        *(pl.col(c).str.strip_chars(" ") for c in PADDED), unpadded_path(pl.col("path"))
    )
    t, nf, vol, pos, raw = (pl.col(c) for c in ("type", "nf", "vol", "pos", "raw"))
    size = pl.col("size").str.to_integer(strict=False)
    written = pl.concat_str([pl.col("cdate"), pl.col("ctime")], separator=" ").str.strptime(
        UTC_TIME, TIME_FORMAT, strict=False
    )
    # A volume list: several copies, or one copy on several cartridges (copies_of).
    # (A position list beside a single volume is refused as a position that is not
    # section+offset.)
    multi = vol.str.contains(",", literal=True)
    pieces = pos.str.splitn("+", 2)
    section = pieces.struct.field("field_0").str.to_integer(strict=False)
    offset = pieces.struct.field("field_1").str.to_integer(strict=False)
    start = (
        pl.when(t.is_in(SKIP_TYPES))
        if fast  # every line is a FILE line with 13 fields or a skipped type
        else pl.when(raw == REFUSED)
        .then(REFUSED_ALREADY)
        .when(raw.str.strip_chars() == "")
        .then(SKIP)
        .when(message_expr(raw))
        .then(SKIP)
        .when(t.is_in(SKIP_TYPES))
    )
    s, o = pl.col("section"), pl.col("offset")
    code = (
        start.then(SKIP)
        .when(t != "FILE")
        .then(R_TYPE)
        .when(nf < N_FIELDS)
        .then(R_FIELDS)
        .when(pl.col("size_bytes").is_null() | (pl.col("size_bytes") < 0))
        .then(R_SIZE)
        .when((pl.col("size_bytes") == 0) & (vol == ""))
        .then(SKIP)
        .when(vol == "")
        .then(R_NOVOL)
        .when(pl.col("written_at").is_null())
        .then(R_TIME)
        .when(pl.col("multi"))
        .then(OK)  # copies checked one by one in copies_of
        .when(s.is_null() | o.is_null() | (s < 0) | (o < 0) | (s >= SECTION_LIMIT))
        .then(R_POS)
        .when(vol.str.contains(" ", literal=True))
        .then(R_VOL)
        .otherwise(OK)
    )
    typed = fields.with_columns(
        size.alias("size_bytes"),
        written.alias("written_at"),
        multi.alias("multi"),
        section.alias("section"),
        offset.alias("offset"),
        cartridges(fields["vol"]).alias("volume"),
    )
    return typed.with_columns(code.cast(pl.Int8).alias("code"))


def copies_of(lines: pl.DataFrame) -> pl.DataFrame:
    """The copies of lines with a volume list, with a code per row (R_COUNT on the first).

    As many positions as volumes: one copy per volume, each at its own position. One position
    for several volumes: one copy that needs them all (striped across cartridges, or going on
    to the next); its row stands on the first cartridge, the others in other_volumes. Its rows
    after the first are kept only when refused, so that a bad entry anywhere refuses the line.
    """
    vols, poss = pl.col("vol").str.split(","), pl.col("pos").str.split(",")
    n_vol, n_pos = vols.list.len(), poss.list.len()
    span = n_pos == 1
    cartridge = pl.element().str.replace(r"^(.{6})[0-9]{2}$", "${1}")
    copies = (
        lines.with_columns(
            pl.when((n_pos != 1) & (n_pos != n_vol))
            .then(pl.lit(R_COUNT, pl.Int8))
            .otherwise(pl.lit(OK, pl.Int8))
            .alias("code"),
            vols.alias("vraw"),
            pl.when(n_pos == n_vol)
            .then(poss)
            .otherwise(poss.list.first().repeat_by(n_vol))
            .alias("praw"),
            pl.int_ranges(1, n_vol + 1, dtype=pl.Int32).alias("copy_no"),
            span.alias("span"),
            pl.when(span)
            .then(vols.list.slice(1).list.eval(cartridge).list.join(","))
            .alias("other_volumes"),
        )
        .explode(["vraw", "praw", "copy_no"])
        .with_columns(pl.col("praw").str.splitn("+", 2).alias("pieces"))
    )
    s, o = pl.col("section"), pl.col("offset")
    copies = copies.with_columns(
        pl.col("pieces").struct.field("field_0").str.to_integer(strict=False).alias("section"),
        pl.col("pieces").struct.field("field_1").str.to_integer(strict=False).alias("offset"),
        cartridges(copies["vraw"]).alias("volume"),
    )
    bad_vol = (pl.col("vraw") == "") | pl.col("vraw").str.contains(" ", literal=True)
    code = (
        pl.when(pl.col("code") != OK)
        .then(pl.col("code"))
        .when(s.is_null() | o.is_null() | (s < 0) | (o < 0) | (s >= SECTION_LIMIT))
        .then(pl.lit(R_POS, pl.Int8))
        .when(bad_vol)
        .then(pl.lit(R_VOL, pl.Int8))
        .otherwise(pl.lit(OK, pl.Int8))
    )
    copies = copies.with_columns(code.alias("code"))
    keep = ~pl.col("span") | (pl.col("copy_no") == 1) | (pl.col("code") != OK)
    return copies.filter(keep).drop("pieces", "span")


def refusals(refused: pl.DataFrame, block: Block, fast: bool) -> list[Reject]:
    """Rejects with reasons for the refused lines (a small frame: reasons are built only here)."""
    q = quote_expr
    code = pl.col("code")
    reason = (
        pl.when(code == R_TYPE)
        .then(pl.format("expected a FILE or DIRECTORY line, found {}", q(pl.col("type"))))
        .when(code == R_FIELDS)
        .then(pl.format("expected 13 tab-separated fields, found {}", pl.col("nf")))
        .when(code == R_SIZE)
        .then(pl.format("size {} is not a number of bytes", q(pl.col("size"))))
        .when(code == R_NOVOL)
        .then(pl.format("no volume for a file of {} bytes", pl.col("size_bytes")))
        .when(code == R_TIME)
        .then(
            pl.format(
                "create time {} is not MM/DD/YYYY HH:MM:SS",
                q(pl.concat_str([pl.col("cdate"), pl.col("ctime")], separator=" ")),
            )
        )
        .when(code == R_COUNT)
        .then(
            pl.format(
                "position {} lists {} copies, volume list {} lists {}",
                q(pl.col("pos")),
                pl.col("pos").str.split(",").list.len(),
                q(pl.col("vol")),
                pl.col("vol").str.split(",").list.len(),
            )
        )
        .when(code == R_POS)
        .then(
            pl.format(
                "position {} is not section+offset", q(pl.col("c_pos").fill_null(pl.col("pos")))
            )
        )
        .when(pl.col("c_vol").fill_null(pl.col("vol")) == "")
        .then(pl.format("volume list {} has an empty entry", q(pl.col("vol"))))
        .otherwise(
            pl.format("volume {} contains blanks", q(pl.col("c_vol").fill_null(pl.col("vol"))))
        )
    )
    out = refused.select("line_no", "raw", reason.alias("reason"))
    if fast:
        texts = block.data.split(b"\n")
        first = block.first_line_no
        raws = [texts[n - first].decode("utf-8") for n in out["line_no"].to_list()]
        out = out.with_columns(pl.Series("raw", raws, dtype=pl.String))
    return [Reject(n, r, why) for n, r, why in out.iter_rows()]
