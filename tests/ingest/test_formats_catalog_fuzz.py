"""Random and mutated lines for every catalog parser: each line becomes rows, a reject or a skip.

A file of drawn lines is parsed whole and line by line (after the same prefix, e.g. a header);
the whole-file result must be the sum of the single-line outcomes, each single line must have
exactly one outcome, nothing but TapelensError may escape, and strict mode must stop at the
first refused line.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from tapelens.ingest.formats import (
    catalog_csv,
    cta_tf,
    enstore_list,
    hpss_lsp,
    tapes_csv,
    tsm_contents,
    tsm_qcontent,
)
from tests.fixtures.fuzz_catalog import (
    DATA,
    Case,
    _lines,
    check,
    lines_for,
)
from tests.props import examples

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


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_line_is_a_row_a_reject_or_a_skip(name: str) -> None:
    case = CASES[name]

    @settings(max_examples=examples(15))
    @given(lines_for(case))
    def run(lines: list[bytes]) -> None:
        check(case, lines)

    run()
