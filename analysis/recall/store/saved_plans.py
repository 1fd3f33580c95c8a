"""Saved recall plans, and a saved plan compared with the reads the transfers show since."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import polars as pl
import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from tapelens.analysis.recall.plan.planner import RecallPlan
from tapelens.analysis.throughput.model import ModelParams
from tapelens.errors import DatabaseError, InputError
from tapelens.frames import copy_frame, one_line


def save_plan(
    conn: psycopg.Connection,
    name: str,
    plan: RecallPlan,
    params_by_media: dict[str, ModelParams],
) -> bool:
    """Store the plan under `name`, replacing a plan of that name; True when one was replaced.
    Commits: a saved plan stays saved whatever the caller does next."""
    rows = plan.files.select(
        pl.col("order").alias("read_order"),
        "mount_order",
        "drive",
        "volume",
        "position",
        "offset_bytes",
        "path",
        "file_id",
        "size_bytes",
        "requester",
        pl.col("start_s").alias("predicted_start_s"),
        pl.col("end_s").alias("predicted_end_s"),
    )
    used = set(plan.files["media_type"].unique().to_list()) if plan.files.height else set()
    params = {
        **plan.options.as_dict(),
        "model": {m: p.to_dict() for m, p in params_by_media.items() if m in used},
    }
    columns = sql.SQL(", ").join(sql.Identifier(c) for c in rows.columns)
    try:
        with conn.transaction(), conn.cursor() as cur:
            cur.execute("delete from tapelens.recall_plans where name = %s", [name])
            replaced = cur.rowcount > 0
            cur.execute(
                "insert into tapelens.recall_plans (name, summary, params) values (%s, %s, %s)",
                [name, Jsonb(plan.summary), Jsonb(params)],
            )
            statement = sql.SQL(
                "copy tapelens.recall_plan_files (plan_name, {}) from stdin (format csv)"
            ).format(columns)
            with cur.copy(statement) as copy:
                copy.write(
                    rows.with_columns(pl.lit(name).alias("_plan"))
                    .select("_plan", *rows.columns)
                    .write_csv(include_header=False)
                )
        conn.commit()
    except psycopg.Error as exc:
        raise DatabaseError(one_line(exc)) from None
    return replaced


PLAN_FILES_SCHEMA: dict[str, Any] = {
    "read_order": pl.Int64,
    "drive": pl.String,
    "volume": pl.String,
    "path": pl.String,
    "file_id": pl.String,
    "size_bytes": pl.Int64,
    "predicted_start_s": pl.Float64,
    "predicted_end_s": pl.Float64,
    "actual_volume": pl.String,
    "actual_drive": pl.String,
    "actual_started_at": pl.Float64,
    "actual_duration_s": pl.Float64,
}

# The first read of each planned file is the view tapelens.recall_plan_reads (migration 023),
# which the dashboards' plan views read too.
_COMPARE_QUERY = """
select p.read_order, p.drive, p.volume, p.path, p.file_id, p.size_bytes, p.predicted_start_s,
       p.predicted_end_s, r.volume as actual_volume, r.drive as actual_drive,
       extract(epoch from r.started_at) as actual_started_at, r.duration_s as actual_duration_s
from tapelens.recall_plan_files p
left join tapelens.recall_plan_reads r on r.plan_name = p.plan_name and r.read_order = p.read_order
where p.plan_name = {name}
order by p.read_order
"""


@dataclass(frozen=True)
class PlanComparison:
    name: str
    summary: dict[str, Any]
    files: pl.DataFrame  # per planned file: predicted and actual start/end (seconds from start)


def compare_plan(conn: psycopg.Connection, name: str) -> PlanComparison:
    """Match a saved plan with the reads the transfers show since it was made."""
    try:
        row = conn.execute(
            "select summary from tapelens.recall_plans where name = %s", [name]
        ).fetchone()
        if row is None:
            known = [
                r[0] for r in conn.execute("select name from tapelens.recall_plans order by 1")
            ]
            hint = f" (saved plans: {', '.join(known[:10])})" if known else " (none saved yet)"
            raise InputError(f"no saved recall plan named {name!r}{hint}")
        (summary,) = row
        with conn.cursor() as cur:
            query = sql.SQL(_COMPARE_QUERY).format(name=sql.Literal(name))
            files = copy_frame(cur, query, PLAN_FILES_SCHEMA)
    except psycopg.Error as exc:
        raise DatabaseError(one_line(exc)) from None
    return PlanComparison(name, *compare_frames(files, summary))


def compare_frames(
    files: pl.DataFrame, plan_summary: dict[str, Any]
) -> tuple[dict[str, Any], pl.DataFrame]:
    """The comparison in figures, and per file predicted against actual times (pure).

    Actual times count from the first read seen; a read whose log names no volume counts as
    read from the planned one. Durations compare the model's per-file time (positioning
    included) with the logged transfer time.
    """
    first = files.select(pl.col("actual_started_at").min()).item()
    t0 = float(first) if first is not None else 0.0
    per_file = files.with_columns(
        (pl.col("actual_started_at") - t0).alias("actual_start_s"),
    ).with_columns(
        (pl.col("actual_start_s") + pl.col("actual_duration_s")).alias("actual_end_s"),
        (pl.col("predicted_end_s") - pl.col("predicted_start_s")).alias("predicted_duration_s"),
    )
    read = per_file.filter(pl.col("actual_started_at").is_not_null())
    figures = read.select(
        pl.col("actual_end_s").max().alias("makespan"),
        (
            (pl.col("actual_duration_s") - pl.col("predicted_duration_s")).abs()
            / pl.col("actual_duration_s")
        )
        .filter(pl.col("actual_duration_s") > 0)
        .median()
        .alias("error"),
        (pl.col("actual_volume").is_null() | (pl.col("actual_volume") == pl.col("volume")))
        .sum()
        .alias("on_plan"),
        pl.corr(pl.col("read_order").rank(), pl.col("actual_start_s").rank()).alias("corr"),
    ).row(0, named=True)
    makespan, error, corr = figures["makespan"], figures["error"], figures["corr"]
    summary = {
        "planned_files": files.height,
        "files_read": read.height,
        "files_not_read": files.height - read.height,
        "read_from_planned_volume": int(figures["on_plan"] or 0),
        "predicted_makespan_s": plan_summary.get("makespan_s"),
        "actual_makespan_s": round(makespan, 3) if makespan is not None else None,
        "median_abs_pct_error_duration": round(error * 100, 2) if error is not None else None,
        "order_rank_correlation": (
            round(corr, 4) if read.height > 2 and corr is not None and corr == corr else None
        ),
    }
    if makespan and plan_summary.get("makespan_s"):
        summary["actual_over_predicted"] = round(makespan / plan_summary["makespan_s"], 4)
    return summary, per_file


def summary_json(comparison: PlanComparison) -> str:
    return json.dumps({"plan": comparison.name, **comparison.summary}, indent=2)
