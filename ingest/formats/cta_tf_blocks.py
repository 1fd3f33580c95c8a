"""CTA `tf ls` text tables, a block of lines at a time (the rules are in cta_tf.py).

A table holds millions of lines of one plain shape: sixteen space-separated cells (the creation
time is two), the first an archive id. The cells of every such line are found at once from the
block's bytes with numpy (where a run of non-space bytes starts and ends, and on which line), then
cut out of the lines by Polars. A line that is not of that shape, or holds anything but printable
ASCII and spaces (a tab, an ANSI colour code, a non-ASCII byte, whose white space Python's split
may see otherwise), is left to the line-by-line reading, which gives the same fields.
"""

from __future__ import annotations

import numpy as np
import polars as pl

TEXT_FIELDS = 16
# The cells a copy needs: archive id, copy no, vid, fseq, instance, disk fxid, size, checksum
# type and value, storage class, creation date and time, and the last one (path or instance).
_CELLS = (0, 1, 2, 3, 5, 6, 7, 8, 9, 10, 13, 14, 15)
_PRINTABLE = bytes(range(32, 127))


def text_cells(
    data: bytes, lengths: np.ndarray, first_line_no: int
) -> tuple[pl.DataFrame, np.ndarray]:
    """line_no, the line's index in the block (`at`) and offset/length of each needed cell (o0,
    l0, ...) of the plain lines of a block of whole lines (their `lengths` in bytes, without
    terminators); and the indexes of the other lines."""
    n_lines = lengths.size
    b = np.frombuffer(data, dtype=np.uint8)
    ends = np.cumsum(lengths.astype(np.int64) + 1) - 1  # each line's terminator
    starts = ends - lengths
    plain = np.ones(n_lines, dtype=bool)
    # Lines with a byte outside printable ASCII and space (one pass in C finds whether any).
    newlines = n_lines - (not data.endswith(b"\n"))
    if len(data.translate(None, _PRINTABLE)) != newlines:
        odd_byte = np.flatnonzero(((b < 32) & (b != 10)) | (b > 126))
        plain[np.searchsorted(ends, odd_byte)] = False
    # Cells: where runs of bytes other than space and newline start and end (alternately).
    # Bytes below 32 other than the newline are on lines already set aside.
    inside = (b > 32).view(np.int8)
    step = np.empty(b.size + 1, dtype=np.int8)
    step[0], step[-1] = inside[:1].sum(), -inside[-1:].sum()
    np.subtract(inside[1:], inside[:-1], out=step[1:-1])
    edges = np.flatnonzero(step != 0)  # numpy finds the nonzero entries of a bool array faster
    first, last = edges[0::2].copy(), edges[1::2].copy()
    before = np.searchsorted(first, starts)  # index of each line's first cell
    counts = np.diff(before, append=first.size)
    plain &= counts == TEXT_FIELDS
    # The first cell starts with a digit (an archive id): no header, rule or message line.
    lead = (
        b[first[np.minimum(before, first.size - 1)]] if first.size else np.zeros(n_lines, np.uint8)
    )
    plain &= (lead >= ord("0")) & (lead <= ord("9"))
    at = np.flatnonzero(plain)
    cell = before[at][:, None] + np.array(_CELLS)  # (line, needed cell) -> index of the cell
    offset = first[cell] - starts[at][:, None]
    length = last[cell] - first[cell]
    columns: dict[str, np.ndarray] = {"line_no": at + first_line_no, "at": at}
    for j, k in enumerate(_CELLS):
        columns[f"o{k}"], columns[f"l{k}"] = offset[:, j], length[:, j]
    frame = pl.DataFrame(columns, schema={c: pl.Int64 for c in columns})
    return frame, np.flatnonzero(~plain)


def text_fields(raw: pl.Series, cells: pl.DataFrame, columns: tuple[str, ...]) -> pl.DataFrame:
    """line_no, raw and the raw fields (`columns`, as cta_tf's line reading keeps them) of the
    lines `cells` describes."""
    text = pl.col("raw")

    def cell(k: int) -> pl.Expr:
        return text.str.slice(pl.col(f"o{k}"), pl.col(f"l{k}"))

    lines = cells.with_columns(raw.gather(cells["at"]).alias("raw"))
    last = cell(15)
    fields = {
        "archive": cell(0),
        "copy": cell(1),
        "vid": cell(2),
        "fseq": cell(3),
        "size": cell(7),
        "checksum": pl.when(cell(9) != "-").then(pl.concat_str([cell(8), pl.lit(":"), cell(9)])),
        # 2021-2023 end with the path; since 2025 the CTA instance name ends the line.
        "path": pl.when(last.str.starts_with("/")).then(last),
        "disk": pl.concat_str([cell(5), pl.lit(":"), cell(6)]),
        "storage_class": cell(10),
        "created": pl.concat_str([cell(13), pl.lit(" "), cell(14)]),
    }
    return lines.select("line_no", "raw", *(fields[c].cast(pl.String).alias(c) for c in columns))
