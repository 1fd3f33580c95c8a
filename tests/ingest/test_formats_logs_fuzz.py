"""Random and mutated lines for every transfer and mount log parser.

Whatever the lines, each one ends as a row, a reject or a counted skip; no exception escapes;
frames keep the canonical schema with the required columns filled and text PostgreSQL can store;
strict mode stops at a line the lenient run refused, or agrees with it.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tapelens.errors import ParseError
from tapelens.ingest.canonical import REQUIRED, SCHEMAS
from tapelens.ingest.formats import (
    cta_taped,
    dcache_billing,
    hpss_pvl,
    mounts_csv,
    staging_csv,
    transfers_csv,
)
from tapelens.ingest.formats.base import (
    COMPRESSION_HEAD,
    LINE_NO,
    Batch,
    ParseOptions,
    compression_of,
)
from tests.props import examples

DATA = Path(__file__).parent.parent / "data" / "logs"
BATCH_ROWS = 3
# database=None: failing examples are printed, not stored in the working tree
SETTINGS = settings(max_examples=examples(60))
ParseFn = Callable[..., Iterator[Batch]]


def samples(*names: str) -> list[bytes]:
    return [
        line for name in names for line in (DATA / name).read_bytes().splitlines() if line.strip()
    ]


def mutate(line: bytes, at: int, cut: int, insert: bytes) -> bytes:
    at %= len(line) + 1
    return line[:at] + insert + line[at + cut :]


NOISE = st.binary(max_size=6) | st.sampled_from(
    [b"\xff", b"\x00", b'"', b",", b"]", b"[", b"{", b"}", b":", b"-", b" ", b"\t", b"\r"]
    + [b"99999999999999999999", b"1e400", b"NaN", b"-1", b"0", b"13", b"29", b"99"]
)


def lines_like(sample_lines: list[bytes], extra: st.SearchStrategy[bytes] | None = None):
    sample = st.sampled_from(sample_lines)
    mutated = st.builds(mutate, sample, st.integers(0, 400), st.integers(0, 8), NOISE)
    mutated_twice = st.builds(mutate, mutated, st.integers(0, 400), st.integers(0, 8), NOISE)
    random = st.binary(max_size=60) | st.text(max_size=60).map(lambda s: s.encode())
    kinds = [sample, mutated, mutated_twice, random] + ([extra] if extra is not None else [])
    line = st.one_of(*kinds).map(lambda b: b.replace(b"\n", b" "))
    return st.lists(line, max_size=25)


def check(fn: ParseFn, kind: str, lines: list[bytes], **options: Any) -> None:
    data = b"".join(line + b"\n" for line in lines)
    if compression_of(data[:COMPRESSION_HEAD]) is not None:
        assume(False)  # a compressed stream (LineReader would decompress it), not lines
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "input-2021.log"
        path.write_bytes(data)
        opts = {"source": "fuzz", "batch_rows": BATCH_ROWS, **options}
        batches = list(fn(path, options=ParseOptions(**opts)))
        rows = sum(len(b.frame) for b in batches)
        rejected = [r.line_no for b in batches for r in b.rejects]
        assert rows + len(rejected) + sum(b.skipped for b in batches) == len(lines)
        assert len(set(rejected)) == len(rejected)
        assert all(1 <= n <= len(lines) for n in rejected)
        for batch in batches:
            valid_frame(batch.frame, kind)
            for reject in batch.rejects:
                reject.reason.encode("utf-8")
                reject.raw.encode("utf-8")
                assert "\x00" not in reject.reason + reject.raw
        try:
            strict = list(fn(path, options=ParseOptions(**opts, strict=True)))
        except ParseError as exc:
            assert exc.line in rejected
        else:
            assert not rejected
            assert sum(len(b.frame) for b in strict) == rows


def valid_frame(frame: pl.DataFrame, kind: str) -> None:
    assert len(frame) <= BATCH_ROWS
    if LINE_NO in frame.columns:  # the row's input line (none for a row made of several)
        assert (frame[LINE_NO].drop_nulls() >= 1).all()
        frame = frame.drop(LINE_NO)
    assert frame.schema == pl.Schema(SCHEMAS[kind])
    assert frame.select(pl.col(REQUIRED[kind]).null_count()).sum_horizontal().item() == 0
    for name, dtype in SCHEMAS[kind].items():
        if dtype == pl.String():
            for value in frame[name].drop_nulls():
                value.encode("utf-8")
                assert "\x00" not in value
    if kind == "transfers":
        assert set(frame["direction"]) <= {"read", "write"}
        assert set(frame["status"]) <= {"ok", "failed"}
    if kind == "mounts":
        assert set(frame["status"]) <= {
            "complete",
            "no_dismount",
            "no_mount",
            "no_request",
            "failed",
            "aborted",
        }
        assert set(frame["purpose"]) <= {"read", "write", "unknown"}


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
