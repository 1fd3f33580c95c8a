"""Stored throughput-model parameters: the media catalog, the fits, what is in use.

With analysis/throughput/inputs.py (the frames the model reads, re-exported here) the only place
the model touches the database. Stores new fits in tapelens.model_params, one current row per
media type and the earlier ones as history, and runs a calibration end to end.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import polars as pl
import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from tapelens.analysis.throughput.calibrate import (
    DEFAULT_MIN_MOUNTS,
    DEFAULT_MIN_READS,
    Fit,
    calibrate,
    decide,
)
from tapelens.analysis.throughput.inputs import (
    READS_RELATION,
    fetch,
    read_drives,
    read_live_files,
    read_mounts,
    read_observed_reads,
)
from tapelens.analysis.throughput.model import ModelParams
from tapelens.errors import DatabaseError
from tapelens.frames import one_line
from tapelens.media import MEDIA_TYPES, MediaType

__all__ = [
    "CalibrationRun",
    "Outcome",
    "StoredFit",
    "calibrate_and_store",
    "default_params",
    "fits",
    "media_catalog",
    "params_in_use",
    "read_drives",
    "read_live_files",
    "read_mounts",
    "read_observed_reads",
    "readable_by",
    "save_fit",
]


@dataclass(frozen=True)
class StoredFit:
    """A row of tapelens.model_params."""

    fit_id: int
    media_type: str
    params: ModelParams
    n_reads: int
    n_mounts: int
    r2: float | None
    median_abs_pct_error: float | None
    data_from: datetime | None
    data_until: datetime | None
    fitted_at: datetime
    status: str
    forced: bool
    notes: tuple[str, ...]


def media_catalog(conn: psycopg.Connection) -> list[MediaType]:
    """The media types of tapelens.media_types (the site may have edited them), else media.py."""
    names = list(MediaType.__dataclass_fields__)
    query = sql.SQL("select {} from tapelens.media_types order by media_type").format(
        sql.SQL(", ").join(sql.Identifier(n) for n in names)
    )
    rows = fetch(conn, query)
    if not rows:
        return list(MEDIA_TYPES)
    out = []
    for row in rows:
        values = dict(zip(names, row, strict=True))
        values["readable_by"] = tuple(values["readable_by"] or ())
        values["writable_by"] = tuple(values["writable_by"] or ())
        out.append(MediaType(**values))
    return out


def default_params(conn: psycopg.Connection) -> dict[str, ModelParams]:
    return {m.media_type: ModelParams.from_media(m) for m in media_catalog(conn)}


def readable_by(conn: psycopg.Connection) -> dict[str, tuple[str, ...]]:
    return {m.media_type: m.readable_by for m in media_catalog(conn)}


def fits(
    conn: psycopg.Connection, *, current_only: bool = True, media_type: str | None = None
) -> list[StoredFit]:
    """Stored fits, newest first: the current ones, or the whole history."""
    defaults = default_params(conn)
    query = """
        select fit_id, media_type, parameters, n_reads, n_mounts, r2, median_abs_pct_error,
               data_from, data_until, fitted_at, status, forced, notes
        from tapelens.model_params
        where (not %(current)s or status = 'current')
          and (%(media)s::text is null or media_type = %(media)s)
        order by fitted_at desc, fit_id desc"""
    out = []
    for row in fetch(conn, query, {"current": current_only, "media": media_type}):
        values = dict(
            zip(
                (
                    "fit_id",
                    "media_type",
                    "parameters",
                    "n_reads",
                    "n_mounts",
                    "r2",
                    "median_abs_pct_error",
                    "data_from",
                    "data_until",
                    "fitted_at",
                    "status",
                    "forced",
                    "notes",
                ),
                row,
                strict=True,
            )
        )
        fallback = defaults.get(values["media_type"])
        values["params"] = ModelParams.from_dict(values.pop("parameters"), fallback)
        values["notes"] = tuple(values["notes"] or ())
        out.append(StoredFit(**values))
    return out


def params_in_use(conn: psycopg.Connection) -> dict[str, tuple[ModelParams, str]]:
    """Per media type: the parameters predictions use and where they come from."""
    catalog = media_catalog(conn)
    current = {f.media_type: f for f in fits(conn)}
    out: dict[str, tuple[ModelParams, str]] = {}
    for media in catalog:
        fit = current.get(media.media_type)
        if fit is None:
            out[media.media_type] = (ModelParams.from_media(media), f"default ({media.source})")
        else:
            span = _span(fit.data_from, fit.data_until)
            forced = ", forced" if fit.forced else ""
            out[media.media_type] = (
                fit.params,
                f"calibrated {fit.fitted_at:%Y-%m-%d} on {fit.n_reads} reads{span}{forced}",
            )
    return out


def _span(start: datetime | None, end: datetime | None) -> str:
    if start is None or end is None:
        return ""
    return f" {start:%Y-%m-%d}..{end:%Y-%m-%d}"


def save_fit(conn: psycopg.Connection, fit: Fit, *, forced: bool = False) -> int:
    """Store a fit as the current parameters of its media type; the previous one becomes
    history. One transaction (committed here on an autocommit connection, else part of the
    caller's)."""
    try:
        with conn.transaction():
            conn.execute(
                "update tapelens.model_params set status = 'superseded'"
                " where media_type = %s and status = 'current'",
                [fit.media_type],
            )
            row = conn.execute(
                """insert into tapelens.model_params
                       (media_type, parameters, n_reads, n_mounts, r2, median_abs_pct_error,
                        data_from, data_until, forced, notes)
                   values (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
                   returning fit_id""",
                [
                    fit.media_type,
                    Jsonb(fit.params.to_dict()),
                    fit.n_reads,
                    fit.n_mounts,
                    _finite(fit.r2),
                    _finite(fit.median_abs_pct_error),
                    fit.data_from,
                    fit.data_until,
                    forced,
                    list(fit.notes),
                ],
            ).fetchone()
    except psycopg.Error as exc:
        raise DatabaseError(f"cannot store the fit of {fit.media_type}: {one_line(exc)}") from None
    assert row is not None
    return int(row[0])


def _finite(value: float | None) -> float | None:
    return value if value is not None and value == value and abs(value) != float("inf") else None


@dataclass(frozen=True)
class CalibrationRun:
    """What `model calibrate` did: one outcome per media type fitted, and the reads left out
    because their tape's media type is unknown."""

    outcomes: list[Outcome]
    unknown_media_reads: int


@dataclass(frozen=True)
class Outcome:
    """What `model calibrate` did for one media type."""

    fit: Fit
    stored: bool
    fit_id: int | None
    message: str | None


def calibrate_and_store(
    conn: psycopg.Connection,
    *,
    media: Sequence[str] = (),
    since: datetime | None = None,
    until: datetime | None = None,
    min_reads: int = DEFAULT_MIN_READS,
    min_mounts: int = DEFAULT_MIN_MOUNTS,
    force: bool = False,
) -> CalibrationRun:
    """Fit every media type with reads in the window (or those named) and store the fits that
    rest on enough data; a fit on too little data keeps the parameters in use, unless forced."""
    reads = read_observed_reads(conn, since, until, media or None)
    mounts = read_mounts(conn, since, until)
    defaults = default_params(conn)
    if not media and reads.height == 0:
        span = _span(since, until) or " at all"
        raise DatabaseError(f"no observed reads{span} in {'.'.join(READS_RELATION)}")
    current = {f.media_type: f for f in fits(conn)}
    outcomes = []
    for name, fit in calibrate(reads, mounts, defaults, media or None).items():
        held = current.get(name)
        kept = (
            f"the parameters calibrated {held.fitted_at:%Y-%m-%d} on {held.n_reads} reads"
            if held
            else "the defaults"
        )
        store, message = decide(fit, min_reads, min_mounts, force, kept)
        fit_id = save_fit(conn, fit, forced=message is not None) if store else None
        outcomes.append(Outcome(fit, store, fit_id, message))
    unknown = reads.filter(~pl.col("media_type").is_in(list(defaults))).height
    return CalibrationRun(outcomes, unknown)
