"""Reading a (compressed) input in large blocks of whole lines, for vectorised parsers.

A parser that handles millions of lines cannot afford Python work per line: it reads a block of
tens of megabytes, lets Polars split and check all its lines at once, and falls back to
line-by-line decoding only for blocks with bytes the fast path does not handle. Line numbers and
the treatment of undecodable lines match LineReader, so both kinds of parser report the same.
"""

from __future__ import annotations

import mmap
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from tapelens.errors import InputError
from tapelens.ingest.formats.base import (
    BOM,
    COMPRESSION_HEAD,
    LONG_LINE,
    LONG_LINE_KEPT,
    MAX_LINE_BYTES,
    LineReader,
    Reject,
    compression_of,
    long_line_start,
)

# A line that was refused while decoding stands in the block as this text; NUL cannot occur in a
# line that reached the parser (LineReader refuses those too), so it never clashes with data.
REFUSED = "\x00"
BYTES_PER_ROW = 160  # typical length of a catalog line: sizes blocks from a row budget
MIN_BLOCK_BYTES = 1 << 20
# Buffers above 32 MB get fresh pages from the kernel on every allocation (glibc's largest
# mmap threshold); staying well below it lets the allocator reuse them, which measured 2-4x
# cheaper per block here.
MAX_BLOCK_BYTES = 16 << 20


@dataclass(frozen=True)
class Block:
    data: bytes  # whole lines; each ends with "\n" except perhaps the input's last
    first_line_no: int
    bytes_read: int  # position in the raw input after this block


def block_bytes_for(batch_rows: int) -> int:
    return max(MIN_BLOCK_BYTES, min(MAX_BLOCK_BYTES, batch_rows * BYTES_PER_ROW))


class BlockReader(LineReader):
    """LineReader that also hands out blocks of whole lines.

    Lines are not counted here (that would cost a pass over every byte): the parser says how
    many lines a block held, and `advance` moves the line number on.
    """

    def blocks(self, block_bytes: int) -> Iterator[Block]:
        self.line_no = 1
        pending = b""
        first = True  # the first block drops a byte order mark
        while True:
            try:
                chunk = self._stream.read(block_bytes)
            except Exception as exc:  # OSError, EOFError, zstandard.ZstdError: a corrupt input
                raise InputError(f"{self.name}:{self.line_no}: cannot read ({exc})") from None
            if not chunk:
                if pending:
                    yield Block(
                        pending.removeprefix(BOM) if first else pending,
                        self.line_no,
                        self.bytes_read,
                    )
                return
            cut = chunk.rfind(b"\n")
            if cut < 0:
                # A line longer than a block: keep reading, but hold no more of it than it takes
                # to refuse it (split_lines refuses any line over MAX_LINE_BYTES).
                pending = (pending + chunk)[: MAX_LINE_BYTES + 1]
                continue
            if len(pending) > MAX_LINE_BYTES:
                pending = pending[: MAX_LINE_BYTES + 1]
            if not pending and cut == len(chunk) - 1:
                whole = chunk
            else:  # one copy: the carried-over start of a line, then the chunk's whole lines
                whole = b"".join((pending, memoryview(chunk)[: cut + 1]))
            pending = chunk[cut + 1 :]
            if first:
                whole, first = whole.removeprefix(BOM), False
            yield Block(whole, self.line_no, self.bytes_read)

    def advance(self, n_lines: int) -> None:
        self.line_no += n_lines


class FileBlocks:
    """Blocks of a plain (uncompressed) file through a memory map: one copy per block.

    Same interface as BlockReader.blocks/advance; `mapped` gives the whole file for a scan.
    """

    def __init__(self, path: str | Path) -> None:
        self.name = str(path)
        try:
            self._fh = open(path, "rb")  # noqa: SIM115 - closed by close()
        except OSError as exc:
            raise InputError(f"{path}: cannot open ({exc.strerror})") from None
        self.size = os.fstat(self._fh.fileno()).st_size
        self.mapped = (
            mmap.mmap(self._fh.fileno(), 0, access=mmap.ACCESS_READ) if self.size else None
        )
        self.line_no = 1
        self.bytes_read = 0

    def blocks(self, block_bytes: int) -> Iterator[Block]:
        mm, start = self.mapped, 0
        while mm is not None and start < self.size:
            end = min(start + block_bytes, self.size)
            if end < self.size:
                cut = mm.rfind(b"\n", start, end)
                if cut < 0:  # a line longer than a block
                    cut = mm.find(b"\n", end)
                end = self.size if cut < 0 else cut + 1
            self.bytes_read = end
            data = mm[start:end]
            yield Block(data.removeprefix(BOM) if start == 0 else data, self.line_no, end)
            self.release(start, end)
            start = end

    def release(self, start: int, end: int) -> None:
        """Drop mapped pages already used, so they do not count in the process's memory."""
        if self.mapped is not None and hasattr(mmap, "MADV_DONTNEED"):
            first = start - start % mmap.PAGESIZE
            self.mapped.madvise(mmap.MADV_DONTNEED, first, end - first)

    def advance(self, n_lines: int) -> None:
        self.line_no += n_lines

    def close(self) -> None:
        if self.mapped is not None:
            self.mapped.close()
        self._fh.close()

    def __enter__(self) -> FileBlocks:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def is_plain_file(path: str | Path) -> bool:
    """A regular, uncompressed file (which can be mapped and read twice)."""
    if str(path) == "-" or not Path(path).is_file():
        return False
    try:
        with open(path, "rb") as fh:
            head = fh.read(COMPRESSION_HEAD)
    except OSError:
        return False
    return compression_of(head) is None


