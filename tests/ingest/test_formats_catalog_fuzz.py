"""Random and mutated lines for every catalog parser: each line becomes rows, a reject or a skip.

A file of drawn lines is parsed whole and line by line (after the same prefix, e.g. a header);
the whole-file result must be the sum of the single-line outcomes, each single line must have
exactly one outcome, nothing but TapelensError may escape, and strict mode must stop at the
first refused line.
"""

from __future__ import annotations

import gzip
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tapelens.errors import ParseError
from tapelens.ingest.formats import (
    catalog_csv,
    cta_tf,
    enstore_list,
    hpss_lsp,
    tapes_csv,
    tsm_contents,
    tsm_qcontent,
)
from tapelens.ingest.formats.base import ParseOptions
from tests.props import examples

DATA = Path(__file__).parent.parent / "data" / "catalog"
ALPHABET = "\t ,+/._-:;\"'\\0123456789aZé[]{}"


def _lines(name: str, skip: int = 0) -> list[str]:
    raw = (DATA / name).read_bytes().decode("utf-8", "replace").splitlines()
    return [line for line in raw[skip:] if line.strip()]


@dataclass
class Case:
    module: ModuleType
    sep: str
    valid: list[str]
    prefix: list[str] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    one_row_per_line: bool = True
    stateful: bool = False  # outcomes depend on earlier lines: only count them


CASES = {
    "hpss-lsp": Case(
        hpss_lsp, "\t", _lines("ls-P.txt") + _lines("ls-P-edge.txt"), one_row_per_line=False
    ),
    "tsm-contents": Case(
        tsm_contents,
        ",",
        _lines("contents.csv", skip=2),
        prefix=_lines("contents.csv")[1:2],
        options={"extra": {"archives": str(DATA / "archives.csv")}},
    ),
    "tsm-qcontent": Case(
        tsm_qcontent,
        "\t",
        _lines("VTS104L7.qcontent.txt"),
        options={"volume": "VTS104L7", "extra": {"listed_at": "2024-03-01T00:00:00Z"}},
    ),
    "cta-text": Case(
        cta_tf, " ", _lines("tf-L81234.txt", skip=1), prefix=_lines("tf-L81234.txt")[1:2]
    ),
    "cta-json": Case(
        cta_tf,
        ",",
        _lines("tf-L81234.json"),
        prefix=_lines("tf-L81234.json")[:1],
        one_row_per_line=False,
    ),
    "enstore-list": Case(enstore_list, " ", _lines("VR1234.list")),
    "csv": Case(catalog_csv, ",", _lines("copies.csv", skip=1), prefix=_lines("copies.csv")[:1]),
    "tapes": Case(
        tapes_csv, ",", _lines("tapes.csv", skip=1), prefix=_lines("tapes.csv")[:1], stateful=True
    ),
}


@st.composite
def mutated(draw: st.DrawFn, valid: list[str], sep: str) -> str:
    line = draw(st.sampled_from(valid))
    for _ in range(draw(st.integers(1, 3))):
        parts = line.split(sep)
        op = draw(st.sampled_from(["delete", "insert", "field", "drop", "dup", "swap", "cut"]))
        i = draw(st.integers(0, max(0, len(parts) - 1)))
        j = draw(st.integers(0, max(0, len(parts) - 1)))
        if op == "delete" and line:
            at = draw(st.integers(0, len(line) - 1))
            line = line[:at] + line[at + draw(st.integers(1, 5)) :]
        elif op == "insert":
            at = draw(st.integers(0, len(line)))
            line = line[:at] + draw(st.text(ALPHABET, min_size=1, max_size=3)) + line[at:]
        elif op == "field":
            parts[i] = draw(st.text(ALPHABET, max_size=8))
            line = sep.join(parts)
        elif op == "drop":
            line = sep.join(parts[:i] + parts[i + 1 :])
        elif op == "dup":
            line = sep.join(parts[:i] + [parts[i]] + parts[i:])
        elif op == "swap":
            parts[i], parts[j] = parts[j], parts[i]
            line = sep.join(parts)
        else:
            line = line[: draw(st.integers(0, len(line)))]
    return line


def lines_for(case: Case) -> st.SearchStrategy[list[bytes]]:
    text = st.one_of(
        st.sampled_from(case.valid),
        mutated(case.valid, case.sep),
        mutated(case.valid, case.sep),
        st.text(ALPHABET, max_size=30),
    ).map(lambda s: s.encode("utf-8"))
    odd_bytes = st.binary(max_size=12).map(lambda b: b.replace(b"\n", b""))
    return st.lists(st.one_of(text, text, text, odd_bytes), min_size=1, max_size=6)


def outcome(
    case: Case, data: bytes, packed: bool = False, **extra: Any
) -> tuple[int, list[int], int]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ("input.gz" if packed else "input")
        path.write_bytes(data)
        options = ParseOptions(source="fuzz", **{**case.options, **extra})
        rows = skipped = 0
        refused: list[int] = []
        for batch in case.module.parse(path, options=options):
            rows += batch.frame.height
            refused += [r.line_no for r in batch.rejects]
            skipped += batch.skipped
        return rows, refused, skipped


def check(case: Case, lines: list[bytes]) -> None:
    prefix = [p.encode() for p in case.prefix]
    data = b"\n".join(prefix + lines) + b"\n"
    rows, refused, skipped = outcome(case, data)
    n = len(lines)
    first = len(prefix) + 1  # line number of the first drawn line
    assert len(set(refused)) == len(refused)
    assert all(first <= no < first + n for no in refused)
    base_rows, _, base_skipped = outcome(case, b"\n".join(prefix) + b"\n") if prefix else (0, [], 0)
    if case.stateful:
        assert rows + len(refused) + skipped - base_rows - base_skipped == n
    else:
        want_rows = want_skipped = 0
        want_refused = []
        for i, line in enumerate(lines):
            one_rows, one_refused, one_skipped = outcome(case, b"\n".join([*prefix, line]) + b"\n")
            one_rows, one_skipped = one_rows - base_rows, one_skipped - base_skipped
            outcomes = (one_rows > 0) + bool(one_refused) + one_skipped
            assert outcomes == 1, (line, one_rows, one_refused, one_skipped)
            if case.one_row_per_line:
                assert one_rows <= 1
            want_rows += one_rows
            want_skipped += one_skipped
            want_refused += [first + i] if one_refused else []
        assert (rows - base_rows, refused, skipped - base_skipped) == (
            want_rows,
            want_refused,
            want_skipped,
        )
    if case.module is hpss_lsp:  # read once, holding back lone copies, when compressed
        assert outcome(case, gzip.compress(data), packed=True) == (rows, refused, skipped)
    # Strict mode stops at the first refused line, or gives the same rows.
    if refused:
        with pytest.raises(ParseError) as err:
            outcome(case, data, strict=True)
        assert err.value.line == min(refused)
    else:
        assert outcome(case, data, strict=True)[0] == rows


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_line_is_a_row_a_reject_or_a_skip(name: str) -> None:
    case = CASES[name]

    @settings(max_examples=examples(15))
    @given(lines_for(case))
    def run(lines: list[bytes]) -> None:
        check(case, lines)

    run()
