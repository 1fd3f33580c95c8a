"""The synthetic site pipeline: site model -> write path -> tapes -> native files and truth.

Every stage draws from its own random stream derived from the seed, so the same seed and
parameters give byte-identical files, and changing one stage does not reshuffle the others.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from dataclasses import dataclass, field, replace
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
    hints,
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
OWNED = (
    "catalog",
    "logs",
    "truth",
    hints.HINTS_DIR,
)  # what a new run replaces in an existing site directory
KIND_ORDER = {"tapes": 0, "catalog": 1, "mounts": 2, "transfers": 3}

# Random streams, one per stage (their numbers must never change).
STREAM_SITE, STREAM_RETRIES, STREAM_TAPES, STREAM_HISTORY = 1, 2, 3, 4
STREAM_SCATTER, STREAM_OUTAGES = 5, 6  # the injected anomalies (anomalies.py)
STREAM_HINTS = 7  # the archive metadata (hints.py)


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
    the operations logs when available, ground truth and manifest.json.

    The site is written into a hidden folder beside out_dir and moved into place only once it
    is whole: a run that fails or is interrupted leaves out_dir as it was (empty, absent, or the
    site of an earlier run), never a half site."""
    out_dir = Path(out_dir)
    _check_target(out_dir)
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.partial-", dir=out_dir.parent))
    except OSError as exc:
        raise InputError(f"{out_dir}: cannot be created ({exc.strerror or exc})") from None
    try:
        site = _generate_into(work, params, progress)
        _move_into_place(work, out_dir)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return replace(site, out_dir=out_dir, manifest=out_dir / MANIFEST)


def _generate_into(out_dir: Path, params: SiteParams, progress: Progress | None) -> GeneratedSite:
    say = progress or no_progress
    started = time.monotonic()
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
    groups = None
    if p.hints:
        say("archive metadata", 0, 1)
        hint_rng = rng_for(p.seed, STREAM_HINTS)
        hint_entries, groups = hints.write(out_dir, p, site, copies, names, hint_rng)
        entries += hint_entries
        say("archive metadata", 1, 1)
    history_rng = rng_for(p.seed, STREAM_HISTORY)
    ran, log_entries = history.run(
        out_dir, p, site, copies, placement, names, history_rng, say, groups
    )
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


def _check_target(out_dir: Path) -> None:
    """out_dir must be absent, empty, or hold a generated site (which a new run replaces)."""
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError(f"{out_dir}: exists and is not a directory")
    if out_dir.is_dir() and any(out_dir.iterdir()) and not (out_dir / MANIFEST).is_file():
        raise InputError(
            f"{out_dir}: not empty and holds no generated site ({MANIFEST}); "
            "choose an empty or new directory"
        )


def _move_into_place(work: Path, out_dir: Path) -> None:
    """Replace out_dir's generated parts by the whole new site in `work` (same file system:
    each move is a rename). Files of the user's own in out_dir stay."""
    out_dir.mkdir(exist_ok=True)
    for name in OWNED:
        if (out_dir / name).is_dir():
            shutil.rmtree(out_dir / name)
    (out_dir / MANIFEST).unlink(missing_ok=True)
    # The manifest last: a directory with a manifest holds a whole site.
    for entry in sorted(work.iterdir(), key=lambda e: e.name == MANIFEST):
        entry.rename(out_dir / entry.name)
