"""Why a requested file was not found: removed from the catalog (and when), or never in it."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import polars as pl
import psycopg
from psycopg import sql

from tapelens.analysis.recall.plan.planner import RecallPlan
from tapelens.catalog import file_identity
from tapelens.errors import DatabaseError
from tapelens.frames import one_line

# What a request of each kind names, in a catalog row.
_NAMED_BY = {
    "path": sql.SQL("f.path"),
    "file_id": sql.SQL(file_identity("f")),
    "dataset": sql.SQL("f.dataset"),
}


def with_not_found_causes(conn: psycopg.Connection, plan: RecallPlan) -> RecallPlan:
    """The plan with a `cause` for each request the live catalog does not know: removed from
    the catalog (with the date of the newest removal), or never in it."""
    missing = plan.not_found
    if missing.height == 0:
        return plan
    removed: list[tuple[str, str, Any]] = []
    try:
        for kind in ("path", "file_id", "dataset"):
            keys = missing.filter(pl.col("kind") == kind)["key"].unique().to_list()
            if not keys:
                continue
            query = sql.SQL(
                "select k.key, max(f.removed_at) from unnest(%s::text[]) as k(key)"
                " join tapelens.tape_files f on {} = k.key"
                " where f.removed_at is not null group by k.key"
            ).format(_NAMED_BY[kind])
            removed += [(kind, key, at) for key, at in conn.execute(query, [keys]).fetchall()]
    except psycopg.Error as exc:
        raise DatabaseError(one_line(exc)) from None
    when = pl.DataFrame(
        [(kind, key, f"removed from the catalog ({at:%Y-%m-%d})") for kind, key, at in removed],
        schema={"kind": pl.String, "key": pl.String, "cause": pl.String},
        orient="row",
    )
    caused = missing.join(when, on=["kind", "key"], how="left").with_columns(
        pl.col("cause").fill_null("not in the catalog")
    )
    resolution = replace(plan.resolution, not_found=caused)
    return replace(plan, resolution=resolution)
