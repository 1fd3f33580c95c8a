"""Fermilab Enstore `enstore info --list VOL` (docs/formats/enstore-list.md): one listing per
volume.

    label  bfid  size  location_cookie  delflag  original_name
    VA1234  CDMS124880530600000  5159052972  0000_000000000_0000123  active  /pnfs/fs/usr/...

The bfid is the brand, the unix time the copy was written (10 digits) and a 5-digit counter;
the location cookie's last field is the file number on the volume (the position).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from tapelens.world.outputs import Consumer, Sink, entry, live
from tapelens.world.params import SiteParams

LIST_DIR = "catalog/enstore"
HEADER = "label  bfid  size  location_cookie  delflag  original_name"


class EnstoreLists(Consumer):
    """One `info --list` file per volume, all of them catalogs."""

    def __init__(self, out_dir: Path, p: SiteParams) -> None:
        self.out_dir, self.p = out_dir, p
        self.entries: list[dict[str, Any]] = []
        self.current: tuple[str, Sink] | None = None

    def write(self, rows: pl.DataFrame) -> None:
        rows = live(rows)
        parts = rows.partition_by("volume", as_dict=True, maintain_order=True)
        for (volume,), part in parts.items():
            if self.current is None or self.current[0] != volume:
                if self.current is not None:
                    self.current[1].close()
                sink = Sink(self.out_dir, f"{LIST_DIR}/{volume}.list", self.p.gzip)
                sink.text(HEADER + "\n")
                self.entries.append(entry(sink.rel, "catalog", "enstore-list", self.p.source))
                self.current = (str(volume), sink)
            self.current[1].lines(_line(), part)

    def close(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        if self.current is not None:
            self.current[1].close()
        return self.entries, []


def _line() -> pl.Expr:
    cookie = pl.concat_str(
        [pl.lit("0000_000000000_"), pl.col("position").cast(pl.String).str.zfill(7)]
    )
    return pl.concat_str(
        [
            pl.col("volume"),
            pl.col("copy_id"),
            pl.col("size_bytes").cast(pl.String),
            cookie,
            pl.lit("active"),
            pl.col("path"),
        ],
        separator="  ",
    )
