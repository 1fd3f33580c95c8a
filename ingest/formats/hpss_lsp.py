"""HPSS `hsi ls -P` listings: one FILE line per file, tab separated, a volume list per line.

    FILE  path  size  size  section+offset  vol[,vol...]  cos  0  1  MM/DD/YYYY  HH:MM:SS  ...

Listings reach tens of millions of lines, so lines are parsed a block at a time with Polars
(blocks.py, hpss_lines.py); blocks with unusual bytes or shapes take the line-splitting path,
and both paths share the same checks.

Rules (docs/formats/hpss-lsp.md and the synthetic-site contract):
- volume: the cartridge; an 8-character physical volume ending in a 2-digit side (A8553200)
  loses the side (A85532). A volume list with one position per volume is one copy per volume
  (copy_no: 1-based index in the list); one position for several volumes is one copy that
  needs them all, stored on the first with the others in other_volumes.
- position: the section. offset_bytes: the offset when it is above 0. An offset of 0 is the
  first member of an aggregate when some line of the same listing has the same volume and
  section with an offset above 0, and null otherwise (a file alone in its section).
  That needs the whole listing. A plain file is read twice: a quick first pass collects the
  (volume, section) pairs of copies at offsets above 0 (only lines with "+" before a non-zero
  digit are parsed). A compressed file or stdin is read once: copies at offset 0 whose section
  has shown no member yet are spilled to a temporary Arrow file and come out after the rest,
  once every member has been seen (so those rows are not in listing order).
- aggregate_id: "volume:section" for members; copy_id: "volume:section:offset" (offset empty
  when 0 or null); file_id and path: the path, without its padding (a path holding tabs is
  rebuilt from the fields between the type and the last eleven). written_at: the create time (UTC).
- Fields after a tab may be padded with spaces (hsi right-aligns them: sizes, a blank
  cartridge " ", the path): the padding is not part of the value. A path loses the spaces
  before its first "/" (hpss_lines.unpadded_path); spaces inside it or after it are its own.
- Skipped, counted: blank lines, DIRECTORY/LINK/SYMLINK/HARDLINK/FIFO/SOCKET lines, comment and
  hsi warning lines, zero-length files without a volume (blank or a single space).
"""

from __future__ import annotations

import mmap
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import polars as pl

from tapelens.ingest.canonical import TAPE_FILES, conform
from tapelens.ingest.formats.base import Batch, ParseOptions, Reject, aggregate_at
from tapelens.ingest.formats.blocks import (
    Block,
    BlockReader,
    FileBlocks,
    block_bytes_for,
    is_plain_file,
)
from tapelens.ingest.formats.fields import batches, check_strict
from tapelens.ingest.formats.hpss_lines import (
    KEEP,
    OK,
    REFUSED_ALREADY,
    SECTION_BITS,
    SKIP,
    checked,
    copies_of,
    fields_of,
    refusals,
)

KIND = "catalog"
FORMAT = "hpss-lsp"

# A line with one volume: the first copy, on one cartridge.
_ONE_CARTRIDGE = (
    pl.lit(1, pl.Int32).alias("copy_no"),
    pl.lit(None, pl.String).alias("other_volumes"),
)
SCAN_BYTES = 8 << 20
SEVERAL_CARTRIDGES = (
    "some copies need several cartridges (one position for several volumes): each is stored on"
    " its first cartridge, the others in tape_files.other_volumes"
)  # window of the first pass's byte scan (see blocks.MAX_BLOCK_BYTES)


def parse(path: str | Path, *, options: ParseOptions) -> Iterator[Batch]:
    """Parse an `hsi ls -P` listing into tape_files rows (one per copy)."""
    name = str(path)
    plain = is_plain_file(path)
    with (
        tempfile.TemporaryDirectory(prefix="tapelens-hpss-") as spill_dir,
        FileBlocks(path) if plain else BlockReader(path) as reader,
    ):
        reader.name = name
        if isinstance(reader, FileBlocks):
            members, spill = _first_pass(reader), None
        else:
            members, spill = _Members(), _Spill(Path(spill_dir))
        told = False
        for block in reader.blocks(block_bytes_for(options.batch_rows)):
            frame, rejects, skipped, n_lines = _parse_block(block, options, members, spill)
            reader.advance(n_lines)
            check_strict(name, options.strict, rejects)
            for batch in batches(frame, rejects, skipped, block.bytes_read, options.batch_rows):
                told = _tell_several_cartridges(batch, told)
                yield batch
        for frame in spill.resolved(members, options.source) if spill else ():
            for batch in batches(frame, [], 0, reader.bytes_read, options.batch_rows):
                told = _tell_several_cartridges(batch, told)
                yield batch
        if reader.line_no == 1:  # an empty input still gives one (empty) batch
            yield Batch(pl.DataFrame(schema=TAPE_FILES), [], 0, reader.bytes_read)


