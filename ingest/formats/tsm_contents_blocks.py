"""TSM `select * from contents` and `archives` exports, a block of lines at a time (the rules are
in tsm_contents.py).

A dump holds millions of lines, nearly all of one plain shape: a data line with the expected
number of comma-separated fields and well-formed values, a blank line or a server message.
Polars splits and checks all lines of a block at once and marks each line `ok` (read here),
`skip` or `odd`. An odd line (a header, a quoted or short line, a value the checks would refuse
or might read in another way) is left to the line-by-line reading, in its place between the
runs of ok lines, so that refusals, their reasons and line numbers stay exactly those of that
path. The checks accept only what the line-by-line path certainly reads the same way: e.g. a
number is plain ASCII digits, where Python's int() also takes padding and other scripts' digits.
"""

from __future__ import annotations

import polars as pl

from tapelens.ingest.formats.blocks import REFUSED
from tapelens.ingest.formats.fields import message_expr

# Python's str.strip() and `\s` also take these four control characters as white space, Polars
# does not: a block holding one is read line by line.
PYTHON_ONLY_SPACE = "[\x1c-\x1f]"
# A server message code followed by a non-ASCII character: whether `\b` holds there depends on
# the regex engine's idea of a word character.
_DOUBTFUL_MESSAGE = r"^\s*AN[RSE][0-9]{4}[IEWSK][^\x00-\x7f]"
# fields.is_message looks at the regex only for lines starting with one of these.
_MESSAGE_START = r"^[#*AU \t]"
# Files this large are not real; below it, a block's sums of sizes cannot overflow int64.
SIZE_LIMIT = 1 << 40
# The export's own time form (fields in range; a day past a month's end is left to strptime,
# which refuses it as parse_iso_utc does).
_EXPORT_TIME = (
    r"^[1-9][0-9]{3}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"
    r" ([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]\.[0-9]{6}$"
)

# Line kinds. NEUTRAL: a line the line-by-line path refuses or skips before it takes a rank
# (blank, too few fields), so it may be read there out of turn.
OK, SKIP, ODD, NEUTRAL, REFUSED_ALREADY = 0, 1, 2, 3, 4


def line_kinds(raw: pl.Series, first_line_no: int) -> pl.DataFrame | None:
    """line_no, raw and kind (SKIP for server messages, REFUSED_ALREADY for lines refused while
    decoding, OK otherwise) of a block's lines; None when the whole block must be read line by
    line."""
    text = pl.col("raw")
    frame = raw.alias("raw").to_frame()
    doubtful = text.str.contains(PYTHON_ONLY_SPACE) | text.str.contains(_DOUBTFUL_MESSAGE)
    if frame.select(doubtful.any()).item():
        return None
    message = text.str.contains(_MESSAGE_START) & message_expr(text)
    return frame.with_columns(
        pl.int_range(pl.len(), dtype=pl.Int64).add(first_line_no).alias("line_no"),
        pl.when(text == REFUSED)
        .then(REFUSED_ALREADY)
        .when(message)
        .then(SKIP)
        .otherwise(OK)
        .cast(pl.Int8)
        .alias("kind"),
    )


def count(text: pl.Expr) -> pl.Expr:
    """ASCII digits only (as fields.parse_count without its padding) as Int64, else null.

    str.to_integer also takes a leading sign, which parse_count refuses."""
    signed = text.str.starts_with("+") | text.str.starts_with("-")
    return pl.when(~signed).then(text.str.to_integer(strict=False))


