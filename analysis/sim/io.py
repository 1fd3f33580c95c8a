"""Inputs and outputs of the simulator: request lists and plans in, events, summary, plot out.

A request list (analysis.recall.requests formats) is resolved against the live copies in the
database (removed_at is null; loaded by the planner's analysis.recall.store), one copy per file: the
newest, which is what a tape client recalls. A plan (the planner's CSV, Parquet or JSON: order,
drive, volume, position, offset_bytes, path, size_bytes, start_s/end_s or predicted_start_s/
predicted_end_s) names its copies itself. Both get each tape's media type (tapes table, else the
barcode suffix, else an assumed type) and its average object size, from which skipped bytes are
estimated as the planner estimates them (byte addresses are left out for the same reason), so that a
plan and its simulation time reads the same way."""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import psycopg

from tapelens.analysis.recall.requests.lists import read_requests
from tapelens.analysis.recall.requests.resolve import resolve
from tapelens.analysis.recall.store.catalog import load_catalog
from tapelens.analysis.sim.simulator import SimResult
from tapelens.errors import DatabaseError, InputError
from tapelens.media import media_from_barcode

PLAN_REQUIRED = ("drive", "volume", "position", "size_bytes")
# Plans may name predicted times either way (planner frame or its CSV export).
PREDICTED_END = ("predicted_end_s", "end_s")
OCCUPANCY_COLOURS = {
    "mount": "#f0a202",
    "read": "#2a9d8f",
    "unmount": "#8d99ae",
    "failed_read": "#d62828",
    "drive_down": "#222222",
}


def _fetch_frame(conn: psycopg.Connection, query: str, params: Sequence[Any]) -> pl.DataFrame:
    try:
        with conn.cursor() as cur:
            cur.execute(query, params)
            names = [d.name for d in cur.description or ()]
            rows = cur.fetchall()
    except psycopg.Error as exc:
        raise DatabaseError(" ".join(str(exc).split())) from None
    return pl.DataFrame(rows, schema=names, orient="row", infer_schema_length=None)


def with_barcode_media(frame: pl.DataFrame, assume: str | None = None) -> pl.DataFrame:
    """Unknown media types from the volume's barcode suffix (A85532L8 -> LTO-8), else `assume`."""
    if "media_type" not in frame.columns:
        frame = frame.with_columns(pl.lit(None, pl.String()).alias("media_type"))
    unknown = pl.col("media_type").is_null() | (pl.col("media_type") == "unknown")
    volumes = frame.filter(unknown)["volume"].unique().to_list()
    guesses = {}
    for volume in volumes:
        media = media_from_barcode(volume)
        if media is not None:
            guesses[volume] = media.media_type
        elif assume is not None:
            guesses[volume] = assume
    if not guesses:
        return frame
    guess = pl.col("volume").replace_strict(guesses, default=None, return_dtype=pl.String)
    return frame.with_columns(
        pl.when(unknown)
        .then(pl.coalesce(guess, pl.col("media_type")))
        .otherwise(pl.col("media_type"))
        .alias("media_type")
    )


def object_sizes(conn: psycopg.Connection, volumes: list[str]) -> pl.DataFrame:
    """Per volume: bytes per tape object, removed copies included (their bytes stay on the tape
    until it is repacked): the planner's estimate of skipped bytes (analysis.recall.store)."""
    frame = _fetch_frame(
        conn,
        """select volume, sum(size_bytes)::float8 / count(distinct position) as avg_object_bytes
           from tapelens.tape_files
           where volume = any(%s)
           group by volume""",
        [volumes],
    )
    schema = {"volume": pl.String(), "avg_object_bytes": pl.Float64()}
    return frame.cast(schema) if frame.height else pl.DataFrame(schema=schema)  # type: ignore[arg-type]


def tape_media(conn: psycopg.Connection, volumes: list[str]) -> pl.DataFrame:
    frame = _fetch_frame(
        conn, "select volume, media_type from tapelens.tapes where volume = any(%s)", [volumes]
    )
    schema = {"volume": pl.String(), "media_type": pl.String()}
    return frame.cast(schema) if frame.height else pl.DataFrame(schema=schema)  # type: ignore[arg-type]


@dataclass(frozen=True)
class SimInput:
    """What a simulation reads: the request frame simulate() takes, and what was left out."""

    requests: pl.DataFrame
    not_found: pl.DataFrame  # request list entries the catalog does not know
    unavailable: pl.DataFrame  # files without a readable live copy
    drives: tuple[str, ...]  # a plan's drive names, in first-use order
    predicted_last_read_s: float | None  # a plan's prediction, when it carries one


