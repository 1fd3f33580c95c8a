"""Write the ground truth of a generated site to OUT_DIR/truth/ (Parquet) with its README."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow.parquet as pq

from tapelens.world import truth
from tapelens.world.copies import FLAG_COLUMNS, SITE_COPY_COLUMNS, Copies, Names, canonical
from tapelens.world.fmt_generic import tapes_frame
from tapelens.world.outputs import Consumer, Progress
from tapelens.world.params import SiteParams
from tapelens.world.site import Site
from tapelens.world.tapes import Placement
from tapelens.world.timeline import Timeline, epoch_s

TRUTH = "truth"

README = """# Ground truth of this synthetic site

Written by `tapelens demo generate` ({profile} profile, seed {seed}, {files} files). Every table
is Parquet. Times are UTC, whole seconds. The cutover (FIFO writes before, sorted by directory
from this day) is {cutover}.

- `copies.parquet`: one copy of one file on one tape, as the catalogs list it, plus the copies
  a repack moved away. Columns: the canonical TAPE_FILES columns, and
  `is_duplicate` (a retry written after a lost acknowledgement), `is_late` (arrived after its
  dataset's window), `write_policy` (fifo or sorted: the migration that wrote it), `removed`
  (no longer in the catalog: moved by a repack), `repacked` (written by a repack),
  `arrived_at` (reached the disk cache), `tape_written_at` (written to tape), `outage` (a
  retry caused by an acknowledgement outage; is_duplicate is true too).
- `dataset_tape_gaps.parquet`: one dataset on one volume (live copies; repacked tapes left out):
  dataset, volume, dataset_type, experiment, n_copies, n_aggregated (aggregate members, left
  out of the gaps), n (gaps counted), mean, sigma (sample standard deviation, null for n < 2),
  n_locates (posdiff >= 100).
- `gap_by_type_period.parquet`: one dataset type before or after the cutover: dataset_type,
  period (before/after, by the file's written_at), n, mu, sigma, n_locates.
- `duplicates.parquet`: one file with more than one live copy: file_id, path, copies,
  volumes (distinct volumes), volume_list.
- `tapes.parquet`: one cartridge of the inventory: the canonical TAPES columns, plus copies
  (live), used_bytes, first_written_at, last_written_at, duplicate_copies (live copies that
  are retries, is_duplicate), duplicate_bytes, and outage_copies (of which retries after an
  acknowledgement outage).
- `datasets.parquet`: one dataset: dataset, dataset_type, experiment, files, size_bytes,
  late_files, tapes (volumes holding live copies), window_start (when its files start to
  arrive), scattered (an injected scattered dataset).

Gap conventions (the published analysis): on one volume, a dataset's live copies in position
order (then offset inside an aggregate); posdiff = position minus the previous copy's position.
The first copy of a dataset on a volume has no gap; aggregate members (copies with an offset and
an aggregate_id) are left out, every member, after the posdiffs are taken over all the copies;
posdiff >= 100 is a locate, counted apart, not in n, mean or sigma; tapes in state `repacked`
(emptied by a repack; their copies are removed) are left out.

`written_at` is what the {profile} catalog calls the time of a copy: {written_at_meaning}.
{extra}{anomalies}"""

ANOMALIES = """
Injected anomalies (what a repack or clean-up advisor should find):
{scattered}{outages}"""

SCATTERED = """- {n} scattered datasets (`scattered` in datasets.parquet), drawn among those with
  at least {min_files} files, preferably spread before the cutover (written FIFO): each file
  arrived at its own uniform time over {spread_days:g} days from the dataset's window start
  (that spread is their window, so none of their files is late), and many migrations wrote
  them among everything else: many tapes, large gaps, locates.
"""

OUTAGES = """- {n} acknowledgement outages of {hours:g} hours of the site's front end, at uniform
  times while migrations wrote FIFO (before the cutover): {share} the files waiting in the disk
  cache when one began, or arriving while it lasted, got one retry (`outage` in copies.parquet;
  is_duplicate too), submitted again after the front end was back, each after its own
  back-off, and written one by one among new files by a later migration than its first copy:
  bursts of stray copies on the tapes being filled (outage_copies in tapes.parquet).
"""

WRITTEN_AT = {
    "bnl": "the HPSS create time, when the file reached the disk cache (the modify time in ls -P "
    "is the migration to tape)",
    "gridka": "the TSM ARCHIVE_DATE of the object (the migration to tape)",
    "cern": "the CTA creation time of the tape file (the migration to tape)",
    "fnal": "the time in the Enstore bfid (the write to tape; a repack writes a new bfid)",
}


def write(
    out_dir: Path,
    p: SiteParams,
    site: Site,
    copies: Copies,
    placement: Placement,
    names: Names,
    timeline: Timeline,
    progress: Progress,
) -> dict[str, Any]:
    """Write the truth tables (copies.parquet comes from TruthCopies); return headline figures
    for the caller's summary."""
    root = out_dir / TRUTH
    root.mkdir(parents=True, exist_ok=True)
    index = truth.gap_index(copies.frame, site, placement, epoch_s(p.cutover))
    per_tape = truth.dataset_tape_gaps(index)
    ds = per_tape["ds"].to_numpy()
    per_tape = per_tape.with_columns(
        dataset=names.dirs.gather(ds),
        volume=names.volumes.gather(per_tape["tape"].to_numpy()),
        dataset_type=names.types.gather(ds),
        experiment=names.experiments.gather(ds),
    ).select(
        "dataset",
        "volume",
        "dataset_type",
        "experiment",
        "n_copies",
        "n_aggregated",
        "n",
        "mean",
        "sigma",
        "n_locates",
    )
    per_tape.write_parquet(root / "dataset_tape_gaps.parquet")
    by_type = truth.gap_by_type_period(index, site)
    by_type.write_parquet(root / "gap_by_type_period.parquet")
    dups = _duplicates(p, site, copies, names)
    dups.write_parquet(root / "duplicates.parquet")
    _tapes(p, site, copies, placement).write_parquet(root / "tapes.parquet")
    tpd = truth.tapes_per_dataset(index, len(site.ds_dir))
    del index
    _datasets(site, names, timeline, tpd).write_parquet(root / "datasets.parquet")
    (root / "README.md").write_text(_readme(p))
    progress("truth", 1, 1)
    return {
        "gap_by_type_period": by_type.to_dicts(),
        "duplicated_files": dups.height,
        "duplicate_share": dups.height / max(site.n_files, 1),
        "max_copies": int(dups["copies"].to_numpy().max()) if dups.height else 1,
        "max_tapes_per_dataset": int(tpd.max()) if tpd.size else 0,
        "scattered_datasets": int(site.ds_scattered.sum()),
        "outage_copies": int((copies.frame["outage"] & ~copies.frame["removed"]).sum()),
    }


class TruthCopies(Consumer):
    """truth/copies.parquet: every copy (removed ones too) with the truth flags."""

    def __init__(self, out_dir: Path) -> None:
        self.path = out_dir / TRUTH / "copies.parquet"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.columns = [*SITE_COPY_COLUMNS, *FLAG_COLUMNS]
        self.writer: pq.ParquetWriter | None = None

    def write(self, rows: pl.DataFrame) -> None:
        table = rows.select(self.columns).to_arrow()
        if self.writer is None:
            self.writer = pq.ParquetWriter(self.path, table.schema, compression="zstd")
        self.writer.write_table(table)

    def close(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        if self.writer is not None:
            self.writer.close()
        return [], []


def _duplicates(p: SiteParams, site: Site, copies: Copies, names: Names) -> pl.DataFrame:
    live = ~copies.frame["removed"].to_numpy()
    file = copies.frame["file"].to_numpy()
    per_file = np.bincount(file[live], minlength=site.n_files)
    rows = copies.frame.filter(pl.Series(live & (per_file[file] > 1)))
    del live, file, per_file
    can = canonical(p, site, rows, names)
    return (
        can.group_by("file_id")
        .agg(
            path=pl.col("path").first(),
            copies=pl.len().cast(pl.Int64),
            volumes=pl.col("volume").n_unique().cast(pl.Int64),
            volume_list=pl.col("volume").unique().sort(),
        )
        .sort("file_id")
    )


def _tapes(p: SiteParams, site: Site, copies: Copies, placement: Placement) -> pl.DataFrame:
    """Inventory plus what each tape holds (live copies; the table is grouped by tape)."""
    frame = copies.frame
    live = ~frame["removed"].to_numpy()
    tape = frame["tape"].to_numpy()
    n = placement.n_tapes
    count = np.bincount(tape[live], minlength=n).astype(np.int64)
    size = site.f_size[frame["file"].to_numpy()]
    used = np.bincount(tape[live], weights=size[live], minlength=n).astype(np.int64)
    dup = live & (frame["seq"].to_numpy() > 0)
    dup_count = np.bincount(tape[dup], minlength=n).astype(np.int64)
    dup_bytes = np.bincount(tape[dup], weights=size[dup], minlength=n).astype(np.int64)
    outage = np.bincount(tape[live & frame["outage"].to_numpy()], minlength=n).astype(np.int64)
    del size, dup
    written = frame["tape_s"].to_numpy()
    first = np.full(n, np.iinfo(np.int64).max)
    last = np.full(n, -1, dtype=np.int64)
    change = np.flatnonzero(np.append(True, tape[1:] != tape[:-1]))
    first[tape[change]] = np.minimum.reduceat(written, change)
    last[tape[change]] = np.maximum.reduceat(written, change)
    stats = pl.DataFrame(
        {
            "volume": placement.volumes,
            "copies": count,
            "used_bytes": used,
            "first_s": np.where(count > 0, first, -1),
            "last_s": np.where(count > 0, last, -1),
            "duplicate_copies": dup_count,
            "duplicate_bytes": dup_bytes,
            "outage_copies": outage,
        }
    )
    out = (
        tapes_frame(p, placement)
        .join(stats, on="volume")
        .with_columns(
            first_written_at=_utc(pl.when(pl.col("first_s") >= 0).then(pl.col("first_s"))),
            last_written_at=_utc(pl.when(pl.col("last_s") >= 0).then(pl.col("last_s"))),
        )
    )
    return out.drop("first_s", "last_s").sort("volume")


def _utc(seconds: pl.Expr) -> pl.Expr:
    return pl.from_epoch(seconds, time_unit="s").dt.replace_time_zone("UTC")


def _datasets(site: Site, names: Names, timeline: Timeline, tpd: np.ndarray) -> pl.DataFrame:
    late = np.bincount(site.f_ds, weights=site.f_late, minlength=len(site.ds_dir))
    size = np.bincount(site.f_ds, weights=site.f_size, minlength=len(site.ds_dir))
    start = np.floor(timeline.seconds(site.ds_start_u)).astype(np.int64)
    return (
        pl.DataFrame(
            {
                "dataset": names.dirs,
                "dataset_type": names.types,
                "experiment": names.experiments,
                "files": site.ds_files.astype(np.int64),
                "size_bytes": size.astype(np.int64),
                "late_files": late.astype(np.int64),
                "tapes": tpd,
                "window_start": start,
                "scattered": site.ds_scattered,
            }
        )
        .with_columns(
            window_start=pl.from_epoch("window_start", time_unit="s").dt.replace_time_zone("UTC")
        )
        .sort("dataset")
    )


def _readme(p: SiteParams) -> str:
    extra = ""
    if p.profile == "bnl" and p.zero_length_share:
        extra = (
            "\nThe HPSS listing also holds a few zero-length files (no volume): they have no "
            "copy on tape and are not in copies.parquet.\n"
        )
    return README.format(
        profile=p.profile,
        seed=p.seed,
        files=p.files,
        cutover=p.cutover.isoformat(),
        written_at_meaning=WRITTEN_AT[p.profile],
        extra=extra,
        anomalies=_anomalies_text(p),
    )


def _anomalies_text(p: SiteParams) -> str:
    """The README paragraph on the injected anomalies; empty when there are none."""
    if not (p.scattered_datasets or p.ack_outages):
        return ""
    scattered = outages = ""
    if p.scattered_datasets:
        scattered = SCATTERED.format(
            n=p.scattered_datasets,
            min_files=p.scattered_min_files,
            spread_days=p.scattered_spread_days,
        )
    if p.ack_outages:
        share = "every one of" if p.ack_outage_loss >= 1 else f"a share {p.ack_outage_loss:g} of"
        outages = OUTAGES.format(n=p.ack_outages, hours=p.ack_outage_hours, share=share)
    return ANOMALIES.format(scattered=scattered, outages=outages)
