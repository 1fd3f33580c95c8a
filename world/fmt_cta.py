"""CERN CTA `cta-admin tf ls` (docs/formats/cta-tf.md), as JSON lines and as the text table.

JSON (one object per line, af/df/tf nested as cta-admin --json prints them, 64-bit numbers as
strings) is the primary catalog: it has the path (df.path) and the creation time to the second.
The text table has minute resolution and no path; it is listed as an alternate.
Block ids count 256 KiB blocks plus one tape mark per file from the start of the tape.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from tapelens.world.copies import hex32, mix64
from tapelens.world.outputs import Consumer, Sink, entry, live
from tapelens.world.params import SiteParams
from tapelens.world.site import Site
from tapelens.world.text import stamps

JSON_PATH = "catalog/tf-ls.jsonl"
TEXT_PATH = "catalog/tf-ls.txt"
BLOCK_BYTES = 256 * 1024
GROUPS = {"atlas": "zp", "cms": "zh", "lhcb": "z5", "alice": "z2"}
TEXT_COLUMNS: tuple[tuple[str, int], ...] = (
    # (header, width); positive: right-aligned, negative: left-aligned
    ("archive id", 10),
    ("copy no", 7),
    ("vid", -6),
    ("fseq", 8),
    ("block id", 10),
    ("disk buffer", -11),
    ("disk fxid", 10),
    ("size", 12),
    ("checksum type", -13),
    ("checksum value", -14),
    ("storage class", -13),
    ("owner", -9),
    ("group", -5),
    ("creation time", -16),
    ("instance", -9),
)


class CtaTf(Consumer):
    """tf-ls.jsonl (the catalog) and tf-ls.txt (an alternate)."""

    def __init__(self, out_dir: Path, p: SiteParams, site: Site) -> None:
        self.p = p
        self.uids = {name: 10_000 + i for i, name in enumerate(site.pools)}
        self.carry: tuple[int, int] = (-1, 0)  # (tape, blocks used) across chunks
        self.js = Sink(out_dir, JSON_PATH, p.gzip)
        self.txt = Sink(out_dir, TEXT_PATH, p.gzip)
        self.txt.text(_header() + "\n")

    def write(self, rows: pl.DataFrame) -> None:
        rows = live(rows)
        block, self.carry = _block_ids(rows, self.carry)
        written = rows["written_s"].to_numpy()
        rows = rows.with_columns(
            block=pl.Series(block),
            fxid=hex32(mix64(rows["file"].to_numpy(), self.p.seed ^ 0x5A5A)).str.strip_chars_start(
                "0"
            ),
            instance=pl.concat_str([pl.lit("eos"), pl.col("experiment")]),
            storage_class=pl.concat_str(
                [pl.col("experiment"), pl.col("dataset_type").str.to_lowercase()], separator="_"
            ),
            owner=pl.concat_str([pl.col("experiment"), pl.lit("003")]),
            group=pl.col("experiment").replace_strict(GROUPS, default="def"),
            uid=pl.col("experiment").replace_strict(self.uids, return_dtype=pl.Int64),
            adler=pl.col("checksum").str.strip_prefix("ADLER32:"),
            created=stamps(written, "%Y-%m-%d", "%H:%M"),
        )
        self.js.lines(_json_line(), rows)
        self.txt.lines(_text_line(), rows)

    def close(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        self.js.close()
        self.txt.close()
        return (
            [entry(self.js.rel, "catalog", "cta-tf", self.p.source)],
            [entry(self.txt.rel, "catalog", "cta-tf", self.p.source)],
        )


def _block_ids(rows: pl.DataFrame, carry: tuple[int, int]) -> tuple[np.ndarray, tuple[int, int]]:
    """Block id of each file: blocks (and tape marks) of the files before it on its tape."""
    tape = rows["tape"].to_numpy()
    if tape.size == 0:
        return np.zeros(0, dtype=np.int64), carry
    blocks = -(-rows["size_bytes"].to_numpy() // BLOCK_BYTES) + 1
    change = np.ones(tape.size, dtype=bool)
    change[1:] = tape[1:] != tape[:-1]
    total = np.cumsum(blocks)
    before = total - blocks
    start_of_group = before[np.flatnonzero(change)][np.cumsum(change) - 1]
    out = before - start_of_group
    if tape[0] == carry[0]:
        out[tape == tape[0]] += carry[1]
    last = int(tape[-1])
    used = int(out[-1] + blocks[-1])
    return out, (last, used)


def _json_line() -> pl.Expr:
    def s(text: str) -> pl.Expr:
        return pl.lit(text)

    return pl.concat_str(
        [
            s('{"af":{"archiveId":"'),
            pl.col("file_id"),
            s('","storageClass":"'),
            pl.col("storage_class"),
            s('","creationTime":"'),
            pl.col("written_s").cast(pl.String),
            s('","checksum":[{"type":"ADLER32","value":"'),
            pl.col("adler"),
            s('"}],"size":"'),
            pl.col("size_bytes").cast(pl.String),
            s('"},"df":{"diskId":"'),
            pl.col("fxid"),
            s('","diskInstance":"'),
            pl.col("instance"),
            s('","ownerId":{"uid":'),
            pl.col("uid").cast(pl.String),
            s(',"gid":'),
            (pl.col("uid") + 1000).cast(pl.String),
            s('},"path":"'),
            pl.col("path"),
            s('"},"instanceName":"'),
            pl.col("instance"),
            s('","tf":{"vid":"'),
            pl.col("volume"),
            s('","copyNb":'),
            pl.col("copy_no").cast(pl.String),
            s(',"blockId":"'),
            pl.col("block").cast(pl.String),
            s('","fSeq":"'),
            pl.col("position").cast(pl.String),
            s('"}}'),
        ]
    )


def _pad(expr: pl.Expr, width: int) -> pl.Expr:
    return expr.str.pad_start(width) if width > 0 else expr.str.pad_end(-width)


def _header() -> str:
    cells = [name.rjust(w) if w > 0 else name.ljust(-w) for name, w in TEXT_COLUMNS]
    return "  ".join(cells).rstrip()


def _text_line() -> pl.Expr:
    values = [
        pl.col("file_id"),
        pl.col("copy_no").cast(pl.String),
        pl.col("volume"),
        pl.col("position").cast(pl.String),
        pl.col("block").cast(pl.String),
        pl.col("instance"),
        pl.col("fxid"),
        pl.col("size_bytes").cast(pl.String),
        pl.lit("ADLER32"),
        pl.col("adler"),
        pl.col("storage_class"),
        pl.col("owner"),
        pl.col("group"),
        pl.col("created"),
        pl.col("instance"),
    ]
    cells = [_pad(v, w) for v, (_, w) in zip(values, TEXT_COLUMNS, strict=True)]
    return pl.concat_str(cells, separator="  ").str.strip_chars_end()