def _media_and_objects(
    conn: psycopg.Connection | None, frame: pl.DataFrame, assume_media: str | None
) -> pl.DataFrame:
    volumes = frame["volume"].unique().to_list()
    if "media_type" not in frame.columns and conn is not None:
        frame = frame.join(tape_media(conn, volumes), on="volume", how="left")
    frame = with_barcode_media(frame, assume_media)
    lost = frame.filter(pl.col("media_type").is_null() | (pl.col("media_type") == "unknown"))
    if lost.height:
        names = ", ".join(lost["volume"].unique().sort().head(5).to_list())
        raise InputError(f"media type unknown for volume(s) {names}: give one with --media TYPE")
    if "avg_object_bytes" not in frame.columns and conn is not None:
        frame = frame.join(object_sizes(conn, volumes), on="volume", how="left")
    return frame


def load_requests(
    conn: psycopg.Connection,
    path: str | Path,
    assume_media: str | None = None,
    readable_media: Collection[str] | None = None,
) -> SimInput:
    """A request list resolved to one live copy per file (the newest), in submission order,
    with submit_s counted from the earliest submitted_at (requests without one come at 0).
    With `readable_media` (the media the library's drives read), only copies on those count,
    and a file with none is unavailable ("no drive reads ..."), as plan recall resolves it."""
    requests = read_requests(path)
    resolution = resolve(requests, load_catalog(conn, requests), readable_media)
    newest = resolution.copies.sort(
        ["written_at", "copy_no"], descending=True, nulls_last=True, maintain_order=True
    ).unique("file_id", keep="first", maintain_order=True)
    owners = resolution.wanted.select("file_id", "request_no", "requester", "fifo_rank").join(
        requests.select("request_no", "submitted_at"), on="request_no", how="left"
    )
    first = owners["submitted_at"].min()
    frame = (
        newest.drop("requester", strict=False)
        .join(owners, on="file_id")
        .sort("fifo_rank")
        .with_columns(
            (
                (pl.col("submitted_at") - pl.lit(first)).dt.total_microseconds() / 1e6
                if first is not None
                else pl.lit(0.0)
            )
            .fill_null(0.0)
            .alias("submit_s")
        )
        .select(
            "path",
            "file_id",
            "volume",
            "media_type",
            "position",
            "offset_bytes",
            "size_bytes",
            "avg_object_bytes",
            "requester",
            "submit_s",
        )
    )
    return SimInput(
        _media_and_objects(conn, frame, assume_media),
        resolution.not_found,
        resolution.unavailable,
        (),
        None,
    )


def read_plan_file(path: str | Path) -> pl.DataFrame:
    """A plan as the planner writes it (.csv, .parquet, or .json: records or the planner's
    JSON export)."""
    where = Path(path)
    if not where.exists():
        raise InputError(f"{where}: no such plan file")
    try:
        if where.suffix == ".parquet":
            frame = pl.read_parquet(where)
        elif where.suffix == ".json":
            frame = _plan_from_json(json.loads(where.read_text()))
        else:
            frame = pl.read_csv(where, infer_schema_length=None)
    except (OSError, ValueError, pl.exceptions.PolarsError) as exc:
        raise InputError(f"{where}: cannot read the plan ({' '.join(str(exc).split())})") from None
    missing = [c for c in PLAN_REQUIRED if c not in frame.columns]
    if missing:
        raise InputError(
            f"{where}: not a plan, it lacks column(s) {', '.join(missing)} "
            f"(expected {', '.join(PLAN_REQUIRED)}, order)"
        )
    return frame


def _plan_from_json(data: Any) -> pl.DataFrame:
    """A JSON plan: a list of file records, or the planner's export ({"files": [...],
    "mounts": [...]}, whose mounts name each tape's media type)."""
    if not isinstance(data, dict):
        return pl.DataFrame(data, infer_schema_length=None)
    frame = pl.DataFrame(data.get("files") or [], infer_schema_length=None)
    mounts = pl.DataFrame(data.get("mounts") or [], infer_schema_length=None)
    if {"volume", "media_type"} <= set(mounts.columns) and "volume" in frame.columns:
        media = mounts.select("volume", "media_type").unique("volume")
        frame = frame.drop("media_type", strict=False).join(media, on="volume", how="left")
    return frame


