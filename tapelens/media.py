"""The media catalog: physical figures per tape media generation.

These figures seed `tapelens.media_types` (migration 002) and are the throughput model's default
parameters before calibration. LTO-7 timings are the BNL figures quoted in docs/domain.md; native
rates and capacities are the LTO Consortium and vendor (IBM TS11x0, Oracle T10000D) uncompressed
specs; the other timings are rounded vendor datasheet values (load/unload, average locate, average
rewind) and are meant to be replaced by `tapelens throughput calibrate`.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

MB = 1_000_000
TB = 1_000_000_000_000


@dataclass(frozen=True)
class MediaType:
    media_type: str
    family: str
    generation: int
    barcode_suffix: str | None
    native_rate_mb_s: float
    capacity_bytes: int
    robot_s: float
    load_s: float
    locate_avg_s: float
    rewind_avg_s: float
    unload_s: float
    readable_by: tuple[str, ...]
    writable_by: tuple[str, ...]
    source: str

    def mount_overhead_s(self) -> float:
        """Robot both ways, load, rewind and unload: what one mount costs besides reading."""
        return 2 * self.robot_s + self.load_s + self.rewind_avg_s + self.unload_s


_VENDOR = "vendor datasheet (rounded)"
_BNL = "BNL LTO-7 measurements (docs/domain.md)"

MEDIA_TYPES: tuple[MediaType, ...] = (
    MediaType(
        "LTO-5",
        "LTO",
        5,
        "L5",
        140,
        1_500_000_000_000,
        11,
        12,
        50,
        55,
        17,
        ("LTO-5", "LTO-6"),
        ("LTO-5", "LTO-6"),
        _VENDOR,
    ),
    MediaType(
        "LTO-6",
        "LTO",
        6,
        "L6",
        160,
        2_500_000_000_000,
        11,
        12,
        50,
        60,
        17,
        ("LTO-6", "LTO-7"),
        ("LTO-6", "LTO-7"),
        _VENDOR,
    ),
    MediaType(
        "LTO-7",
        "LTO",
        7,
        "L7",
        300,
        6 * TB,
        11,
        13,
        59,
        62,
        22,
        ("LTO-7", "LTO-8"),
        ("LTO-7", "LTO-8"),
        _BNL,
    ),
    # LTO-7 type M: LTO-7 cartridges formatted by an LTO-8 drive; only LTO-8 drives read them.
    MediaType(
        "LTO-7M", "LTO", 7, "M8", 300, 9 * TB, 11, 13, 62, 66, 22, ("LTO-8",), ("LTO-8",), _VENDOR
    ),
    MediaType(
        "LTO-8",
        "LTO",
        8,
        "L8",
        360,
        12 * TB,
        11,
        15,
        62,
        72,
        22,
        ("LTO-8", "LTO-9"),
        ("LTO-8", "LTO-9"),
        _VENDOR,
    ),
    MediaType(
        "LTO-9", "LTO", 9, "L9", 400, 18 * TB, 11, 15, 70, 86, 22, ("LTO-9",), ("LTO-9",), _VENDOR
    ),
    MediaType(
        "3592-JD",
        "3592",
        6,
        "JD",
        360,
        15 * TB,
        8,
        11,
        40,
        45,
        14,
        ("TS1155", "TS1160"),
        ("TS1155", "TS1160"),
        _VENDOR,
    ),
    MediaType(
        "3592-JE",
        "3592",
        7,
        "JE",
        400,
        20 * TB,
        8,
        11,
        40,
        45,
        14,
        ("TS1160",),
        ("TS1160",),
        _VENDOR,
    ),
    MediaType(
        "3592-JF",
        "3592",
        8,
        "JF",
        400,
        50 * TB,
        8,
        11,
        46,
        50,
        14,
        ("TS1170",),
        ("TS1170",),
        _VENDOR,
    ),
    MediaType(
        "T10000D",
        "T10000",
        4,
        None,
        252,
        8_500_000_000_000,
        11,
        13,
        60,
        90,
        23,
        ("T10000D",),
        ("T10000D",),
        _VENDOR,
    ),
)

BY_NAME: dict[str, MediaType] = {m.media_type: m for m in MEDIA_TYPES}
BY_SUFFIX: dict[str, MediaType] = {m.barcode_suffix: m for m in MEDIA_TYPES if m.barcode_suffix}
DRIVE_TYPES: tuple[str, ...] = tuple(sorted({d for m in MEDIA_TYPES for d in m.readable_by}))


def media_from_barcode(barcode: str) -> MediaType | None:
    """The media type an LTO or 3592 label names by its two-character suffix (A85532L8 -> LTO-8)."""
    if len(barcode) == 8:
        return BY_SUFFIX.get(barcode[-2:].upper())
    return None


def normalise_drive_type(name: str) -> str:
    """'LTO8', 'lto-8', 'LTO-8' -> 'LTO-8'; 3592 and T10000 drive names are kept upper-cased."""
    text = name.strip().upper()
    if text.startswith("LTO") and not text.startswith("LTO-"):
        text = "LTO-" + text[3:]
    return text


def seed_sql() -> str:
    """The INSERT that seeds tapelens.media_types (kept in ingest/schema/002_media_types.sql)."""

    def lit(v: object) -> str:
        if v is None:
            return "null"
        if isinstance(v, tuple):
            return "array[" + ", ".join(lit(x) for x in v) + "]::text[]"
        if isinstance(v, str):
            return "'" + v.replace("'", "''") + "'"
        return repr(v)

    cols = list(MediaType.__dataclass_fields__)
    rows = ",\n".join(
        "    (" + ", ".join(lit(getattr(m, c)) for c in cols) + ")" for m in MEDIA_TYPES
    )
    return f"insert into tapelens.media_types ({', '.join(cols)}) values\n{rows};\n"


if __name__ == "__main__":
    print(seed_sql(), end="")


def fill_media_from_labels(frame: pl.DataFrame) -> pl.DataFrame:
    """Tapes the inventory does not type (media_type null or 'unknown'): the media type their
    label's LTO/3592 suffix names (A85532L8 -> LTO-8), where it names one. The one place a
    frame of copies learns media types from labels."""
    if "volume" not in frame.columns or "media_type" not in frame.columns:
        return frame
    is_unknown = pl.col("media_type").is_null() | (pl.col("media_type") == "unknown")
    unknown = frame.filter(is_unknown)["volume"].drop_nulls().unique().to_list()
    guesses = {v: m.media_type for v in unknown if (m := media_from_barcode(v)) is not None}
    if not guesses:
        return frame
    guess = pl.col("volume").replace_strict(guesses, default=None, return_dtype=pl.String)
    return frame.with_columns(
        pl.when(is_unknown)
        .then(pl.coalesce(guess, pl.col("media_type")))
        .otherwise(pl.col("media_type"))
        .alias("media_type")
    )