def fraction(text: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """(i, n) of "i/n" written with ASCII digits only, else nulls (range checked by the caller)."""
    pieces = text.str.splitn("/", 2)
    return count(pieces.struct.field("field_0")), count(pieces.struct.field("field_1"))


def contents_lines(lines: pl.DataFrame, columns: dict[str, int]) -> pl.DataFrame:
    """`lines` (from line_kinds) with data lines checked under `columns` (an OK line may turn
    ODD or NEUTRAL) and read: volume, path, size_bytes, object, member_i, member_n
    (AGGREGATED; 1/1 for "No") and occupies (a continuation segment)."""
    raw, kind = pl.col("raw"), pl.col("kind")
    expected, free = columns["#"], columns["FILE_NAME"]
    parts, nf = pl.col("_parts"), pl.col("_nf")
    frame = lines.with_columns(raw.str.split(",").alias("_parts")).with_columns(
        pl.col("_parts").list.len().alias("_nf")
    )
    surplus = frame.select((nf - expected).max()).item() or 0

    def field(name: str) -> pl.Expr:
        i = columns[name]
        if i < free or not surplus:
            return parts.list.get(i, null_on_oob=True)
        if i > free:  # counted from the end: surplus commas belong to FILE_NAME
            return parts.list.get(i - expected, null_on_oob=True)
        return parts.list.slice(free, nf - expected + 1).list.join(",")

    # A header line (the line path takes its columns), or a line that path splits otherwise.
    header = raw.str.contains("(?i)volume_name")
    quoted = raw.str.contains('"', literal=True)
    frame = frame.with_columns(
        field("VOLUME_NAME").alias("volume"),
        pl.concat_str([field("FILESPACE_NAME"), field("FILE_NAME")]).alias("path"),
        field("AGGREGATED").alias("_agg"),
        field("SEGMENT").alias("_seg"),
        count(field("FILE_SIZE")).alias("size_bytes"),
        count(field("OBJECT_ID")).alias("object"),
        (header | ((nf != expected) & quoted)).alias("_odd_shape"),
        (~header & (nf < expected) & ~quoted).alias("_short"),
    ).drop("_parts")
    agg = pl.col("_agg")
    alone = agg.is_in(["No", "NO", "nO", "no", "N", "n"])
    member_i, member_n = fraction(agg)
    seg_i, seg_n = fraction(pl.col("_seg"))
    frame = frame.with_columns(
        pl.when(alone).then(1).otherwise(member_i).alias("member_i"),
        pl.when(alone).then(1).otherwise(member_n).alias("member_n"),
        seg_i.alias("_seg_i"),
        seg_n.alias("_seg_n"),
    )
    vol, i, n = pl.col("volume"), pl.col("member_i"), pl.col("member_n")
    good = (
        ~pl.col("_odd_shape")
        & (nf >= expected)
        & (vol != "")
        & (vol.str.strip_chars() == vol)
        & i.is_between(1, n)
        & pl.col("_seg_i").is_between(1, pl.col("_seg_n"))
        & (pl.col("size_bytes") < SIZE_LIMIT)
        & pl.col("object").is_not_null()
        # Not blank to Python's strip() either: a printable ASCII character is never stripped.
        & pl.col("path").str.contains("[!-~]")
    )
    return frame.with_columns(
        pl.when(kind != OK)
        .then(kind)
        .when(pl.col("_short"))
        .then(NEUTRAL)
        .when(good.fill_null(False))
        .then(OK)
        .otherwise(ODD)
        .cast(pl.Int8)
        .alias("kind"),
        (pl.col("_seg_i") > 1).alias("occupies"),
    ).drop("_nf", "_agg", "_seg", "_seg_i", "_seg_n", "_odd_shape", "_short")


def archive_lines(lines: pl.DataFrame, columns: dict[str, int]) -> pl.DataFrame:
    """`lines` (from line_kinds) with object and date_us (µs since 1970, UTC) of the data lines
    read here; an OK line whose id or date is not in the plain form, or a header, turns ODD."""
    raw, kind = pl.col("raw"), pl.col("kind")
    oid, date = columns.get("OBJECT_ID", 4), columns.get("ARCHIVE_DATE", 5)
    parts = pl.col("_parts")
    when = pl.col("_when")
    frame = (
        lines.with_columns(raw.str.split(",").alias("_parts"))
        .with_columns(
            count(parts.list.get(oid, null_on_oob=True)).alias("object"),
            parts.list.get(date, null_on_oob=True).alias("_when"),
        )
        .with_columns(
            pl.when(when.str.contains(_EXPORT_TIME))
            .then(when.str.strptime(pl.Datetime("us"), "%Y-%m-%d %H:%M:%S.%6f", strict=False))
            .cast(pl.Int64)
            .alias("date_us"),
        )
        .drop("_parts", "_when")
    )
    # A header names OBJECT_ID and ARCHIVE_DATE (in any case: the reader upper-cases names,
    # and a dotless i upper-cases to I).
    header = raw.str.contains("(?i)arch[iı]ve_date")
    good = pl.col("object").is_not_null() & pl.col("date_us").is_not_null() & ~header
    return frame.with_columns(
        pl.when(kind == OK)
        .then(pl.when(good.fill_null(False)).then(OK).otherwise(ODD))
        .otherwise(kind)
        .cast(pl.Int8)
        .alias("kind")
    )
