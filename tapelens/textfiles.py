"""Reading text inputs line by line: compressed or plain, with a bound on line length.

Every reader of tapelens's inputs (catalogs, logs, request lists) goes through LineReader, so that
each input gets the same treatment: gzip, bzip2 and zstd are read transparently (a stream cut off
is an error, never a shorter input), a UTF-8 byte order mark is dropped, a line longer than
MAX_LINE_BYTES is refused without being held, and a line that is not valid UTF-8 or holds a NUL
byte is refused with its number and reason.
"""

from __future__ import annotations

import bz2
import gzip
import io
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Self, cast

from tapelens.errors import InputError

# The longest line any reader accepts. Real lines are far shorter (a path is at most 4,096 bytes
# on Linux, a log record a few kilobytes); anything longer is a corrupt or foreign file, refused
# as one line without holding it in memory.
MAX_LINE_BYTES = 64 * 1024


BOM = b"\xef\xbb\xbf"


LONG_LINE = f"line longer than {MAX_LINE_BYTES:,} bytes (the longest line a reader accepts)"


LONG_LINE_KEPT = 200  # bytes of an over-long line kept with its rejection


def long_line_start(raw: bytes) -> str:
    """What is kept of a refused over-long line: its start, readable, marked as cut."""
    text = raw[:LONG_LINE_KEPT].decode("utf-8", "backslashreplace").replace("\x00", "\\x00")
    return text + "..."


@dataclass(frozen=True)
class Reject:
    line_no: int
    raw: str
    reason: str


@dataclass(frozen=True)
class Line:
    no: int  # 1-based line number in the decompressed input
    text: str  # without the line terminator


# Bytes needed to tell a compressed input from text. The whole magic is checked (gzip's method
# byte, bzip2's block-size digit and block or end-of-stream mark), so that a text file whose
# first line happens to begin with "BZh" is still read as text.
COMPRESSION_HEAD = 10


_BZIP2_MARKS = (b"\x31\x41\x59\x26\x53\x59", b"\x17\x72\x45\x38\x50\x90")


def compression_of(head: bytes) -> str | None:
    """ "gzip", "bzip2" or "zstd" when `head` (an input's first bytes) starts such a stream."""
    if head.startswith(b"\x1f\x8b\x08"):
        return "gzip"
    if (
        head[:3] == b"BZh"
        and head[3:4] in {bytes([d]) for d in b"123456789"}
        and head[4:10] in _BZIP2_MARKS
    ):
        return "bzip2"
    if head.startswith(b"\x28\xb5\x2f\xfd"):
        return "zstd"
    return None


class _ZstdFrames(io.RawIOBase):
    """The decompressed bytes of one or more zstd frames; a stream that stops inside a frame
    is an error (EOFError), as gzip and bzip2 say of theirs, never a silently shorter input."""

    CHUNK = 1 << 16

    def __init__(self, raw: IO[bytes]) -> None:
        import zstandard

        self._raw = raw
        self._zstd = zstandard.ZstdDecompressor()
        self._frame = self._zstd.decompressobj()
        self._pending = b""
        self._at = 0  # how much of _pending has been handed out
        self._started = False  # bytes of the current frame have been fed

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while self._at == len(self._pending):
            self._pending, self._at = b"", 0
            data = self._raw.read(self.CHUNK)
            if not data:
                if self._started and not self._frame.eof:
                    raise EOFError("the zstd stream ends inside a frame: the file is truncated")
                return 0
            while data:
                if self._frame.eof:  # a further frame follows
                    self._frame = self._zstd.decompressobj()
                self._started = True
                self._pending += self._frame.decompress(data)
                data = self._frame.unused_data if self._frame.eof else b""
        n = min(len(buffer), len(self._pending) - self._at)
        buffer[:n] = memoryview(self._pending)[self._at : self._at + n]
        self._at += n
        return n


class LineReader:
    """Iterates the lines of a file (or '-' for stdin), reading .gz/.bz2/.zst transparently.

    Lines that are not valid UTF-8 are not given to the parser; they are kept in `rejects` with
    the reason, since PostgreSQL text cannot hold them verbatim.
    """

    def __init__(self, path: str | Path) -> None:
        self.name = str(path)
        self._raw: IO[bytes] = self._open_raw(path)
        self._stream = self._decompress(self._raw)
        self.encoding_rejects: list[Reject] = []

    @staticmethod
    def _open_raw(path: str | Path) -> IO[bytes]:
        if str(path) == "-":
            return sys.stdin.buffer
        try:
            return open(path, "rb")  # noqa: SIM115 - closed by close()
        except OSError as exc:
            raise InputError(f"{path}: cannot open ({exc.strerror})") from None

    @staticmethod
    def _decompress(raw: IO[bytes]) -> IO[bytes]:
        buffered = raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(cast(Any, raw))
        kind = compression_of(buffered.peek(COMPRESSION_HEAD)[:COMPRESSION_HEAD])
        if kind == "gzip":
            return cast(IO[bytes], gzip.GzipFile(fileobj=buffered))
        if kind == "bzip2":
            return cast(IO[bytes], bz2.BZ2File(buffered))
        if kind == "zstd":
            return cast(IO[bytes], io.BufferedReader(_ZstdFrames(buffered), 1 << 20))
        return buffered

    @property
    def bytes_read(self) -> int:
        try:
            return self._raw.tell()
        except (OSError, ValueError):
            return 0

    def _raw_lines(self) -> Iterator[tuple[bytes, bool]]:
        """The input's lines with terminators, and whether each is within MAX_LINE_BYTES; a
        longer line is read to its end in bounded pieces and only its start is kept."""
        readline = self._stream.readline
        first = True
        while line := readline(MAX_LINE_BYTES + 1):
            if first:
                # A byte order mark (Excel's and some Windows tools' UTF-8) is not part of the
                # first line: it would hide a header's first column name.
                line, first = line.removeprefix(BOM), False
            if line.endswith(b"\n") or len(line) <= MAX_LINE_BYTES:
                yield line, True
                continue
            while (rest := readline(1 << 20)) and not rest.endswith(b"\n"):
                pass
            yield line[:LONG_LINE_KEPT], False

    def __iter__(self) -> Iterator[Line]:
        no = 0
        try:
            for raw, fits in self._raw_lines():
                no += 1
                if not fits:
                    self.encoding_rejects.append(Reject(no, long_line_start(raw), LONG_LINE))
                    continue
                raw = raw.rstrip(b"\r\n")
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    self.encoding_rejects.append(
                        Reject(
                            no,
                            raw.decode("utf-8", "backslashreplace").replace("\x00", "\\x00"),
                            f"not valid UTF-8 (byte {exc.start + 1})",
                        )
                    )
                    continue
                if "\x00" in text:
                    self.encoding_rejects.append(
                        Reject(no, text.replace("\x00", "\\x00"), "contains a NUL byte")
                    )
                    continue
                yield Line(no, text)
        except (OSError, EOFError, ValueError) as exc:
            raise InputError(f"{self.name}:{no + 1}: cannot read ({exc})") from None

    def close(self) -> None:
        if self._raw is not sys.stdin.buffer:
            self._raw.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
