"""Writing output files byte-identically from run to run, plain or gzip, and manifest entries.

gzip members carry no file name and a zero mtime, so the same content always gives the same
bytes. Writers hand over Polars frames of ready-made text lines chunk by chunk.
"""

from __future__ import annotations

import gzip
import io
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import IO, Any, cast

import polars as pl

GZIP_LEVEL = 6  # zlib's default trade-off; level 9 is several times slower for ~3% smaller files

Progress = Callable[[str, int, int], None]


def no_progress(stage: str, done: int, total: int) -> None:
    """Progress sink that says nothing."""


class Sink:
    """One output file under the site directory; `.gz` is appended when gzip is on."""

    def __init__(self, out_dir: Path, rel: str, gz: bool) -> None:
        self.rel = rel + (".gz" if gz else "")
        self.path = out_dir / self.rel
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._raw = open(self.path, "wb")  # noqa: SIM115 - closed in close()
        self._out: IO[bytes] = self._raw
        if gz:
            self._out = cast(
                IO[bytes],
                gzip.GzipFile(
                    filename="", mode="wb", fileobj=self._raw, mtime=0, compresslevel=GZIP_LEVEL
                ),
            )

    def text(self, text: str) -> None:
        self._out.write(text.encode("utf-8"))

    def lines(self, lines: pl.Series | pl.Expr, frame: pl.DataFrame | None = None) -> None:
        """Write one line per row: a String Series, or an expression evaluated on `frame`."""
        if isinstance(lines, pl.Expr):
            assert frame is not None
            series = frame.select(lines.alias("line"))["line"]
        else:
            series = lines.alias("line")
        if series.len() == 0:
            return
        buf = io.BytesIO()
        series.to_frame().write_csv(buf, include_header=False, quote_style="never")
        self._out.write(buf.getvalue())

    def csv(self, frame: pl.DataFrame, header: bool) -> None:
        """A CSV chunk (quoted only where needed), with the header line when asked."""
        buf = io.BytesIO()
        frame.write_csv(buf, include_header=header)
        self._out.write(buf.getvalue())

    def close(self) -> None:
        if self._out is not self._raw:
            self._out.close()
        self._raw.close()

    def __enter__(self) -> Sink:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class Consumer:
    """A writer fed the copies chunk by chunk in volume order (canonical columns, truth flags
    and the numeric columns of KEEP); close() returns (manifest inputs, alternates)."""

    def write(self, rows: pl.DataFrame) -> None:
        raise NotImplementedError

    def close(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        raise NotImplementedError


# Numeric columns of the copy table that consumers get next to the canonical ones.
KEEP = ("file", "tape", "member", "members", "ident", "written_s", "tape_s")


def live(rows: pl.DataFrame) -> pl.DataFrame:
    """The copies a catalog lists (not moved away by a repack)."""
    return rows.filter(~pl.col("removed"))


def entry(rel: str, kind: str, fmt: str, source: str, **options: Any) -> dict[str, Any]:
    """A manifest input: path relative to the site, kind, format and parser options."""
    return {"path": rel, "kind": kind, "format": fmt, "options": {"source": source, **options}}
