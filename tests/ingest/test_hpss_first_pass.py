"""The HPSS reader's first pass finds the lines that can hold an aggregate member: every line
with a '+' in the scanned window followed by a digit other than 0 (or 0 and a digit), each
once, whole, in file order, as a plain line-by-line search finds them."""

from __future__ import annotations

import mmap
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tapelens.ingest.formats import hpss_lsp
from tests.props import examples

# Pieces of lines: section+offset fields, other '+' signs, digits, text and line ends.
PIECES = ["+0", "+00", "+01", "+1", "+9", "+", "0", "7", "x", " ", "\t", "/p", "/path", "\n"]


def expected(data: bytes, start: int, end: int) -> bytes:
    lines = []
    for at in range(start, min(end, len(data))):
        if data[at : at + 1] != b"+":
            continue
        after, later = data[at + 1 : at + 2], data[at + 2 : at + 3]
        if not (b"1" <= after <= b"9" or (after == b"0" and later.isdigit() and later != b"")):
            continue
        first = data.rfind(b"\n", 0, at) + 1
        last = data.find(b"\n", at)
        line = data[first : last if last >= 0 else len(data)]
        if not lines or lines[-1][0] != first:
            lines.append((first, line))
    return b"\n".join(line for _, line in lines)


@settings(max_examples=examples(300))
@given(st.lists(st.sampled_from(PIECES), min_size=1, max_size=400), st.data())
def test_the_first_pass_finds_the_lines_a_plain_search_finds(
    tmp_path_factory: object, pieces: list[str], data: st.DataObject
) -> None:
    text = "".join(pieces).encode()
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text) + 3))
    check(tmp_path_factory, text, start, end)


def test_a_line_is_taken_whole_wherever_the_window_cuts_it(tmp_path_factory: object) -> None:
    text = b"a long line before its hit +12 and a long tail after it\nnext +3\n"
    for start, end in ((27, 30), (27, 28), (60, 64), (0, len(text))):
        check(tmp_path_factory, text, start, end)


def check(tmp_path_factory: object, text: bytes, start: int, end: int) -> None:
    folder = Path(str(tmp_path_factory.mktemp("scan")))  # type: ignore[attr-defined]
    path = folder / "ls-P.txt"
    path.write_bytes(text)
    with open(path, "rb") as fh:
        mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            found = hpss_lsp._candidate_lines(mapped, start, min(end, len(text)))
        finally:
            mapped.close()
    assert found == expected(text, start, min(end, len(text)))
