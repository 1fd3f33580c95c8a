"""The synthetic site's operations history: past recall campaigns run on a simulated library.

Campaigns ask for whole datasets or scattered files some time after they were written; a
scheduler turns the requests into mounts and reads (recall_sim.py) and the physics per media
type (physics.py) gives every step its time. The two schedulers of docs/domain.md:

- fifo: direct submission. Requests reach the library one by one in arrival order; a request for
  a mounted tape waits for that drive, any other takes the compatible drive that frees first. A
  tape stays mounted until its drive is needed (or an idle timeout): interleaved requests remount.
- sorted: a campaign's requests are grouped by tape and read in position order; each tape is
  mounted once per campaign (and once per retry cycle if reads failed).

A recall reads the newest copy of a file on a readable tape, as tape clients do. Failed reads
are retried on a cycle, every retry_interval_s after the campaign started, up to max_attempts.
The History rounds instants down to whole seconds (the logs' resolution) and durations to
milliseconds; a transfer's duration includes the positioning before it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import polars as pl

from tapelens.errors import ConfigError, InputError
from tapelens.ingest.canonical import MOUNTS, TRANSFERS, UTC_TIME
from tapelens.media import BY_NAME, DRIVE_TYPES
from tapelens.tape_states import NOT_RECALLABLE
from tapelens.world.physics import PhysicsParams, default_physics, physics_frame
from tapelens.world.recall_sim import Campaign, Library, Log, Requests, simulate

KINDS = ("datasets", "scattered", "groups")  # groups: whole hint groups (world/hints.py)
SCHEDULERS = ("fifo", "sorted")
DAY_S = 86_400.0
# What a failed read reports; picked by request and attempt, so failures need no extra draws.
READ_ERRORS = (
    "checksum mismatch after read",
    "tape read error (medium error)",
    "disk pool write failed",
)
_WHERE = "OperationsParams"


@dataclass(frozen=True)
class OperationsParams:
    """What the recall campaigns of a history look like and what library ran them."""

    campaigns: int = 12
    kinds: tuple[str, ...] = ("datasets", "datasets", "scattered")  # cycled over campaigns
    schedulers: tuple[str, ...] = ("sorted", "fifo")  # cycled over campaigns
    files_per_campaign: int = 2000  # target; a whole-dataset campaign ends with its last dataset
    drives: tuple[tuple[str, int], ...] | None = None  # (drive type, count); None: per media
    drives_per_media: int = 4  # with drives=None: this many of each media's own drive type
    robots: int = 2
    failure_probability: float = 0.01  # per read attempt
    retry_interval_s: float = 4 * 3600.0  # docs/domain.md: retried on a cycle, not immediately
    max_attempts: int = 3
    idle_dismount_s: float = 300.0
    submit_rate_hz: float = 20.0  # requests submitted per second from a campaign's start
    requesters: tuple[str, ...] = ("production", "reprocessing", "analysis")
    start: datetime | None = None  # campaigns start in [start, end]; None: from the writes
    end: datetime | None = None
    physics: tuple[PhysicsParams, ...] = ()  # replaces default_physics for these media types
    serpentine: bool = True  # default physics with the world's serpentine layout (physics.py)
    source: str = "synth"

    def __post_init__(self) -> None:
        checks: list[tuple[bool, str, str]] = [
            (self.campaigns >= 0, "campaigns", "must be >= 0"),
            (bool(self.kinds) and set(self.kinds) <= set(KINDS), "kinds", f"use {KINDS}"),
            (
                bool(self.schedulers) and set(self.schedulers) <= set(SCHEDULERS),
                "schedulers",
                f"use {SCHEDULERS}",
            ),
            (self.files_per_campaign >= 1, "files_per_campaign", "must be >= 1"),
            (self.drives_per_media >= 1, "drives_per_media", "must be >= 1"),
            (self.robots >= 1, "robots", "must be >= 1"),
            (0 <= self.failure_probability < 1, "failure_probability", "must be in [0, 1)"),
            (self.retry_interval_s > 0, "retry_interval_s", "must be > 0"),
            (self.max_attempts >= 1, "max_attempts", "must be >= 1"),
            (self.idle_dismount_s >= 0, "idle_dismount_s", "must be >= 0"),
            (self.submit_rate_hz > 0, "submit_rate_hz", "must be > 0"),
            (bool(self.requesters), "requesters", "needs at least one name"),
        ]
        for drive_type, count in self.drives or ():
            checks.append((drive_type in DRIVE_TYPES, "drives", f"unknown type {drive_type!r}"))
            checks.append((count >= 1, "drives", f"{drive_type}: count must be >= 1"))
        for ok, setting, reason in checks:
            if not ok:
                raise ConfigError(setting, _WHERE, reason)


TRANSFER_EXTRA: dict[str, pl.DataType] = {
    "mount_id": pl.Int64(),
    "campaign_id": pl.Int64(),
    "attempt": pl.Int64(),  # 0 for the first read of a request, 1.. for its retries
    "address_bytes": pl.Int64(),  # the file's byte address on the tape
}
MOUNT_EXTRA: dict[str, pl.DataType] = {
    "mount_id": pl.Int64(),
    "campaign_id": pl.Int64(),  # of the mount's first read
    "media_type": pl.String(),
    "put_away_at": UTC_TIME,  # the robot has returned the cartridge to its cell
}
DRIVES: dict[str, pl.DataType] = {
    "drive": pl.String(),
    "drive_type": pl.String(),
    "host": pl.String(),
}
CAMPAIGNS: dict[str, pl.DataType] = {
    "campaign_id": pl.Int64(),
    "kind": pl.String(),
    "scheduler": pl.String(),
    "requester": pl.String(),
    "started_at": UTC_TIME,
    "datasets": pl.Int64(),
    "requested_files": pl.Int64(),
    "unavailable_files": pl.Int64(),  # no readable copy when the campaign started
    "requested_bytes": pl.Int64(),
    "tapes": pl.Int64(),
    "mounts": pl.Int64(),
    "transfers": pl.Int64(),
    "failed_transfers": pl.Int64(),
    "unrecovered_files": pl.Int64(),  # still failed after max_attempts
    "finished_at": UTC_TIME,  # the last read, retries included
    "duration_s": pl.Float64(),
    "first_pass_s": pl.Float64(),  # from the start to the end of the last first-attempt read
    "rate_mb_s": pl.Float64(),
}


@dataclass(frozen=True)
class History:
    """What the library did: canonical transfers and mounts plus the schedule and physics truth."""

    transfers: pl.DataFrame  # TRANSFERS + TRANSFER_EXTRA, in start order
    mounts: pl.DataFrame  # MOUNTS + MOUNT_EXTRA, in mount order
    campaigns: pl.DataFrame  # CAMPAIGNS: what was asked, how it went
    physics: pl.DataFrame  # one row per media type: the parameters used
    drives: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=DRIVES))


_COPY_COLUMNS = ("file_id", "path", "volume", "position", "size_bytes", "written_at")


def simulate_history(
    copies: pl.DataFrame, tapes: pl.DataFrame, params: OperationsParams, rng: np.random.Generator
) -> History:
    """Plan the campaigns over the catalog, run them on the library, return what happened."""
    missing = [c for c in _COPY_COLUMNS if c not in copies.columns]
    missing += [f"tapes.{c}" for c in ("volume", "media_type") if c not in tapes.columns]
    if missing:
        raise InputError(f"simulate_history: missing columns {', '.join(missing)}")
    drives = _drives(params, tapes)
    physics = _physics(params, tapes)
    drive_types = set(drives["drive_type"].to_list())
    readable_media = {m for m in physics if drive_types & set(BY_NAME[m].readable_by)}
    requests, campaigns = _plan(_addressed(copies, tapes, readable_media), params, rng)
    media = sorted(physics)
    volumes = sorted(set(requests["volume"].to_list())) if campaigns else []
    media_of = dict(requests.select("volume", "media_type").unique().iter_rows()) if volumes else {}
    library = Library(
        drive_types=tuple(drives["drive_type"].to_list()),
        readable_by=tuple(BY_NAME[m].readable_by for m in media),
        physics=tuple(physics[m] for m in media),
        tape_media=tuple(media.index(media_of[v]) for v in volumes),
        robots=params.robots,
        idle_dismount_s=params.idle_dismount_s,
    )
    log = Log()
    if campaigns:
        code = pl.DataFrame({"volume": volumes, "tape": range(len(volumes))})
        requests = requests.join(code, on="volume", how="left", maintain_order="left")
        log = simulate(
            library,
            _arrays(requests, params),
            [Campaign(c["start_s"], c["scheduler"]) for c in campaigns],
            params.retry_interval_s,
        )
    return _history(log, requests, campaigns, volumes, library, drives, params, physics)


def _drives(params: OperationsParams, tapes: pl.DataFrame) -> pl.DataFrame:
    if params.drives is not None:
        spec = list(params.drives)
    else:
        media = sorted(set(tapes["media_type"].drop_nulls().to_list()) & set(BY_NAME))
        own = {m: m if m in BY_NAME[m].readable_by else BY_NAME[m].readable_by[-1] for m in media}
        spec = [(t, params.drives_per_media) for t in sorted(set(own.values()))]
    rows: list[tuple[str, str, str]] = []
    for drive_type, count in spec:
        for k in range(count):
            name = f"{drive_type.replace('-', '')}-{k + 1:02d}"
            rows.append((name, drive_type, f"tpsrv{len(rows) + 1:03d}"))
    return pl.DataFrame(rows, schema=DRIVES, orient="row")


def _physics(params: OperationsParams, tapes: pl.DataFrame) -> dict[str, PhysicsParams]:
    given = {p.media_type: p for p in params.physics}
    media = sorted(set(tapes["media_type"].drop_nulls().to_list()) & set(BY_NAME))
    return {m: given.get(m) or default_physics(BY_NAME[m], params.serpentine) for m in media}


def _addressed(copies: pl.DataFrame, tapes: pl.DataFrame, media: set[str]) -> pl.DataFrame:
    """Copies with their byte address and whether a drive can read them (a tape in the
    inventory, of a media type some drive reads, in a readable state).

    Objects are packed contiguously in position order (the contract): an object's start is the
    sum of the objects before it; an aggregate's size is its last member's end. That needs every
    copy of a tape; a caller passing a subset gives the starts in an `object_start_bytes` column.
    """
    has = set(copies.columns)
    offset = pl.col("offset_bytes") if "offset_bytes" in has else pl.lit(None, pl.Int64)
    dataset = pl.col("dataset") if "dataset" in has else pl.lit(None, pl.String)
    directory = pl.col("path").str.replace(r"/[^/]*$", "")
    group = pl.col("group") if "group" in has else pl.lit(None, pl.String)
    frame = copies.select(
        *_COPY_COLUMNS,
        offset.fill_null(0).cast(pl.Int64).alias("offset_bytes"),
        dataset.fill_null(directory).alias("dataset"),
        group.fill_null(dataset.fill_null(directory)).alias("group"),
        *([pl.col("object_start_bytes").cast(pl.Int64)] if "object_start_bytes" in has else []),
    )
    if "object_start_bytes" not in has:
        objects = (
            frame.group_by("volume", "position")
            .agg((pl.col("offset_bytes") + pl.col("size_bytes")).max().alias("object_bytes"))
            .sort("volume", "position")
            .select(
                "volume",
                "position",
                (pl.col("object_bytes").cum_sum().over("volume") - pl.col("object_bytes")).alias(
                    "object_start_bytes"
                ),
            )
        )
        frame = frame.join(objects, on=["volume", "position"], how="left", maintain_order="left")
    state = pl.col("state") if "state" in tapes.columns else pl.lit("full")
    info = tapes.select("volume", "media_type", state.alias("state"))
    return (
        frame.join(info, on="volume", how="left", maintain_order="left")
        .with_columns(
            (
                pl.col("media_type").is_in(sorted(media)).fill_null(False)
                & ~pl.col("state").fill_null("full").is_in(NOT_RECALLABLE)
            ).alias("readable"),
            (pl.col("object_start_bytes") + pl.col("offset_bytes")).alias("address_bytes"),
            (pl.col("written_at").dt.epoch("us") / 1e6).alias("written_s"),
        )
        .drop("state")
    )


def _window(copies: pl.DataFrame, params: OperationsParams) -> tuple[float, float]:
    """Campaigns run from when a good share of the files is written to a month after the last."""
    written = copies["written_s"]
    first = params.start.timestamp() if params.start else written.quantile(0.3)
    last = params.end.timestamp() if params.end else written.max()
    start = float(first)  # type: ignore[arg-type]
    end = float(last) + (0.0 if params.end else 30 * DAY_S)  # type: ignore[arg-type]
    if end <= start:
        raise ConfigError("end", _WHERE, "the campaign window ends before it starts")
    return start, end


def _plan(
    copies: pl.DataFrame, params: OperationsParams, rng: np.random.Generator
) -> tuple[pl.DataFrame, list[dict[str, Any]]]:
    """Each campaign's requests in arrival order, with the copy each one reads. A file without
    a readable copy is asked for but cannot be served: it counts as unavailable."""
    if copies.is_empty() or params.campaigns == 0:
        return pl.DataFrame(), []
    ws, we = _window(copies, params)
    readable = copies.filter("readable").drop("readable")
    # Groups keep the catalog's order: deterministic without sorting a million strings.
    files = copies.group_by("file_id", maintain_order=True).agg(
        pl.col("written_s").min().alias("first_s"),
        pl.first("dataset"),
        pl.first("group"),
        pl.first("path"),
    )
    wholes = {
        key: files.group_by(key, maintain_order=True).agg(
            pl.len().alias("n"), pl.col("first_s").max().alias("complete_s")
        )
        for key in ("dataset", "group")
    }
    slot = (we - ws) / params.campaigns
    frames, campaigns = [], []
    for c in range(params.campaigns):
        t_c = float(math.floor(ws + slot * (c + rng.uniform(0.0, 0.5))))
        kind = params.kinds[c % len(params.kinds)]
        requester = params.requesters[int(rng.integers(len(params.requesters)))]
        if kind in ("datasets", "groups"):
            # A campaign asks for whole datasets, or whole hint groups, one after the other.
            key = "dataset" if kind == "datasets" else "group"
            eligible = wholes[key].filter(pl.col("complete_s") <= t_c)
            order = rng.permutation(eligible.height)
            sizes = np.cumsum(eligible["n"].to_numpy()[order])
            take = int(np.searchsorted(sizes, params.files_per_campaign)) + 1
            chosen = eligible[order[:take]].select(key).with_row_index("rank")
            wanted = (
                files.join(chosen, on=key, maintain_order="left")
                .sort("rank", "path", "file_id")
                .drop("rank")
            )
            n_datasets = wanted["dataset"].n_unique()
        else:
            eligible = files.filter(pl.col("first_s") <= t_c)
            size = min(params.files_per_campaign, eligible.height)
            wanted = eligible[rng.choice(eligible.height, size=size, replace=False)]
            n_datasets = wanted["dataset"].n_unique()
        picked = _newest_copies(wanted, readable, t_c)
        n, a = picked.height, params.max_attempts
        draws = {
            "fail_u": rng.uniform(size=(n, a)),
            "rate_z": rng.standard_normal((n, a)),
            "locate_z": rng.standard_normal((n, a)),
        }
        frames.append(
            picked.with_columns(
                pl.lit(c, pl.Int64).alias("campaign_id"),
                (t_c + pl.int_range(n, dtype=pl.Int64) / params.submit_rate_hz).alias("arrival_s"),
                *[pl.Series(k, v, dtype=pl.Array(pl.Float64, a)) for k, v in draws.items()],
            )
        )
        campaigns.append(
            {
                "campaign_id": c,
                "kind": kind,
                "scheduler": params.schedulers[c % len(params.schedulers)],
                "requester": requester,
                "start_s": t_c,
                "datasets": n_datasets,
                "requested_files": wanted.height,
                "unavailable_files": wanted.height - n,
            }
        )
    requests = pl.concat(frames).with_row_index("req").with_columns(pl.col("req").cast(pl.Int64))
    return requests, campaigns


def _newest_copies(wanted: pl.DataFrame, readable: pl.DataFrame, t_s: float) -> pl.DataFrame:
    """The copy a tape client recalls: the newest readable one written before t_s (on equal
    times, the first in the catalog's order, by volume and position).

    The world keeps this rule apart from the product's (analysis/recall/baselines/newest.py
    newest_copies) on purpose: it is the truth the product is checked against, and
    tests/analysis/recall/baselines/test_newest_copy.py holds the two to the same copies on every
    profile's generated site."""
    return (
        wanted.select("file_id")
        .with_row_index("seq")
        .join(
            readable.filter(pl.col("written_s") <= t_s), on="file_id", maintain_order="left_right"
        )
        .filter(pl.col("written_s") == pl.col("written_s").max().over("seq"))
        .unique("seq", keep="first", maintain_order=True)
        .drop("seq")
    )


