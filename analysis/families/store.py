"""What the families advice reads from the database: the written files' hint groups, the recall
campaigns of the history, and the site's write stream and recall setup."""

from __future__ import annotations

from dataclasses import dataclass, replace

import polars as pl
import psycopg
from psycopg import sql

from tapelens.analysis.families.advice import Advice, AdviceOptions, Progress, advise
from tapelens.analysis.whatif.families import LEVELS
from tapelens.analysis.whatif.replay import WhatIfParams
from tapelens.analysis.whatif.store import (
    media_schedule,
    read_copies,
    recall_setup,
    write_stream,
)
from tapelens.dbt_runs import MARTS_SCHEMA
from tapelens.errors import InputError
from tapelens.frames import copy_frame

# Reads of one requester belong to one campaign while each starts within this many seconds of
# the one before: the default of fct_hint_recall_groups (var recall_campaign_gap_s).
CAMPAIGN_GAP_S = 21_600

_GROUPS = sql.SQL(
    "select file_key as file_id, "
    + ", ".join(f"group_{k}" for k in range(LEVELS))
    + " from {}.fct_hinted_files where status = 'ok'"
)

_CAMPAIGNS = sql.SQL(
    """
with reads as (
    select coalesce(requester, 'unknown') as requester, started_at,
           coalesce(file_id, path) as file_id
    from tapelens.transfers
    where direction = 'read' and status = 'ok'
),
marked as (
    select requester, started_at, file_id,
           case when lag(started_at) over w is null
                  or started_at - lag(started_at) over w > {gap} * interval '1 second'
                then 1 else 0 end as starts
    from reads
    window w as (partition by requester order by started_at, file_id)
)
select distinct requester || ':' || sum(starts) over (
           partition by requester order by started_at, starts desc, file_id
           rows unbounded preceding) as campaign,
       file_id
from marked
"""
)


@dataclass(frozen=True)
class SiteAdviceOptions:
    """The catalog side of the advice: the write stream's window and migrations, the drives
    of the recalls (default: the site's)."""

    advice: AdviceOptions
    since_s: float | None = None
    until_s: float | None = None
    drives: dict[str, int] | None = None
    aggregate: bool | None = None


def read_groups(conn: psycopg.Connection) -> pl.DataFrame:
    """Each written file's hint group at every level (the ok records of fct_hinted_files)."""
    schema = {"file_id": pl.String()} | {f"group_{k}": pl.String() for k in range(LEVELS)}
    try:
        return copy_frame(conn, _GROUPS.format(sql.Identifier(MARTS_SCHEMA)), schema)
    except Exception as exc:  # the mart is missing: no hints loaded or marts not built
        if "fct_hinted_files" in str(exc):
            raise InputError(
                "no hint groups: load hints (tapelens ingest hints) and build the marts"
                " (tapelens marts build)"
            ) from None
        raise


def read_campaigns(conn: psycopg.Connection, gap_s: float = CAMPAIGN_GAP_S) -> pl.DataFrame:
    """The files each recall campaign of the history read: campaign, file_id."""
    query = _CAMPAIGNS.format(gap=sql.Literal(float(gap_s)))
    return copy_frame(conn, query, {"campaign": pl.String(), "file_id": pl.String()})


def advise_from_catalog(
    conn: psycopg.Connection,
    params: WhatIfParams,
    options: SiteAdviceOptions,
    progress: Progress | None = None,
) -> Advice:
    """Advise tape families from the catalog, the hints and the history in the database."""
    say = progress or (lambda _m: None)
    say("reading the live copies, hint groups and recall campaigns")
    copies = read_copies(conn)
    stream = write_stream(copies)
    seconds = pl.col("arrived_at").dt.epoch("us").cast(pl.Float64) / 1e6
    if options.since_s is not None:
        stream = stream.filter(seconds >= options.since_s)
    if options.until_s is not None:
        stream = stream.filter(seconds < options.until_s)
    if stream.height == 0:
        raise InputError("no files were written in the chosen window")
    groups = read_groups(conn)
    if groups.height == 0:
        raise InputError("no written file has usable hints (tapelens report hints --by coverage)")
    stream = stream.join(groups, on="file_id", how="left")
    copies = copies.filter(pl.col("file_id").is_in(stream["file_id"].implode()))
    campaigns = read_campaigns(conn)
    if campaigns.height == 0:
        raise InputError("no recalls in the history (tapelens ingest transfers) to price")
    aggregate = options.aggregate
    if aggregate is None:
        aggregate = bool(copies["aggregate_id"].is_not_null().any())
    params = replace(params, media=media_schedule(stream), aggregate=aggregate)
    present = set(copies["media_type"].unique().drop_nulls().to_list())
    recall = recall_setup(conn, options.drives, present | {m for m, _ in params.media})
    return advise(copies, stream, campaigns, recall, params, options.advice, say)
