"""Copies: one row per file copy written to tape, numeric while generating, canonical on output.

The numeric table stays compact (about 50 bytes a copy) so that 10 M copies fit in memory;
strings (paths, volumes, copy ids) are made chunk by chunk when a writer needs them.
`written_at` follows what each catalog calls the time of a copy (contract):
HPSS create time = arrival in the disk cache; TSM archive date, CTA creation time and the time
in an Enstore bfid = when the copy was written to tape.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from tapelens.ingest.canonical import TAPE_FILES, UTC_TIME
from tapelens.world import naming
from tapelens.world.params import SiteParams
from tapelens.world.site import Site
from tapelens.world.tapes import Placement
from tapelens.world.text import zero_pad
from tapelens.world.writepath import POLICY_NAMES, Batches, Requests

TSM_OBJECT_BASE = 10_441_000_000
CTA_ARCHIVE_BASE = 4_200_000
FLAG_COLUMNS = (
    "is_duplicate",
    "is_late",
    "write_policy",
    "removed",
    "repacked",
    "arrived_at",
    "tape_written_at",
    "outage",
)

# The canonical copy columns a generated site writes: its sizes are exact, so it has no
# rounding bound (size_bound_bytes), and none of its copies needs a second cartridge
# (other_volumes).
SITE_COPY_COLUMNS = [c for c in TAPE_FILES if c not in ("size_bound_bytes", "other_volumes")]


@dataclass
class Copies:
    """The numeric copy table, sorted by (volume name, position, member)."""

    frame: pl.DataFrame
    volume_rank: np.ndarray  # rank of each tape's volume name


def build_copies(
    p: SiteParams,
    site: Site,
    req: Requests,
    batches: Batches,
    placement: Placement,
) -> Copies:
    """Every written copy at its tape position; copies moved by a repack appear twice
    (the old one removed, the new one repacked). Built column by column through one
    permutation, so that the peak memory stays near the size of the table."""
    m = req.file.shape[0]
    obj_time = placement.obj_time_s[req.obj]
    copy_no = _copy_numbers(req.file, obj_time)
    ident = _identities(p, req, obj_time)
    del obj_time
    moved_to = placement.obj_moved_to[req.obj]
    moved = np.flatnonzero(moved_to >= 0)
    src = np.concatenate([np.arange(m, dtype=np.int32), moved.astype(np.int32)])  # request
    obj = np.concatenate([req.obj, moved_to[moved]])  # object of each row
    del moved_to
    removed = np.zeros(src.size, dtype=bool)
    removed[moved] = True
    repacked = np.zeros(src.size, dtype=bool)
    repacked[m:] = True
    names = np.array(placement.volumes)
    volume_rank = np.empty(len(names), dtype=np.int64)
    volume_rank[np.argsort(names, kind="stable")] = np.arange(len(names))
    tape = placement.obj_tape[obj]
    position = placement.obj_pos[obj]
    order = np.lexsort((removed, req.member[src], position, volume_rank[tape]))
    src, obj, tape, position = src[order], obj[order], tape[order], position[order]
    removed, repacked = removed[order], repacked[order]
    del order
    tape_s = _seconds(placement.obj_time_s[obj])
    del obj
    arrived = req.arrived_s[src]
    if p.profile == "bnl":
        written = arrived
    elif p.profile == "fnal":
        # Enstore migration gives a moved copy a new bfid, stamped with its write time.
        written = tape_s
    else:
        # TSM archive dates and CTA creation times survive a repack.
        written = _seconds(placement.obj_time_s[req.obj[src]])
    frame = pl.DataFrame(
        {
            "file": req.file[src],
            "seq": req.seq[src],
            "outage": req.outage[src],
            "member": req.member[src],
            "members": req.members[src],
            "offset": req.offset[src],
            "written_s": written,
            "arrived_s": arrived,
            "tape_s": tape_s,
            "copy_no": copy_no[src],
            "policy": batches.policy[req.batch[src]],
            "ident": _bfid_counters(written) if p.profile == "fnal" else ident[src],
            "tape": tape.astype(np.int32),
            "position": position.astype(np.int32),
            "removed": removed,
            "repacked": repacked,
        }
    )
    return Copies(frame=frame, volume_rank=volume_rank)


def _seconds(t: np.ndarray) -> np.ndarray:
    """Whole UTC seconds, compact (unsigned 32 bits hold dates up to 2106)."""
    return np.floor(t).astype(np.uint32)


def _copy_numbers(file: np.ndarray, obj_time: np.ndarray) -> np.ndarray:
    """Copy numbers follow the order the copies of a file were written."""
    m = file.shape[0]
    order = np.lexsort((np.arange(m), obj_time, file))
    first_of_file = np.ones(m, dtype=bool)
    first_of_file[1:] = file[order][1:] != file[order][:-1]
    starts = np.flatnonzero(first_of_file)
    rank = np.arange(m) - starts[np.cumsum(first_of_file) - 1]
    copy_no = np.empty(m, dtype=np.int16)
    copy_no[order] = (rank + 1).astype(np.int16)
    return copy_no


def _identities(p: SiteParams, req: Requests, obj_time: np.ndarray) -> np.ndarray:
    """Per-profile identity, as a rank added to a base on output: TSM OBJECT_ID per copy
    (in archive order), CTA archive id per file (in order of first write), else 0."""
    m = req.file.shape[0]
    if p.profile == "gridka":
        order = np.lexsort((np.arange(m), obj_time))
        ident = np.empty(m, dtype=np.int32)
        ident[order] = np.arange(m, dtype=np.int32)
        return ident
    if p.profile == "cern":
        n_files = int(req.file.max()) + 1
        first = np.full(n_files, np.inf)
        np.minimum.at(first, req.file, obj_time)
        file_rank = np.empty(n_files, dtype=np.int32)
        file_rank[np.lexsort((np.arange(n_files), first))] = np.arange(n_files, dtype=np.int32)
        return file_rank[req.file]
    return np.zeros(m, dtype=np.int32)


def _bfid_counters(written: np.ndarray) -> np.ndarray:
    """Enstore bfids are unix time + a counter: number the copies written in the same second
    (in table order, i.e. by volume and position)."""
    n = written.shape[0]
    order = np.lexsort((np.arange(n), written))
    first = np.ones(n, dtype=bool)
    first[1:] = written[order][1:] != written[order][:-1]
    rank = np.arange(n) - np.flatnonzero(first)[np.cumsum(first) - 1]
    out = np.empty(n, dtype=np.int32)
    out[order] = rank.astype(np.int32)
    return out


def ident_base(p: SiteParams) -> int:
    """What the ident rank is added to on output."""
    return {"gridka": TSM_OBJECT_BASE, "cern": CTA_ARCHIVE_BASE}.get(p.profile, 0)


def hex32(values: np.ndarray) -> pl.Series:
    """Lower-case 8-digit hex of the low 32 bits."""
    v = values.astype(np.uint64) & np.uint64(0xFFFFFFFF)
    digits = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
    shifts = np.arange(28, -1, -4, dtype=np.uint64)
    nib = ((v[:, None] >> shifts[None, :]) & np.uint64(0xF)).astype(np.int64)
    chars = digits[nib].astype(np.uint8)
    return pl.Series(np.ascontiguousarray(chars).view("S8").ravel()).cast(pl.String)


def mix64(x: np.ndarray, seed: int) -> np.ndarray:
    """A fixed 64-bit hash (splitmix64 finaliser) for per-file values that need no RNG draw."""
    with np.errstate(over="ignore"):
        z = x.astype(np.uint64) + np.uint64(seed & 0xFFFFFFFF) * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


@dataclass(frozen=True)
class Names:
    """String lookups shared by every writer."""

    dirs: pl.Series
    prefixes: pl.Series
    suffixes: pl.Series
    types: pl.Series  # per dataset
    experiments: pl.Series  # per dataset
    volumes: pl.Series  # per tape


def names_for(site: Site, placement: Placement) -> Names:
    return Names(
        dirs=pl.Series(site.ds_dir, dtype=pl.String),
        prefixes=pl.Series(site.ds_prefix, dtype=pl.String),
        suffixes=pl.Series(site.ds_suffix, dtype=pl.String),
        types=pl.Series([site.type_names[int(t)] for t in site.ds_type], dtype=pl.String),
        experiments=pl.Series([site.pools[int(x)] for x in site.ds_pool], dtype=pl.String),
        volumes=pl.Series(placement.volumes, dtype=pl.String),
    )


def file_names(names: Names, ds: np.ndarray, file_no: np.ndarray) -> pl.Series:
    """File names of (dataset, file number) pairs."""
    no = zero_pad(file_no, naming.FILE_NO_WIDTH)
    frame = pl.DataFrame({"a": names.prefixes.gather(ds), "b": no, "c": names.suffixes.gather(ds)})
    return frame.select(pl.concat_str(["a", "b", "c"]))["a"]


def canonical(
    p: SiteParams,
    site: Site,
    chunk: pl.DataFrame,
    names: Names,
    flags: bool = False,
    keep: tuple[str, ...] = (),
) -> pl.DataFrame:
    """Canonical TAPE_FILES columns of a chunk of the numeric table, plus the truth flags when
    asked and any numeric columns named in `keep`."""
    file = chunk["file"].to_numpy()
    ds = site.f_ds[file]
    dirs = names.dirs.gather(ds)
    path = pl.DataFrame({"d": dirs, "n": file_names(names, ds, site.f_no[file])}).select(
        pl.concat_str(["d", "n"], separator="/")
    )["d"]
    volume = names.volumes.gather(chunk["tape"].to_numpy())
    frame = chunk.with_columns(
        ident=pl.col("ident").cast(pl.Int64) + ident_base(p),
        offset=pl.when(pl.col("offset") >= 0).then(pl.col("offset")),
        path=path,
        dataset=dirs,
        dataset_type=names.types.gather(ds),
        experiment=names.experiments.gather(ds),
        volume=volume,
        size_bytes=pl.Series(site.f_size[file]),
    )
    pos = pl.col("position").cast(pl.String)
    off = (
        pl.when(pl.col("offset").fill_null(0) == 0)
        .then(pl.lit(""))
        .otherwise(pl.col("offset").cast(pl.String))
    )
    by_position = pl.concat_str([pl.col("volume"), pos, off], separator=":")
    if p.profile == "gridka":
        copy_id = pl.col("ident").cast(pl.String)
    elif p.profile == "cern":
        copy_id = pl.concat_str(
            [pl.col("ident").cast(pl.String), pl.col("copy_no").cast(pl.String)], separator="/"
        )
    elif p.profile == "fnal":
        copy_id = bfid_expr()
    else:
        copy_id = by_position
    file_id = pl.col("ident").cast(pl.String) if p.profile == "cern" else pl.col("path")
    copy_no = pl.col("copy_no") if p.profile == "cern" else pl.lit(1)
    checksum = (
        pl.concat_str([pl.lit("ADLER32:"), pl.lit(hex32(mix64(file, p.seed)))])
        if p.profile == "cern"
        else pl.lit(None, dtype=pl.String)
    )
    out = frame.with_columns(
        source=pl.lit(p.source),
        copy_id=copy_id,
        file_id=file_id,
        copy_no=copy_no.cast(pl.Int32),
        aggregate_id=pl.when(pl.col("member") > 0)
        .then(pl.concat_str([pl.col("volume"), pos], separator=":"))
        .otherwise(None),
        written_at=seconds_to_time(pl.col("written_s")),
        checksum=checksum,
        offset_bytes=pl.col("offset"),
    )
    cols = [pl.col(c).cast(TAPE_FILES[c]) for c in SITE_COPY_COLUMNS]
    if flags:
        cols += [
            (pl.col("seq") > 0).alias("is_duplicate"),
            pl.lit(pl.Series("is_late", site.f_late[file])),
            pl.col("policy")
            .replace_strict(
                list(range(len(POLICY_NAMES))), list(POLICY_NAMES), return_dtype=pl.String
            )
            .alias("write_policy"),
            pl.col("removed"),
            pl.col("repacked"),
            seconds_to_time(pl.col("arrived_s")).alias("arrived_at"),
            seconds_to_time(pl.col("tape_s")).alias("tape_written_at"),
            pl.col("outage"),
        ]
    cols += [pl.col(c) for c in keep]
    return out.select(cols)


ENSTORE_BRAND = "CDMS"


def bfid_expr() -> pl.Expr:
    """Enstore bfid: brand, 10 digits of unix time, 5-digit counter."""
    return pl.concat_str(
        [
            pl.lit(ENSTORE_BRAND),
            pl.col("written_s").cast(pl.String).str.zfill(10),
            pl.col("ident").cast(pl.String).str.zfill(5),
        ]
    )


def seconds_to_time(expr: pl.Expr) -> pl.Expr:
    micros = expr.cast(pl.Int64) * 1_000_000
    return micros.cast(pl.Datetime("us")).dt.replace_time_zone("UTC").cast(UTC_TIME)
