"""What staging systems read about where files are on tape: dCache's tape information files
for its bring-online clustering scheduler, and ENDIT's tape hint file.

dCache's SRM manager groups bring-online requests by tape when it knows where each file is: two
files in its tape info directory (default /etc/dcache/tapeinfo), as JSON (`tapes.json`,
`tapefiles.json`) or as CSV (`tapes.txt`, `tapefiles.txt`):

- tapes: per tape its capacity and how much of it is filled, in kB;
- tapefiles: per file the full path the file is requested with (matched exactly), its size in
  kB and the tape it is on.

The tape a file is on is the copy a tape system recalls: the newest live copy on a tape that
can be read now (analysis/recall/baselines.py newest_copies). Sizes are in kB of 1,000 bytes,
rounded up (a file of 1 byte takes 1 kB). A tape is filled with every copy it holds, the ones
the catalog no longer lists included, as the tape itself is until it is repacked. Paths are
tape-system paths: `path_map` rewrites their prefixes to the paths dCache is asked for (an HPSS
/hpss/atlas becomes dCache's /pnfs/example.org/data/atlas, say).

ENDIT (the dCache interface to IBM Spectrum Protect) reads a tape hint file to retrieve from
several tapes at once: one JSON object keyed by the name a file has in Spectrum Protect (the
file name without its directories, as ENDIT archives it; the whole path with `full_names`),
each with `volid` (the volume), `order` (the file's place on that volume, counted from 0 in tape
order) and `size` (bytes), for the same copy as above.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import polars as pl

from tapelens.analysis.recall.baselines import newest_copies
from tapelens.analysis.recall.read_order import in_read_order
from tapelens.analysis.throughput.model import ModelParams
from tapelens.errors import InputError

FORMATS = ("json", "csv")
KB = 1000


def parse_path_map(items: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """'FROM=TO' items: a path starting with FROM starts with TO instead (first match wins)."""
    pairs = []
    for item in items:
        old, sep, new = item.partition("=")
        if not sep or not old:
            raise InputError(f"--path-map: expected FROM=TO, got {item!r}")
        pairs.append((old, new))
    return tuple(pairs)


def tapeinfo(
    copies: pl.DataFrame,
    tapes: pl.DataFrame,
    path_map: Sequence[tuple[str, str]] = (),
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(tapes: tape, capacity_kb, filled_kb; files: path, size_kb, tape) for dCache.

    `copies`: live readable copies (file_id, path, size_bytes, volume, written_at, copy_no);
    `tapes`: volume, capacity_bytes, filled_bytes of every tape a chosen copy may be on."""
    chosen = newest_copies(copies, "file_id")
    path = pl.col("path")
    for old, new in path_map:
        path = (
            pl.when(pl.col("path").str.starts_with(old))
            .then(pl.lit(new) + pl.col("path").str.slice(len(old)))
            .otherwise(path)
        )
    files = chosen.select(
        path.alias("path"),
        ((pl.col("size_bytes") + KB - 1) // KB).alias("size_kb"),
        pl.col("volume").alias("tape"),
    ).sort("tape", "path")
    if files["path"].is_duplicated().any():
        twice = files.filter(pl.col("path").is_duplicated())["path"][0]
        raise InputError(f"two files would share the path {twice!r}: check --path-map")
    used = files["tape"].unique()
    info = (
        tapes.filter(pl.col("volume").is_in(used.implode()))
        .select(
            pl.col("volume").alias("tape"),
            ((pl.col("capacity_bytes") + KB - 1) // KB).alias("capacity_kb"),
            ((pl.col("filled_bytes") + KB - 1) // KB).alias("filled_kb"),
        )
        .sort("tape")
    )
    missing = set(used.to_list()) - set(info["tape"].to_list())
    if missing:
        raise InputError(f"no capacity known for tape(s) {', '.join(sorted(missing)[:5])}")
    return info, files


def write_tapeinfo(
    tapes: pl.DataFrame, files: pl.DataFrame, directory: Path, fmt: str = "json"
) -> list[Path]:
    """The two files in `directory` (created): tapes.json and tapefiles.json, or tapes.txt
    and tapefiles.txt."""
    if fmt not in FORMATS:
        raise InputError(f"unknown tape info format {fmt!r} (expected json or csv)")
    directory.mkdir(parents=True, exist_ok=True)
    if fmt == "csv" and files["path"].str.contains(",", literal=True).any():
        # dCache reads tapefiles.txt by splitting at commas, with no quoting.
        bad = files.filter(pl.col("path").str.contains(",", literal=True))["path"][0]
        raise InputError(f"a path holds a comma, which tapefiles.txt cannot: {bad!r} (use json)")
    if fmt == "json":
        tape_map = {t: {"capacity": c, "filled": f} for t, c, f in tapes.rows()}
        file_map = {p: {"size": s, "tapeid": t} for p, s, t in files.rows()}
        targets = (directory / "tapes.json", directory / "tapefiles.json")
        targets[0].write_text(json.dumps(tape_map, indent=1) + "\n")
        targets[1].write_text(json.dumps(file_map, indent=1) + "\n")
        return list(targets)
    targets = (directory / "tapes.txt", directory / "tapefiles.txt")
    for frame, target in zip((tapes, files), targets, strict=True):
        target.write_text("".join(",".join(str(v) for v in row) + "\n" for row in frame.rows()))
    return list(targets)


def endit_hints(
    copies: pl.DataFrame,
    full_names: bool = False,
    order: str = "position",
    params_by_media: Mapping[str, ModelParams] | None = None,
) -> dict[str, dict[str, object]]:
    """ENDIT's tape hints: name -> {volid, order, size} for the copy a tape system recalls.
    `copies` as for tapeinfo, with position and offset_bytes; `order` is the read order on each
    volume (read_order.ORDERS; rao needs media_type and the parameters in use)."""
    chosen = newest_copies(copies, "file_id").sort(
        "volume", "position", "offset_bytes", nulls_last=False
    )
    if order != "position":
        ranked = in_read_order(
            chosen.with_columns(pl.col("volume").rank("dense").cast(pl.Int64).alias("vid")),
            order,
            params_by_media or {},
        )
        chosen = ranked.sort("vid", "read_rank")
    name = pl.col("path") if full_names else pl.col("path").str.extract(r"([^/]*)$")
    hints = chosen.select(
        name.alias("name"),
        pl.col("volume"),
        pl.int_range(pl.len()).over("volume").alias("order"),
        pl.col("size_bytes"),
    )
    if hints["name"].is_duplicated().any():
        twice = hints.filter(pl.col("name").is_duplicated())["name"][0]
        raise InputError(
            f"two files share the name {twice!r} without their directories: use --full-names"
        )
    return {n: {"volid": v, "order": o, "size": b} for n, v, o, b in hints.rows()}
