"""The world's own replay of recall campaigns from a given placement, by its own physics.

A placement proposed by the product (where each file would lie: volume, position, size,
media) is handed to the world's library (recall_sim.py) and physics (physics.py), which recall
the given campaigns from it one after the other, each alone on the library, each tape's
requests read in byte order (the sorted scheduler). This is the truth the product's predicted
recall hours for that placement are checked against: it shares no code with the product's
throughput model or recall engine.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from tapelens.errors import InputError
from tapelens.media import BY_NAME
from tapelens.world.physics import PhysicsParams, default_physics
from tapelens.world.recall_sim import SORTED, Campaign, Library, Requests, simulate

SPACING_S = 30 * 86_400.0  # campaigns a month apart: none waits on another
SUBMIT_RATE_HZ = 20.0  # requests submitted per second from a campaign's start (operations.py)
ROBOTS = 2
IDLE_DISMOUNT_S = 300.0
_NEEDS = ("file_id", "volume", "position", "size_bytes", "media_type")


def replay_campaigns(
    placement: pl.DataFrame,
    campaigns: pl.DataFrame,
    drives: dict[str, int],
    rng: np.random.Generator,
    physics: dict[str, PhysicsParams] | None = None,
) -> pl.DataFrame:
    """Recall each campaign's files (campaigns: campaign, file_id) from `placement` (file_id,
    volume, position, size_bytes, media_type, optionally offset_bytes) on `drives` (drive type
    -> count). Returns per campaign: campaign, files, mounts, drive_hours (per mount, from the
    drive's mount request to the end of its dismount, the idle wait before a dismount left
    out) and hours (from its start to its last read's end)."""
    missing = [c for c in _NEEDS if c not in placement.columns]
    if missing:
        raise InputError(f"placement lacks column(s) {', '.join(missing)}")
    offset = (
        pl.col("offset_bytes").fill_null(0)
        if "offset_bytes" in placement.columns
        else pl.lit(0, pl.Int64)
    )
    copies = placement.select(*_NEEDS, offset.cast(pl.Int64).alias("offset_bytes"))
    # Objects lie one after the other in position order; an aggregate ends with its last member.
    objects = (
        copies.group_by("volume", "position")
        .agg((pl.col("offset_bytes") + pl.col("size_bytes")).max().alias("object_bytes"))
        .sort("volume", "position")
        .with_columns(
            (pl.col("object_bytes").cum_sum().over("volume") - pl.col("object_bytes")).alias(
                "object_start_bytes"
            )
        )
        .drop("object_bytes")
    )
    media = sorted(set(copies["media_type"].to_list()) & set(BY_NAME))
    phys = {m: (physics or {}).get(m) or default_physics(BY_NAME[m], True) for m in media}
    wanted = (
        campaigns.select("campaign", "file_id")
        .unique(maintain_order=True)
        .join(copies, on="file_id", how="inner")
        .join(objects, on=["volume", "position"], how="left")
        .filter(pl.col("media_type").is_in(media))
        .sort("campaign", "volume", "position", "offset_bytes")
    )
    if wanted.height == 0:
        raise InputError("no campaign file lies in the placement")
    names = wanted["campaign"].unique(maintain_order=True).to_list()
    volumes = sorted(set(wanted["volume"].to_list()))
    tape_code = {v: i for i, v in enumerate(volumes)}
    media_of = dict(wanted.select("volume", "media_type").unique().iter_rows())
    drive_types: list[str] = []
    for drive_type, count in sorted(drives.items()):
        drive_types += [drive_type] * int(count)
    library = Library(
        drive_types=tuple(drive_types),
        readable_by=tuple(BY_NAME[m].readable_by for m in media),
        physics=tuple(phys[m] for m in media),
        tape_media=tuple(media.index(media_of[v]) for v in volumes),
        robots=ROBOTS,
        idle_dismount_s=IDLE_DISMOUNT_S,
    )
    campaign_no = wanted["campaign"].replace_strict(names, range(len(names))).to_numpy()
    seq = wanted.select(pl.int_range(pl.len()).over("campaign")).to_series().to_numpy()
    n = wanted.height
    requests = Requests(
        tape=np.array([tape_code[v] for v in wanted["volume"].to_list()], dtype=np.int64),
        position=wanted["position"].to_numpy(),
        object_start_bytes=wanted["object_start_bytes"].to_numpy(),
        address_bytes=(wanted["object_start_bytes"] + wanted["offset_bytes"]).to_numpy(),
        size_bytes=wanted["size_bytes"].to_numpy(),
        arrival_s=campaign_no * SPACING_S + seq / SUBMIT_RATE_HZ,
        campaign=campaign_no.astype(np.int64),
        failed=np.zeros((n, 1), dtype=bool),
        rate_z=rng.standard_normal((n, 1)),
        locate_z=rng.standard_normal((n, 1)),
    )
    starts = [Campaign(c * SPACING_S, SORTED) for c in range(len(names))]
    log = simulate(library, requests, starts, SPACING_S)
    reads = pl.DataFrame(
        [(r[0], r[2], r[3] + r[4]) for r in log.reads],
        schema={"req": pl.Int64, "mount": pl.Int64, "end_s": pl.Float64},
        orient="row",
    ).with_columns(pl.col("req").replace_strict(range(n), campaign_no.tolist()).alias("c"))
    dismount_s = [library.physics[m].dismount_s for m in library.tape_media]
    mounts = pl.DataFrame(
        {
            "mount": range(len(log.mounts["tape"])),
            "requested": log.mounts["requested"],
            "dismount_s": [dismount_s[int(t)] for t in log.mounts["tape"]],
        },
        schema={"mount": pl.Int64, "requested": pl.Float64, "dismount_s": pl.Float64},
    )
    per_mount = (
        reads.group_by("mount")
        .agg(pl.col("end_s").max(), pl.col("c").first())
        .join(mounts, on="mount")
        .with_columns(
            (pl.col("end_s") - pl.col("requested") + pl.col("dismount_s")).alias("busy_s")
        )
        .group_by("c")
        .agg(pl.col("busy_s").sum())
    )
    return (
        reads.group_by("c")
        .agg(
            pl.col("req").n_unique().alias("files"),
            pl.col("mount").n_unique().alias("mounts"),
            ((pl.col("end_s").max() - pl.col("c").first() * SPACING_S) / 3600.0).alias("hours"),
        )
        .join(per_mount, on="c")
        .sort("c")
        .select(
            pl.col("c").replace_strict(range(len(names)), names).alias("campaign"),
            "files",
            "mounts",
            (pl.col("busy_s") / 3600.0).alias("drive_hours"),
            "hours",
        )
    )
