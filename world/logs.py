"""The operations history written as the logs each site's systems keep (docs/formats/README.md).

Per profile: bnl an HPSS PVL log and a staging-queue CSV; gridka dCache billing, one file a day;
cern the CTA tape daemon's JSON log; fnal dCache billing, one file a year; every profile also the
generic canonical transfers and mounts CSVs. The same history gives the same bytes (rows sorted
on full keys, gzip without a time stamp or name).

How times are written, so that parsing them gives back the History (whose instants are whole
seconds and durations milliseconds, never exactly half a second past the whole):
- a log line written when an action ends carries start + duration; the start is that end minus
  the duration rounded to the nearest second. Billing ends are to the second (start + duration
  rounded), CTA epoch times to the millisecond.
- CTA per file: positionTime = locate_s, transferTime = totalTime = duration_s (the positioning
  is part of a transfer's duration), readWriteTime = the rest. Per session, written when the robot
  has put the cartridge back: totalTime from the mount request, mountTime = robot + load (so the
  mount is epoch_time - totalTime + mountTime), unmountTime = the robot's return (so the
  dismount is epoch_time - unmountTime).
- CTA BlockId = the file's byte address on the tape in 256 KiB blocks (CTA_BLOCK_BYTES).
- PVL: MountAdd at the request, pvr_Mount when the robot starts, MountCompleted when loaded,
  DismountVolume when unloaded; physical volume = cartridge + "00". One file per July-June
  season: a year rollover sits mid-file, and months only go backwards at the new year.
"""

from __future__ import annotations

import gzip as gzip_module
import hashlib
import io
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import polars as pl

from tapelens.errors import ConfigError
from tapelens.ingest.canonical import MOUNTS, TRANSFERS
from tapelens.ingest.datasets import DatasetRules, experiment_expr
from tapelens.world.operations import History

PROFILES = ("bnl", "gridka", "cern", "fnal")
CTA_BLOCK_BYTES = 256 * 1024
# dCache reports a failed HSM restore with a non-zero CacheException code; this one is
# illustrative (any rc != 0 is a failure to the parser).
RESTORE_FAILED_RC = 10011
PVL_SEASON_START_MONTH = 7  # PVL files run July to June
JOBID_BASE = 20_000_000  # PVL job ids: this plus the mount id
PID_BASE = 10_000  # CTA session processes: this plus the mount id
ISO_Z = "%Y-%m-%dT%H:%M:%SZ"
OPTIONAL_KEYS = frozenset({"errorMessage"})  # CTA lines carry these only when they apply
GZIP_LEVEL = 6  # gzip's own default: level 9 costs several times the time for a few % less


def write_logs(profile: str, history: History, out_dir: Path, gzip: bool) -> list[dict[str, Any]]:
    """Write the profile's native logs and the canonical CSVs under out_dir/logs; return manifest
    entries ({"path", "kind", "format", "options"}, paths relative to out_dir), mounts first.

    The canonical CSVs hold the same transfers and mounts as the native logs: ingest one or the
    other under one source, not both."""
    out_dir = Path(out_dir)
    if profile == "bnl":
        entries = write_pvl(history, out_dir, gzip) + write_staging_csv(history, out_dir, gzip)
    elif profile == "gridka":
        entries = write_billing(history, out_dir, gzip, per="day", hsm="osm")
    elif profile == "cern":
        entries = write_cta_taped(history, out_dir, gzip)
    elif profile == "fnal":
        entries = write_billing(history, out_dir, gzip, per="year", hsm="enstore")
    else:
        raise ConfigError("--profile", "the command line", f"use one of {', '.join(PROFILES)}")
    entries += write_canonical_csv(history, out_dir, gzip)
    return sorted(entries, key=lambda e: e["kind"] != "mounts")


def write_truth(history: History, truth_dir: Path) -> list[Path]:
    """The history's ground truth as Parquet: transfers, mounts, campaigns, physics, drives."""
    truth_dir = Path(truth_dir)
    truth_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, frame in (
        ("transfers", history.transfers),
        ("mounts", history.mounts),
        ("campaigns", history.campaigns),
        ("physics", history.physics),
        ("drives", history.drives),
    ):
        path = truth_dir / f"{name}.parquet"
        frame.write_parquet(path, compression="zstd", statistics=True)
        written.append(path)
    return written


