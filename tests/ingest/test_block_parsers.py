"""The block readings of TSM contents (and its archives export) and of CTA tf text give what
their line-by-line readings give: the same rows, the same refusals with the same reasons and
line numbers, the same skips, and in strict mode the same first error.

Inputs mix plain lines (read a block at a time) with every kind of line the block reading
leaves to the line-by-line path; small blocks make runs, ranks and headers cross block ends.
"""

from __future__ import annotations

import gzip
import random
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any
from unittest import mock

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from tapelens.errors import ParseError
from tapelens.ingest.formats import cta_tf, linewise, tsm_contents
from tapelens.ingest.formats.base import LINE_DIGEST, Batch, LineDigests, ParseOptions
from tapelens.ingest.formats.tsm_ranks import VolumeRanks
from tests.fixtures.fuzz_catalog import mutated
from tests.props import examples

Parser = Callable[..., Iterator[Batch]]


@contextmanager
def small_blocks(module: ModuleType, block_bytes: int) -> Iterator[None]:
    """Blocks of about `block_bytes` (the readers' floor is a megabyte), in the shared block
    loop and in the module's own readers (TSM's archives export)."""
    with ExitStack() as patches:
        for owner in {module, linewise}:
            if hasattr(owner, "block_bytes_for"):
                patches.enter_context(
                    mock.patch.object(owner, "block_bytes_for", lambda rows: block_bytes)
                )
        yield


def outcome(parse: Parser, path: Path, **options: Any) -> tuple[Any, ...]:
    """Rows, refusals and skips of a whole parse, or the strict error (line and message)."""
    try:
        batches = list(parse(path, options=ParseOptions(source="props", **options)))
    except ParseError as exc:
        return ("error", exc.line, str(exc))
    frame = pl.concat([b.frame for b in batches])
    rejects = [(r.line_no, r.raw, r.reason) for b in batches for r in b.rejects]
    notes = sorted({n for b in batches for n in b.notes})
    return frame, rejects, sum(b.skipped for b in batches), notes


def assert_same(fast: tuple[Any, ...], slow: tuple[Any, ...]) -> None:
    if isinstance(slow[0], str) or isinstance(fast[0], str):  # a strict error
        assert fast == slow
        return
    assert_frame_equal(fast[0], slow[0])
    assert fast[1:] == slow[1:]


# ------------------------------------------------------------------------------- tsm-contents

HEADER = (
    "VOLUME_NAME,NODE_NAME,TYPE,FILESPACE_NAME,FILE_NAME,AGGREGATED,FILE_SIZE,SEGMENT,CACHED,"
    "FILESPACE_ID,FILESPACE_HEXNAME,BITFILE_ID,OBJECT_ID"
)
# Another column order, as a `select` naming its columns prints it.
HEADER_2 = "OBJECT_ID,FILE_NAME,FILESPACE_NAME,VOLUME_NAME,AGGREGATED,SEGMENT,FILE_SIZE"
ARCHIVES_HEADER = "NODE_NAME,FILESPACE_NAME,HL_NAME,LL_NAME,OBJECT_ID,ARCHIVE_DATE,OWNER"
VOLUMES = ("VA1341L6", "VA1342L6", "VB0001L7")
OBJECTS = range(100, 160)  # ids 150 and up have no archive row


def _contents_line(draw: st.DrawFn, second_header: bool) -> str:
    volume = draw(st.sampled_from(VOLUMES))
    obj = draw(st.sampled_from(OBJECTS))
    name = draw(st.sampled_from(["/atlas/a.root", "/atlas/b,c.root", "/atlas/d e.root"]))
    agg = draw(st.sampled_from(["No", "No", "1/1", "1/3", "2/3", "3/3", "1/2", "2/2", "no", "N"]))
    seg = draw(st.sampled_from(["1/1", "1/1", "1/1", "1/2", "2/2"]))
    size = str(draw(st.integers(0, 5_000_000_000)))
    if second_header:
        return ",".join([str(obj), name, "/pnfs", volume, agg, seg, size])
    fields = [volume, "NODE", "Arch", "/pnfs", name, agg, size, seg, "No", "1", "2F", str(obj)]
    return ",".join([*fields, str(obj)])


