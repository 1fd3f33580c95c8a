"""A tiny catalog format for loader tests: `volume position size path [written_at]` per line.

It lets the loader be tested on its own, apart from any real parser.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from tapelens.ingest import canonical
from tapelens.ingest.formats import Format
from tapelens.ingest.formats.base import Batch, Collector, LineReader, ParseOptions

WRITTEN = datetime(2021, 5, 1, tzinfo=UTC)


def parse(path: str | Path, *, options: ParseOptions) -> Iterator[Batch]:
    delay = float(options.extra.get("delay_per_batch", 0))
    with LineReader(path) as reader:
        out = Collector(reader, options, canonical.TAPE_FILES)
        for line in reader:
            fields = line.text.split()
            if not fields:
                out.skip()
                continue
            if len(fields) < 4 or not fields[1].isdigit() or not fields[2].lstrip("-").isdigit():
                out.reject(line, f"expected volume position size path, found {line.text!r}")
                continue
            out.add(
                {
                    "source": options.source,
                    "volume": fields[0],
                    "position": int(fields[1]),
                    "size_bytes": int(fields[2]),
                    "path": fields[3],
                    "written_at": datetime.fromisoformat(fields[4]) if len(fields) > 4 else WRITTEN,
                },
                line.no,
            )
            if out.full():
                yield out.flush()
                time.sleep(delay)
        yield out.flush()


@dataclass(frozen=True)
class _Fake(Format):
    def parser(self):  # type: ignore[no-untyped-def]
        return parse


FAKE_CATALOG = _Fake("catalog", "fake", "fake", "parse", "fake")