def _arrays(requests: pl.DataFrame, params: OperationsParams) -> Requests:
    def col(name: str) -> np.ndarray:
        return requests[name].to_numpy()

    return Requests(
        tape=col("tape"),
        position=col("position"),
        object_start_bytes=col("object_start_bytes"),
        address_bytes=col("address_bytes"),
        size_bytes=col("size_bytes"),
        arrival_s=col("arrival_s"),
        campaign=col("campaign_id"),
        failed=col("fail_u") < params.failure_probability,
        rate_z=col("rate_z"),
        locate_z=col("locate_z"),
    )


# -- the History's frames ----------------------------------------------------------------------


def _instant(col: str) -> pl.Expr:
    """Float epoch seconds -> a UTC instant truncated to the second, as logs write them."""
    seconds = pl.col(col).floor().cast(pl.Int64)
    return pl.from_epoch(seconds, time_unit="s").dt.replace_time_zone("UTC").cast(UTC_TIME)


def _duration(col: str) -> pl.Expr:
    """Milliseconds, never exactly a half second past the whole: a log's end time (start plus
    duration, to the second) then rounds back to the start without ambiguity."""
    ms = (pl.col(col) * 1000).round().cast(pl.Int64)
    # round(3): polars divides by multiplying with the reciprocal, a hair off the decimal
    return (pl.when(ms % 1000 == 500).then(ms + 1).otherwise(ms) / 1000).round(3)