# Per column: values the block reading must leave to the line-by-line path, or read exactly as
# it does (padding, signs, other scripts' digits, overflow, quotes, Python-only white space).
_NUMBER = ("+5", "-0", " 5", "5 ", "\u0661", "99999999999999999999", str(2**45), "", "x")
_FRACTION = (" No", "NO", "n", "0/1", "3/2", "1/ 2", "1/2/3", "+1/2", "\u0661/2", "9" * 20 + "/1")
ODD_VALUES = {
    "VOLUME_NAME": (" ", "", "\x1c", "\u3000", "\x85", "VOLUME_NAME", "A\x1f"),
    "AGGREGATED": _FRACTION,
    "SEGMENT": _FRACTION,
    "FILE_SIZE": _NUMBER,
    "OBJECT_ID": _NUMBER,
    "FILESPACE_NAME": ("", " ", "\x1c", '"/p,x"', "\u2028"),
    "FILE_NAME": ("", " ", '"a,b.root"', "volume_name", "\x1d", "\u00a0"),
}


@st.composite
def odd_line(draw: st.DrawFn, good: str, columns: tuple[str, ...]) -> str:
    fields = good.split(",")
    column = draw(st.sampled_from(sorted(ODD_VALUES)))
    i = columns.index(column)
    value = draw(st.sampled_from(ODD_VALUES[column]))
    how = draw(st.sampled_from(["replace", "before", "after"]))
    fields[i] = {"replace": value, "before": value + fields[i], "after": fields[i] + value}[how]
    return ",".join(fields)


@st.composite
def contents_text(draw: st.DrawFn) -> str:
    lines: list[str] = []
    second = False
    for _ in range(draw(st.integers(1, 40))):
        kind = draw(
            st.sampled_from(["good"] * 6 + ["odd"] * 4 + ["mutated", "message", "blank", "header"])
        )
        if kind == "header":
            second = draw(st.booleans())
            lines.append(HEADER_2 if second else HEADER)
            continue
        good = _contents_line(draw, second)
        if kind == "good":
            lines.append(good)
        elif kind == "mutated":
            lines.append(draw(mutated([good], ",")))
        elif kind == "message":
            lines.append(
                draw(
                    st.sampled_from(
                        ["ANR2034E SELECT: No match found.", "# note", "  ***", "\vANR2034E x"]
                    )
                )
            )
        elif kind == "blank":
            lines.append(draw(st.sampled_from(["", "   ", "\t", "\x1c"])))
        else:
            columns = (HEADER_2 if second else HEADER).split(",")
            lines.append(draw(odd_line(good, tuple(columns))))
    return "\n".join(lines) + draw(st.sampled_from(["\n", ""]))


def _archives(tmp: Path, rng: random.Random) -> Path:
    lines = [ARCHIVES_HEADER]
    for obj in OBJECTS:
        if obj >= 150:
            continue
        date = f"2018-10-{1 + obj % 28:02d} 11:20:{obj % 60:02d}.000000"
        form = rng.choice(["plain"] * 6 + ["iso", "comma", "bad", "blank", "message", "odd"])
        if form == "iso":
            date = date.replace(" ", "T")[:19] + "Z"
        name = "a,b.root" if form == "comma" else "a.root"
        if form == "bad":
            date = "yesterday"
        oid = str(obj)
        if form == "odd":
            oid, date = rng.choice(
                [
                    (f" {obj}", date),
                    (f"+{obj}", date),
                    (oid, "0000-01-01 00:00:00.000000"),
                    (oid, "2018-02-30 00:00:00.000000"),
                    (oid, "2018-10-02 11:20:60.000000"),
                    (oid, "2018-10-02 24:00:00.000000"),
                    (oid, date + "0"),
                    (oid, date + " "),
                    (oid, "2018-1-02 11:20:05.000000"),
                ]
            )
        if form == "blank":
            lines.append("")
        if form == "message":
            lines.append("ANR8000I Server command")
        lines.append(f"NODE,/pnfs,/atlas/,{name},{oid},{date},atlas")
        if rng.random() < 0.05:  # a header again, in another case and order
            lines.append("owner,node_name,filespace_name,hl_name,ll_name,object_id,archive_date")
            lines.append(f"x,NODE,/pnfs,/atlas/,{name},{obj},{date}")
            lines.append(ARCHIVES_HEADER)
        if rng.random() < 0.1:
            lines.append(f"NODE,/pnfs,/atlas/,{name},{obj},2020-01-01 00:00:00.000000,x")
    path = tmp / "archives.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.slow