def _tell_several_cartridges(batch: Batch, told: bool) -> bool:
    """Say once that some copies need several cartridges; return whether it has been said."""
    if not told and batch.frame["other_volumes"].is_not_null().any():
        batch.notes.append(SEVERAL_CARTRIDGES)
        return True
    return told


def _first_pass(source: FileBlocks) -> _Members:
    """Every (volume, section) that holds a copy at an offset above 0.

    Only lines with a '+' before a non-zero digit can hold one: they are found by a byte scan
    of the mapped file and go through the same checks as in the full parse.
    """
    members = _Members()
    found: list[bytes] = []
    held = 0
    for start in range(0, source.size, SCAN_BYTES):
        end = min(start + SCAN_BYTES, source.size)
        candidates = _candidate_lines(source.mapped, start, end)
        source.release(start, end)
        if candidates:
            found.append(candidates)
            held += len(candidates)
        if found and (held >= SCAN_BYTES or end == source.size):
            _add_members(members, b"\n".join(found))
            found, held = [], 0
    return members


def _add_members(members: _Members, text: bytes) -> None:
    fields, _, fast = fields_of(Block(text, 1, 0))
    lines = checked(fields, fast)
    ok = pl.col("code") == OK
    good = lines.filter(ok & ~pl.col("multi")).with_columns(*_ONE_CARTRIDGE)
    several = lines.filter(ok & pl.col("multi"))
    if several.height:
        copies = copies_of(several)
        good = pl.concat([good.select(KEEP), copies.filter(ok).select(KEEP)])
    good = good.filter(pl.col("offset") > 0)
    members.add(members.key(good["volume"], good["section"]))


def _candidate_lines(data: mmap.mmap | None, start: int, end: int) -> bytes:
    """The lines (joined by newlines) with a '+' in [start, end) followed by a digit other than
    0, or by 0 and another digit (leading zeros): the only lines that can hold a member."""
    if data is None:
        return b""
    size = len(data)
    view = np.frombuffer(data, dtype=np.uint8)
    try:
        plus = np.flatnonzero(view[start:end] == ord("+")) + start
        after = view[np.minimum(plus + 1, size - 1)]
        later = view[np.minimum(plus + 2, size - 1)]
        nonzero = (plus + 1 < size) & (after >= ord("1")) & (after <= ord("9"))
        leading = (plus + 2 < size) & (after == ord("0"))
        leading &= (later >= ord("0")) & (later <= ord("9"))
        hits = plus[nonzero | leading].tolist()
    finally:
        del view  # the map cannot close while an array points into it
    lines = []
    last = -1
    for at in hits:
        if at < last:
            continue  # another '+' on a line already taken
        first = data.rfind(b"\n", 0, at) + 1
        last = data.find(b"\n", at)
        if last < 0:
            last = size
        lines.append(data[first:last])
    return b"\n".join(lines)


class _Members:
    """The (volume, section) pairs known to hold aggregate members, as sorted int64 keys."""

    def __init__(self) -> None:
        self.volume_ids: dict[str, int] = {}
        self.keys = np.empty(0, dtype=np.int64)

    def key(self, volume: pl.Series, section: pl.Series) -> np.ndarray:
        names = volume.unique()
        for v in names.to_list():
            if v not in self.volume_ids:
                self.volume_ids[v] = len(self.volume_ids)
        ids = pl.Series([self.volume_ids[v] for v in names.to_list()], dtype=pl.Int64)
        vid = volume.replace_strict(names, ids, return_dtype=pl.Int64).to_numpy()
        keys: np.ndarray = (vid << SECTION_BITS) | section.to_numpy()
        return keys

    def add(self, keys: np.ndarray) -> None:
        if keys.size:
            # Two sorted runs: a stable sort merges them in linear time.
            merged = np.sort(np.concatenate([self.keys, np.unique(keys)]), kind="stable")
            keep = np.ones(merged.size, dtype=bool)
            keep[1:] = merged[1:] != merged[:-1]
            self.keys = merged[keep]

    def contains(self, keys: np.ndarray) -> np.ndarray:
        if not self.keys.size or not keys.size:
            return np.zeros(keys.size, dtype=bool)
        idx = np.minimum(np.searchsorted(self.keys, keys), self.keys.size - 1)
        found: np.ndarray = self.keys[idx] == keys
        return found


class _Spill:
    """Copies at offset 0 still waiting to learn whether their section holds an aggregate."""

    COLUMNS = tuple(c for c in KEEP if c != "offset") + ("key",)

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.files: list[Path] = []

    def add(self, frame: pl.DataFrame) -> None:
        if frame.height:
            path = self.directory / f"{len(self.files)}.arrow"
            frame.select(self.COLUMNS).write_ipc(path, compression="lz4")
            self.files.append(path)

    def resolved(self, members: _Members, source: str) -> Iterator[pl.DataFrame]:
        for path in self.files:
            frame = pl.read_ipc(path)
            path.unlink()
            first = members.contains(frame["key"].to_numpy())
            offset = pl.when(pl.Series(first)).then(pl.lit(0, pl.Int64))
            yield _rows(frame.with_columns(offset.alias("offset_bytes")), source)


