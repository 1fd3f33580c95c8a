"""A recall plan written out for people and for staging systems.

Formats: `csv` (one row per file in plan order), `json` (summary, mounts, drive timeline and
files), `filelists` (one text file per tape, paths in read order), `dsmc` (per-tape filelists for
`dsmc retrieve -filelist=` and `dsmrecall -filelist=`, and scripts running each drive's tapes in
order), `tape-rest` (stage-request bodies for the WLCG Tape REST API, `{"files": [{"path": ...},
...]}`, one per drive batch: the files one drive reads from one mount, numbered in submission
order). Every directory export carries an index.csv saying which file is which tape and drive.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import polars as pl

from tapelens.analysis.recall.plan.planner import RecallPlan
from tapelens.errors import InputError

EXPORT_FORMATS = ("csv", "json", "filelists", "dsmc", "tape-rest")

# Columns of the per-file CSV (the plan as the staging side sees it).
CSV_COLUMNS = {
    "order": "order",
    "drive": "drive",
    "volume": "volume",
    "position": "position",
    "offset_bytes": "offset_bytes",
    "path": "path",
    "file_id": "file_id",
    "size_bytes": "size_bytes",
    "start_s": "predicted_start_s",
    "end_s": "predicted_end_s",
    "requester": "requester",
}
MOUNT_COLUMNS = (
    "mount_order",
    "drive",
    "volume",
    "media_type",
    "files",
    "bytes",
    "start_s",
    "end_s",
    "total_s",
)
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def plan_rows(plan: RecallPlan) -> pl.DataFrame:
    """The per-file plan: order, drive, volume, position, offset, path and predicted times."""
    return plan.files.select(
        [pl.col(src).alias(dst) for src, dst in CSV_COLUMNS.items()]
    ).with_columns(pl.col("predicted_start_s").round(3), pl.col("predicted_end_s").round(3))


def mounts(plan: RecallPlan) -> pl.DataFrame:
    return plan.schedule.tapes.select(MOUNT_COLUMNS).sort("mount_order")


def write_csv(plan: RecallPlan, path: Path) -> Path:
    plan_rows(plan).write_csv(path)
    return path


def write_summary(summary: dict[str, Any], path: Path) -> Path:
    path.write_text(json.dumps(summary, indent=2) + "\n")
    return path


def nothing_to_recall(plan: RecallPlan) -> str:
    """Why a plan reads no file, in one line: the requests the catalog does not know (by
    cause) and the files without a readable copy (by reason)."""
    parts = []
    missing = plan.not_found
    if missing.height:
        causes = (
            missing.group_by(
                pl.col("cause").str.replace(r" \(.*\)$", "")
                if "cause" in missing.columns
                else pl.lit("not in the catalog").alias("cause")
            )
            .len()
            .sort("len", "cause", descending=[True, False])
        )
        why = ", ".join(f"{n:,} {c}" for c, n in causes.iter_rows())
        parts.append(f"{missing.height:,} requests name no live file ({why})")
    lost = plan.unavailable
    if lost.height:
        reasons = lost.group_by("reason").len().sort("len", "reason", descending=[True, False])
        why = ", ".join(f"{r}: {n:,}" for r, n in reasons.head(3).iter_rows())
        parts.append(f"{lost.height:,} files have no readable copy ({why})")
    drives = ", ".join(f"{d}:{n}" for d, n in plan.summary["drives"].items())
    return f"nothing to recall on drives {drives}: " + "; ".join(parts or ["no file requested"])


def write_problems(plan: RecallPlan, directory: Path, stem: str = "") -> list[Path]:
    """not_found (requests the catalog does not know) and unavailable (files without a readable
    copy) next to the plan, only when there are any."""
    return write_left_out(plan.not_found, plan.unavailable, directory, stem)


def write_left_out(
    not_found: pl.DataFrame, unavailable: pl.DataFrame, directory: Path, stem: str = ""
) -> list[Path]:
    """What a command left out, as every command that plans, predicts or simulates reads
    writes it: the requests the catalog does not know ([STEM.]not_found.csv: line, kind, key,
    requester, cause) and the files without a readable copy ([STEM.]unavailable.csv: path,
    file_id, size_bytes, reason), only those there are."""
    written = []
    prefix = f"{stem}." if stem else ""
    if not_found.height:
        target = directory / f"{prefix}not_found.csv"
        cause = ["cause"] if "cause" in not_found.columns else []
        not_found.select(
            pl.col("line_no").alias("line"), "kind", "key", "requester", *cause
        ).write_csv(target)
        written.append(target)
    if unavailable.height:
        target = directory / f"{prefix}unavailable.csv"
        unavailable.select("path", "file_id", "size_bytes", "reason").write_csv(target)
        written.append(target)
    return written


def export(plan: RecallPlan, fmt: str, directory: Path) -> list[Path]:
    """Write the plan in `fmt` under `directory` (created); return the files written."""
    if fmt not in EXPORT_FORMATS:
        raise InputError(f"unknown export format {fmt!r} (expected {', '.join(EXPORT_FORMATS)})")
    directory.mkdir(parents=True, exist_ok=True)
    if fmt == "csv":
        return [write_csv(plan, directory / "plan.csv")]
    if fmt == "json":
        return [_write_json(plan, directory / "plan.json")]
    if fmt == "filelists":
        return _per_tape(plan, directory / "filelists", ".txt", _plain)
    if fmt == "dsmc":
        written = _per_tape(plan, directory / "dsmc", ".filelist", _dsmc_line)
        return [*written, *_dsmc_scripts(plan, directory / "dsmc")]
    return _tape_rest(plan, directory / "tape-rest")


def _write_json(plan: RecallPlan, path: Path) -> Path:
    # Frames serialise themselves (fast for a million rows); the summary is a plain dict.
    parts = [
        '{"summary": ' + json.dumps(plan.summary),
        '"mounts": ' + mounts(plan).write_json(),
        '"timeline": ' + plan.schedule.timeline.write_json(),
        '"files": ' + plan_rows(plan).write_json() + "}",
    ]
    path.write_text(", ".join(parts) + "\n")
    return path


def _tape_name(order: int, volume: str) -> str:
    return f"{order:05d}_{_UNSAFE.sub('_', volume)}"


def _plain(path: str) -> str:
    return path


def _dsmc_line(path: str) -> str:
    # dsmc filelists: one path a line; a path with blanks is enclosed in double quotes.
    return f'"{path}"' if any(ch.isspace() for ch in path) else path


def _groups(plan: RecallPlan) -> list[tuple[int, str, str, list[str]]]:
    """(mount order, drive, volume, paths in read order) for each mount, in mount order."""
    grouped = (
        plan.files.sort("order")
        .group_by("mount_order", maintain_order=True)
        .agg(pl.col("drive").first(), pl.col("volume").first(), pl.col("path"))
        .sort("mount_order")
    )
    return [(int(o), str(d), str(v), list(p)) for o, d, v, p in grouped.iter_rows()]


def _per_tape(plan: RecallPlan, folder: Path, suffix: str, line: Any) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    index = []
    for order, drive, volume, paths in _groups(plan):
        target = folder / f"{_tape_name(order, volume)}{suffix}"
        target.write_text("".join(line(p) + "\n" for p in paths))
        written.append(target)
        index.append((order, drive, volume, len(paths), target.name))
    written.append(_index(folder, index))
    return written


def _index(folder: Path, rows: list[tuple[int, str, str, int, str]]) -> Path:
    target = folder / "index.csv"
    pl.DataFrame(
        rows,
        schema={
            "mount_order": pl.Int64(),
            "drive": pl.String(),
            "volume": pl.String(),
            "files": pl.Int64(),
            "file": pl.String(),
        },
        orient="row",
    ).write_csv(target)
    return target


# The per-tape lists serve two Spectrum Protect clients: `dsmc retrieve` for archived or backed-up
# files, `dsmrecall` for files its space management migrated (both read -filelist= one path a
# line, a path with blanks in double quotes).
DSMC_SCRIPTS = {
    "retrieve.sh": ("dsmc retrieve", "DSMC_OPTS"),
    "recall.sh": ("dsmrecall", "DSMRECALL_OPTS"),
}


def _dsmc_scripts(plan: RecallPlan, folder: Path) -> list[Path]:
    """retrieve.sh and recall.sh: per drive, its tapes' lists in plan order; drives side by
    side."""
    by_drive: dict[str, list[str]] = {}
    for order, drive, volume, _ in _groups(plan):
        by_drive.setdefault(drive, []).append(f"{_tape_name(order, volume)}.filelist")
    written = []
    for script, (command, opts) in DSMC_SCRIPTS.items():
        lines = [
            "#!/bin/sh",
            f"# Recall plan made by tapelens: one `{command}` per tape, each drive's tapes in",
            f"# plan order, drives side by side. Put a destination or options in {opts}.",
            'cd "$(dirname "$0")" || exit 1',
            f'{opts}="${{{opts}:-}}"',
        ]
        for drive, lists in sorted(by_drive.items()):
            lines.append(f"( # drive {drive}")
            lines += [f"  {command} -filelist={name} ${opts}" for name in lists]
            lines.append(") &")
        lines.append("wait")
        target = folder / script
        target.write_text("\n".join(lines) + "\n")
        target.chmod(0o755)
        written.append(target)
    return written


def _tape_rest(plan: RecallPlan, folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    index = []
    for batch, (order, drive, volume, paths) in enumerate(_groups(plan), start=1):
        target = folder / f"batch-{batch:05d}.json"
        target.write_text(json.dumps({"files": [{"path": p} for p in paths]}) + "\n")
        written.append(target)
        index.append((order, drive, volume, len(paths), target.name))
    written.append(_index(folder, index))
    return written


def write_outputs(
    plan: RecallPlan,
    output: Path | None = None,
    summary: Path | None = None,
    formats: tuple[str, ...] = (),
    export_dir: Path | None = None,
) -> list[Path]:
    """Everything `plan recall` writes: the plan CSV, the summary JSON, the exports, and the
    not_found/unavailable lists next to the plan CSV or in the export directory."""
    if formats and export_dir is None:
        raise InputError("--export needs --export-dir DIR")
    written: list[Path] = []
    if output is not None:
        written.append(write_csv(plan, output))
        written += write_problems(plan, output.parent, output.stem)
    if summary is not None:
        written.append(write_summary(plan.summary, summary))
    for fmt in formats:
        written += export(plan, fmt, export_dir)  # type: ignore[arg-type]
    if export_dir is not None and formats:
        written += write_problems(plan, export_dir)
    return written
