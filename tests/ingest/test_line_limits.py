"""Every reader refuses an over-long or undecodable line alone, and strict mode names it.

Runs over the whole format registry, so a new reader is held to the same rules.
"""

from __future__ import annotations

import bz2
import gzip
from pathlib import Path

import pytest
import zstandard

from tapelens.errors import InputError, ParseError
from tapelens.ingest.formats import FORMATS, Format
from tapelens.ingest.formats.base import LONG_LINE, MAX_LINE_BYTES, ParseOptions

DATA = Path(__file__).parent.parent / "data" / "catalog"
FORMAT_IDS = [f"{f.kind}-{f.name}-{f.function}" for f in FORMATS]
# Formats whose first line must be their header; the others take any first line.
HEADERS = {
    ("catalog", "csv"): (DATA / "copies.csv").read_bytes().splitlines()[0],
    ("tapes", "tsm-volumes"): b"VOLUME_NAME,STGPOOL_NAME,STATUS,ACCESS",
}


def first(fmt: Format, default: bytes) -> bytes:
    return HEADERS.get((fmt.kind, fmt.name), default) + b"\n"


def options(tmp_path: Path, **extra: object) -> ParseOptions:
    archives = tmp_path / "archives.csv"
    archives.write_text((DATA / "archives.csv").read_text())
    return ParseOptions(
        source="t",
        year=2021,
        volume="VOL001",
        extra={"archives": str(archives), "listed_at": "2024-03-01T00:00:00Z"},
        **extra,  # type: ignore[arg-type]
    )


def outcome(fmt: Format, path: Path, opts: ParseOptions) -> tuple[int, dict[int, str]]:
    rows, rejects = 0, {}
    for batch in fmt.parser()(path, options=opts):
        rows += batch.frame.height
        rejects.update({r.line_no: r.reason for r in batch.rejects})
    return rows, rejects


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
@pytest.mark.parametrize("size", [MAX_LINE_BYTES + 1, 1 << 20, 40 << 20])
def test_an_over_long_line_is_refused_alone(tmp_path: Path, fmt: Format, size: int) -> None:
    """A line just over the limit, of 1 MB, and longer than a read block: refused as that line."""
    path = tmp_path / "input-2021.txt"
    path.write_bytes(first(fmt, b"x") + b"A\t" * (size // 2 + 1) + b"\nx\n")
    if fmt.per_volume:
        path = path.rename(tmp_path / "VOL001.txt")
    _, rejects = outcome(fmt, path, options(tmp_path))
    assert rejects.get(2) == LONG_LINE


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
def test_an_over_long_last_line_without_newline(tmp_path: Path, fmt: Format) -> None:
    path = tmp_path / "input-2021.txt"
    path.write_bytes(first(fmt, b"x") + b"x\n" * 2 + b"B" * (MAX_LINE_BYTES * 3))
    _, rejects = outcome(fmt, path, options(tmp_path))
    assert rejects.get(4) == LONG_LINE


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
def test_strict_names_the_undecodable_line_before_a_bad_one(tmp_path: Path, fmt: Format) -> None:
    """Line 2 cannot be decoded, line 3 is not the format: strict mode stops at line 2."""
    path = tmp_path / "input-2021.txt"
    path.write_bytes(first(fmt, b"") + b"caf\xe9 \xff\xfe\n" + b"!! not any format !!\n")
    lenient_rows, rejects = outcome(fmt, path, options(tmp_path))
    assert 2 in rejects and "UTF-8" in rejects[2]
    with pytest.raises(ParseError) as err:
        outcome(fmt, path, options(tmp_path, strict=True))
    assert err.value.line == 2
    assert lenient_rows == 0


SURROGATES = (
    b'{"af":{"archiveId":"1","size":"1","creationTime":"1717327200"},'
    b'"tf":{"vid":"L8\\udc00","copyNb":1,"fSeq":"1"},"df":{"path":"/a/\\ud83d"}}\n'
    b'{"vid":"L8\\ud800","mediaType":"LTO8","full":true,"state":"ACTIVE","capacity":"1"}\n'
    b'{"epoch_time":1717327500,"hostname":"h","pid":1,"tid":2,'
    b'"message":"Tape session finished","tapeVid":"L8\\ud800X","totalTime":10}\n'
)


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
def test_a_lone_surrogate_in_json_is_that_lines_refusal(tmp_path: Path, fmt: Format) -> None:
    """JSON can escape a lone surrogate, which no UTF-8 text holds: refused, never a crash."""
    path = tmp_path / "input-2021.txt"
    path.write_bytes(first(fmt, b"") + SURROGATES)
    rows, rejects = outcome(fmt, path, options(tmp_path))
    assert rows == 0
    assert set(rejects) <= {2, 3, 4}


def _packed(kind: str, data: bytes) -> bytes:
    if kind == "gzip":
        return gzip.compress(data)
    if kind == "bzip2":
        return bz2.compress(data)
    # Two frames, as `zstd` writes when input is appended: the reader goes across them.
    half = len(data) // 2
    zstd = zstandard.ZstdCompressor()
    return zstd.compress(data[:half]) + zstd.compress(data[half:])


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
@pytest.mark.parametrize("kind", ["gzip", "bzip2", "zstd"])
def test_a_truncated_compressed_dump_is_one_clear_error(
    tmp_path: Path, fmt: Format, kind: str
) -> None:
    # A dump cut off in transfer must not load as a shorter, valid-looking input.
    lines = b"".join(
        b"line %d of a dump cut off in transfer %d\n" % (i, i * 7919) for i in range(5000)
    )
    data = first(fmt, b"# start") + lines
    whole = tmp_path / "dump.txt"
    whole.write_bytes(_packed(kind, data))
    outcome(fmt, whole, options(tmp_path))  # the whole dump reads without an error
    cut = tmp_path / "cut.txt"
    packed = whole.read_bytes()
    cut.write_bytes(packed[: len(packed) - 7])
    with pytest.raises(InputError, match=r"cut\.txt:\d+: cannot read"):
        outcome(fmt, cut, options(tmp_path))
