"""HPSS `hsi ls -P -R` listing (docs/formats/hpss-lsp.md): tab separated, by directory.

    DIRECTORY	/atlas/data22/AOD/...
    FILE	<path>	<size>	<size>	<section>+<offset>	<PV>	<cos>	0	1
        MM/DD/YYYY	HH:MM:SS	MM/DD/YYYY	HH:MM:SS       (one line, tab separated)

Create time = when the file arrived in HPSS (the disk cache), modify time = when the copy was
migrated to tape. A duplicate is another FILE line with the same path; zero-length files have no
section and no volume.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from tapelens.world.copies import Copies, Names, file_names
from tapelens.world.naming import HPSS_SIDE
from tapelens.world.outputs import Progress, Sink, entry
from tapelens.world.params import SiteParams
from tapelens.world.site import Site
from tapelens.world.text import stamps
from tapelens.world.timeline import Timeline

LISTING = "catalog/ls-P.txt"
# HPSS class of service per dataset type (site-defined numbers).
COS = {"RAW": 41, "AOD": 42, "DAOD": 43, "EVNT": 44, "HITS": 45, "LOG": 46}
COS_OTHER = 40


def write(
    out_dir: Path,
    p: SiteParams,
    site: Site,
    copies: Copies,
    names: Names,
    timeline: Timeline,
    progress: Progress,
) -> list[dict[str, Any]]:
    order, live_idx, first = _listing_order(site, copies, timeline)
    n_live = live_idx.shape[0]
    columns = ["file", "written_s", "tape_s", "tape", "position", "offset"]
    numeric = copies.frame.select(columns)
    cos = pl.Series(
        [COS.get(site.type_names[int(t)], COS_OTHER) for t in site.ds_type], dtype=pl.Int64
    )
    z_time = np.floor(timeline.seconds(site.ds_start_u[site.z_ds])).astype(np.uint32)
    total = order.shape[0]
    with Sink(out_dir, LISTING, p.gzip) as sink:
        for start in range(0, total, p.chunk_rows):
            sel = order[start : start + p.chunk_rows]
            real = sel < n_live
            rows = numeric[live_idx[sel[real]]].with_columns(k=pl.Series(np.flatnonzero(real)))
            if not real.all():
                z = sel[~real] - n_live
                zero = pl.DataFrame(
                    {
                        "file": np.full(z.size, -1, dtype=np.int32),
                        "written_s": z_time[z],
                        "tape_s": z_time[z],
                        "tape": np.full(z.size, -1, dtype=np.int32),
                        "position": np.zeros(z.size, dtype=np.int32),
                        "offset": np.full(z.size, -1, dtype=np.int64),
                        "k": np.flatnonzero(~real),
                    },
                    schema=rows.schema,
                )
                rows = pl.concat([rows, zero]).sort("k")
            file = np.maximum(rows["file"].to_numpy(), 0)
            ds, no, size = site.f_ds[file], site.f_no[file], site.f_size[file]
            if not real.all():
                z = sel[~real] - n_live
                ds[~real], no[~real], size[~real] = site.z_ds[z], site.z_no[z], 0
            rows = rows.with_columns(
                ds=pl.Series(ds),
                no=pl.Series(no),
                size=pl.Series(size),
                first=pl.Series(first[sel]),
            )
            sink.lines(_lines(rows, names, cos), rows)
            progress("hpss ls -P", min(start + p.chunk_rows, total), total)
        rel = sink.rel
    return [entry(rel, "catalog", "hpss-lsp", p.source)]


def _listing_order(
    site: Site, copies: Copies, timeline: Timeline
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Listing order of live copies and zero-length files (directory, file name, create time).

    Returns the order (values below len(live_idx) are live copies, the rest zero-length
    files), the table rows of the live copies, and whether each entry opens its directory.
    """
    frame = copies.frame
    live_idx = np.flatnonzero(~frame["removed"].to_numpy())
    file = frame["file"].to_numpy()[live_idx]
    ds = np.concatenate([site.f_ds[file], site.z_ds])
    no = np.concatenate([site.f_no[file], site.z_no])
    del file
    n_zero = site.z_ds.size
    z_time = np.floor(timeline.seconds(site.ds_start_u[site.z_ds])).astype(np.uint32)
    written = np.concatenate([frame["written_s"].to_numpy()[live_idx], z_time])
    tape = np.concatenate([frame["tape"].to_numpy()[live_idx], np.full(n_zero, -1, np.int32)])
    position = np.concatenate([frame["position"].to_numpy()[live_idx], np.zeros(n_zero, np.int32)])
    order = np.lexsort((position, tape, written, no, site.ds_rank[ds]))
    del no, written, tape, position
    ds_sorted = ds[order]
    first = np.ones(order.shape[0], dtype=bool)
    first[1:] = ds_sorted[1:] != ds_sorted[:-1]
    first_by_entry = np.empty_like(first)
    first_by_entry[order] = first
    return order, live_idx, first_by_entry


def _lines(chunk: pl.DataFrame, names: Names, cos: pl.Series) -> pl.Expr:
    ds = chunk["ds"].to_numpy()
    dirs = names.dirs.gather(ds)
    fname = file_names(names, ds, chunk["no"].to_numpy())
    zero = pl.col("tape") < 0
    size = pl.col("size").cast(pl.String)
    section = (
        pl.when(zero)
        .then(pl.lit("0"))
        .otherwise(
            pl.concat_str(
                [pl.col("position").cast(pl.String), pl.col("offset").clip(0).cast(pl.String)],
                separator="+",
            )
        )
    )
    volume = names.volumes.gather(np.maximum(chunk["tape"].to_numpy(), 0))
    pv = pl.when(zero).then(pl.lit("")).otherwise(pl.lit(volume) + pl.lit(HPSS_SIDE))
    created = stamps(chunk["written_s"].to_numpy(), "%m/%d/%Y", "%H:%M:%S", sep="\t")
    modified = stamps(chunk["tape_s"].to_numpy(), "%m/%d/%Y", "%H:%M:%S", sep="\t")
    file_line = pl.concat_str(
        [
            pl.lit("FILE"),
            pl.concat_str([pl.lit(dirs), pl.lit(fname)], separator="/"),
            size,
            size,
            section,
            pv,
            pl.lit(cos.gather(ds)).cast(pl.String),
            pl.lit("0"),
            pl.lit("1"),
            pl.lit(created),
            pl.lit(modified),
        ],
        separator="\t",
    )
    directory = pl.concat_str([pl.lit("DIRECTORY\t"), pl.lit(dirs), pl.lit("\n")])
    return pl.when(pl.col("first")).then(directory + file_line).otherwise(file_line)
