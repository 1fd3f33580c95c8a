"""Newer dumps of a catalog whose lines stand alone (CTA `tf ls`): the lines that list a stored
copy as it was read are left unread, and the table ends as if every line had been read."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import psycopg
import pytest

from tapelens.ingest.datasets import DatasetRules
from tapelens.ingest.formats import Format, linewise, lookup
from tapelens.ingest.formats.base import ParseOptions
from tapelens.ingest.load import IngestResult, ShrinkGuard, ingest_file
from tapelens.ingest.load.catalog_diff import Known

CTA = lookup("catalog", "cta-tf")
EVERY_LINE = replace(CTA, lines_stand_alone=False)
OPTS = ParseOptions(source="cta")
HEADER = (
    "archive id",
    "copy no",
    "vid",
    "fseq",
    "block id",
    "instance",
    "disk fxid",
    "size",
    "checksum type",
    "checksum value",
    "storage class",
    "owner",
    "group",
    "creation time",
    "path",
)


def copy_cells(k: int, size: str = "964.5K", vid: str = "L81234") -> tuple[str, ...]:
    return (
        str(4211190 + k),
        "1",
        vid,
        str(1375 + k),
        str(2817640 + 400 * k),
        "eosctaatlas",
        f"3f2a{k:03x}",
        size,
        "ADLER32",
        f"{k:08x}",
        "atlas_raw@cta",
        "48102",
        "1307",
        f"2024-06-02 13:{k % 60:02d}",
        f"/eos/ctaatlas/archive/data24/raw/run{k // 10:05d}/f{k:04d}.raw",
    )


def table(rows: list[tuple[str, ...]]) -> str:
    """As cta-admin prints it: the header in red, every column right-aligned to its widest
    cell and followed by a space, the path last and left-aligned."""
    cells = [HEADER, *rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(HEADER))]

    def line(r: tuple[str, ...]) -> str:
        return " ".join(c.rjust(w) for c, w in zip(r[:-1], widths, strict=False)) + (
            " " + r[-1].ljust(widths[-1]) + " "
        )

    return "\n".join(["\x1b[31;1m" + line(HEADER) + "\x1b[0m", *map(line, rows)]) + "\n"


@contextmanager
def small_blocks() -> Iterator[None]:
    # Blocks of a few lines: the first block of a file is always read whole.
    with mock.patch.object(linewise, "block_bytes_for", lambda rows: 1000):
        yield


@contextmanager
def counted_unread() -> Iterator[list[int]]:
    """The number of lines left unread, load by load."""
    unread: list[int] = []
    real = Known.read_line

    def read_line(self: Known, digests: np.ndarray) -> np.ndarray:
        read = real(self, digests)
        unread.append(int((~read).sum()))
        return read

    with mock.patch.object(Known, "read_line", read_line):
        yield unread


def by_copy(dsn: str, columns: str) -> list[tuple]:
    """`columns` of every stored copy, live ones first where a copy was stored twice."""
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            f"select {columns} from tapelens.tape_files order by copy_id, removed_at nulls first"
        ).fetchall()


def live(dsn: str) -> list[tuple]:
    return by_copy(
        dsn,
        "copy_id, volume, position, size_bytes, size_bound_bytes, path, dataset, written_at,"
        " ingest_run_id, removed_at is null, line_digest is not null",
    )


def load(dsn: str, path: Path, text: str, fmt: Format = CTA, **kw: Any) -> IngestResult:
    path.write_text(text)
    with small_blocks():
        return ingest_file(dsn, fmt, path, OPTS, **kw)


def test_a_newer_dump_leaves_the_lines_of_unchanged_copies_unread(dsn: str, tmp_path: Path) -> None:
    rows = [copy_cells(k) for k in range(60)]
    first = load(dsn, tmp_path / "1.txt", table(rows))
    assert first.rows == 60
    assert all(r[-1] for r in live(dsn))  # every row has its line's digest
    # Copy 30 grew, copy 40 left, copy 60 is new; the others are listed as they were.
    newer = [copy_cells(30, "1.2M") if k == 30 else r for k, r in enumerate(rows) if k != 40]
    newer.append(copy_cells(60))
    with counted_unread() as unread:
        second = load(dsn, tmp_path / "2.txt", table(newer))
    assert (second.rows, second.removed) == (60, 1)
    assert sum(unread) > 40  # all but the first block's lines and the changed ones
    by_id = {r[0]: r for r in live(dsn) if r[9]}
    assert by_id["4211220/1"][3] == 1_200_000 and by_id["4211220/1"][8] == second.run_id
    assert by_id["4211250/1"][8] == second.run_id  # the new copy
    assert "4211230/1" not in by_id
    assert {r[8] for k, r in by_id.items() if k not in ("4211220/1", "4211250/1")} == {first.run_id}


def test_unread_lines_end_in_the_table_every_line_read_gives(dsn: str, tmp_path: Path) -> None:
    rows = [copy_cells(k) for k in range(80)]
    newer = [copy_cells(k, "2.0G") if k % 7 == 0 else rows[k] for k in range(80) if k % 11]
    newer += [copy_cells(k) for k in range(80, 85)]
    states = []
    for fmt in (CTA, EVERY_LINE):
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("truncate tapelens.tape_files, tapelens.ingest_runs cascade")
        load(dsn, tmp_path / "1.txt", table(rows), fmt)
        load(dsn, tmp_path / "2.txt", table(newer), fmt)
        # Run ids and line digests aside: which copies are live, and with what values.
        states.append([r[:8] + r[9:10] for r in live(dsn)])
    assert states[0] == states[1]


def test_a_copy_read_from_another_line_keeps_its_row_and_takes_the_new_digest(
    dsn: str, tmp_path: Path
) -> None:
    rows = [copy_cells(k) for k in range(40)]
    first = load(dsn, tmp_path / "1.txt", table(rows))
    before = dict(by_copy(dsn, "copy_id, line_digest"))
    # A longer path only pads the last column further: the lines are the same, blanks aside.
    longer = "/eos/ctaatlas/archive/data24/raw/a/much/longer/folder/name/f.raw"
    rows.append(copy_cells(40)[:-1] + (longer,))
    with counted_unread() as unread:
        load(dsn, tmp_path / "2.txt", table(rows))
    assert sum(unread) > 30
    # A wider storage class moves every cell after it: every line differs, no copy changed.
    # Nothing is written again; the stored line digests follow the new lines.
    rows.append(copy_cells(41)[:10] + ("atlas_raw_reprocessing@cta",) + copy_cells(41)[11:])
    with counted_unread() as unread:
        third = load(dsn, tmp_path / "3.txt", table(rows))
    assert sum(unread) == 0
    after = dict(by_copy(dsn, "copy_id, line_digest"))
    runs = dict(by_copy(dsn, "copy_id, ingest_run_id"))
    assert all(after[c] != before[c] for c in before)
    assert {runs[c] for c in before} == {first.run_id}
    assert third.rows == 42
    # The same table again, with one more copy that keeps the widths: the lines are known now.
    rows.append(copy_cells(42))
    with counted_unread() as unread:
        load(dsn, tmp_path / "4.txt", table(rows))
    assert sum(unread) > 30


@pytest.mark.parametrize("change", ["rules", "timezone"])
def test_a_line_is_read_again_when_the_load_reads_it_otherwise(
    dsn: str, tmp_path: Path, change: str
) -> None:
    # The digest of a line is seeded by what a row's values follow from besides the line: new
    # dataset rules, or another time zone for the table's local times, and every line is read.
    rows = [copy_cells(k) for k in range(40)]
    load(dsn, tmp_path / "1.txt", table(rows))
    rows.append(copy_cells(40))
    rule = DatasetRules(dataset=r"^/eos/ctaatlas/archive/data24/raw/(?P<dataset>[^/]+)/")
    with counted_unread() as unread, small_blocks():
        path = tmp_path / "2.txt"
        path.write_text(table(rows))
        if change == "rules":
            ingest_file(dsn, CTA, path, OPTS, rules=rule)
        else:
            zurich = replace(OPTS, timezone="Europe/Zurich")
            ingest_file(dsn, CTA, path, zurich, guard=ShrinkGuard(allow=True))
    assert sum(unread) == 0
    live_rows = [r for r in live(dsn) if r[9]]
    assert len(live_rows) == 41
    if change == "rules":
        assert {r[6] for r in live_rows} == {f"run{k:05d}" for k in range(5)}
    else:  # 13:xx in Zurich in June is 11:xx UTC
        assert {r[7].hour for r in live_rows} == {11}


def test_a_listing_of_some_volumes_retires_on_volumes_listed_by_unread_lines(
    dsn: str, tmp_path: Path
) -> None:
    # Per-tape listings (`tf ls --vid`) loaded as part of the catalog: a copy is retired only on
    # the volumes the dump lists, and a volume listed only by unread lines is listed all the same.
    first = [copy_cells(k, vid="L00002") for k in range(5)]
    first += [copy_cells(k, vid="L00001") for k in range(5, 40)]
    load(dsn, tmp_path / "1.txt", table(first), partial=True)
    # L00002 first (its lines fill the first block, read whole), then L00001 without copy 20.
    newer = [r for k, r in enumerate(first) if k != 20]
    with counted_unread() as unread:
        second = load(dsn, tmp_path / "2.txt", table(newer), partial=True)
    assert sum(unread) >= 30
    assert second.removed == 1
    assert [r[0] for r in live(dsn) if not r[9]] == ["4211210/1"]


TSM = lookup("catalog", "tsm-contents")
TSM_EVERY_LINE = replace(TSM, lines_stand_alone=False)
TSM_HEADER = (
    "VOLUME_NAME,NODE_NAME,TYPE,FILESPACE_NAME,FILE_NAME,AGGREGATED,FILE_SIZE,SEGMENT,CACHED,"
    "FILESPACE_ID,FILESPACE_HEXNAME,BITFILE_ID,OBJECT_ID"
)
# Per volume, in listing order: (object id, size, "i/n" or "No").
Listing = dict[str, list[tuple[int, int, str]]]


def tsm_listing(volumes: int, objects: int) -> Listing:
    """Volumes of files alone and aggregates of two to four members."""
    listing: Listing = {}
    o = 1
    for v in range(volumes):
        entries: list[tuple[int, int, str]] = []
        while len(entries) < objects:
            n = 1 if o % 3 else 2 + o % 3
            entries += [(o + i, 1000 + o + i, f"{i + 1}/{n}" if n > 1 else "No") for i in range(n)]
            o += n
        listing[f"VT{v:04d}L7"] = entries
    return listing


def tsm_files(folder: Path, listing: Listing) -> tuple[Path, ParseOptions]:
    """The contents export of `listing` and an archives export (its own path per dump)."""
    folder.mkdir()
    contents = [TSM_HEADER] + [
        f"{vol},NODE,Arch,/pnfs,/d/f{o}.data,{agg},{size},1/1,No,7,/70,{o},{o}"
        for vol, entries in listing.items()
        for o, size, agg in entries
    ]
    archives = ["NODE_NAME,FILESPACE_NAME,HL_NAME,LL_NAME,OBJECT_ID,ARCHIVE_DATE,OWNER,DESCRIPTION"]
    archives += [
        f"NODE,/pnfs,/d/,f{o}.data,{o},2024-01-{1 + o % 28:02d} 10:00:00.000000,x,"
        for entries in listing.values()
        for o, _, _ in entries
    ]
    (folder / "archives.csv").write_text("\n".join(archives) + "\n")
    (folder / "contents.csv").write_text("\n".join(contents) + "\n")
    options = replace(OPTS, source="tsm", extra={"archives": str(folder / "archives.csv")})
    return folder / "contents.csv", options


def tsm_places(dsn: str) -> list[tuple]:
    return by_copy(
        dsn,
        "copy_id, volume, position, offset_bytes, aggregate_id, size_bytes, path, written_at,"
        " removed_at is null",
    )


def test_a_tsm_dump_with_lines_unread_places_its_copies_as_reading_every_line(
    dsn: str, tmp_path: Path
) -> None:
    # TSM positions are listing ranks; a stored copy keeps its place and a copy new to a volume
    # goes after every place the volume had. Lines left unread take no rank, which changes
    # nothing of that: the table ends as when every line is read.
    first = tsm_listing(4, 30)
    newer = {vol: list(entries) for vol, entries in first.items()}
    gone = {o for entries in first.values() for o, _, agg in entries if o % 17 == 0 and agg == "No"}
    newer = {v: [e for e in entries if e[0] not in gone] for v, entries in newer.items()}
    vols = list(newer)
    newer[vols[1]] = [(o, s + 1 if o % 5 == 0 else s, a) for o, s, a in newer[vols[1]]]
    newer[vols[2]] += [(900, 50, "1/3"), (901, 50, "2/3"), (902, 50, "3/3"), (903, 9, "No")]
    newer[vols[3]] += [(904, 70, "No"), (905, 71, "1/2"), (906, 72, "2/2")]
    newer["VT9999L7"] = [(910 + k, 10, "No") for k in range(6)]
    states = []
    for fmt in (TSM, TSM_EVERY_LINE):
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("truncate tapelens.tape_files, tapelens.ingest_runs cascade")
        path, options = tsm_files(tmp_path / f"{fmt.lines_stand_alone}-1", first)
        with small_blocks():
            ingest_file(dsn, fmt, path, options)
        path, options = tsm_files(tmp_path / f"{fmt.lines_stand_alone}-2", newer)
        with counted_unread() as unread, small_blocks():
            result = ingest_file(dsn, fmt, path, options)
        assert sum(unread) > (80 if fmt.lines_stand_alone else -1)
        states.append((result.rows, result.removed, tsm_places(dsn)))
    assert states[0] == states[1]
    assert states[0][1] == len(gone)
