"""The seam to the operations history: recall campaigns over the generated catalog, and logs.

tapelens.world.operations simulates the campaigns (transfers, mounts) and tapelens.world.logs
writes them in the profile's native log formats. When those modules are not installed the site
is generated without logs, and the run says so.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from tapelens.world.copies import Copies, Names, canonical, mix64
from tapelens.world.fmt_generic import tapes_frame
from tapelens.world.outputs import Progress
from tapelens.world.params import SiteParams
from tapelens.world.site import Site
from tapelens.world.tapes import Placement
from tapelens.world.truth_files import TRUTH

OPERATIONS = "tapelens.world.operations"
LOGS = "tapelens.world.logs"
HISTORY_TRUTH = ("transfers", "mounts", "campaigns", "physics", "drives")


def available() -> bool:
    return all(importlib.util.find_spec(name) is not None for name in (OPERATIONS, LOGS))


def run(
    out_dir: Path,
    p: SiteParams,
    site: Site,
    copies: Copies,
    placement: Placement,
    names: Names,
    rng: np.random.Generator,
    progress: Progress,
    groups: pl.DataFrame | None = None,
) -> tuple[bool, list[dict[str, Any]]]:
    """Simulate the recall campaigns and write their logs; (ran, manifest entries).

    With `groups` (each file's true hint group per level, hints.py), the campaigns recall whole
    groups of the site's hint_recall_level (kind `groups`) unless the operations parameters
    name their own kinds."""
    if not p.history:
        return False, []
    if not available():
        progress("operations history skipped: tapelens.world.operations/logs missing", 0, 0)
        return False, []
    operations: Any = importlib.import_module(OPERATIONS)
    logs: Any = importlib.import_module(LOGS)
    live = history_copies(p, site, copies, names)
    tapes = tapes_frame(p, placement)
    params = p.operations or operations.OperationsParams()
    if groups is not None:
        column = f"group_{p.hint_recall_level}"
        live = live.join(
            groups.select("file_id", pl.col(column).alias("group")), on="file_id", how="left"
        )
        if p.operations is None and hasattr(params, "kinds"):
            params = dataclasses.replace(params, kinds=("groups",))
    if hasattr(params, "source"):
        params = dataclasses.replace(params, source=p.source)
    progress("operations history", 0, 1)
    hist = operations.simulate_history(live, tapes, params, rng)
    entries: list[dict[str, Any]] = list(logs.write_logs(p.profile, hist, out_dir, p.gzip))
    root = out_dir / TRUTH
    if hasattr(logs, "write_truth"):
        logs.write_truth(hist, root)
    else:
        for name in HISTORY_TRUTH:
            frame = getattr(hist, name, None)
            if isinstance(frame, pl.DataFrame):
                frame.write_parquet(root / f"{name}.parquet")
    progress("operations history", 1, 1)
    return True, entries


def history_copies(p: SiteParams, site: Site, copies: Copies, names: Names) -> pl.DataFrame:
    """Live copies in canonical columns; above history_max_copies, the copies of a fixed
    pseudo-random subset of whole datasets (campaigns recall datasets, never all of them)."""
    keep = ~copies.frame["removed"].to_numpy()
    if int(keep.sum()) > p.history_max_copies:
        ds = site.f_ds[copies.frame["file"].to_numpy()]
        per_ds = np.bincount(ds[keep], minlength=len(site.ds_dir))
        order = np.argsort(mix64(np.arange(per_ds.size), p.seed), kind="stable")
        within = np.cumsum(per_ds[order]) <= p.history_max_copies
        chosen = np.zeros(per_ds.size, dtype=bool)
        chosen[order[within]] = True
        keep &= chosen[ds]
        del ds
    return canonical(p, site, copies.frame.filter(pl.Series(keep)), names)
