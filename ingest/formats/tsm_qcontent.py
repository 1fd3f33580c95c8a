"""TSM `query content VOL f=d` (dsmadmc -dataonly=yes -tabdelim): the files of one volume.

    node  type  filespace  fs-hex  fs-id  file name  name-hex  aggregated  size  segment  ...

The listing names neither its volume nor when it was taken: the volume comes from
ParseOptions.volume or the file name (`<VOLUME>.qcontent...`), written_at from
options.extra["listed_at"] (ISO time; the listing has no write dates). Sizes carry thousands
separators and a unit ("73,191 B", "1.5 GB"; 1 KB = 1024 B). A size in a unit above bytes is
rounded to the digits printed: it is stored with its rounding bound in size_bound_bytes (half a
unit of the last digit: 0.05 GiB for "1.5 GB") and the load says that sizes are approximate, as
for CTA's text table. Position and offsets: tsm_ranks.py (offsets summed from such sizes are as
approximate).
Identity (contract): file_id = path = filespace + file name, copy_id =
"volume:position:offset" (offset empty when 0 or none), copy_no 1.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import polars as pl

from tapelens.errors import ConfigError
from tapelens.ingest.canonical import UTC_TIME
from tapelens.ingest.formats.base import Batch, ParseOptions
from tapelens.ingest.formats.fields import (
    is_message,
    parse_iso_utc,
    parse_size,
    quote,
    size_bound,
)
from tapelens.ingest.formats.linewise import Lines, run
from tapelens.ingest.formats.tsm_contents import KEPT, KEPT_TYPES, rows, split_fields
from tapelens.ingest.formats.tsm_ranks import VolumeRanks, aggregated, fraction

KIND = "catalog"
FORMAT = "tsm-qcontent"

N_FIELDS = 13
FILESPACE, FILE_NAME, AGGREGATED, SIZE, SEGMENT = 2, 5, 7, 8, 9
NAME_MARK = ".qcontent"
COLUMNS = (*KEPT[:-1], "size_bound_bytes")
TYPES: dict[str, pl.DataType] = {**KEPT_TYPES, "size_bound_bytes": pl.Int64()}
APPROXIMATE = (
    "sizes are approximate: query content prints them to the digits shown of KB, MB, GB or TB"
    " (size_bound_bytes keeps each copy's rounding bound); select * from contents gives exact"
    " sizes"
)


def volume_of(options: ParseOptions, path: str | Path) -> str:
    """The listed volume: --volume, else the part of the file name before '.qcontent'."""
    if options.volume:
        return options.volume
    name = Path(str(options.extra.get("display_name") or path)).name
    if NAME_MARK in name and name.index(NAME_MARK) > 0:
        return name[: name.index(NAME_MARK)]
    raise ConfigError(
        "--volume",
        "the command line, the manifest options and the file name",
        f"tsm-qcontent needs the volume the listing is of (or a file named VOLUME{NAME_MARK})",
    )


def parse(path: str | Path, *, options: ParseOptions) -> Iterator[Batch]:
    """Parse one volume's `query content` listing into tape_files rows."""
    volume = volume_of(options, path)
    listed = options.extra.get("listed_at")
    if not listed:
        raise ConfigError(
            "--listed-at",
            "the command line and the manifest options",
            "tsm-qcontent needs the time the listing was taken",
        )
    listed_at = parse_iso_utc(str(listed))
    if listed_at is None:
        raise ConfigError("--listed-at", "the command line", f"{listed!r} is not an ISO time")
    ranks = VolumeRanks()

    def handle(no: int, text: str, out: Lines) -> None:
        if not text.strip() or is_message(text) or text[:9].lower() == "node name":
            out.skip()
            return
        fields = split_fields(text, "\t", N_FIELDS, FILE_NAME)
        if isinstance(fields, str):
            out.reject(no, text, fields)
            return
        # A line refused from here on still takes its place on the volume.
        member = aggregated(fields[AGGREGATED])
        segment = fraction(fields[SEGMENT])
        if segment is not None and segment[0] > 1:
            ranks.occupy(volume)
            out.skip()
            return
        size = parse_size(fields[SIZE])
        position, offset = ranks.place(volume, member or (1, 1), size or 0)
        if member is None:
            out.reject(no, text, f"aggregated {quote(fields[AGGREGATED])} is not No or i/n")
        elif segment is None:
            out.reject(no, text, f"segment {quote(fields[SEGMENT])} is not i/n")
        elif size is None:
            out.reject(no, text, f"size {quote(fields[SIZE])} is not a number of bytes")
        elif not (fields[FILESPACE] + fields[FILE_NAME]).strip():
            out.reject(no, text, "filespace and file name are empty")
        else:
            path_text = fields[FILESPACE] + fields[FILE_NAME]
            bound = size_bound(fields[SIZE])
            out.keep(no, text, (volume, path_text, size, position, offset, bound))

    def finish(lines: Lines) -> pl.DataFrame:
        frame = lines.frame(TYPES).with_columns(pl.lit(listed_at, UTC_TIME).alias("written_at"))
        offset = pl.col("offset_bytes")
        copy_id = pl.concat_str(
            [
                pl.col("volume"),
                pl.lit(":"),
                pl.col("position").cast(pl.String),
                pl.lit(":"),
                pl.when(offset > 0).then(offset.cast(pl.String)).otherwise(pl.lit("")),
            ]
        )
        return rows(frame, options.source, copy_id)

    told = False
    for batch in run(path, options, COLUMNS, handle, finish):
        if not told and batch.frame["size_bound_bytes"].is_not_null().any():
            batch.notes.append(APPROXIMATE)
            told = True
        yield batch