def load_plan(
    conn: psycopg.Connection | None,
    plan: str | Path | pl.DataFrame,
    assume_media: str | None = None,
) -> SimInput:
    """A plan as simulate() takes it: every file on its drive, in plan order."""
    frame = plan if isinstance(plan, pl.DataFrame) else read_plan_file(plan)
    if "order" not in frame.columns:
        frame = frame.with_row_index("order", offset=1)
    frame = frame.sort("order", maintain_order=True).with_columns(
        pl.col("drive").cast(pl.String), pl.col("volume").cast(pl.String)
    )
    end = next((c for c in PREDICTED_END if c in frame.columns), None)
    predicted = float(frame[end].max()) if end and frame.height else None  # type: ignore[arg-type]
    keep = [
        c
        for c in (
            "order",
            "drive",
            "volume",
            "media_type",
            "position",
            "offset_bytes",
            "path",
            "size_bytes",
            "requester",
            "avg_object_bytes",
            # A plan made from the catalog carries each file's byte address on its tape: keep
            # it, so the simulation times read-through and locates as the plan's prediction did.
            "start_bytes",
        )
        if c in frame.columns
    ]
    frame = _media_and_objects(conn, frame.select(keep), assume_media)
    drives = tuple(frame["drive"].drop_nulls().unique(maintain_order=True).to_list())
    empty = pl.DataFrame(schema={"key": pl.String()})
    return SimInput(frame, empty, empty, drives, predicted)


def summary_dict(result: SimResult, source: SimInput | None = None) -> dict[str, Any]:
    """The summary JSON: the run's figures, and what the inputs left out or predicted."""
    data = result.summary.to_dict()
    if source is not None:
        data["not_found"] = source.not_found.height
        data["unavailable"] = source.unavailable.height
        if source.predicted_last_read_s is not None:
            reads = result.events.filter(pl.col("kind") == "read")
            simulated = (
                float(reads.select(pl.col("end_s").max()).item() or 0.0) if reads.height else 0.0
            )
            predicted = source.predicted_last_read_s
            data["plan"] = {
                "predicted_last_read_s": round(predicted, 3),
                "simulated_last_read_s": round(simulated, 3),
                "ratio": round(simulated / predicted, 4) if predicted > 0 else None,
            }
    return data


def write_summary(path: str | Path, data: dict[str, Any]) -> None:
    Path(path).write_text(json.dumps(data, indent=1) + "\n")


def write_events(path: str | Path, result: SimResult) -> None:
    result.events.write_parquet(path)


def occupancy_spans(events: pl.DataFrame) -> pl.DataFrame:
    """Per drive, runs of back-to-back events of one kind merged into spans (a mount's reads
    become one bar), so a plot of a million reads stays light."""
    kinds = list(OCCUPANCY_COLOURS)
    frame = events.filter(
        pl.col("drive").is_not_null() & pl.col("kind").cast(pl.String).is_in(kinds)
    )
    frame = frame.with_columns(pl.col("kind").cast(pl.String)).sort("drive", "start_s", "end_s")
    new_run = (
        (pl.col("kind") != pl.col("kind").shift(1))
        | (pl.col("drive") != pl.col("drive").shift(1))
        | (pl.col("start_s") > pl.col("end_s").shift(1) + 1e-6)
    ).fill_null(True)
    return (
        frame.with_columns(new_run.cum_sum().alias("_run"))
        .group_by("_run", maintain_order=True)
        .agg(
            pl.col("drive").first(),
            pl.col("kind").first(),
            pl.col("start_s").min(),
            pl.col("end_s").max(),
        )
        .drop("_run")
    )


def plot_occupancy(path: str | Path, events: pl.DataFrame, title: str = "") -> None:
    """Drive occupancy over time: one row per drive, coloured by what the drive does."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    spans = occupancy_spans(events)
    drives = sorted(spans["drive"].unique().to_list()) if spans.height else []
    fig, ax = plt.subplots(figsize=(11, 1.2 + 0.35 * max(len(drives), 1)))
    for row, drive in enumerate(drives):
        mine = spans.filter(pl.col("drive") == drive)
        for kind, colour in OCCUPANCY_COLOURS.items():
            part = mine.filter(pl.col("kind") == kind)
            if part.height:
                bars = [
                    (s / 3600, (e - s) / 3600)
                    for s, e in zip(part["start_s"], part["end_s"], strict=True)
                ]
                ax.broken_barh(bars, (row - 0.4, 0.8), facecolors=colour, linewidth=0)
    ax.set_yticks(range(len(drives)), drives)
    ax.set_xlabel("hours from the start")
    ax.set_title(title or "Drive occupancy")
    ax.legend(
        handles=[Patch(color=c, label=k.replace("_", " ")) for k, c in OCCUPANCY_COLOURS.items()],
        loc="upper center",
        bbox_to_anchor=(0.5, -0.25),
        ncol=len(OCCUPANCY_COLOURS),
        frameon=False,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
