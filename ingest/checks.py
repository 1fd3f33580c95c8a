"""Values the database would refuse, found before COPY so that one row cannot fail a load.

A parser checks that a line has the format's shape; these checks are about what PostgreSQL and
the canonical tables accept: an index entry has a size limit (a B-tree refuses entries over about
2,700 bytes, and paths, file ids, copy ids and volumes are indexed), text cannot hold NUL,
sizes are never negative (a table constraint), a name holds no line break, and times must be
plausible for tape (a year such as 20211 is a typo that would sort every mart wrong, not an
observation). Each refused row
becomes its input line's rejection, with the reason; frames carry the line in LINE_NO.
"""

from __future__ import annotations

from datetime import UTC, datetime

import polars as pl

from tapelens.ingest import canonical
from tapelens.ingest.formats.base import LINE_NO, Reject

# Bytes of an indexed text value: below the B-tree entry limit (2,704 bytes on 8 kB pages) with
# room for the other columns of a composite index. Linux paths are at most 4,096 bytes, but
# real tape archive paths stay far below this.
MAX_KEY_BYTES = 2_048
INDEXED: dict[str, tuple[str, ...]] = {
    "catalog": ("path", "file_id", "copy_id", "volume", "dataset"),
    "transfers": ("path", "file_id", "volume"),
    "mounts": ("volume", "drive"),
    "tapes": ("volume",),
    "hints": ("file_key", "path"),
}
# Years a tape observation can carry: tape libraries predate 1970, but not 1950; a date beyond
# 2100 is a corrupt field.
FIRST_YEAR, LAST_YEAR = 1950, 2100
TIMES: dict[str, tuple[str, ...]] = {
    "catalog": ("written_at",),
    "transfers": ("started_at",),
    "mounts": ("requested_at", "mounted_at", "dismounted_at"),
    "tapes": (),
    "hints": ("written_at",),
}
NON_NEGATIVE: dict[str, tuple[str, ...]] = {
    "catalog": ("size_bytes", "position", "offset_bytes"),
    "transfers": ("size_bytes", "duration_s", "queued_s"),
    "mounts": (),
    "tapes": ("capacity_bytes",),
    "hints": ("size_bytes", *(f"{w}_{n}" for w in ("length", "size") for n in range(4))),
}
RAW_SHOWN = 400  # characters of a refused row's rendering kept with its rejection


def _checks(kind: str, frame: pl.DataFrame) -> list[tuple[pl.Expr, pl.Expr]]:
    """(bad, reason) pairs for the columns the frame has, in the order reasons are given."""
    have = set(frame.columns)
    out: list[tuple[pl.Expr, pl.Expr]] = []
    for name in (c for c, t in canonical.SCHEMAS[kind].items() if t == pl.String() and c in have):
        out.append(
            (
                pl.col(name).str.contains("\x00", literal=True).fill_null(False),
                pl.lit(f"{name} contains a NUL character"),
            )
        )
    for name in (c for c in INDEXED[kind] if c in have):
        # A carriage return or line feed inside a name is a mangled line end (a quoted CSV
        # field holding a bare CR), not part of the name a later dump would print.
        out.append(
            (
                pl.col(name).str.contains(r"[\r\n]").fill_null(False),
                pl.lit(f"{name} holds a line break (CR or LF)"),
            )
        )
    for name in (c for c in INDEXED[kind] if c in have):
        length = pl.col(name).str.len_bytes()
        out.append(
            (
                (length > MAX_KEY_BYTES).fill_null(False),
                pl.format(
                    "{} is {} bytes long, longer than the {} the database can index",
                    pl.lit(name),
                    length,
                    pl.lit(f"{MAX_KEY_BYTES:,}"),
                ),
            )
        )
    low = datetime(FIRST_YEAR, 1, 1, tzinfo=UTC)
    high = datetime(LAST_YEAR + 1, 1, 1, tzinfo=UTC)
    for name in (c for c in TIMES[kind] if c in have):
        col = pl.col(name).cast(canonical.UTC_TIME)
        out.append(
            (
                ((col < low) | (col >= high)).fill_null(False),
                pl.format(
                    "{} {} is outside the years {}-{}",
                    pl.lit(name),
                    col.dt.to_string("%Y-%m-%d %H:%M:%S"),
                    pl.lit(FIRST_YEAR),
                    pl.lit(LAST_YEAR),
                ),
            )
        )
    for name in (c for c in NON_NEGATIVE[kind] if c in have):
        out.append(
            (
                (pl.col(name) < 0).fill_null(False),
                pl.format("{} is negative ({})", pl.lit(name), pl.col(name)),
            )
        )
    return out


def render(row: dict[str, object]) -> str:
    """A refused row as text, for rows whose input line is not at hand."""
    shown = "; ".join(f"{k}={v}" for k, v in row.items() if v is not None and k != LINE_NO)
    shown = shown.replace("\x00", "\\x00")  # stored as text, which cannot hold NUL
    return shown if len(shown) <= RAW_SHOWN else shown[:RAW_SHOWN] + "..."


def refuse_unstorable(kind: str, frame: pl.DataFrame) -> tuple[pl.DataFrame, list[Reject]]:
    """The rows the database will take, and a rejection for each of the others."""
    checks = _checks(kind, frame)
    if not checks or not frame.height:
        return frame, []
    flags = [f"_unstorable{i}" for i in range(len(checks))]
    flagged = frame.with_columns(bad.alias(f) for f, (bad, _) in zip(flags, checks, strict=True))
    any_bad = pl.any_horizontal(flags)
    refused = flagged.filter(any_bad)
    if not refused.height:
        return frame, []
    reason = pl.coalesce(
        [pl.when(pl.col(f)).then(why) for f, (_, why) in zip(flags, checks, strict=True)]
    )
    reasons = refused.select(reason.alias("_why"))["_why"].to_list()
    rejects = []
    for row, why in zip(refused.drop(flags).iter_rows(named=True), reasons, strict=True):
        line = row.get(LINE_NO)
        rejects.append(Reject(int(line) if line is not None else 0, render(row), str(why)))
    return flagged.filter(~any_bad).drop(flags), rejects