@pytest.mark.parametrize("block_bytes", [64, 400, 1 << 20])
def test_tsm_contents_blocks_read_as_lines(tmp_path: Path, block_bytes: int) -> None:
    @settings(max_examples=examples(40))
    @given(contents_text(), st.integers(0, 2**16), st.booleans())
    def run(text: str, seed: int, strict: bool) -> None:
        archives = _archives(tmp_path, random.Random(seed))
        path = tmp_path / "contents.csv"
        path.write_bytes(text.encode("utf-8"))
        options: dict[str, Any] = {"strict": strict, "extra": {"archives": str(archives)}}
        with small_blocks(tsm_contents, block_bytes):
            fast = outcome(tsm_contents.parse, path, **options)
        slow = outcome(tsm_contents.parse_by_line, path, **options)
        assert_same(fast, slow)

    run()


@settings(max_examples=examples(60))
@given(
    st.lists(
        st.tuples(
            st.sampled_from(VOLUMES),
            st.sampled_from([(1, 1), (1, 2), (2, 2), (1, 3), (2, 3), (3, 3), (2, 5)]),
            st.integers(0, 10**12),
            st.booleans(),
        ),
        max_size=60,
    ),
    st.lists(st.integers(0, 60), max_size=4),
)
def test_ranks_at_once_equal_ranks_one_by_one(
    objects: list[tuple[str, tuple[int, int], int, bool]], cuts: list[int]
) -> None:
    one = VolumeRanks()
    want: list[tuple[int, int | None]] = []
    for volume, member, size, occupies in objects:
        if occupies:
            one.occupy(volume)
            want.append((one._volumes[volume].rank, None))
        else:
            want.append(one.place(volume, member, size))
    frame = pl.DataFrame(
        [(v, m[0], m[1], s, o) for v, m, s, o in objects],
        schema={
            "volume": pl.String,
            "member_i": pl.Int64,
            "member_n": pl.Int64,
            "size_bytes": pl.Int64,
            "occupies": pl.Boolean,
        },
        orient="row",
    )
    runs = VolumeRanks()
    got: list[tuple[int, int | None]] = []
    start = 0
    for end in [*sorted(cuts), len(objects)]:
        got += runs.place_all(frame.slice(start, max(0, end - start))).rows()
        start = max(start, end)
    assert got == want

    def state(ranks: VolumeRanks) -> dict[str, tuple[int, ...]]:
        """What the next objects depend on (the last aggregate's i and size only when open)."""
        return {
            v: (s.rank, s.group_n, *((s.group_i, s.group_offset) if s.group_n else ()))
            for v, s in ranks._volumes.items()
        }

    assert state(runs) == state(one)


