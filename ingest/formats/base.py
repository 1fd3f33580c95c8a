"""What every parser shares: options, batches of rows and rejects, the collector (reading lines
from plain or compressed files is tapelens.textfiles, re-exported here).

A parser module in ingest/formats/ exposes

    KIND: str                      # "catalog" | "transfers" | "mounts" | "tapes"
    def parse(path, *, options: ParseOptions) -> Iterator[Batch]

and yields Batches whose frames hold canonical columns (see tapelens.ingest.canonical; the loader
conforms them and fills dataset, dataset_type and experiment from the path). Every input line
ends as a row, a reject (line number, text, reason), or a deliberate skip counted in
`Batch.skipped` (headers, blank lines, DIRECTORY lines, zero-length files...).
In strict mode a parser raises ParseError at the first bad line instead of rejecting it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from tapelens.errors import ParseError
from tapelens.textfiles import (
    BOM,
    COMPRESSION_HEAD,
    LONG_LINE,
    LONG_LINE_KEPT,
    MAX_LINE_BYTES,
    Line,
    LineReader,
    Reject,
    compression_of,
    long_line_start,
)

# Line reading is shared plumbing (tapelens.textfiles); these names are re-exported because
# every parser takes them from here.
__all__ = [
    "BATCH_ROWS",
    "BOM",
    "COMPRESSION_HEAD",
    "LINE_DIGEST",
    "LINE_NO",
    "LineDigests",
    "LONG_LINE",
    "LONG_LINE_KEPT",
    "MAX_LINE_BYTES",
    "Batch",
    "Collector",
    "Line",
    "LineReader",
    "ParseOptions",
    "Reject",
    "compression_of",
    "long_line_start",
]

BATCH_ROWS = 200_000


# Optional column of a parser's frames: the input line each row came from. The loader uses it to
# refuse one line alone when a value fails its checks before COPY; canonical.conform drops it.
LINE_NO = "line_no"


# Column of a catalog parser's frames when the load asks for it (ParseOptions.lines): the digest
# of the line each row was read from. The loader stores it beside the row.
LINE_DIGEST = "line_digest"


def aggregate_at(volume: pl.Expr, position: pl.Expr) -> pl.Expr:
    """The name of the aggregate at a place on a volume, where the system gives it none:
    "volume:position". It names a place, so where a copy keeps its place against a later
    listing's ranks (Format.listing_ranks) it keeps this name too."""
    return pl.concat_str([volume, pl.lit(":"), position.cast(pl.String)])


@dataclass
class Batch:
    frame: pl.DataFrame
    rejects: list[Reject] = field(default_factory=list)
    skipped: int = 0
    bytes_read: int = 0  # position in the raw (compressed) input after this batch
    # What the user must know about the rows (e.g. "sizes are approximate"): said once in the
    # load summary, whichever batch says it.
    notes: list[str] = field(default_factory=list)
    # Lines left unread because they list a stored copy unchanged (ParseOptions.lines).
    known: int = 0


@dataclass(frozen=True)
class LineDigests:
    """What a load asks of a parser whose every row follows from its own line (and from the
    load's options and dataset rules, which `seed` stands for): each row's LINE_DIGEST, and, for
    a newer dump, to leave unread the lines `read` rules out."""

    seed: int
    # Given the digests of a block's lines, False for each line that lists a stored copy
    # unchanged (the copy is then counted as listed). None: read every line.
    read: Callable[[np.ndarray], np.ndarray] | None = None
    strip: bool = False  # digests taken without the blanks around each line (Format.padded_lines)


@dataclass(frozen=True)
class ParseOptions:
    """Options every parser accepts; a format ignores what it does not use."""

    source: str  # the catalog/log identity stored in `source`
    strict: bool = False
    year: int | None = None  # for logs whose lines carry no year (dCache billing, HPSS PVL)
    # IANA zone of times the input prints in local time with no offset (CTA text tables...)
    timezone: str = "UTC"
    volume: str | None = None  # for per-volume listings (TSM q content)
    columns: tuple[str, ...] | None = None  # column order when a dump has no header
    mapping: dict[str, Any] | None = None  # generic CSV: site column -> canonical column
    batch_rows: int = BATCH_ROWS
    extra: dict[str, Any] = field(default_factory=dict)  # format-specific (e.g. tsm archives)
    lines: LineDigests | None = None  # set by the loader, for formats whose lines stand alone


class Collector:
    """Gathers parsed rows and rejects, and cuts them into Batches.

    Parsers append plain dicts (cheap) and let the collector build typed frames per batch.
    """

    def __init__(
        self, reader: LineReader, options: ParseOptions, schema: Mapping[str, pl.DataType]
    ):
        self.reader = reader
        self.options = options
        # Every row keeps the number of the line it came from, so that the loader can refuse
        # that line alone when a value would be refused by the database (see LINE_NO).
        self.schema = {**schema, LINE_NO: pl.Int64()}
        self.rows: list[dict[str, Any]] = []
        self.rejects: list[Reject] = []
        self.skipped = 0

    def reject(self, line: Line, reason: str) -> None:
        if self.options.strict:
            # An earlier line that could not even be decoded is the first problem of the file.
            enc = self.reader.encoding_rejects
            if enc and enc[0].line_no < line.no:
                raise ParseError(self.reader.name, enc[0].line_no, enc[0].reason)
            raise ParseError(self.reader.name, line.no, reason)
        self.rejects.append(Reject(line.no, line.text, reason))

    def skip(self) -> None:
        self.skipped += 1

    def add(self, row: dict[str, Any], line_no: int | None = None) -> None:
        """Keep a parsed row; `line_no`: the input line it came from (the row's own if None)."""
        if line_no is not None:
            row[LINE_NO] = line_no
        self.rows.append(row)

    def full(self) -> bool:
        return len(self.rows) >= self.options.batch_rows

    def flush(self) -> Batch:
        enc = self.reader.encoding_rejects
        if enc and self.options.strict:
            first = enc[0]
            raise ParseError(self.reader.name, first.line_no, first.reason)
        rejects = sorted(self.rejects + enc, key=lambda r: r.line_no)
        self.reader.encoding_rejects = []
        frame = (
            pl.DataFrame(self.rows, schema=self.schema, orient="row")
            if self.rows
            else (pl.DataFrame(schema=self.schema))
        )
        batch = Batch(frame, rejects, self.skipped, self.reader.bytes_read)
        self.rows, self.rejects, self.skipped = [], [], 0
        return batch