def _history(
    log: Log,
    requests: pl.DataFrame,
    campaigns: list[dict[str, Any]],
    volumes: list[str],
    library: Library,
    drives: pl.DataFrame,
    params: OperationsParams,
    physics: dict[str, PhysicsParams],
) -> History:
    reads = pl.DataFrame(
        log.reads,
        schema={
            **dict.fromkeys(("req", "attempt", "mount"), pl.Int64),
            **dict.fromkeys(("start", "duration", "locate"), pl.Float64),
            "failed": pl.Boolean,
            "ready": pl.Float64,
        },
        orient="row",
    )
    tapes = pl.DataFrame(
        {
            "tape": range(len(volumes)),
            "volume": volumes,
            "media_type": [library.physics[m].media_type for m in library.tape_media],
        },
        schema={"tape": pl.Int64, "volume": pl.String, "media_type": pl.String},
    )
    drive_names = drives.with_row_index("drive_idx").select(
        pl.col("drive_idx").cast(pl.Int64).alias("drive"),
        pl.col("drive").alias("drive_name"),
        "host",
    )
    req_schema = {"req": pl.Int64, "campaign_id": pl.Int64, "file_id": pl.String}
    req_schema |= {"path": pl.String, "volume": pl.String, "position": pl.Int64}
    req_schema |= {"size_bytes": pl.Int64, "address_bytes": pl.Int64}
    req = requests.select(list(req_schema)) if campaigns else pl.DataFrame(schema=req_schema)
    first_read = reads.sort("start").group_by("mount", maintain_order=True).agg(pl.first("req"))
    mounts = (
        pl.DataFrame(
            log.mounts,
            schema={"tape": pl.Int64, "drive": pl.Int64}
            | dict.fromkeys(("requested", "mounted", "dismounted", "put_away"), pl.Float64),
        )
        .with_row_index("mount")
        .with_columns(pl.col("mount").cast(pl.Int64))
        .join(first_read, on="mount", how="left")
        .join(req.select("req", "campaign_id"), on="req", how="left")
        .join(tapes, on="tape", how="left")
        .join(drive_names, on="drive", how="left")
        .sort("mounted", "drive")
        .with_row_index("mount_id")
        .with_columns(pl.col("mount_id").cast(pl.Int64))
    )
    mounts_out = mounts.select(
        pl.lit(params.source).alias("source"),
        "volume",
        pl.col("drive_name").alias("drive"),
        _instant("requested").alias("requested_at"),
        _instant("mounted").alias("mounted_at"),
        _instant("dismounted").alias("dismounted_at"),
        pl.lit("read").alias("purpose"),
        pl.lit("complete").alias("status"),
        "mount_id",
        "campaign_id",
        "media_type",
        _instant("put_away").alias("put_away_at"),
    ).cast(pl.Schema(MOUNTS | MOUNT_EXTRA))
    requester = pl.DataFrame(
        [(c["campaign_id"], c["requester"]) for c in campaigns],
        schema={"campaign_id": pl.Int64, "requester": pl.String},
        orient="row",
    )
    transfers = (
        reads.join(req, on="req", how="left")
        .join(mounts.select("mount", "mount_id", "drive"), on="mount", how="left")
        .join(drive_names, on="drive", how="left")
        .join(requester, on="campaign_id", how="left")
        .sort("start", "drive", "req")
    )
    error = (
        (pl.col("req") + pl.col("attempt"))
        .mod(len(READ_ERRORS))
        .replace_strict(dict(enumerate(READ_ERRORS)), return_dtype=pl.String)
    )
    transfers_out = transfers.select(
        pl.lit(params.source).alias("source"),
        pl.lit("read").alias("direction"),
        "volume",
        pl.col("drive_name").alias("drive"),
        "host",
        "file_id",
        "path",
        "position",
        "size_bytes",
        _instant("start").alias("started_at"),
        _duration("duration").alias("duration_s"),
        (pl.col("start").floor() - pl.col("ready").floor()).alias("queued_s"),
        pl.col("locate").round(3).alias("locate_s"),
        pl.when(pl.col("failed")).then(pl.lit("failed")).otherwise(pl.lit("ok")).alias("status"),
        pl.when(pl.col("failed")).then(error).alias("error"),
        "requester",
        "mount_id",
        "campaign_id",
        "attempt",
        "address_bytes",
    ).cast(pl.Schema(TRANSFERS | TRANSFER_EXTRA))
    return History(
        transfers=transfers_out,
        mounts=mounts_out,
        campaigns=_campaigns(campaigns, requests, transfers, mounts),
        physics=physics_frame(list(physics.values())),
        drives=drives,
    )


