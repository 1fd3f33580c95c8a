"""Random and mutated lines for every transfer and mount log parser.

Whatever the lines, each one ends as a row, a reject or a counted skip; no exception escapes;
frames keep the canonical schema with the required columns filled and text PostgreSQL can store;
strict mode stops at a line the lenient run refused, or agrees with it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tapelens.ingest.formats import (
    cta_taped,
    dcache_billing,
    hpss_pvl,
    mounts_csv,
    staging_csv,
    transfers_csv,
)
from tests.fixtures.fuzz_logs import (
    SETTINGS,
    check,
    lines_like,
    samples,
)


@SETTINGS
@given(lines_like(samples("billing-2021.11.02", "billing-2021.12.31")))
def test_billing_fuzz(lines: list[bytes]) -> None:
    check(dcache_billing.parse, "transfers", lines, year=2021)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=4,
)
CTA_KEYS = [
    "epoch_time", "hostname", "pid", "tid", "message", "fileId", "fSeq", "positionTime",
    "transferTime", "totalTime", "dataVolume", "tapeVid", "tapeDrive", "mountType", "mountTime",
    "unloadTime", "unmountTime", "errorMessage",
]  # fmt: skip


def json_objects(lines: list[bytes]) -> list[dict[str, Any]]:
    found = []
    for line in lines:
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            found.append(obj)
    return found


CTA_OBJECTS = json_objects(samples("cta-taped.jsonl"))


def remix(base: dict[str, Any], changes: list[tuple[str, Any]], drop: list[str]) -> bytes:
    obj = dict(base)
    for key, value in changes:
        obj[key] = value
    for key in drop:
        obj.pop(key, None)
    return json.dumps(obj).encode()


CTA_REMIXED = st.builds(
    remix,
    st.sampled_from(CTA_OBJECTS),
    st.lists(st.tuples(st.sampled_from(CTA_KEYS) | st.text(max_size=4), JSON_VALUES), max_size=3),
    st.lists(st.sampled_from(CTA_KEYS), max_size=2),
)


@SETTINGS
@given(lines_like(samples("cta-taped.jsonl"), CTA_REMIXED))
def test_cta_transfers_fuzz(lines: list[bytes]) -> None:
    check(cta_taped.parse, "transfers", lines)


@SETTINGS
@given(lines_like(samples("cta-taped.jsonl"), CTA_REMIXED))
def test_cta_mounts_fuzz(lines: list[bytes]) -> None:
    check(cta_taped.parse_mounts, "mounts", lines)


@SETTINGS
@given(lines_like(samples("staging.csv")))
def test_staging_fuzz(lines: list[bytes]) -> None:
    check(staging_csv.parse, "transfers", lines)


@SETTINGS
@given(lines_like(samples("transfers.csv")))
def test_transfers_csv_fuzz(lines: list[bytes]) -> None:
    check(transfers_csv.parse, "transfers", lines)


@SETTINGS
@given(lines_like(samples("mounts.csv", "mounts-acsls.csv")))
def test_mounts_csv_fuzz(lines: list[bytes]) -> None:
    check(mounts_csv.parse, "mounts", lines)


@SETTINGS
@given(lines_like(samples("pvl.log")))
def test_pvl_fuzz(lines: list[bytes]) -> None:
    check(hpss_pvl.parse, "mounts", lines, year=2021)


@pytest.mark.parametrize("year", [None, 2021])
def test_the_check_passes_clean_lines(year: int | None) -> None:
    """The property holds for clean lines (the year then also comes from input-2021.log)."""
    check(dcache_billing.parse, "transfers", samples("billing-2021.12.31"), year=year)
