"""The archive metadata the synthetic site's files were sent to tape with, as Rucio and FTS send it.

Rucio builds WLCG archive metadata per file whose destination is a tape endpoint, through a
tape metadata plugin of the experiment's policy package, and FTS keeps it per file in
`t_file.archive_metadata` as the JSON text its REST server wrote. The world writes what those
plugins would have sent for its files:

- ATLAS shape (every pool but cms), after the ATLAS policy package's
  `ATLASArchiveMetadataPlugin.get_atlas_archive_metadata`: per data type and project a branch
  of levels. RAW data: type, project, stream, dataset; AOD data: `AOD_data`, stream, project,
  dataset (the plugin's own AOD data branch also sends the dataset's version and a fifth level
  "4"; the world keeps the four levels 0-3 the WLCG schema has); AOD, EVNT and HITS of
  simulation: `AOD_mc` or the type, project, version (the r-tag), dataset; every other type
  (DAOD, logs) falls back to the dataset alone at level 0. `additional_hints` holds the
  activity and, at level 3, the dataset's `length` and `size` as Rucio counted them when the
  file was sent.
- CMS shape (the cms pool), after dmwm/CMSRucio
  src/policy/CMSRucioPolicy/algorithms/tape_colocation.py (schema version 1): kind of data
  (`raw` for RAW, else `data` or `mc`), data tier, era, parent container; the container's
  length and size at level 3 and the activity (`default` when Rucio gives none).

Not every file comes with hints: whole datasets are sent through a link whose plugin sends
none (`{"collocation_hints": {}}` with the activity alone, the 14.4 M FTS rows of Rucio issue
6780), and a few records have no metadata at all (NULL). An announced length and size is
the dataset's content when the file was sent: a dataset still being filled announces less
than it ends with.

The truth (truth/hints.parquet) keeps every file's group at each level as the world knows it,
whatever its record says, and the level whose groups the recall campaigns ask for together
(`hint_recall_level`): a campaign of kind `groups` recalls whole groups of that level.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from tapelens.world.copies import Copies, Names, canonical, hex32, mix64
from tapelens.world.params import SiteParams
from tapelens.world.site import Site

HINTS_DIR = "hints"
FTS_EXPORT = "t_file.tsv"
CTA_EXPORT = "archive-metadata.csv"
TRUTH_FILE = "hints.parquet"
LEVELS = 4
GROUP_SEPARATOR = " | "  # a group names its levels 0..n joined so (as fct_hinted_files does)
# Share of datasets sent through a link whose plugin sends no collocation hints.
EMPTY_DATASET_SHARE = 0.12
# Share of records with no metadata at all (NULL in t_file.archive_metadata).
ABSENT_FILE_SHARE = 0.01
# Share of datasets still being filled while their files went to tape: their announced length
# and size are what the dataset held when each file was sent.
GROWING_DATASET_SHARE = 0.35
# Storage doors in front of each profile's tape system, as FTS names the destination.
DOORS = {
    "bnl": ("davs://tape-door.bnl.example:443", "/pnfs/bnl.example/tape"),
    "gridka": ("davs://tape-door.gridka.example:2880", ""),
    "cern": ("root://eosctapublic.cern.example:1094", "/"),
    "fnal": ("davs://tape-door.fnal.example:2880", ""),
}
ACTIVITIES = ("T0 Tape", "Data Consolidation", "Production Output", "Data Rebalancing")
_MC_BRANCH = {"AOD": "AOD_mc", "EVNT": "EVNT", "HITS": "HITS"}


def dataset_levels(site: Site) -> list[tuple[str | None, ...]]:
    """The collocation hint levels (0-3) each dataset's files are sent with."""
    out: list[tuple[str | None, ...]] = []
    for d, directory in enumerate(site.ds_dir):
        pool = site.pools[int(site.ds_pool[d])]
        kind = site.type_names[int(site.ds_type[d])]
        parts = directory.split("/")
        project, tag, name = parts[-4], parts[-2], parts[-1]
        out.append(
            _cms(kind, project, tag, name) if pool == "cms" else _atlas(kind, project, tag, name)
        )
    return out


def _atlas(kind: str, project: str, tag: str, name: str) -> tuple[str | None, ...]:
    data = project.startswith("data")
    stream = name.split(".")[2] if data else None
    if kind == "RAW" and data:
        return ("RAW", project, stream, name)
    if kind == "AOD" and data:
        return ("AOD_data", stream, project, name)
    if kind in _MC_BRANCH and not data:
        return (_MC_BRANCH[kind], project, tag, name)
    return (name, None, None, None)  # the plugin's fallback: the dataset alone


def _cms(kind: str, project: str, tag: str, name: str) -> tuple[str | None, ...]:
    data = project.startswith("data")
    year = project[4:6] if data else project[2:4]
    era = f"Run20{year}" if data else f"RunIISummer{year}"
    primary = name.split(".")[2] if data else name.split(".")[2]
    return (
        "raw" if kind == "RAW" else ("data" if data else "mc"),
        kind,
        era,
        f"/{primary}/{era}-{tag}-v1/{kind}",
    )


