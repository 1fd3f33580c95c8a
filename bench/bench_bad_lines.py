"""How long every reader takes over hostile lines: parsing must stay linear in the input.

For each registered reader, three inputs: one 1 MB line (refused by the line cap), one line just
under the cap built to make a backtracking pattern slow (quotes, brackets, separators and
key="value" pairs repeated), and 100,000 short garbage lines. Prints seconds per input; the peer
is the time to read the same bytes with splitlines(), the floor for any reader.

    .venv/bin/python bench/bench_bad_lines.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from tapelens.ingest.formats import FORMATS
from tapelens.ingest.formats.base import MAX_LINE_BYTES, ParseOptions

DATA = Path(__file__).parent.parent / "tests" / "data" / "catalog"


def inputs() -> dict[str, bytes]:
    unit = b'a="[\\"{x:\t,;1.5G 12:00 '
    near = unit * ((MAX_LINE_BYTES - 100) // len(unit))
    garbage = b"".join(b'FILE\t/p/%d\t"[%d]\tk="v\\"\n' % (i, i) for i in range(100_000))
    return {
        "one 1 MB line": b"x\n" + b"A\t" * (1 << 19) + b"\nx\n",
        "one near-cap hostile line": b"x\n" + near + b"\nx\n",
        "100,000 garbage lines": garbage,
    }


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        archives = Path(tmp) / "archives.csv"
        archives.write_text((DATA / "archives.csv").read_text())
        options = ParseOptions(
            source="bench",
            year=2021,
            volume="VOL001",
            extra={"archives": str(archives), "listed_at": "2024-03-01T00:00:00Z"},
        )
        print(f"{'reader':42} {'input':28} {'seconds':>8} {'splitlines s':>12} {'refused':>8}")
        worst = 0.0
        for label, data in inputs().items():
            path = Path(tmp) / "input-2021.txt"
            path.write_bytes(data)
            t0 = time.perf_counter()
            path.read_bytes().splitlines()
            floor = time.perf_counter() - t0
            for fmt in FORMATS:
                t0 = time.perf_counter()
                refused = 0
                try:
                    for batch in fmt.parser()(path, options=options):
                        refused += len(batch.rejects)
                except Exception as exc:  # noqa: BLE001 - a header-based format may refuse the file
                    refused = -1
                    print(f"  ({fmt.name}: {type(exc).__name__})", file=sys.stderr)
                took = time.perf_counter() - t0
                worst = max(worst, took)
                name = f"{fmt.kind} {fmt.name} ({fmt.function})"
                print(f"{name:42} {label:28} {took:8.3f} {floor:12.4f} {refused:8}")
        print(f"slowest: {worst:.3f} s")


if __name__ == "__main__":
    main()
