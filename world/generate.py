"""The synthetic site pipeline: site model -> write path -> tapes -> native files and truth.

Every stage draws from its own random stream derived from the seed, so the same seed and
parameters give byte-identical files, and changing one stage does not reshuffle the others.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tapelens.errors import InputError
from tapelens.world import (
    fmt_cta,
    fmt_enstore,
    fmt_generic,
    fmt_hpss,
    fmt_tsm,
    history,
    truth_files,
)
from tapelens.world import writepath as wp
from tapelens.world.copies import Copies, Names, build_copies, canonical, names_for
from tapelens.world.outputs import KEEP, Consumer, Progress, no_progress
from tapelens.world.params import SiteParams
from tapelens.world.site import Site, build_site
from tapelens.world.tapes import place
from tapelens.world.timeline import Timeline

MANIFEST = "manifest.json"
OWNED = ("catalog", "logs", "truth")  # what a new run replaces in an existing site directory
KIND_ORDER = {"tapes": 0, "catalog": 1, "mounts": 2, "transfers": 3}

# Random streams, one per stage (their numbers must never change).
STREAM_SITE, STREAM_RETRIES, STREAM_TAPES, STREAM_HISTORY = 1, 2, 3, 4
STREAM_SCATTER, STREAM_OUTAGES = 5, 6  # the injected anomalies (anomalies.py)


@dataclass(frozen=True)
class GeneratedSite:
    """What a run wrote and what it holds."""

    out_dir: Path
    profile: str
    seed: int
    files: int
    copies: int  # live copies in the catalogs
    duplicated_files: int  # files with more than one live copy
    tapes: int
    datasets: int
    manifest: Path
    outputs: tuple[str, ...]  # every file written, relative to out_dir
    history: bool  # whether the operations history (logs) was written
    elapsed_s: float
    truth: dict[str, Any] = field(default_factory=dict)


def rng_for(seed: int, stream: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(stream,)))


def generate(out_dir: Path, params: SiteParams, progress: Progress | None = None) -> GeneratedSite:
    """Generate a synthetic site in out_dir: native catalogs, tape inventory, generic CSV,
    the operations logs when available, ground truth and manifest.json."""
    say = progress or no_progress
    started = time.monotonic()
    out_dir = Path(out_dir)
    _prepare(out_dir)
    p = params
    timeline = Timeline.between(p.start, p.end, p.growth_per_year)

    say("site model", 0, 1)
    site = build_site(p, timeline, rng_for(p.seed, STREAM_SITE), rng_for(p.seed, STREAM_SCATTER))
    batches, f_batch = wp.migration_batches(p, site, timeline)
    retry = wp.retries(
        p,
        site,
        f_batch,
        batches,
        timeline,
        rng_for(p.seed, STREAM_RETRIES),
        rng_for(p.seed, STREAM_OUTAGES),
    )
    req = wp.queue(p, site, batches, f_batch, retry, timeline)
    del retry, f_batch
    site.f_u = site.f_u[:0]  # the requests now carry their arrival times
    objects = wp.pack_objects(p, site, req)
    say("write path", 1, 1)
    placement = place(p, objects, batches, timeline, rng_for(p.seed, STREAM_TAPES))
    del objects
    copies = build_copies(p, site, req, batches, placement)
    del req
    placement.drop_objects()
    names = names_for(site, placement)
    say("tapes and copies", 1, 1)

    entries: list[dict[str, Any]] = fmt_generic.write_tapes(out_dir, p, placement)
    alternates: list[dict[str, Any]] = []
    if p.profile == "bnl":
        entries += fmt_hpss.write(out_dir, p, site, copies, names, timeline, say)
    if p.profile == "gridka":
        fmt_tsm.write_archives(out_dir, p, site, copies, names, say)
    main, alt = _volume_order_pass(out_dir, p, site, copies, names, say)
    entries += main
    alternates += alt

    facts = truth_files.write(out_dir, p, site, copies, placement, names, timeline, say)
    history_rng = rng_for(p.seed, STREAM_HISTORY)
    ran, log_entries = history.run(out_dir, p, site, copies, placement, names, history_rng, say)
    entries += log_entries
    entries.sort(key=lambda e: KIND_ORDER.get(e["kind"], 9))

    manifest = {
        "profile": p.profile,
        "seed": p.seed,
        "files": p.files,
        "source": p.source,
        "inputs": entries,
        "alternates": alternates,
        "params": p.public(),
    }
    (out_dir / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=False) + "\n")
    outputs = tuple(sorted(str(f.relative_to(out_dir)) for f in out_dir.rglob("*") if f.is_file()))
    return GeneratedSite(
        out_dir=out_dir,
        profile=p.profile,
        seed=p.seed,
        files=site.n_files,
        copies=int((~copies.frame["removed"]).sum()),
        duplicated_files=int(facts["duplicated_files"]),
        tapes=placement.n_tapes,
        datasets=len(site.ds_dir),
        manifest=out_dir / MANIFEST,
        outputs=outputs,
        history=ran,
        elapsed_s=time.monotonic() - started,
        truth=facts,
    )


def _consumers(out_dir: Path, p: SiteParams, site: Site) -> list[Consumer]:
    native: list[Consumer] = []
    if p.profile == "gridka":
        native.append(fmt_tsm.TsmContents(out_dir, p, site))
    elif p.profile == "cern":
        native.append(fmt_cta.CtaTf(out_dir, p, site))
    elif p.profile == "fnal":
        native.append(fmt_enstore.EnstoreLists(out_dir, p))
    return [*native, fmt_generic.CopiesCsv(out_dir, p), truth_files.TruthCopies(out_dir)]


def _volume_order_pass(
    out_dir: Path, p: SiteParams, site: Site, copies: Copies, names: Names, say: Progress
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One walk over the copies in volume order, feeding every writer that wants that order."""
    consumers = _consumers(out_dir, p, site)
    frame = copies.frame
    main: list[dict[str, Any]] = []
    alternates: list[dict[str, Any]] = []
    try:
        for start in range(0, frame.height, p.chunk_rows):
            rows = canonical(p, site, frame.slice(start, p.chunk_rows), names, True, KEEP)
            for consumer in consumers:
                consumer.write(rows)
            say("catalogs", min(start + p.chunk_rows, frame.height), frame.height)
    finally:
        for consumer in consumers:
            m, a = consumer.close()
            main += m
            alternates += a
    return main, alternates


def _prepare(out_dir: Path) -> None:
    """An empty directory, or one holding a generated site (which is replaced)."""
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError(f"{out_dir}: exists and is not a directory")
    if out_dir.is_dir() and any(out_dir.iterdir()):
        if not (out_dir / MANIFEST).is_file():
            raise InputError(
                f"{out_dir}: not empty and holds no generated site ({MANIFEST}); "
                "choose an empty or new directory"
            )
        for name in OWNED:
            if (out_dir / name).is_dir():
                shutil.rmtree(out_dir / name)
        (out_dir / MANIFEST).unlink()
    out_dir.mkdir(parents=True, exist_ok=True)
