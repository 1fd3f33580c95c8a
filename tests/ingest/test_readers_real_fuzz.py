"""The fuzz properties on the real-shaped fixtures: mutated lines of CTA's tables and syslog,
padded HPSS listings, rotated PVL logs and inventories in the systems' own words. Every line is
a row, a refusal or a skip; nothing but a tapelens error escapes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from tapelens.errors import InputError
from tapelens.ingest.formats import (
    cta_tape_ls,
    cta_taped,
    cta_tf,
    enstore_list,
    hpss_lsp,
    hpss_pvl,
    tapes_csv,
    tsm_volumes,
)
from tests.fixtures.fuzz_catalog import DATA, Case, _lines, check, lines_for
from tests.fixtures.fuzz_logs import SETTINGS, lines_like, samples
from tests.fixtures.fuzz_logs import check as check_log
from tests.props import examples

CTA_HEADER = _lines("cta-tf-ls.txt")[:1]
TAPE_HEADER = _lines("inventory-cta-tape-ls.txt")[:1]
TSM_HEADER = [line for line in _lines("inventory-tsm-volumes.txt") if "VOLUME_NAME" in line]
CASES = {
    "cta-tf-ls": Case(cta_tf, " ", _lines("cta-tf-ls.txt", skip=1), prefix=CTA_HEADER),
    "hpss-padded": Case(hpss_lsp, "\t", _lines("hpss-ls-P-padded.txt"), one_row_per_line=False),
    "cta-tape-ls": Case(
        cta_tape_ls,
        " ",
        _lines("inventory-cta-tape-ls.txt", skip=1),
        prefix=TAPE_HEADER,
        stateful=True,
    ),
    "tsm-volumes": Case(
        tsm_volumes,
        ",",
        [line for line in _lines("inventory-tsm-volumes.txt") if line.startswith(("A0", "VTS"))],
        prefix=TSM_HEADER,
        stateful=True,
    ),
    "enstore-packages": Case(
        enstore_list,
        " ",
        _lines("VPK001.list", skip=1),
        prefix=_lines("VPK001.list")[:1],
        stateful=True,
    ),
    "tapes-words": Case(
        tapes_csv,
        ",",
        ["A1,A1L8,LTO-8,L1,p,,BROKEN", "A2,,,,,,OFFSITE", "A3,,,,,,Repacking_Pending"],
        prefix=_lines("tapes.csv")[:1],
        stateful=True,
    ),
}
assert DATA.is_dir()


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_real_line_is_a_row_a_reject_or_a_skip(name: str) -> None:
    case = CASES[name]

    @settings(max_examples=examples(15))
    @given(lines_for(case))
    def run(lines: list[bytes]) -> None:
        check(case, lines)

    run()


@SETTINGS
@given(lines_like(samples("cta-taped-2024.log")))
def test_cta_syslog_transfers_fuzz(lines: list[bytes]) -> None:
    check_log(cta_taped.parse, "transfers", lines, timezone="Europe/Zurich")


@SETTINGS
@given(lines_like(samples("cta-taped-2024.log")))
def test_cta_syslog_mounts_fuzz(lines: list[bytes]) -> None:
    check_log(cta_taped.parse_mounts, "mounts", lines, timezone="Europe/Zurich")


@SETTINGS
@given(lines_like(samples(*(f"pvl-rotated/pvl.log-2013010{d}" for d in (5, 6, 7)))))
def test_pvl_rotated_fuzz(lines: list[bytes]) -> None:
    check_log(hpss_pvl.parse, "mounts", lines, year=2013)


@SETTINGS
@given(lines_like([line.encode() for line in _lines("inventory-tsm-query-volume.txt")]))
def test_tsm_query_volume_fuzz(lines: list[bytes]) -> None:
    # Records span lines: every line is still a row, a refusal or a skip; a listing with no
    # record and no header is the one clear error that says so.
    try:
        check_log(tsm_volumes.parse, "tapes", lines)
    except InputError as error:
        assert "nor a 'Volume Name:' line" in str(error)
