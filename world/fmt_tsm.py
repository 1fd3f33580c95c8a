"""IBM Spectrum Protect (TSM) dumps (docs/formats/tsm.md), as dsmadmc writes them.

- contents.csv: `select * from contents` (-comma), one line per object on a volume in volume
  order, so position = rank on the volume; aggregate members share the rank, AGGREGATED "i/n".
- archives.csv: `select * from archives`: each object's ARCHIVE_DATE (the copy's written_at).
- qcontent/<VOLUME>.qcontent.txt: `query content VOL f=d` (-tabdelim), sizes with thousands
  separators and a unit (B below 1 MiB, exact; KB, MB and GB with two decimals, 1 KB = 1024 B).
Both CSV files start with a header line naming the columns.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from tapelens.world import naming
from tapelens.world.copies import Copies, Names, canonical
from tapelens.world.outputs import Consumer, Progress, Sink, entry, live
from tapelens.world.params import SiteParams
from tapelens.world.site import Site
from tapelens.world.text import stamps

CONTENTS = "catalog/contents.csv"
ARCHIVES = "catalog/archives.csv"
QCONTENT_DIR = "catalog/qcontent"
CONTENTS_COLUMNS = (
    "VOLUME_NAME",
    "NODE_NAME",
    "TYPE",
    "FILESPACE_NAME",
    "FILE_NAME",
    "AGGREGATED",
    "FILE_SIZE",
    "SEGMENT",
    "CACHED",
    "FILESPACE_ID",
    "FILESPACE_HEXNAME",
    "BITFILE_ID",
    "OBJECT_ID",
)
ARCHIVES_COLUMNS = (
    "NODE_NAME",
    "FILESPACE_NAME",
    "HL_NAME",
    "LL_NAME",
    "OBJECT_ID",
    "ARCHIVE_DATE",
    "OWNER",
    "DESCRIPTION",
    "CLASS_NAME",
)
FILESPACE = naming.TSM_FILESPACE
FILESPACE_HEX = FILESPACE.encode().hex().upper()


class TsmContents(Consumer):
    """contents.csv (the catalog) and one q content listing per volume (alternates)."""

    def __init__(self, out_dir: Path, p: SiteParams, site: Site) -> None:
        self.out_dir, self.p, self.site = out_dir, p, site
        self.contents = Sink(out_dir, CONTENTS, p.gzip)
        self.contents.text(",".join(CONTENTS_COLUMNS) + "\n")
        self.per_volume: dict[str, str] = {}
        self.current: tuple[str, Sink] | None = None

    def write(self, rows: pl.DataFrame) -> None:
        rows = _common(live(rows), self.site).with_columns(
            aggregated=pl.when(pl.col("members") > 0)
            .then(pl.concat_str([pl.col("member"), pl.col("members")], separator="/"))
            .otherwise(pl.lit("No"))
        )
        self.contents.lines(_contents_line(), rows)
        parts = rows.partition_by("volume", as_dict=True, maintain_order=True)
        for (volume,), part in parts.items():
            if self.current is None or self.current[0] != volume:
                if self.current is not None:
                    self.current[1].close()
                rel = f"{QCONTENT_DIR}/{volume}.qcontent.txt"
                sink = Sink(self.out_dir, rel, self.p.gzip)
                self.per_volume[str(volume)] = sink.rel
                self.current = (str(volume), sink)
            self.current[1].lines(_qcontent_line(), part)

    def close(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        self.contents.close()
        if self.current is not None:
            self.current[1].close()
        p = self.p
        listed_at = f"{p.end.isoformat()}T23:59:59Z"
        archives = ARCHIVES + (".gz" if p.gzip else "")
        main = [entry(self.contents.rel, "catalog", "tsm-contents", p.source, archives=archives)]
        alternates = [
            entry(rel, "catalog", "tsm-qcontent", p.source, volume=vol, listed_at=listed_at)
            for vol, rel in self.per_volume.items()
        ]
        return main, alternates


def _common(rows: pl.DataFrame, site: Site) -> pl.DataFrame:
    return rows.with_columns(
        node=pl.concat_str([pl.lit("GRIDKA_"), pl.col("experiment").str.to_uppercase()]),
        fs_name=pl.col("path").str.strip_prefix(FILESPACE),
        fs_id=pl.col("experiment").replace_strict(
            list(site.pools), list(range(1, len(site.pools) + 1)), return_dtype=pl.Int64
        ),
    )


def _contents_line() -> pl.Expr:
    oid = pl.col("ident").cast(pl.String)
    return pl.concat_str(
        [
            pl.col("volume"),
            pl.col("node"),
            pl.lit("Arch"),
            pl.lit(FILESPACE),
            pl.col("fs_name"),
            pl.col("aggregated"),
            pl.col("size_bytes").cast(pl.String),
            pl.lit("1/1"),
            pl.lit("No"),
            pl.col("fs_id").cast(pl.String),
            pl.lit(FILESPACE_HEX),
            oid,
            oid,
        ],
        separator=",",
    )


def _qcontent_line() -> pl.Expr:
    return pl.concat_str(
        [
            pl.col("node"),
            pl.lit("Arch"),
            pl.lit(FILESPACE),
            pl.lit(FILESPACE_HEX),
            pl.col("fs_id").cast(pl.String),
            pl.col("fs_name"),
            pl.col("fs_name").str.encode("hex").str.to_uppercase(),
            pl.col("aggregated"),
            human_size(pl.col("size_bytes")),
            pl.lit("1/1"),
            pl.lit("No"),
            pl.lit("No"),
            pl.lit("1"),
        ],
        separator="\t",
    )


def write_archives(
    out_dir: Path, p: SiteParams, site: Site, copies: Copies, names: Names, progress: Progress
) -> None:
    """archives.csv: one row per archived object, by OBJECT_ID."""
    frame = copies.frame.filter(~pl.col("removed")).sort("ident")
    with Sink(out_dir, ARCHIVES, p.gzip) as sink:
        sink.text(",".join(ARCHIVES_COLUMNS) + "\n")
        for start in range(0, frame.height, p.chunk_rows):
            chunk = frame.slice(start, p.chunk_rows)
            rows = _common(canonical(p, site, chunk, names, keep=("ident", "written_s")), site)
            rows = rows.with_columns(
                archived=stamps(rows["written_s"].to_numpy(), "%Y-%m-%d", "%H:%M:%S.000000")
            )
            line = pl.concat_str(
                [
                    pl.col("node"),
                    pl.lit(FILESPACE),
                    pl.col("fs_name").str.replace(r"[^/]*$", ""),
                    pl.col("fs_name").str.extract(r"([^/]*)$", 1),
                    pl.col("ident").cast(pl.String),
                    pl.col("archived"),
                    pl.lit("dcache"),
                    pl.lit("dCache flush"),
                    pl.lit("DEFAULT"),
                ],
                separator=",",
            )
            sink.lines(line, rows)
            progress("tsm archives", min(start + p.chunk_rows, frame.height), frame.height)


_KIB = 1024


def human_size(size: pl.Expr) -> pl.Expr:
    """TSM-style size: '73,191 B' below 1 MiB, else '716.80 KB', '3,615.84 MB', '15.32 GB'."""
    kb = (size * 100 / _KIB).round(0).cast(pl.Int64)
    mb = (size * 100 / _KIB**2).round(0).cast(pl.Int64)
    gb = (size * 100 / _KIB**3).round(0).cast(pl.Int64)
    return (
        pl.when(size < _KIB**2)
        .then(pl.concat_str([thousands(size), pl.lit(" B")]))
        .when(size < _KIB**3)
        .then(pl.concat_str([_two_decimals(kb), pl.lit(" KB")]))
        .when(size < 10 * _KIB**3)
        .then(pl.concat_str([_two_decimals(mb), pl.lit(" MB")]))
        .otherwise(pl.concat_str([_two_decimals(gb), pl.lit(" GB")]))
    )


def _two_decimals(hundredths: pl.Expr) -> pl.Expr:
    frac = (hundredths % 100).cast(pl.String).str.zfill(2)
    return pl.concat_str([thousands(hundredths // 100), pl.lit("."), frac])


def thousands(value: pl.Expr) -> pl.Expr:
    """Non-negative integers with ',' between groups of three digits (below 10**15)."""
    groups = [(value // 10**k) % 1000 for k in (12, 9, 6, 3, 0)]
    text = pl.lit("")
    started = pl.lit(False)
    for i, g in enumerate(groups):
        # The leading group is written as is, every later one zero-padded to three digits.
        lead = started | (g > 0) | pl.lit(i == len(groups) - 1)
        piece = (
            pl.when(started)
            .then(pl.concat_str([pl.lit(","), g.cast(pl.String).str.zfill(3)]))
            .when(lead)
            .then(g.cast(pl.String))
            .otherwise(pl.lit(""))
        )
        text = pl.concat_str([text, piece])
        started = lead
    return text