def _parse_block(
    block: Block, options: ParseOptions, members: _Members, spill: _Spill | None
) -> tuple[pl.DataFrame, list[Reject], int, int]:
    """Rows ready to go, rejects, lines skipped and lines read; offset-0 copies whose aggregate
    is still unknown go to the spill."""
    fields, rejects, fast = fields_of(block)
    lines = checked(fields, fast)
    code = pl.col("code")
    counts = lines.select(
        (code == SKIP).sum().alias("skip"),
        (code > REFUSED_ALREADY).sum().alias("bad"),
        pl.col("multi").and_(code == OK).sum().alias("multi"),
    ).row(0)
    skipped, n_bad, n_multi = (int(x) for x in counts)
    good = lines.filter((code == OK) & ~pl.col("multi")).with_columns(*_ONE_CARTRIDGE)
    refused = lines.filter(code > REFUSED_ALREADY) if n_bad else lines.clear()
    refused = refused.with_columns(
        pl.lit(None, pl.String).alias("c_vol"), pl.lit(None, pl.String).alias("c_pos")
    )
    if n_multi:
        copies = copies_of(lines.filter((code == OK) & pl.col("multi")))
        bad = copies.filter(code != OK).unique("line_no", keep="first", maintain_order=True)
        if bad.height:
            copies = copies.filter(~pl.col("line_no").is_in(bad["line_no"].implode()))
            refused = pl.concat(
                [
                    refused,
                    bad.with_columns(
                        pl.col("vraw").alias("c_vol"), pl.col("praw").alias("c_pos")
                    ).select(refused.columns),
                ]
            ).sort("line_no")
        good = pl.concat([good.select(KEEP), copies.select(KEEP)]).sort("line_no", "copy_no")
    if refused.height:
        rejects = sorted(rejects + refusals(refused, block, fast), key=lambda r: r.line_no)
    return (
        _placed(good.select(KEEP), options.source, members, spill),
        rejects,
        skipped,
        fields.height,
    )


def _placed(
    good: pl.DataFrame, source: str, members: _Members, spill: _Spill | None
) -> pl.DataFrame:
    """Offsets decided: from the first pass, or where possible so far with the offset-0 copies
    of sections without a known member held back in the spill."""
    if not good.height:
        return pl.DataFrame(schema=TAPE_FILES)
    offsets = good["offset"].to_numpy()
    zero = offsets == 0
    first = np.zeros(zero.size, dtype=bool)
    waiting = np.zeros(zero.size, dtype=bool)
    if spill is not None:
        keys = members.key(good["volume"], good["section"])
        members.add(keys[offsets > 0])
        first[zero] = members.contains(keys[zero])
        waiting = zero & ~first
    elif members.keys.size and zero.any():  # the first pass knows every member: look up zeros
        where = pl.Series(np.flatnonzero(zero))
        first[zero] = members.contains(
            members.key(good["volume"].gather(where), good["section"].gather(where))
        )
    good = good.with_columns(
        pl.when(pl.Series(zero))
        .then(pl.when(pl.Series(first)).then(pl.lit(0, pl.Int64)))
        .otherwise(pl.col("offset"))
        .alias("offset_bytes")
    )
    if spill is not None and waiting.any():
        spill.add(good.filter(pl.Series(waiting)).with_columns(pl.Series("key", keys[waiting])))
        good = good.filter(pl.Series(~waiting))
    return _rows(good, source)


def _rows(frame: pl.DataFrame, source: str) -> pl.DataFrame:
    """Canonical rows from path, size_bytes, written_at, volume, section, offset_bytes, copy_no."""
    if not frame.height:
        return pl.DataFrame(schema=TAPE_FILES)
    offset = pl.col("offset_bytes")
    place = pl.col("place")
    rows = frame.with_columns(
        aggregate_at(pl.col("volume"), pl.col("section")).alias("place")
    ).select(
        pl.lit(source, pl.String).alias("source"),
        pl.concat_str(
            [
                place,
                pl.lit(":"),
                pl.when(offset > 0).then(offset.cast(pl.String)).otherwise(pl.lit("")),
            ]
        ).alias("copy_id"),
        pl.col("path").alias("file_id"),
        pl.col("path"),
        pl.col("size_bytes"),
        pl.col("volume"),
        pl.col("section").alias("position"),
        offset,
        pl.when(offset.is_not_null()).then(place).alias("aggregate_id"),
        pl.col("copy_no"),
        pl.col("written_at"),
        pl.col("other_volumes"),
        pl.col("line_no"),
    )
    return conform("catalog", rows).with_columns(rows["line_no"])
