"""The throughput model: how long reading a set of files from tape takes, from where they sit.

A tape recall costs a robot move and a load, a locate to the first wanted file, then for each next
file either a read-through of the bytes in between (small gaps: the drive keeps streaming) or a
locate (gaps beyond a threshold in tape objects: bounded time that grows with distance), a
per-object overhead, streaming at an effective rate, and at the end a rewind and an unload
(docs/domain.md, "The cost of reading a file from tape" and "Positional gap").

Everything here is pure: frames and a frozen `ModelParams` in, frames and records out. Per-file
durations include the positioning before the file, as the per-file rates of the published gap
analysis do (a read-through halves the rate of a file at gap 2).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

import numpy as np
import polars as pl

from tapelens.analysis.geometry.place import start_address
from tapelens.analysis.throughput.moves import move_s, rewind_s
from tapelens.errors import InputError
from tapelens.media import BY_NAME, MediaType

MB = 1_000_000

# Overhead per tape object read (file mark, drive buffer turn-around, HSM bookkeeping): the 1 s
# per file measured at CCLRC once small files were aggregated (docs/domain.md, "File size").
DEFAULT_OVERHEAD_S = 1.0
# Gaps up to about 10 tape objects are read through; beyond, the drive locates (docs/domain.md,
# "Positional gap": "beyond about 10 files the drive fast-forwards").
DEFAULT_READ_THROUGH_MAX_GAP = 10
# Locate time = base + slope x (distance as a fraction of the tape), bounded by base + slope. The
# catalog gives the average locate from the load point (uniform target: base + slope / 2); the
# fixed share below makes a short locate cost about 15 s on LTO-7, as vendor figures for a
# high-speed locate over a few wraps suggest.
LOCATE_BASE_SHARE = 0.25

GAP_CLASSES = ("first", "read_through", "locate")


@dataclass(frozen=True)
class ModelParams:
    """Physical parameters of one media type (times in seconds, 1 MB = 1e6 bytes)."""

    media_type: str
    capacity_bytes: int
    rate_mb_s: float  # effective streaming rate
    robot_s: float  # cell to drive
    load_s: float  # thread and load until ready
    first_locate_base_s: float  # locate from the load point to the start of the tape
    first_locate_slope_s: float  # added per whole tape between the load point and the file
    overhead_s: float  # per tape object read (an aggregate is one object)
    read_through_max_gap: int  # largest gap, in tape objects, that is read through
    locate_base_s: float  # a locate between files: fixed part
    locate_slope_s: float  # added per whole tape of distance
    locate_max_s: float  # bound on any locate
    rewind_s: float
    unload_s: float
    # A move on a tape is priced by the tape's geometry (analysis/throughput/moves.py): each of
    # its locate terms times a factor, all of it times locate_scale. Calibration fits the
    # factors where the site's locates pin them down, and the scale to the site's own
    # positioning times; 1 until then.
    locate_scale: float = 1.0
    locate_base_factor: float = 1.0
    locate_travel_factor: float = 1.0
    wrap_change_factor: float = 1.0
    band_change_factor: float = 1.0
    direction_change_factor: float = 1.0
    step_back_factor: float = 1.0

    @classmethod
    def from_media(cls, media: MediaType, **overrides: Any) -> ModelParams:
        """Default parameters from the media catalog, before any calibration."""
        base_s = LOCATE_BASE_SHARE * media.locate_avg_s
        slope_s = 2 * (media.locate_avg_s - base_s)
        params = cls(
            media_type=media.media_type,
            capacity_bytes=int(media.capacity_bytes),
            rate_mb_s=float(media.native_rate_mb_s),
            robot_s=float(media.robot_s),
            load_s=float(media.load_s),
            first_locate_base_s=base_s,
            first_locate_slope_s=slope_s,
            overhead_s=DEFAULT_OVERHEAD_S,
            read_through_max_gap=DEFAULT_READ_THROUGH_MAX_GAP,
            locate_base_s=base_s,
            locate_slope_s=slope_s,
            locate_max_s=base_s + slope_s,
            rewind_s=float(media.rewind_avg_s),
            unload_s=float(media.unload_s),
        )
        return replace(params, **overrides) if overrides else params

    @property
    def mount_s(self) -> float:
        """From the request to a loaded tape: the robot move and the load."""
        return self.robot_s + self.load_s

    @property
    def dismount_s(self) -> float:
        """Rewind and unload: the drive is busy until both are done."""
        return self.rewind_s + self.unload_s

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], fallback: ModelParams | None = None) -> ModelParams:
        """Parameters from a stored mapping; keys it lacks come from `fallback`."""
        values: dict[str, Any] = dict(fallback.to_dict()) if fallback else {}
        values.update({f.name: data[f.name] for f in fields(cls) if f.name in data})
        missing = [f.name for f in fields(cls) if f.name not in values]
        if missing:
            raise InputError(f"throughput parameters lack {', '.join(missing)}")
        values["read_through_max_gap"] = int(values["read_through_max_gap"])
        values["capacity_bytes"] = int(values["capacity_bytes"])
        return cls(**values)


def default_params(media_types: Sequence[MediaType] | None = None) -> dict[str, ModelParams]:
    """Default parameters for every media type of the catalog."""
    catalog = media_types if media_types is not None else tuple(BY_NAME.values())
    return {m.media_type: ModelParams.from_media(m) for m in catalog}


_PARAM_COLUMNS = [f.name for f in fields(ModelParams) if f.name != "media_type"]


def params_frame(params_by_media: Mapping[str, ModelParams]) -> pl.DataFrame:
    """One row per media type, the parameters as columns prefixed `p_` (for joins)."""
    rows = [p.to_dict() for p in params_by_media.values()]
    frame = pl.DataFrame(rows, schema={"media_type": pl.String(), **_param_schema()})
    return frame.rename({c: f"p_{c}" for c in _PARAM_COLUMNS})


def _param_schema() -> dict[str, pl.DataType]:
    ints = {"capacity_bytes", "read_through_max_gap"}
    return {c: (pl.Int64() if c in ints else pl.Float64()) for c in _PARAM_COLUMNS}


def _p(name: str) -> pl.Expr:
    return pl.col(f"p_{name}")


def _time_exprs(
    kind: pl.Expr, skipped_bytes: pl.Expr, fraction: pl.Expr, reach_s: pl.Expr | None = None
) -> list[pl.Expr]:
    """positioning_s, overhead_s, stream_s and duration_s of one file, given how it is reached.

    kind: first | member (next in the same aggregate) | read_through | locate. `fraction` is the
    file's place on the tape (0..1), used by the first locate only. `reach_s`, where not null,
    is the positioning time itself (except for an aggregate's further members).
    """
    rate_b_s = _p("rate_mb_s") * MB
    first = pl.min_horizontal(
        _p("first_locate_base_s") + _p("first_locate_slope_s") * fraction.clip(0.0, 1.0),
        _p("locate_max_s"),
    )
    distance = (skipped_bytes.abs() / _p("capacity_bytes")).clip(0.0, 1.0)
    locate = pl.min_horizontal(
        _p("locate_base_s") + _p("locate_slope_s") * distance, _p("locate_max_s")
    )
    positioning = (
        pl.when(kind == "first")
        .then(first)
        .when(kind == "locate")
        .then(locate)
        .otherwise(skipped_bytes.clip(0) / rate_b_s)
    )
    if reach_s is not None:
        # An aggregate's further members are read on from the first, as before.
        given = pl.coalesce(reach_s, positioning)
        positioning = pl.when(kind == "member").then(positioning).otherwise(given)
    overhead = pl.when(kind == "member").then(0.0).otherwise(_p("overhead_s"))
    stream = pl.col("size_bytes") / rate_b_s
    return [
        positioning.alias("positioning_s"),
        overhead.alias("overhead_s"),
        stream.alias("stream_s"),
        (positioning + overhead + stream).alias("duration_s"),
    ]


def _optional(frame: pl.DataFrame, columns: Mapping[str, pl.DataType]) -> pl.DataFrame:
    missing = [pl.lit(None, dtype=t).alias(c) for c, t in columns.items() if c not in frame.columns]
    return frame.with_columns(missing) if missing else frame


_OPTIONAL_FILE_COLUMNS: dict[str, pl.DataType] = {
    "offset_bytes": pl.Int64(),
    "aggregate_id": pl.String(),
    "gap_bytes": pl.Int64(),  # bytes skipped since the previous wanted file (catalog)
    "start_bytes": pl.Int64(),  # bytes on the tape before this file
    "avg_object_bytes": pl.Float64(),  # average object size on the tape, when known
    # A read order other than position order (read_rank, per mount), and what reaching each
    # read costs in it (reach_s, from tape geometry): analysis.recall.schedule.read_order gives
    # both.
    "read_rank": pl.Int64(),
    "reach_s": pl.Float64(),
}


def file_times(
    files: pl.DataFrame,
    params_by_media: Mapping[str, ModelParams],
    key: Sequence[str] = ("volume",),
) -> pl.DataFrame:
    """Per wanted file: how it is reached and its predicted start/end on its mount.

    `files` has the `key` columns, media_type, position, size_bytes and optionally offset_bytes,
    aggregate_id, gap_bytes, start_bytes, avg_object_bytes, read_rank, reach_s. Each group of
    `key` is one mount, read in position order (aggregate members by offset), each aggregate a
    single tape object, or in the order of read_rank when given (a read behind the previous one
    is then a locate). Skipped bytes come from gap_bytes, else from start_bytes, else from the
    average object size. A read's reach_s, when given, is its positioning time (the tape
    geometry's cost of getting there) in place of the model's read-through or locate. Times
    (start_s, end_s) count from the mount request.
    """
    keys = list(key)
    _require(files, [*keys, "media_type", "position", "size_bytes"], "files")
    unknown = set(files["media_type"].unique().to_list()) - set(params_by_media)
    if unknown:
        raise InputError(f"no throughput parameters for media type(s) {sorted(map(str, unknown))}")
    frame = _optional(files, _OPTIONAL_FILE_COLUMNS)
    tape_change = pl.any_horizontal([pl.col(k).ne_missing(pl.col(k).shift(1)) for k in keys])
    new_tape = pl.col("_new_tape")
    prev_pos = pl.col("position").shift(1)
    new_object = new_tape | (pl.col("position") != prev_pos)
    gap_objects = pl.when(new_tape).then(None).otherwise(pl.col("position") - prev_pos)
    avg_object = pl.coalesce(
        pl.col("avg_object_bytes"), pl.col("size_bytes").cast(pl.Float64).mean().over("_tape")
    )
    end_bytes = pl.col("start_bytes") + pl.col("size_bytes")
    member_end = pl.col("offset_bytes") + pl.col("size_bytes")
    estimated = (
        pl.when(new_object)
        .then((gap_objects - 1).clip(0) * avg_object)
        .otherwise((pl.col("offset_bytes") - member_end.shift(1)).clip(0).fill_null(0))
    )
    skipped = (
        pl.when(new_tape)
        .then(0.0)
        .otherwise(
            pl.coalesce(
                pl.col("gap_bytes").cast(pl.Float64),
                (pl.col("start_bytes") - end_bytes.shift(1)).clip(0).cast(pl.Float64),
                estimated.cast(pl.Float64),
            )
        )
    )
    kind = (
        pl.when(new_tape)
        .then(pl.lit("first"))
        .when(~new_object)
        .then(pl.lit("member"))
        .when((gap_objects >= 1) & (gap_objects <= _p("read_through_max_gap")))
        .then(pl.lit("read_through"))
        .otherwise(pl.lit("locate"))
    )
    fraction = (start_address(frame.columns, avg_object) / _p("capacity_bytes")).fill_null(0.0)
    ranked = "read_rank" in files.columns
    order = [*keys, "read_rank"] if ranked else [*keys, "position", "offset_bytes"]
    out = (
        frame.lazy()
        .join(params_frame(params_by_media).lazy(), on="media_type", how="left")
        .sort(order, nulls_last=False, maintain_order=True)
        .with_columns(tape_change.alias("_new_tape"))
        .with_columns(pl.col("_new_tape").cum_sum().alias("_tape"))
        .with_columns(
            gap_objects.alias("gap_objects"),
            skipped.alias("skipped_bytes"),
        )
        .with_columns(kind.alias("kind"), fraction.alias("_fraction"))
        .with_columns(
            _time_exprs(
                pl.col("kind"), pl.col("skipped_bytes"), pl.col("_fraction"), pl.col("reach_s")
            )
        )
    )
    # Where each read's object starts, the read's own address inside it, and where the
    # previous read of the mount left the head: what the one price of a move needs.
    obj = start_address(frame.columns, avg_object)
    member = obj + pl.col("offset_bytes").fill_null(0).cast(pl.Float64)
    out = out.with_columns(
        pl.col("gap_objects").alias("_gap"),
        obj.alias("_object"),
        member.alias("_address"),
        pl.when(pl.col("_new_tape"))
        .then(None)
        .otherwise((member + pl.col("size_bytes")).shift(1))
        .alias("_prev_end"),
    )
    out = _with_priced_moves(out.collect(), params_by_media).lazy()
    cum = pl.col("duration_s").cum_sum()
    tape_base = pl.when(pl.col("_new_tape")).then(cum - pl.col("duration_s")).forward_fill()
    out = out.with_columns(
        (_p("robot_s") + _p("load_s") + cum - tape_base).alias("end_s")
    ).with_columns(
        (pl.col("end_s") - pl.col("duration_s")).alias("start_s"),
        (pl.col("size_bytes") / MB / pl.col("duration_s")).alias("rate_mb_s"),
    )
    drop = [c for c in out.collect_schema().names() if c.startswith(("p_", "_"))]
    return out.drop(drop).collect()


def _with_priced_moves(
    frame: pl.DataFrame, params_by_media: Mapping[str, ModelParams]
) -> pl.DataFrame:
    """`frame` (kind, _gap in tape objects, _object, _address, _prev_end, positioning_s,
    duration_s, and reach_s where given) with the positioning of every read that is not an
    aggregate's further member priced by the one price of a move (moves.move_s): a read
    through streams to the read's own address; a locate goes to its object's start, then
    streams to the member's offset. Reads without an address, and reads with a given reach_s,
    keep what they had."""
    positioning = frame["positioning_s"].to_numpy().copy()
    obj = frame["_object"].fill_null(np.nan).to_numpy()
    address = frame["_address"].fill_null(np.nan).to_numpy()
    prev_end = frame["_prev_end"].fill_null(np.nan).to_numpy()
    gap = frame["_gap"].cast(pl.Float64).fill_null(np.nan).to_numpy()
    skipped = frame["skipped_bytes"].cast(pl.Float64).fill_null(np.nan).to_numpy()
    # Masks on the Series: comparing a million strings in numpy, or selecting from the whole
    # frame, costs a good share of a second.
    priced = (frame["kind"] != "member") & frame["_address"].is_not_null()
    if "reach_s" in frame.columns:
        priced = priced & frame["reach_s"].is_null()
    media = frame["media_type"]
    for name in media.unique().to_list():
        p = params_by_media[str(name)]
        rows = np.flatnonzero((priced & (media == name)).to_numpy())
        if rows.size == 0:
            continue
        through = (gap[rows] >= 1) & (gap[rows] <= p.read_through_max_gap)
        target = np.where(through, address[rows], obj[rows])
        into = np.where(through, 0.0, address[rows] - obj[rows]) / (p.rate_mb_s * MB)
        moved = move_s(p, prev_end[rows], target, gap[rows], skipped[rows])
        positioning[rows] = moved + into
    duration = positioning + (frame["duration_s"] - frame["positioning_s"]).to_numpy()
    return frame.with_columns(
        pl.Series("positioning_s", positioning), pl.Series("duration_s", duration)
    )


def tape_times(
    files: pl.DataFrame,
    params_by_media: Mapping[str, ModelParams],
    key: Sequence[str] = ("volume",),
    *,
    per_file: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """One row per mount (group of `key`): the time breakdown in seconds and total_s.

    Pass `per_file` (the output of file_times) to avoid computing it again.
    """
    keys = list(key)
    timed = per_file if per_file is not None else file_times(files, params_by_media, keys)
    is_locate = pl.col("kind").is_in(["first", "locate"])
    tapes = timed.group_by(keys).agg(
        pl.col("media_type").first(),
        pl.len().alias("files"),
        pl.col("size_bytes").sum().alias("bytes"),
        pl.col("positioning_s").filter(is_locate).sum().alias("locate_s"),
        pl.col("positioning_s").filter(~is_locate).sum().alias("read_through_s"),
        pl.col("overhead_s").sum(),
        pl.col("stream_s").sum(),
        (pl.col("kind") == "locate").sum().alias("locates"),
    )
    p = params_frame(params_by_media).select(
        "media_type",
        (_p("robot_s") + _p("load_s")).alias("mount_s"),
        _p("unload_s").alias("unload_s"),
    )
    parts = ["mount_s", "locate_s", "read_through_s", "overhead_s", "stream_s", "rewind_s"]
    return (
        tapes.join(p, on="media_type", how="left")
        .join(mount_rewinds(timed, params_by_media, keys), on=keys, how="left")
        .with_columns(pl.sum_horizontal([*parts, "unload_s"]).alias("total_s"))
        .with_columns((pl.col("bytes") / MB / pl.col("total_s")).alias("rate_mb_s"))
        .sort(keys)
    )


def mount_rewinds(
    timed: pl.DataFrame, params_by_media: Mapping[str, ModelParams], key: Sequence[str]
) -> pl.DataFrame:
    """Per mount (group of `key` of file_times' output), its final rewind, `rewind_s`: the one
    price of a move (moves.rewind_s) from where the mount's last read ends (its object's
    address, the read's offset inside it, its size: where file_times leaves the head) back to
    the load point; the media type's average where no place is known."""
    keys = list(key)
    if timed.height == 0:
        return timed.select(keys).with_columns(pl.lit(0.0).alias("rewind_s"))
    avg_object = pl.coalesce(
        pl.col("avg_object_bytes"), pl.col("size_bytes").cast(pl.Float64).mean().over(keys)
    )
    head = (
        start_address(timed.columns, avg_object)
        + pl.col("offset_bytes").fill_null(0).cast(pl.Float64)
        + pl.col("size_bytes").cast(pl.Float64)
    )
    last = (
        _optional(timed, _OPTIONAL_FILE_COLUMNS)
        .with_columns(head.alias("_head"))
        .group_by(keys, maintain_order=True)
        .agg(
            pl.col("media_type").first(),
            pl.col("_head").sort_by("end_s").last().fill_null(float("nan")),
        )
    )
    rewinds = np.zeros(last.height)
    media = last["media_type"]
    heads = last["_head"].to_numpy()
    for name in media.unique().to_list():
        rows = np.flatnonzero((media == name).to_numpy())
        rewinds[rows] = rewind_s(params_by_media[str(name)], heads[rows])
    return last.select(keys).with_columns(pl.Series("rewind_s", rewinds))


@dataclass(frozen=True)
class TapeBreakdown:
    """Where the time of one mount goes (seconds), and the per-file timeline."""

    volume: str
    media_type: str
    files_read: int
    bytes: int
    mount_s: float
    locate_s: float
    read_through_s: float
    overhead_s: float
    stream_s: float
    rewind_s: float
    unload_s: float
    total_s: float
    rate_mb_s: float
    files: pl.DataFrame  # file_times columns: kind, start_s, end_s, rate_mb_s ...


def predict_tape(files: pl.DataFrame, params: ModelParams) -> TapeBreakdown:
    """Predicted time to mount one tape, read the given files from it and dismount it."""
    if files.height == 0:
        raise InputError("predict_tape needs at least one file")
    volumes = files["volume"].unique().to_list() if "volume" in files.columns else ["?"]
    if len(volumes) > 1:
        raise InputError(f"predict_tape takes the files of one tape, got {len(volumes)} volumes")
    one = files.with_columns(
        pl.lit(str(volumes[0])).alias("volume"), pl.lit(params.media_type).alias("media_type")
    )
    timed = file_times(one, {params.media_type: params})
    row = tape_times(one, {params.media_type: params}, per_file=timed).row(0, named=True)
    return TapeBreakdown(
        volume=str(volumes[0]),
        media_type=params.media_type,
        files_read=int(row["files"]),
        bytes=int(row["bytes"]),
        mount_s=float(row["mount_s"]),
        locate_s=float(row["locate_s"]),
        read_through_s=float(row["read_through_s"]),
        overhead_s=float(row["overhead_s"]),
        stream_s=float(row["stream_s"]),
        rewind_s=float(row["rewind_s"]),
        unload_s=float(row["unload_s"]),
        total_s=float(row["total_s"]),
        rate_mb_s=float(row["rate_mb_s"]),
        files=timed,
    )


_OPTIONAL_READ_COLUMNS: dict[str, pl.DataType] = {
    "gap_bytes": pl.Int64(),
    "start_bytes": pl.Int64(),
    "position": pl.Int64(),
    "avg_object_bytes": pl.Float64(),
}


def read_kind(gap: pl.Expr, max_gap: pl.Expr) -> pl.Expr:
    """How a read is reached from the previous read on its mount: first, member (gap 0, same
    aggregate), read_through (1 <= gap <= max_gap) or locate (beyond, or backwards)."""
    return (
        pl.when(gap.is_null())
        .then(pl.lit("first"))
        .when(gap == 0)
        .then(pl.lit("member"))
        .when((gap >= 1) & (gap <= max_gap))
        .then(pl.lit("read_through"))
        .otherwise(pl.lit("locate"))
    )


def gap_class(kind: pl.Expr) -> pl.Expr:
    """The three classes reports use: aggregate members count as read-through."""
    return pl.when(kind == "member").then(pl.lit("read_through")).otherwise(kind)


def predict_reads(reads: pl.DataFrame, params_by_media: Mapping[str, ModelParams]) -> pl.DataFrame:
    """Per observed read (media_type, gap, size_bytes; optional gap_bytes, start_bytes,
    position, avg_object_bytes): the model's duration and rate for that read in its context.

    Adds kind, gap_class, skipped_bytes, predicted_duration_s and predicted_rate_mb_s. Skipped
    bytes are gap_bytes when known, else (|gap| - 1) objects of the average object size (the
    read's avg_object_bytes, else the mean read size of its media type).
    """
    _require(reads, ["media_type", "gap", "size_bytes"], "reads")
    unknown = set(reads["media_type"].unique().to_list()) - set(params_by_media)
    if unknown:
        raise InputError(f"no throughput parameters for media type(s) {sorted(map(str, unknown))}")
    frame = _optional(reads, _OPTIONAL_READ_COLUMNS)
    avg_object = pl.coalesce(
        pl.col("avg_object_bytes"),
        pl.col("size_bytes").cast(pl.Float64).mean().over("media_type"),
    )
    kind = read_kind(pl.col("gap"), _p("read_through_max_gap"))
    estimated = (
        pl.when(pl.col("gap") == 0)
        .then(0.0)
        .otherwise((pl.col("gap").abs() - 1).clip(0) * avg_object)
    )
    skipped = pl.coalesce(pl.col("gap_bytes").cast(pl.Float64), estimated).fill_null(0.0)
    fraction = (start_address(frame.columns, avg_object) / _p("capacity_bytes")).fill_null(0.5)
    # The read's address, and where the previous read left the head: skipped bytes before it
    # where known, else (gap - 1) objects of the average size.
    address = start_address(frame.columns, avg_object)
    before = pl.coalesce(
        pl.col("gap_bytes").cast(pl.Float64), (pl.col("gap") - 1).cast(pl.Float64) * avg_object
    )
    prev_end = address - before
    times = ["positioning_s", "overhead_s", "stream_s", "duration_s"]
    out = (
        frame.lazy()
        .drop([c for c in times if c != "duration_s"], strict=False)
        .drop([f"predicted_{c}" for c in times] + ["predicted_rate_mb_s"], strict=False)
        .rename({"duration_s": "_observed_s"}, strict=False)
        .join(
            params_frame(params_by_media).lazy(), on="media_type", how="left", maintain_order="left"
        )
        .with_columns(
            kind.alias("kind"), skipped.alias("skipped_bytes"), fraction.alias("_fraction")
        )
        .with_columns(_time_exprs(pl.col("kind"), pl.col("skipped_bytes"), pl.col("_fraction")))
        .with_columns(
            pl.col("gap").alias("_gap"),
            address.alias("_object"),
            address.alias("_address"),
            pl.when(pl.col("gap").is_null()).then(None).otherwise(prev_end).alias("_prev_end"),
        )
    )
    out = (
        _with_priced_moves(out.collect(), params_by_media)
        .lazy()
        .rename({c: f"predicted_{c}" for c in times})
        .rename({"_observed_s": "duration_s"}, strict=False)
        .with_columns(
            gap_class(pl.col("kind")).alias("gap_class"),
            (pl.col("size_bytes") / MB / pl.col("predicted_duration_s")).alias(
                "predicted_rate_mb_s"
            ),
        )
    )
    drop = [c for c in out.collect_schema().names() if c.startswith(("p_", "_"))]
    return out.drop(drop).collect()


def _require(frame: pl.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InputError(f"{what} lack column(s) {', '.join(missing)}")
