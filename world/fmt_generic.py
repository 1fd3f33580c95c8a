"""Outputs every profile has: the tape inventory CSV and the generic canonical copies CSV.

tapes.csv: volume,barcode,media_type,library,pool,capacity_bytes,state (contract).
copies.csv: the TAPE_FILES columns of every live copy, times ISO 8601 UTC with Z.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from tapelens.ingest.canonical import TAPES
from tapelens.media import BY_NAME as MEDIA
from tapelens.world.copies import SITE_COPY_COLUMNS
from tapelens.world.outputs import Consumer, Sink, entry, live
from tapelens.world.params import SiteParams
from tapelens.world.tapes import STATES, Placement, media_names
from tapelens.world.text import iso_z

TAPES_CSV = "catalog/tapes.csv"
COPIES_CSV = "catalog/copies.csv"
INVENTORY_COLUMNS = (
    "volume",
    "barcode",
    "media_type",
    "library",
    "pool",
    "capacity_bytes",
    "state",
)


def tapes_frame(p: SiteParams, placement: Placement) -> pl.DataFrame:
    """The inventory in canonical TAPES columns, by volume."""
    pools = [name for name, _ in p.experiments]
    media = media_names(p, placement)
    frame = pl.DataFrame(
        {
            "volume": placement.volumes,
            "barcode": placement.barcodes,
            "media_type": media,
            "library": placement.libraries,
            "pool": [pools[int(x)] for x in placement.tape_pool],
            "capacity_bytes": [MEDIA[m].capacity_bytes for m in media],
            "state": [STATES[int(s)] for s in placement.tape_state],
            "media_from": ["inventory"] * placement.n_tapes,
        }
    )
    # The generated inventory writes tapelens's own state words: no system words to keep.
    cols = [pl.col(c).cast(t) for c, t in TAPES.items() if c != "state_raw"]
    return frame.select(cols).sort("volume")


def write_tapes(out_dir: Path, p: SiteParams, placement: Placement) -> list[dict[str, Any]]:
    with Sink(out_dir, TAPES_CSV, p.gzip) as sink:
        sink.csv(tapes_frame(p, placement).select(INVENTORY_COLUMNS), header=True)
        rel = sink.rel
    return [entry(rel, "tapes", "csv", p.source)]


class CopiesCsv(Consumer):
    """copies.csv: the generic canonical catalog (an alternate view of the native one)."""

    def __init__(self, out_dir: Path, p: SiteParams) -> None:
        self.p = p
        self.sink = Sink(out_dir, COPIES_CSV, p.gzip)
        self.header = True

    def write(self, rows: pl.DataFrame) -> None:
        rows = live(rows)
        out = rows.select(SITE_COPY_COLUMNS).with_columns(
            written_at=iso_z(rows["written_s"].to_numpy())
        )
        self.sink.csv(out, header=self.header)
        self.header = False

    def close(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        if self.header:
            self.sink.text(",".join(SITE_COPY_COLUMNS) + "\n")
        self.sink.close()
        return [], [entry(self.sink.rel, "catalog", "csv", self.p.source)]
