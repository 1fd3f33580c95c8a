"""Names as the experiments and sites write them: dataset directories, file names, volumes.

Datasets follow ATLAS conventions (a directory per dataset; the type is a token of the file
name, e.g. `AOD.31412345._000012.pool.root.1`), which is what tapelens.ingest.datasets reads back.
Volume labels follow each system: HPSS cartridges (A85532, physical volume A8553200), TSM volume
names that carry the media suffix (VA1041L7), CTA VIDs (A51234), Enstore labels (VA1234).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tapelens.errors import ConfigError
from tapelens.media import BY_NAME as MEDIA
from tapelens.world.params import SiteParams

# Where each system's namespace puts an experiment's files.
ROOTS = {
    "bnl": "/{exp}",
    "gridka": "/pnfs/gridka.de/{exp}",
    "cern": "/eos/{exp}/tape",
    "fnal": "/pnfs/fs/usr/{exp}",
}
TSM_FILESPACE = "/pnfs"  # gridka paths are FILESPACE_NAME + FILE_NAME

_TYPE_DIR = {"RAW": "RAW", "DAOD": "DAOD_PHYS", "LOG": "log"}
_FILE_TOKEN = {"DAOD": "DAOD_PHYS", "LOG": "log"}
_FILE_SUFFIX = {"LOG": ".job.log.tgz.1", "RAW": "._0001.1"}
_MC_ONLY = {"EVNT", "HITS"}
_DATA_ONLY = {"RAW"}
_STEP = {"EVNT": "evgen", "HITS": "simul", "AOD": "recon", "DAOD": "deriv", "LOG": "recon"}
TID_BASE = 30_000_000


@dataclass
class DatasetNames:
    dirs: list[str]
    prefixes: list[str]
    suffixes: list[str]


def dataset_names(
    p: SiteParams,
    pools: tuple[str, ...],
    type_names: tuple[str, ...],
    ds_pool: np.ndarray,
    ds_type: np.ndarray,
    ds_year: np.ndarray,
    rng: np.random.Generator,
) -> DatasetNames:
    """Directory and file-name parts of each dataset (unique by task id)."""
    n = ds_pool.shape[0]
    is_data: np.ndarray = np.asarray(rng.random(n)) < 0.5
    runs: np.ndarray = np.asarray(rng.integers(300_000, 480_000, n))
    dsids: np.ndarray = np.asarray(rng.integers(300_000, 999_999, n))
    tags: np.ndarray = np.asarray(rng.integers(10_000, 16_000, n))
    root = ROOTS[p.profile]
    dirs, prefixes, suffixes = [], [], []
    for i in range(n):
        kind = type_names[int(ds_type[i])]
        data = kind in _DATA_ONLY or (kind not in _MC_ONLY and bool(is_data[i]))
        yy = int(ds_year[i]) % 100
        project = f"data{yy:02d}_13TeV" if data else f"mc{yy:02d}_13TeV"
        tid = TID_BASE + i
        token = _FILE_TOKEN.get(kind, kind)
        tag = f"r{int(tags[i])}"
        if kind == "RAW":
            stem = f"{project}.{int(runs[i]):08d}.physics_Main"
            name = f"{stem}.merge.RAW.{tag}_tid{tid:08d}_00"
            prefix = f"{stem}.merge.RAW._lb"
        else:
            if data:
                stem = f"{project}.{int(runs[i]):08d}.physics_Main"
            else:
                stem = f"{project}.{int(dsids[i]):06d}.PhPy8EG_A14_ttbar.{_STEP.get(kind, 'recon')}"
            name = f"{stem}.{token}.{tag}_tid{tid:08d}_00"
            prefix = f"{token}.{tid:08d}._"
        top = root.format(exp=pools[int(ds_pool[i])])
        dirs.append(f"{top}/{project}/{_TYPE_DIR.get(kind, kind)}/{tag}/{name}")
        prefixes.append(prefix)
        suffixes.append(_FILE_SUFFIX.get(kind, ".pool.root.1"))
    return DatasetNames(dirs, prefixes, suffixes)


FILE_NO_WIDTH = 6


def pool_letters(pools: tuple[str, ...]) -> tuple[str, ...]:
    """One distinct capital letter per pool, taken from its name where possible."""
    used: list[str] = []
    for name in pools:
        letters = [c for c in name.upper() if c.isalpha()] + list("ABCDEFGHJKLMNPQRSTUVWXYZ")
        used.append(next(c for c in letters if c not in used))
    return tuple(used)


def volume_label(profile: str, letter: str, serial: int, media: str) -> tuple[str, str]:
    """(volume as the catalogs name it, barcode) of one cartridge."""
    suffix = MEDIA[media].barcode_suffix or "  "
    width = 4 if profile in ("gridka", "fnal") else 5
    if serial >= 10**width:
        raise ConfigError(
            "files", "the synthetic site parameters", f"more than {10**width} tapes in one pool"
        )
    if profile == "gridka":
        volume = f"V{letter}{serial:0{width}d}{suffix}"
        return volume, volume
    volume = f"{'V' if profile == 'fnal' else ''}{letter}{serial:0{width}d}"
    return volume, volume + suffix


HPSS_SIDE = "00"  # HPSS physical volume = cartridge + two-digit side (A85532 -> A8553200)