def groups_at(levels: list[tuple[str | None, ...]], level: int) -> list[str]:
    """Each dataset's group at `level`: its levels 0..level joined, or 0..n where n is the
    deepest level it names when that is shallower (the plugin's fallback names level 0 only)."""
    out = []
    for values in levels:
        deepest = max(k for k, v in enumerate(values) if v is not None)
        upto = min(level, deepest)
        out.append(GROUP_SEPARATOR.join(v or "" for v in values[: upto + 1]))
    return out


def write(
    out_dir: Path,
    p: SiteParams,
    site: Site,
    copies: Copies,
    names: Names,
    rng: np.random.Generator,
) -> tuple[list[dict[str, Any]], pl.DataFrame]:
    """Write the FTS export of the written files' archive metadata (hints/t_file.tsv; for the
    cern profile the CTA front end's CSV, keyed by archive id) and truth/hints.parquet.
    Returns the manifest entries and each file's true group at every level (file_id, group_0..3),
    for the recall campaigns."""
    levels = dataset_levels(site)
    n_ds = len(levels)
    empty_ds = rng.random(n_ds) < EMPTY_DATASET_SHARE
    growing_ds = rng.random(n_ds) < GROWING_DATASET_SHARE
    activity_ds = rng.integers(len(ACTIVITIES), size=n_ds)
    first = _first_copies(p, site, copies, names)
    n = first.height
    absent = rng.random(n) < ABSENT_FILE_SHARE
    ds = first["ds"].to_numpy()
    # What the dataset held when each file was sent: the files sent before it and itself.
    order = np.lexsort((np.arange(n), first["written_s"].to_numpy(), ds))
    rank = np.empty(n, dtype=np.int64)
    starts = np.searchsorted(ds[order], ds[order], side="left")
    rank[order] = np.arange(n) - starts + 1
    size = first["size_bytes"].to_numpy()
    cum = np.empty(n, dtype=np.int64)
    cum[order] = _cumsum_within(size[order], starts)
    ds_files = np.bincount(ds, minlength=n_ds)
    ds_bytes = np.bincount(ds, weights=size, minlength=n_ds).astype(np.int64)
    length = np.where(growing_ds[ds], rank, ds_files[ds])
    announced = np.where(growing_ds[ds], cum, ds_bytes[ds])
    cms = np.array([site.pools[int(site.ds_pool[d])] == "cms" for d in range(n_ds)])
    adler = hex32(mix64(first["file"].to_numpy(), p.seed + 1)).to_list()
    metadata = [
        None
        if absent[i]
        else _metadata(
            levels[d],
            bool(empty_ds[d]),
            bool(cms[d]),
            ACTIVITIES[int(activity_ds[d])],
            int(length[i]),
            int(announced[i]),
            int(size[i]),
            adler[i],
        )
        for i, d in enumerate(ds.tolist())
    ]
    frame = first.with_columns(
        pl.Series("archive_metadata", metadata, dtype=pl.String),
        pl.Series("activity", [ACTIVITIES[int(a)] for a in activity_ds[ds]], dtype=pl.String),
    )
    entries = [_write_export(out_dir, p, frame)]
    truth = _truth(frame, levels, ds, empty_ds, absent, length, announced, ds_files, ds_bytes)
    root = out_dir / "truth"
    root.mkdir(parents=True, exist_ok=True)
    truth.write_parquet(root / TRUTH_FILE)
    return entries, truth.select("file_id", *[f"group_{k}" for k in range(LEVELS)])