# -- writing files -----------------------------------------------------------------------------


def _write(out_dir: Path, relative: str, chunks: Iterable[bytes], gzip: bool) -> str:
    """Write chunks to out_dir/relative (+ .gz); return the path as the manifest names it."""
    if gzip:
        relative += ".gz"
    path = out_dir / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as raw:
        if gzip:
            with gzip_module.GzipFile(
                filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=GZIP_LEVEL
            ) as packed:
                for chunk in chunks:
                    packed.write(chunk)
        else:
            for chunk in chunks:
                raw.write(chunk)
    return relative


def _lines(column: pl.Series) -> Iterable[bytes]:
    """A column of lines as newline-terminated bytes, in slices (bounded memory per write)."""
    step = 100_000
    for start in range(0, len(column), step):
        part = column.slice(start, step)
        yield ("\n".join(part.to_list()) + "\n").encode("utf-8")


def _entry(path: str, kind: str, fmt: str, **options: Any) -> dict[str, Any]:
    return {"path": path, "kind": kind, "format": fmt, "options": options}


def _ms(col: str) -> pl.Expr:
    """A duration in seconds as whole milliseconds."""
    return (pl.col(col) * 1000).round().cast(pl.Int64)


def _decimal(ms: pl.Expr) -> pl.Expr:
    """Whole thousandths as text with three decimals: 15311 -> "15.311" (exact, no float repr)."""
    return pl.concat_str(
        (ms // 1000).cast(pl.String), pl.lit("."), (ms % 1000).cast(pl.String).str.zfill(3)
    )


def _json_text(frame: pl.DataFrame, col: str) -> pl.Expr:
    """A string column as JSON string literals (quotes and escapes by the json module)."""
    values = frame[col].unique().drop_nulls().to_list()
    mapping = {v: json.dumps(v, ensure_ascii=False) for v in values}
    return pl.col(col).replace_strict(mapping, default=None, return_dtype=pl.String)


# -- dCache billing ----------------------------------------------------------------------------


def write_billing(
    history: History, out_dir: Path, gzip: bool, *, per: str, hsm: str
) -> list[dict[str, Any]]:
    """Restore records, one file per day (billing-2021.11.02) or per year (billing-2021)."""
    t = history.transfers
    if t.is_empty():
        return []
    ids = t["file_id"].unique().drop_nulls().to_list()
    pnfsid = {f: hashlib.sha1(f.encode("utf-8")).hexdigest().upper()[:36] for f in ids}
    # The experiment names the storage class; derived once per directory, not per file.
    folder = pl.col("path").fill_null("").str.replace(r"/[^/]*$", "/x")
    folders = t.select(folder.alias("folder")).unique().sort("folder")
    experiments = folders.with_columns(
        experiment_expr(DatasetRules(), pl.col("folder")).alias("experiment")
    )
    frame = (
        t.with_columns(folder.alias("folder"))
        .join(experiments, on="folder", how="left", maintain_order="left")
        .with_columns(_ms("duration_s").alias("ms"), _ms("queued_s").alias("queue_ms"))
        .with_columns(
            (pl.col("started_at") + pl.duration(seconds=(pl.col("ms") + 500) // 1000)).alias("end")
        )
        .sort("end", "started_at", "mount_id", "file_id", "attempt")
    )
    ok = pl.col("status") == "ok"
    line = pl.concat_str(
        pl.col("end").dt.strftime("%m.%d %H:%M:%S"),
        pl.lit(" [pool:"),
        pl.col("host"),
        pl.lit(":restore] ["),
        pl.col("file_id").replace_strict(pnfsid, default="", return_dtype=pl.String),
        pl.lit(","),
        pl.col("size_bytes").cast(pl.String),
        pl.lit("] ["),
        pl.col("path").fill_null("Unknown"),
        pl.lit("] "),
        pl.col("experiment"),
        pl.lit(f":tape@{hsm} "),
        pl.col("ms").cast(pl.String),
        pl.lit(" "),
        pl.col("queue_ms").cast(pl.String),
        pl.lit(" {"),
        pl.when(ok).then(pl.lit("0")).otherwise(pl.lit(str(RESTORE_FAILED_RC))),
        pl.lit(':"'),
        pl.when(ok).then(pl.lit("")).otherwise(pl.col("error").str.replace_all('"', "'")),
        pl.lit('"}'),
    )
    layout = "%Y.%m.%d" if per == "day" else "%Y"
    frame = frame.select(pl.col("end").dt.strftime(layout).alias("key"), line.alias("line"))
    entries = []
    for (key,), part in frame.partition_by("key", maintain_order=True, as_dict=True).items():
        year = int(str(key)[:4])
        where = f"logs/billing/{year}/{str(key)[5:7]}" if per == "day" else "logs/billing"
        path = _write(out_dir, f"{where}/billing-{key}", _lines(part["line"]), gzip)
        entries.append(_entry(path, "transfers", "dcache-billing", year=year))
    return entries


# -- CTA tape daemon ---------------------------------------------------------------------------


def write_cta_taped(history: History, out_dir: Path, gzip: bool) -> list[dict[str, Any]]:
    """One JSON line per file read and one per tape session, in time order."""
    t, m = history.transfers, history.mounts
    if m.is_empty():
        return []
    common = {"program": '"cta-taped"'}
    files = t.with_columns(
        _ms("duration_s").alias("ms"),
        _ms("locate_s").alias("locate_ms"),
        (pl.col("started_at").dt.epoch("ms")).alias("start_ms"),
    ).with_columns(
        (pl.col("start_ms") + pl.col("ms")).alias("epoch_ms"),
        pl.lit(0).alias("order"),
    )
    ok = pl.col("status") == "ok"
    file_fields = {
        "log_level": pl.when(ok).then(pl.lit('"INFO"')).otherwise(pl.lit('"ERROR"')),
        "message": pl.when(ok)
        .then(pl.lit('"File successfully read from tape"'))
        .otherwise(pl.lit('"Failed to read file from tape"')),
        "mountId": pl.col("mount_id").cast(pl.String),
        "fileId": _json_text(files, "file_id"),
        "fSeq": pl.col("position").cast(pl.String),
        "BlockId": (pl.col("address_bytes") // CTA_BLOCK_BYTES).cast(pl.String),
        "positionTime": _decimal(pl.col("locate_ms")),
        "readWriteTime": _decimal(pl.col("ms") - pl.col("locate_ms")),
        "transferTime": _decimal(pl.col("ms")),
        "totalTime": _decimal(pl.col("ms")),
        "dataVolume": pl.col("size_bytes").cast(pl.String),
        "payloadTransferSpeedMBps": _decimal(
            (pl.col("size_bytes") + pl.col("ms") // 2) // pl.col("ms").clip(1)
        ),
        "errorMessage": _json_text(files, "error"),
    }
    file_lines = files.select(
        "mount_id",
        "epoch_ms",
        "order",
        "file_id",
        "attempt",
        _json_line(files, common, file_fields).alias("line"),
    )
    per_mount = t.group_by("mount_id").agg(
        _ms("locate_s").sum().alias("locate_ms"),
        _ms("duration_s").sum().alias("busy_ms"),
        ok.sum().alias("files"),
        pl.col("size_bytes").filter(ok).sum().alias("bytes"),
    )
    hosts = history.drives.select("drive", "host")
    dismount = history.physics.select(
        "media_type", (pl.col("rewind_s") + pl.col("unload_s")).alias("dismount_s")
    )
    sessions = (
        m.join(per_mount, on="mount_id", how="left", maintain_order="left")
        .join(hosts, on="drive", how="left", maintain_order="left")
        .join(dismount, on="media_type", how="left", maintain_order="left")
        .with_columns(
            *[
                pl.col(c).dt.epoch("ms").alias(c + "_ms")
                for c in ("requested_at", "mounted_at", "dismounted_at", "put_away_at")
            ],
            pl.lit(1).alias("order"),
            pl.lit(None, pl.String).alias("file_id"),
            pl.lit(0, pl.Int64).alias("attempt"),
        )
        .with_columns(pl.col("put_away_at_ms").alias("epoch_ms"))
    )
    total_ms = pl.col("epoch_ms") - pl.col("requested_at_ms")
    session_fields = {
        "log_level": pl.lit('"INFO"'),
        "message": pl.lit('"Tape session finished"'),
        "mountId": pl.col("mount_id").cast(pl.String),
        "tapeVid": _json_text(sessions, "volume"),
        "tapeDrive": _json_text(sessions, "drive"),
        "mountType": pl.lit('"Retrieve"'),
        "mountTime": _decimal(pl.col("mounted_at_ms") - pl.col("requested_at_ms")),
        "positionTime": _decimal(pl.col("locate_ms")),
        "readWriteTime": _decimal(pl.col("busy_ms") - pl.col("locate_ms")),
        "transferTime": _decimal(pl.col("busy_ms")),
        "unloadTime": _decimal((pl.col("dismount_s") * 1000).round().cast(pl.Int64)),
        "unmountTime": _decimal(pl.col("put_away_at_ms") - pl.col("dismounted_at_ms")),
        "totalTime": _decimal(total_ms),
        "files": pl.col("files").cast(pl.String),
        "dataVolume": pl.col("bytes").cast(pl.String),
        "payloadTransferSpeedMBps": _decimal((pl.col("bytes") + total_ms // 2) // total_ms.clip(1)),
        "status": pl.lit('"success"'),
    }
    session_lines = sessions.select(
        "mount_id",
        "epoch_ms",
        "order",
        "file_id",
        "attempt",
        _json_line(sessions, common, session_fields).alias("line"),
    )
    lines = pl.concat([file_lines, session_lines]).sort(
        "epoch_ms", "mount_id", "order", "file_id", "attempt", nulls_last=True
    )
    path = _write(out_dir, "logs/cta-taped.log", _lines(lines["line"]), gzip)
    return [_entry(path, "mounts", "cta-taped"), _entry(path, "transfers", "cta-taped")]


def _json_line(frame: pl.DataFrame, common: dict[str, str], fields: dict[str, pl.Expr]) -> pl.Expr:
    """A JSON object per row from pre-rendered values; a key whose value is null is left out
    (only OPTIONAL_KEYS may be). Every line starts with epoch_time, local_time, hostname, pid
    and tid (the session's, for file lines)."""
    local = pl.from_epoch(pl.col("epoch_ms"), time_unit="ms").dt.strftime("%Y-%m-%dT%H:%M:%S%.3f")
    pid = pl.col("mount_id") + PID_BASE
    head = {
        "epoch_time": _decimal(pl.col("epoch_ms")),
        "local_time": pl.concat_str(pl.lit('"'), local, pl.lit('+0000"')),
        "hostname": _json_text(frame, "host"),
        **{k: pl.lit(v) for k, v in common.items()},
        "pid": pid.cast(pl.String),
        "tid": (pid + 2).cast(pl.String),
    }
    parts: list[pl.Expr] = []
    for i, (key, value) in enumerate({**head, **fields}.items()):
        label = pl.lit(("{" if i == 0 else ",") + f'"{key}":')
        if key in OPTIONAL_KEYS:
            parts.append(pl.concat_str(label, value).fill_null(""))
        else:
            parts += [label, value]
    return pl.concat_str(*parts, pl.lit("}"))


# -- HPSS PVL ----------------------------------------------------------------------------------


def write_pvl(history: History, out_dir: Path, gzip: bool) -> list[dict[str, Any]]:
    """MountAdd / pvr_Mount / MountCompleted / DismountVolume lines, no year in them."""
    m = history.mounts
    if m.is_empty():
        return []
    physics = history.physics.select(
        "media_type", (pl.col("robot_s") + pl.col("load_s")).alias("fetch_s")
    )
    m = m.join(physics, on="media_type", how="left", maintain_order="left")
    jobid = pl.concat_str(pl.lit('jobid = "'), (pl.col("mount_id") + JOBID_BASE).cast(pl.String))
    physical = pl.concat_str(pl.col("volume"), pl.lit("00"))
    events = [
        (
            0,
            pl.col("requested_at"),
            pl.concat_str(
                pl.lit('RQST PVLS0001 Entering, function = "pvl_MountAdd", '),
                jobid,
                pl.lit('", arg = "'),
                physical,
                pl.lit('"'),
            ),
        ),
        (
            1,
            pl.col("mounted_at") - pl.duration(seconds=pl.col("fetch_s").round().cast(pl.Int64)),
            pl.concat_str(
                pl.lit('RQST PVRS0004 Entering pvr_Mount, cartridge = "'),
                pl.col("volume"),
                pl.lit('", drive = "'),
                pl.col("drive"),
                pl.lit('"'),
            ),
        ),
        (
            2,
            pl.col("mounted_at"),
            pl.concat_str(
                pl.lit('RQST PVLS0001 Entering, function = "pvl_MountCompleted", '),
                jobid,
                pl.lit('", drive = "'),
                pl.col("drive"),
                pl.lit('", arg = "'),
                pl.col("volume"),
                pl.lit('"'),
            ),
        ),
        (
            3,
            pl.col("dismounted_at"),
            pl.concat_str(
                pl.lit('RQST PVLS0001 Entering, function = "pvl_DismountVolume", arg = "'),
                physical,
                pl.lit('"'),
            ),
        ),
    ]
    lines = pl.concat(
        [
            m.select(
                when.alias("at"),
                "mount_id",
                pl.lit(rank).alias("rank"),
                text.alias("text"),
            )
            for rank, when, text in events
        ]
    ).sort("at", "mount_id", "rank")
    # A season runs July to June: it is named by the year it starts in.
    season = pl.col("at").dt.year() - (pl.col("at").dt.month() < PVL_SEASON_START_MONTH).cast(
        pl.Int32
    )
    lines = lines.with_columns(
        season.alias("season"),
        pl.concat_str(pl.col("at").dt.strftime("%m/%d %H:%M:%S"), pl.lit(" "), "text").alias(
            "line"
        ),
    )
    entries = []
    for _, part in lines.partition_by("season", maintain_order=True, as_dict=True).items():
        first = part["at"][0]
        path = _write(out_dir, f"logs/pvl/pvl-{first:%Y-%m-%d}.log", _lines(part["line"]), gzip)
        entries.append(_entry(path, "mounts", "hpss-pvl", year=first.year))
    return entries


# -- staging queue and canonical CSVs ---------------------------------------------------------


def write_staging_csv(history: History, out_dir: Path, gzip: bool) -> list[dict[str, Any]]:
    """file,tape,position,size,submission_time,queued_time,end_time,status,error per transfer:
    queued is when the read started, end - queued its duration, queued - submission its wait;
    error is a failed read's message (empty for the others). The scheduler knows no drive."""
    t = history.transfers
    if t.is_empty():
        return []
    layout = "%Y-%m-%d %H:%M:%S%.3f"
    frame = t.sort("started_at", "mount_id", "file_id", "attempt").select(
        pl.col("path").alias("file"),
        pl.col("volume").alias("tape"),
        "position",
        pl.col("size_bytes").alias("size"),
        (pl.col("started_at") - pl.duration(milliseconds=_ms("queued_s")))
        .dt.strftime(layout)
        .alias("submission_time"),
        pl.col("started_at").dt.strftime(layout).alias("queued_time"),
        (pl.col("started_at") + pl.duration(milliseconds=_ms("duration_s")))
        .dt.strftime(layout)
        .alias("end_time"),
        "status",
        pl.when(pl.col("status") == "ok")
        .then(pl.lit(None))
        .otherwise(pl.col("error"))
        .alias("error"),
    )
    return [
        _entry(_write_csv(frame, out_dir, "logs/staging.csv", gzip), "transfers", "staging-csv")
    ]


def write_canonical_csv(history: History, out_dir: Path, gzip: bool) -> list[dict[str, Any]]:
    """The generic layout: canonical column names, ISO 8601 times with Z."""
    mounts = history.mounts.sort("mount_id").select(list(MOUNTS))
    transfers = history.transfers.sort("started_at", "mount_id", "file_id", "attempt").select(
        list(TRANSFERS)
    )
    entries = [
        _entry(_write_csv(mounts, out_dir, "logs/mounts.csv", gzip), "mounts", "csv"),
        _entry(_write_csv(transfers, out_dir, "logs/transfers.csv", gzip), "transfers", "csv"),
    ]
    # The same records as the native logs: listed for completeness, loaded only on request.
    return [{**e, "skip": True} for e in entries]


def _write_csv(frame: pl.DataFrame, out_dir: Path, relative: str, gzip: bool) -> str:
    buffer = io.BytesIO()
    frame.write_csv(buffer, datetime_format=ISO_Z, float_precision=3, line_terminator="\n")
    return _write(out_dir, relative, [buffer.getvalue()], gzip)
