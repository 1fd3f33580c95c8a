"""The loop shared by the catalog formats read line by line (all but hpss-lsp).

Lines come from large blocks (blocks.py: decoded and split in one go, undecodable lines refused
as LineReader does). A format's handler looks at one line only as far as it must - skip it,
refuse it, or keep its raw fields - and its `finish` converts and checks a whole batch of kept
lines at once with Polars, refusing rows with a reason. Python work per line stays small.
Strict mode reports the first refused line of a batch by line number, also when a line is found
bad only in `finish`, so the message always names the earliest problem.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from tapelens.errors import ParseError
from tapelens.ingest.formats.base import LINE_DIGEST, LINE_NO, Batch, ParseOptions, Reject
from tapelens.ingest.formats.blocks import (
    REFUSED,
    Block,
    BlockReader,
    FileBlocks,
    block_bytes_for,
    is_plain_file,
    line_series,
    split_lines,
)
from tapelens.ingest.formats.fields import batches, check_strict, quote


class Lines:
    """One batch of kept lines (as raw field tuples), refused lines and the skip count."""

    def __init__(self, columns: tuple[str, ...]) -> None:
        self.columns = columns
        self.rows: list[tuple[Any, ...]] = []
        self.line_nos: list[int] = []
        self.raws: list[str] = []
        self.rejects: list[Reject] = []
        self.skipped = 0

    def keep(self, no: int, raw: str, values: tuple[Any, ...]) -> None:
        self.rows.append(values)
        self.line_nos.append(no)
        self.raws.append(raw)

    def keep_once(
        self, no: int, raw: str, values: tuple[Any, ...], seen: dict[str, int], what: str = "volume"
    ) -> None:
        """Keep an inventory row unless its volume (the first value) was listed before: then the
        line is refused, naming the line that listed it. `seen` maps volumes to their lines."""
        volume = values[0]
        if volume in seen:
            self.reject(no, raw, f"{what} {quote(volume)} already listed on line {seen[volume]}")
            return
        seen[volume] = no
        self.keep(no, raw, values)

    def reject(self, no: int, raw: str, reason: str) -> None:
        self.rejects.append(Reject(no, raw, reason))

    def skip(self) -> None:
        self.skipped += 1

    def frame(self, dtypes: dict[str, pl.DataType] | None = None) -> pl.DataFrame:
        """line_no, raw and the kept columns (strings unless `dtypes` says otherwise)."""
        dtypes = dtypes or {}
        values = list(zip(*self.rows, strict=True)) if self.rows else [()] * len(self.columns)
        data = {
            name: pl.Series(name, list(col), dtype=dtypes.get(name, pl.String()))
            for name, col in zip(self.columns, values, strict=True)
        }
        return pl.DataFrame(
            {
                "line_no": pl.Series(self.line_nos, dtype=pl.Int64),
                "raw": pl.Series(self.raws, dtype=pl.String),
                **data,
            }
        )


Handler = Callable[[int, str, Lines], None]
Finish = Callable[[Lines], pl.DataFrame]  # the batch's rows; may add rejects to Lines


def run(
    path: str | Path,
    options: ParseOptions,
    columns: tuple[str, ...],
    handle: Handler,
    finish: Finish,
    name: str | None = None,
    at_end: Callable[[Lines], None] | None = None,
) -> Iterator[Batch]:
    """Feed every line of `path` to `handle`; `finish` each batch of at most batch_rows lines.

    `name` is the input as shown in messages (default: the path). A format whose columns come
    from a header line passes no columns and sets Lines.columns in `finish`. `at_end` is called
    after the last line, before the last batch is finished: a format whose rows span several
    lines keeps its last row there.
    """
    name = name or str(path)
    with BlockReader(path) as reader:
        reader.name = name
        lines = Lines(columns)
        for block in reader.blocks(block_bytes_for(options.batch_rows)):
            texts, refused = split_lines(block)
            reader.advance(len(texts))
            lines.rejects += refused
            no = block.first_line_no
            for text in texts:
                if text != REFUSED:
                    handle(no, text, lines)
                no += 1
                if len(lines.rows) >= options.batch_rows:
                    yield _flush(lines, finish, name, options, reader.bytes_read)
                    lines = Lines(columns)
        if at_end is not None:
            at_end(lines)
        yield _flush(lines, finish, name, options, reader.bytes_read)


def _flush(
    lines: Lines, finish: Finish, name: str, options: ParseOptions, bytes_read: int
) -> Batch:
    frame = finish(lines)
    rejects = sorted(lines.rejects, key=lambda r: r.line_no)
    if rejects and options.strict:
        raise ParseError(name, rejects[0].line_no, rejects[0].reason)
    return Batch(frame, rejects, lines.skipped, bytes_read)


def refuse(
    frame: pl.DataFrame, checks: list[tuple[pl.Expr, pl.Expr]], lines: Lines
) -> pl.DataFrame:
    """The rows of `frame` that pass every check; the others become rejects.

    checks: (bad, reason) pairs in order; a row's reason is that of its first failing check.
    Reasons are built on the refused rows only. `frame` needs line_no and raw.
    """
    if not checks or not frame.height:
        return frame
    flags = [f"_bad{i}" for i in range(len(checks))]
    flagged = frame.with_columns(
        bad.fill_null(True).alias(flag) for flag, (bad, _) in zip(flags, checks, strict=True)
    )
    any_bad = pl.any_horizontal(flags)
    refused = flagged.filter(any_bad)
    if refused.height:
        reason = pl.coalesce(
            [pl.when(pl.col(f)).then(why) for f, (_, why) in zip(flags, checks, strict=True)]
        )
        for no, raw, why in refused.select("line_no", "raw", reason.alias("_why")).iter_rows():
            lines.reject(no, raw, why)
        flagged = flagged.filter(~any_bad)
    return flagged.drop(flags)


def run_blocks(
    path: str | Path,
    options: ParseOptions,
    columns: tuple[str, ...],
    frame_of: Callable[[pl.Series, Block, Lines], pl.DataFrame],
    empty_of: Callable[[Lines], pl.DataFrame],
) -> Iterator[Batch]:
    """The batches of a parser that reads a block of lines at a time: `frame_of` turns a
    block's lines (refused ones already in `Lines.rejects`) into canonical rows, taking the
    lines it cannot read at once through `Lines` one by one; `empty_of` gives the rows of an
    empty input. Strict mode stops at the block's first refused line.

    With ParseOptions.lines (a format whose every row follows from its own line), each row gets
    the digest of its line, and the lines its `read` rules out are left unread. The first block
    is always read whole: what a format learns of the file there (text or JSON, the notes it
    gives) does not depend on which of its lines a catalog already holds."""
    name = str(path)
    # A plain file is mapped: its blocks are not copied twice.
    with FileBlocks(path) if is_plain_file(path) else BlockReader(path) as reader:
        reader.name = name
        done = False
        for block in reader.blocks(block_bytes_for(options.batch_rows)):
            raw, refused = line_series(block)
            reader.advance(raw.len())
            lines = Lines(columns)
            lines.rejects += refused
            known = 0
            if options.lines is None:
                frame = frame_of(raw, block, lines)
            else:
                digests = line_digests(raw, options.lines.seed, options.lines.strip)
                wanted = (
                    options.lines.read(digests)
                    if options.lines.read is not None and done
                    else np.ones(len(digests), dtype=bool)
                )
                known = len(wanted) - int(wanted.sum())
                frame = _frame_of_lines(frame_of, raw, block, lines, digests, wanted)
            rejects = sorted(lines.rejects, key=lambda r: r.line_no)
            check_strict(name, options.strict, rejects)
            for batch in batches(
                frame, rejects, lines.skipped, block.bytes_read, options.batch_rows
            ):
                batch.known, known = known, 0  # counted once, with the block's first batch
                done = True
                yield batch
        if not done:  # an empty input still gives one (empty) batch
            yield Batch(empty_of(Lines(columns)), [], 0, reader.bytes_read)


def line_digests(raw: pl.Series, seed: int, strip: bool = False) -> np.ndarray:
    """A 64-bit digest of each line's text (without the blanks around it with `strip`), never
    0 (which a stored row without one holds)."""
    text = raw.str.strip_chars() if strip else raw
    digests = text.hash(seed).reinterpret(signed=True).to_numpy().copy()
    digests[digests == 0] = 1
    return digests


def _frame_of_lines(
    frame_of: Callable[[pl.Series, Block, Lines], pl.DataFrame],
    raw: pl.Series,
    block: Block,
    lines: Lines,
    digests: np.ndarray,
    wanted: np.ndarray,
) -> pl.DataFrame:
    """frame_of on the `wanted` lines of the block alone, each row with its line's digest and
    its line number in the file."""
    numbers = np.arange(block.first_line_no, block.first_line_no + len(digests), dtype=np.int64)
    some = not wanted.all()
    if some:
        at = np.flatnonzero(wanted)
        raw, numbers, digests = raw.gather(at), numbers[at], digests[at]
        # The wanted lines as a block of their own, numbered from 0 (their index) and numbered
        # back below: the block readers find cells in the block's bytes.
        data = (raw.str.join("\n").item() + "\n").encode() if raw.len() else b""
        block = Block(data, 0, block.bytes_read)
    before = len(lines.rejects)
    frame = frame_of(raw, block, lines)
    index = frame[LINE_NO].to_numpy() - block.first_line_no
    frame = frame.with_columns(
        pl.Series(LINE_NO, numbers[index], dtype=pl.Int64),
        pl.Series(LINE_DIGEST, digests[index], dtype=pl.Int64),
    )
    if some:
        lines.rejects[before:] = [
            replace(r, line_no=int(numbers[r.line_no])) for r in lines.rejects[before:]
        ]
    return frame