def _campaigns(
    campaigns: list[dict[str, Any]],
    requests: pl.DataFrame,
    transfers: pl.DataFrame,
    mounts: pl.DataFrame,
) -> pl.DataFrame:
    if not campaigns:
        return pl.DataFrame(schema=CAMPAIGNS)
    asked = requests.group_by("campaign_id").agg(
        pl.col("size_bytes").sum().alias("requested_bytes"),
        pl.col("volume").n_unique().alias("tapes"),
    )
    ok = ~pl.col("failed")
    done = transfers.group_by("campaign_id").agg(
        pl.len().alias("transfers"),
        pl.col("failed").sum().alias("failed_transfers"),
        (pl.col("req").n_unique() - pl.col("req").filter(ok).n_unique()).alias("unrecovered_files"),
        (pl.col("start") + pl.col("duration")).max().floor().alias("end_s"),
        (pl.col("start") + pl.col("duration"))
        .filter(pl.col("attempt") == 0)
        .max()
        .floor()
        .alias("first_end_s"),
        pl.col("size_bytes").filter(ok).sum().alias("ok_bytes"),
    )
    n_mounts = mounts.group_by("campaign_id").agg(pl.len().alias("mounts"))
    counts = ("requested_bytes", "tapes", "transfers", "failed_transfers", "unrecovered_files")
    return (
        pl.DataFrame(campaigns)
        .with_columns(pl.col("campaign_id").cast(pl.Int64))
        .join(asked, on="campaign_id", how="left")
        .join(done, on="campaign_id", how="left")
        .join(n_mounts, on="campaign_id", how="left")
        .with_columns(pl.col(c).fill_null(0) for c in (*counts, "mounts"))
        .with_columns(
            (pl.col("end_s") - pl.col("start_s")).alias("duration_s"),
            (pl.col("first_end_s") - pl.col("start_s")).alias("first_pass_s"),
            _instant("start_s").alias("started_at"),
            _instant("end_s").alias("finished_at"),
        )
        .with_columns((pl.col("ok_bytes") / 1e6 / pl.col("duration_s")).round(3).alias("rate_mb_s"))
        .sort("campaign_id")
        .select(pl.col(c).cast(t) for c, t in CAMPAIGNS.items())
    )