def test_a_dump_of_many_blocks_reads_as_lines(tmp_path: Path) -> None:
    """Thousands of lines over many blocks, a few odd ones among them."""
    rng = random.Random(7)
    lines = [HEADER]
    for k in range(6000):
        volume = VOLUMES[k // 2000]
        n = rng.choice([1, 1, 2, 3])
        for i in range(1, n + 1):
            agg = "No" if n == 1 else f"{i}/{n}"
            obj = OBJECTS[rng.randrange(len(OBJECTS))]
            fields = [volume, "N", "Arch", "/pnfs", f"/f{k}.{i}", agg, str(rng.randrange(10**9))]
            lines.append(",".join([*fields, "1/1", "No", "1", "2F", str(obj), str(obj)]))
        if rng.random() < 0.002:
            lines.append(rng.choice(["", "ANR2034E x", "V,short", lines[-1].replace("/", "x", 2)]))
    path = tmp_path / "contents.csv"
    path.write_text("\n".join(lines) + "\n")
    archives = _archives(tmp_path, random.Random(1))
    options = {"extra": {"archives": str(archives)}}
    with small_blocks(tsm_contents, 20_000):
        fast = outcome(tsm_contents.parse, path, **options)
        packed = tmp_path / "contents.csv.gz"  # read as a stream, not mapped
        packed.write_bytes(gzip.compress(path.read_bytes()))
        assert_same(outcome(tsm_contents.parse, packed, **options), fast)
    assert_same(fast, outcome(tsm_contents.parse_by_line, path, **options))


# ------------------------------------------------------------------------------------ cta-tf

CTA_HEADER = (
    "\x1b[31;1marchive id copy no    vid fseq block id    instance disk fxid   size checksum type"
    " checksum value storage class owner group    creation time path\x1b[0m"
)
# Cells of one copy, before padding: archive id .. group, creation date and time, then the last.
_SIZES = ("5.2G", "964.5K", "12.0M", "512", "5242880000", "1.25G", "5.2X", "-1", "1,2G", "0")
_TIMES = ("2024-06-02 13:20", "2024-03-31 02:30", "2024-10-27 02:30", "2024-13-01 00:00")
_LASTS = ("/eos/a/f1.raw", "/eos/a/run 1/f 2.raw", "-", "eosctaatlas", "/eos/é/f.raw", "/x\ty")
CTA_ODD = ("\t", "\x1c", "\xa0", "\u3000", "\x85", "é", "[", "#", "***", "Archive", "x", "  ")


@st.composite
def cta_cells(draw: st.DrawFn) -> list[str]:
    date, time = draw(st.sampled_from(_TIMES)).split(" ")
    cells = [
        str(draw(st.integers(0, 10**10))),
        str(draw(st.sampled_from([1, 2, 0, 2**31]))),
        draw(st.sampled_from(["L81234", "I01001", "-"])),
        str(draw(st.integers(0, 10**6))),
        str(draw(st.integers(0, 10**7))),
        "eosctaatlas",
        "3f2a0c1",
        draw(st.sampled_from(_SIZES)),
        draw(st.sampled_from(["ADLER32", "NONE"])),
        draw(st.sampled_from(["7c0a91e3", "-"])),
        "atlas_raw@cta",
        "48102",
        "1307",
        date,
        time,
    ]
    if draw(st.integers(0, 9)) == 0:  # date and time in one token
        cells[13:15] = [f"{date}T{time}:00Z"]
    return cells + [draw(st.sampled_from(_LASTS))]


@st.composite
def cta_text(draw: st.DrawFn) -> str:
    rows = draw(st.lists(cta_cells(), min_size=1, max_size=30))
    # Right-aligned to the widest cell of each column and followed by a space; the last
    # column left-aligned (cta-admin's text formatter), or columns two spaces apart.
    widths = [max(len(r[k]) if k < len(r) else 0 for r in rows) for k in range(16)]
    gap = draw(st.sampled_from([" ", "  "]))
    lines = [CTA_HEADER] if draw(st.booleans()) else []
    for row in rows:
        kind = draw(st.sampled_from(["good"] * 5 + ["odd"] * 3 + ["mutated", "blank", "rule"]))
        cells = [c.rjust(widths[k]) for k, c in enumerate(row[:-1])] + [row[-1].ljust(widths[15])]
        line = "   " + gap.join(cells)
        if kind == "odd":  # often before the first cell: a message, a comment
            lead = len(line) - len(line.lstrip(" "))
            at = draw(st.one_of(st.just(lead), st.integers(0, len(line))))
            line = line[:at] + draw(st.sampled_from(CTA_ODD)) + line[at:]
        elif kind == "mutated":
            line = draw(mutated([line], " "))
        elif kind == "blank":
            line = draw(st.sampled_from(["", "  ", "[]", "----- ----", "# x"]))
        elif kind == "rule":
            line = "=" * 20
        lines.append(line)
    return "\n".join(lines) + draw(st.sampled_from(["\n", ""]))


@pytest.mark.slow
@pytest.mark.parametrize("block_bytes", [64, 700, 1 << 20])
def test_cta_text_blocks_read_as_lines(tmp_path: Path, block_bytes: int) -> None:
    @settings(max_examples=examples(150))
    @given(cta_text(), st.sampled_from(["UTC", "Europe/Zurich"]), st.booleans())
    def run(text: str, zone: str, strict: bool) -> None:
        path = tmp_path / "tf.txt"
        path.write_bytes(text.encode("utf-8"))
        options: dict[str, Any] = {"strict": strict, "timezone": zone}
        with small_blocks(cta_tf, block_bytes):
            fast = outcome(cta_tf.parse, path, **options)
        assert_same(fast, outcome(cta_tf.parse_by_line, path, **options))

    run()


@pytest.mark.slow
@pytest.mark.parametrize(("block_bytes", "strip"), [(64, False), (700, True)])
def test_cta_lines_left_unread_leave_the_others_as_read(
    tmp_path: Path, block_bytes: int, strip: bool
) -> None:
    """A newer dump's parser leaves unread the lines the load knows (LineDigests.read): the
    other lines give what reading every line gives, with their own line numbers and digests.
    The first block is read whole."""
    seed = 12345

    @settings(max_examples=examples(100))
    @given(cta_text(), st.data())
    def run(text: str, data: st.DataObject) -> None:
        path = tmp_path / "tf.txt"
        path.write_bytes(text.encode("utf-8"))
        lines = text.split("\n")[: text.count("\n") + (0 if text.endswith("\n") else 1)]
        digests = linewise.line_digests(pl.Series(lines, dtype=pl.String), seed, strip)
        frame, rejects, skipped, _ = outcome(cta_tf.parse_by_line, path)
        # Lines the load knows are lines of copies it stored: lines that gave a row.
        rows = sorted(set(frame["line_no"].to_list()))
        known = set(data.draw(st.lists(st.sampled_from(rows), unique=True)) if rows else [])
        chosen = np.array([digests[no - 1] for no in known], dtype=np.int64)
        offered: list[int] = []

        def read(block: np.ndarray) -> np.ndarray:
            offered.extend(block.tolist())
            return ~np.isin(block, chosen)

        options = ParseOptions(source="props", lines=LineDigests(seed, read, strip))
        with small_blocks(cta_tf, block_bytes):
            batches = list(cta_tf.parse(path, options=options))
        first_block = len(lines) - len(offered)  # lines of the first block, never offered
        unread = {no for no in range(first_block + 1, len(lines) + 1) if digests[no - 1] in chosen}
        got = pl.concat([b.frame for b in batches])
        assert got[LINE_DIGEST].to_list() == [digests[no - 1] for no in got["line_no"].to_list()]
        expected = frame.filter(~pl.col("line_no").is_in(list(unread)))
        assert_frame_equal(got.drop(LINE_DIGEST), expected)
        assert [(r.line_no, r.raw, r.reason) for b in batches for r in b.rejects] == rejects
        assert sum(b.skipped for b in batches) == skipped
        assert sum(b.known for b in batches) == len(unread)

    run()


def test_cta_json_reads_as_lines(tmp_path: Path) -> None:
    data = Path(__file__).parent.parent / "data" / "catalog" / "tf-L81234.json"
    path = tmp_path / "tf.json"
    path.write_bytes(data.read_bytes() * 50)
    with small_blocks(cta_tf, 2000):
        fast = outcome(cta_tf.parse, path)
    assert_same(fast, outcome(cta_tf.parse_by_line, path))


@pytest.mark.slow
def test_cta_tables_of_many_blocks_read_as_lines(tmp_path: Path) -> None:
    """The real-shape tables (both layouts), header and all, repeated over many blocks."""
    data = Path(__file__).parent.parent / "data" / "catalog"
    for name in ("cta-tf-ls.txt", "tf-L81234.txt"):
        path = tmp_path / name
        path.write_bytes((data / name).read_bytes() * 200)
        with small_blocks(cta_tf, 3000):
            fast = outcome(cta_tf.parse, path, timezone="Europe/Zurich")
            packed = tmp_path / f"{name}.gz"  # read as a stream, not mapped
            packed.write_bytes(gzip.compress(path.read_bytes()))
            assert_same(outcome(cta_tf.parse, packed, timezone="Europe/Zurich"), fast)
        assert_same(fast, outcome(cta_tf.parse_by_line, path, timezone="Europe/Zurich"))