def split_lines(block: Block) -> tuple[list[str], list[Reject]]:
    """The block's lines as text (terminators removed), undecodable ones replaced by REFUSED."""
    data = block.data[:-1] if block.data.endswith(b"\n") else block.data
    rejects: list[Reject] = []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and "\x00" not in text and not has_long_line(data):
        lines = text.split("\n")
        if "\r" in text:
            lines = [line.rstrip("\r") for line in lines]
        return lines, rejects
    lines = []
    for i, raw in enumerate(data.split(b"\n")):
        raw = raw.rstrip(b"\r")
        no = block.first_line_no + i
        if len(raw) > MAX_LINE_BYTES:
            rejects.append(Reject(no, long_line_start(raw[:LONG_LINE_KEPT]), LONG_LINE))
            lines.append(REFUSED)
            continue
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            rejects.append(
                Reject(
                    no,
                    raw.decode("utf-8", "backslashreplace").replace("\x00", "\\x00"),
                    f"not valid UTF-8 (byte {exc.start + 1})",
                )
            )
            lines.append(REFUSED)
            continue
        if "\x00" in line:
            rejects.append(Reject(no, line.replace("\x00", "\\x00"), "contains a NUL byte"))
            lines.append(REFUSED)
            continue
        lines.append(line)
    return lines, rejects


def has_long_line(data: bytes) -> bool:
    """True when `data` may hold a line over MAX_LINE_BYTES (exact check left to the caller).

    Looks for a stretch of half the limit with no newline, aligned on multiples of it: any line
    over the limit contains one. That is a few hundred `find`s per block, not a pass per line.
    """
    step = MAX_LINE_BYTES // 2
    if len(data) <= MAX_LINE_BYTES:
        return False
    find = data.find
    return any(find(b"\n", at, at + step) < 0 for at in range(0, len(data) - step + 1, step))


def fast_path_ok(block: Block) -> bool:
    """True when a CSV reader can take the block as is: valid UTF-8, no NUL, no CR, no line
    over MAX_LINE_BYTES."""
    data = block.data
    if b"\x00" in data or b"\r" in data or has_long_line(data):
        return False
    if data.isascii():
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def read_tab_columns(block: Block, n_columns: int, wanted: dict[str, int]) -> pl.DataFrame | None:
    """Some tab-separated columns of every line of the block, as strings ('' when missing).

    One row per line, blank lines included (for text that passed `fast_path_ok`; the parser
    tests compare its line numbers with line-by-line parsing). None when the reader fails.
    """
    try:
        frame = pl.read_csv(
            block.data,
            separator="\t",
            has_header=False,
            quote_char=None,
            columns=sorted(wanted.values()),
            schema={f"c{i}": pl.String() for i in range(n_columns)},
            truncate_ragged_lines=True,
            missing_columns="insert",
            extra_columns="ignore",
            empty_string_is_null=False,
            raise_if_empty=False,
        )
    except Exception:  # any reader trouble: the caller takes the line-by-line path
        return None
    return frame.select(pl.col(f"c{i}").fill_null("").alias(name) for name, i in wanted.items())


@contextmanager
def materialised(path: str | Path) -> Iterator[Path]:
    """A real file for a parser that reads its input twice: stdin is spooled to a temp file."""
    if str(path) != "-":
        yield Path(path)
        return
    with tempfile.NamedTemporaryFile(prefix="tapelens-stdin-") as tmp:
        shutil.copyfileobj(sys.stdin.buffer, tmp)
        tmp.flush()
        yield Path(tmp.name)


def line_series(block: Block) -> tuple[pl.Series, list[Reject]]:
    """The block's lines as a String Series named "raw" (terminators removed), undecodable
    ones replaced by REFUSED with their rejects, as split_lines gives them.

    A plain block is split by Polars' reader (no Python string per line); the separator is
    NUL, which fast_path_ok has ruled out, so each line is one field.
    """
    if block.data and fast_path_ok(block):
        try:
            frame = pl.read_csv(
                block.data,
                separator="\x00",
                has_header=False,
                quote_char=None,
                schema={"raw": pl.String()},
                empty_string_is_null=False,
                raise_if_empty=False,
            )
        except Exception:  # any reader trouble: split in Python below
            frame = None
        if frame is not None:
            return frame.to_series().fill_null(""), []
    lines, rejects = split_lines(block)
    return pl.Series("raw", lines, dtype=pl.String), rejects