def _cumsum_within(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    total = np.cumsum(values)
    before = np.where(starts > 0, total[np.maximum(starts - 1, 0)], 0)
    return total - before


def _first_copies(p: SiteParams, site: Site, copies: Copies, names: Names) -> pl.DataFrame:
    """Each file's first live copy: what FTS sent to tape (a retry's copy is the same file)."""
    live = copies.frame.filter(~pl.col("removed")).sort("file", "written_s", "copy_no")
    first = live.unique("file", keep="first", maintain_order=True)
    rows = canonical(p, site, first, names, keep=("file", "tape_s", "arrived_s"))
    return rows.select(
        "file",
        "file_id",
        "path",
        "experiment",
        "size_bytes",
        pl.Series("ds", site.f_ds[rows["file"].to_numpy()]),
        pl.col("tape_s").cast(pl.Int64).alias("written_s"),
        pl.col("arrived_s").floor().cast(pl.Int64).alias("arrived_s"),
    )


def _metadata(
    values: tuple[str | None, ...],
    empty: bool,
    cms: bool,
    activity: str,
    length: int,
    announced: int,
    size: int,
    adler32: str,
) -> str:
    """The JSON text FTS keeps: json.dumps of what the plugin returned (", " and ": ")."""
    if empty:
        return json.dumps({"collocation_hints": {}, "additional_hints": {"activity": activity}})
    hints = {str(k): v for k, v in enumerate(values) if v is not None}
    extra: dict[str, Any] = {"activity": activity if not cms or activity else "default"}
    if values[3] is not None:
        extra["3"] = {"length": length, "size": announced}
    doc: dict[str, Any] = {
        "collocation_hints": hints,
        "additional_hints": extra,
        "file_metadata": {"size": size, "md5": None, "adler32": adler32},
        "schema_version": 1,
    }
    if not cms:  # the ATLAS plugin builds the dict in this order
        doc = {
            "file_metadata": doc["file_metadata"],
            "additional_hints": extra,
            "schema_version": 1,
            "collocation_hints": hints,
        }
    return json.dumps(doc)


def _surl(p: SiteParams, path: str) -> str:
    door, prefix = DOORS[p.profile]
    return f"{door}/{prefix.strip('/')}{path}" if prefix.strip("/") else f"{door}/{path}"


def path_map(p: SiteParams) -> list[list[str]]:
    """The `--path-map` pairs that turn the door's paths back into the catalog's, one per
    experiment (FROM=TO, as `tapelens ingest hints --path-map` takes them)."""
    _, prefix = DOORS[p.profile]
    if not prefix.strip("/"):
        return []
    return [[f"{prefix.rstrip('/')}/{exp}", f"/{exp}"] for exp, _ in p.experiments]


def _write_export(out_dir: Path, p: SiteParams, frame: pl.DataFrame) -> dict[str, Any]:
    folder = out_dir / HINTS_DIR
    folder.mkdir(parents=True, exist_ok=True)

    def stamp(column: str) -> pl.Expr:
        return pl.from_epoch(pl.col(column), time_unit="s").dt.strftime("%Y-%m-%d %H:%M:%S")

    when = stamp("written_s")
    if p.profile == "cern":
        # CTA's front end receives the metadata with each archive request, keyed by archive id.
        out = frame.select(
            pl.col("file_id").alias("archive_id"),
            "path",
            when.alias("written_at"),
            pl.col("size_bytes").alias("size"),
            pl.col("experiment").alias("vo"),
            "archive_metadata",
        )
        out.write_csv(folder / CTA_EXPORT, null_value="")
        return {"path": f"{HINTS_DIR}/{CTA_EXPORT}", "kind": "hints", "format": "csv"}
    # `mysql -B`: a header line, tab-separated fields, NULL for a null (FTS's MySQL schema).
    out = frame.with_row_index("file_id_fts", offset=90_000_001).select(
        pl.col("file_id_fts").cast(pl.String).alias("file_id"),
        pl.lit("FINISHED").alias("file_state"),
        pl.col("path")
        .map_elements(lambda s: _surl(p, s), return_dtype=pl.String)
        .alias("dest_surl"),
        pl.col("size_bytes").cast(pl.String).alias("filesize"),
        stamp("arrived_s").alias("finish_time"),
        when.alias("archive_finish_time"),
        "activity",
        pl.col("experiment").alias("vo_name"),
        pl.col("archive_metadata"),
    )
    lines = ["\t".join(out.columns)]
    for row in out.iter_rows():
        lines.append("\t".join("NULL" if v is None else _mysql_escape(v) for v in row))
    (folder / FTS_EXPORT).write_text("\n".join(lines) + "\n")
    options: dict[str, Any] = {}
    if path_map(p):
        options["path_map"] = path_map(p)
    return {
        "path": f"{HINTS_DIR}/{FTS_EXPORT}",
        "kind": "hints",
        "format": "fts-files",
        "options": options,
    }


def _mysql_escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def _truth(
    frame: pl.DataFrame,
    levels: list[tuple[str | None, ...]],
    ds: np.ndarray,
    empty_ds: np.ndarray,
    absent: np.ndarray,
    length: np.ndarray,
    announced: np.ndarray,
    ds_files: np.ndarray,
    ds_bytes: np.ndarray,
) -> pl.DataFrame:
    status = np.where(absent, "absent", np.where(empty_ds[ds], "empty", "ok"))
    columns: dict[str, Any] = {
        "file_id": frame["file_id"],
        "path": frame["path"],
        "experiment": frame["experiment"],
        "status": pl.Series(status.tolist(), dtype=pl.String),
    }
    for k in range(LEVELS):
        columns[f"level_{k}"] = pl.Series([levels[d][k] for d in ds.tolist()], dtype=pl.String)
        group = groups_at(levels, k)
        columns[f"group_{k}"] = pl.Series([group[d] for d in ds.tolist()], dtype=pl.String)
    columns["announced_length"] = length
    columns["announced_bytes"] = announced
    columns["dataset_files"] = ds_files[ds]
    columns["dataset_bytes"] = ds_bytes[ds]
    return pl.DataFrame(columns)
