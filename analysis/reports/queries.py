"""Gap, duplicate, tape, occupancy, rate and hint reports over the dbt marts.

Each report is a query over tapelens_marts (built by `tapelens marts build`) returning a frame;
figures that need the published conventions (mu, sigma, sem of counted-gap posdiff) come from
the marts' sums, so a report never re-derives them differently.

Each query is written once, in SQL that PostgreSQL and Spark both run; the few forms they spell
differently (the float cast, a month as text, an array joined or unnested, the parameter
markers) come from the engine's `Dialect` (tapelens.frames).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import polars as pl

from tapelens.analysis.recall.datasets.stored import TAPES as PLACED_TAPES
from tapelens.dbt_runs import MARTS_SCHEMA
from tapelens.errors import InputError
from tapelens.frames import POSTGRES, Dialect, sorted_and_cut

REPORTS = ("gaps", "duplicates", "tapes", "occupancy", "rates", "hints")
GROUPINGS = {
    "gaps": ("type", "period", "dataset", "tape"),
    "duplicates": ("file", "dataset", "tape"),
    "tapes": ("dataset", "type"),
    "occupancy": ("tape", "media"),
    "rates": ("gap", "type", "tape", "period", "size"),
    "hints": ("coverage", "groups", "level", "recall"),
}
DEFAULT_BY = {
    "gaps": "type",
    "duplicates": "file",
    "tapes": "dataset",
    "occupancy": "tape",
    "rates": "gap",
    "hints": "coverage",
}
M = MARTS_SCHEMA


@dataclass(frozen=True)
class ReportFilter:
    since: datetime | None = None
    until: datetime | None = None
    dataset_type: str | None = None
    limit: int | None = None


def _where(
    f: ReportFilter, d: Dialect, time_col: str, type_col: str = "dataset_type"
) -> tuple[str, list]:
    clauses: list[str] = []
    params: list[object] = []
    for value, op in ((f.since, ">="), (f.until, "<")):
        if value is not None:
            params.append(value)
            clauses.append(f"{time_col} {op} {d.param(len(params))}")
    if f.dataset_type:
        params.append(f.dataset_type.upper())
        clauses.append(f"{type_col} = {d.param(len(params))}")
    return (" where " + " and ".join(clauses) if clauses else ""), params


def _stats(d: Dialect, n: str, s1: str, s2: str) -> str:
    """n, mu and sample sigma from per-group counts and sums (the marts' sums of posdiff)."""
    f8 = d.float8
    return (
        f"sum({n})::bigint as n, sum({s1})::{f8} / nullif(sum({n}), 0) as mu,"
        f" sqrt(greatest(sum({s2})::{f8} - power(sum({s1})::{f8}, 2) / nullif(sum({n}), 0), 0)"
        f" / nullif(sum({n}) - 1, 0)) as sigma"
    )


def gaps_query(by: str, f: ReportFilter, d: Dialect = POSTGRES) -> tuple[str, list]:
    if by in ("type", "period") and f.since is None and f.until is None:
        kind = "cutover" if by == "type" else "month"
        where, params = _where(f, d, "null", "dataset_type")
        where = where.replace(" where ", " and ", 1) if where else ""
        return (
            f"select dataset_type, period, mu::{d.float8} as mu, n::bigint as n,"
            f" sigma::{d.float8} as sigma, sem::{d.float8} as sem"
            f" from {M}.agg_gap_by_type_period where period_kind = '{kind}'{where}"
            f" order by dataset_type, period",
            params,
        )
    if by in ("type", "period"):
        where, params = _where(f, d, "written_at")
        cond = "gap_class = 'counted'"
        where = f"{where} and {cond}" if where else f" where {cond}"
        period = d.month("written_at") if by == "period" else "'selected'"
        return (
            f"select dataset_type, period, mu, n, sigma, sigma / sqrt(n) as sem from ("
            f" select dataset_type, {period} as period, count(*)::bigint as n,"
            f" avg(posdiff)::{d.float8} as mu, stddev_samp(posdiff)::{d.float8} as sigma"
            f" from {M}.fct_file_gaps{where} group by 1, 2) g order by 1, 2",
            params,
        )
    where, params = _where(f, d, "g.last_written_at", "g.dataset_type")
    key = "g.dataset, g.dataset_type" if by == "dataset" else "g.volume, g.media_type"
    # Ranked by the absolute cost, the placement cost the recall engine prices after each
    # marts build (analysis/recall/datasets), summed over the tapes kept, with the ratios
    # beside it: a one-file dataset with a large gap costs little. files counts live copies.
    return (
        f"select {key}, count(*)::bigint as {'tapes' if by == 'dataset' else 'datasets'},"
        f" sum(g.files)::bigint as copies,"
        f" coalesce(sum(p.placement_cost_s), 0)::{d.float8} as placement_cost_s,"
        f" {_stats(d, 'g.n_counted_gaps', 'g.sum_posdiff', 'g.sum_posdiff_sq')},"
        f" sum(g.n_locates)::bigint as locates,"
        f" (sum(g.size_bytes)::{d.float8}"
        f"  / nullif(sum(g.size_bytes + g.counted_gap_bytes), 0)) as rate_factor"
        f" from {M}.fct_dataset_tape_gaps as g left join {M}.{PLACED_TAPES} as p"
        f" on p.dataset = g.dataset and p.volume = g.volume{where} group by {key}"
        f" order by placement_cost_s desc, mu desc nulls last, {key}",
        params,
    )


def duplicates_query(by: str, f: ReportFilter, d: Dialect = POSTGRES) -> tuple[str, list]:
    where, params = _where(f, d, "last_written_at")
    if by == "file":
        return (
            # What matters first (a table drops its last columns to fit a terminal).
            f"select path, copies::bigint as copies, n_volumes::bigint as n_volumes,"
            f" extra_mounts::bigint as extra_mounts, size_bytes::bigint as size_bytes,"
            f" newest_off_main, dataset_type, {d.join('volumes', ',')} as volumes,"
            f" first_written_at, last_written_at, dataset, file_id"
            f" from {M}.fct_duplicate_copies{where} order by copies desc, file_id",
            params,
        )
    key = "dataset, dataset_type" if by == "dataset" else f"{d.unnest('volumes')} as volume"
    group = "dataset, dataset_type" if by == "dataset" else "volume"
    return (
        f"select {group}, count(*)::bigint as duplicated_files,"
        f" sum(extra_copies)::bigint as extra_copies, sum(extra_bytes)::bigint as extra_bytes,"
        f" sum(extra_mounts)::bigint as extra_mounts"
        f" from (select {key}, extra_copies, extra_bytes, extra_mounts"
        f" from {M}.fct_duplicate_copies{where}) d group by {group}"
        f" order by duplicated_files desc, {group}",
        params,
    )


def tapes_query(by: str, f: ReportFilter, d: Dialect = POSTGRES) -> tuple[str, list]:
    where, params = _where(f, d, "last_written_at")
    if by == "dataset":
        return (
            f"select dataset, files::bigint as live_files, tapes_used::bigint as tapes_used,"
            f" tapes_needed::bigint as tapes_needed, extra_mounts::bigint as extra_mounts,"
            f" mean_gap::{d.float8} as mean_gap, size_bytes::bigint as size_bytes,"
            f" main_tapes::bigint as main_tapes, duplicate_copies::bigint as duplicate_copies,"
            f" small_file_share::{d.float8} as small_file_share, dataset_type"
            f" from {M}.dim_datasets{where}"
            f" order by tapes_used - tapes_needed desc, dataset",
            params,
        )
    return (
        f"select dataset_type, count(*)::bigint as datasets,"
        f" avg(tapes_used)::{d.float8} as mean_tapes_used,"
        f" avg(tapes_needed)::{d.float8} as mean_tapes_needed,"
        f" max(tapes_used)::bigint as max_tapes_used,"
        f" sum(tapes_used - tapes_needed)::bigint as excess_tapes"
        f" from {M}.dim_datasets{where} group by dataset_type order by dataset_type",
        params,
    )


def occupancy_query(by: str, f: ReportFilter, d: Dialect = POSTGRES) -> tuple[str, list]:
    where, params = _where(f, d, "last_written_at", "null")
    if f.dataset_type:
        where, params = _where(ReportFilter(f.since, f.until), d, "last_written_at")
    if by == "tape":
        return (
            f"select volume, media_type, state, capacity_bytes::bigint as capacity_bytes,"
            f" files::bigint as copies, live_bytes::bigint as live_bytes,"
            f" duplicate_bytes::bigint as duplicate_bytes,"
            f" occupancy::{d.float8} as occupancy, n_datasets::bigint as datasets,"
            f" small_file_share::{d.float8} as small_file_share,"
            f" datasets_mean_gap::{d.float8} as datasets_mean_gap"
            f" from {M}.fct_tape_occupancy{where} order by occupancy nulls first, volume",
            params,
        )
    return (
        f"select media_type, count(*)::bigint as tapes,"
        f" avg(occupancy)::{d.float8} as mean_occupancy,"
        f" sum(live_bytes)::bigint as live_bytes, sum(duplicate_bytes)::bigint as duplicate_bytes,"
        f" sum(capacity_bytes)::bigint as capacity_bytes"
        f" from {M}.fct_tape_occupancy{where} group by media_type order by media_type",
        params,
    )


# Gap bins of `report rates --by gap`: the gaps a tape streams through one by one, then wider
# bins up to the locate threshold (posdiff >= 100), each with its lower bound for the order.
# Reads without a previous read in their mount keep their class (first, same_object).
GAP_BINS: tuple[tuple[int, str], ...] = (
    (1, "1"),
    (2, "2"),
    (3, "3"),
    (4, "4-5"),
    (6, "6-10"),
    (11, "11-20"),
    (21, "21-50"),
    (51, "51-99"),
    (100, ">= 100 (locate)"),
)


def _gap_bin() -> tuple[str, str]:
    """The label and the sort key of a read's gap bin, as SQL."""
    label = "case when read_posdiff is null then read_gap_class"
    label += " when read_posdiff < 0 then 'backward' when read_posdiff = 0 then 'same object'"
    order = "case when read_posdiff is null then -3 when read_posdiff < 0 then -2"
    order += " when read_posdiff = 0 then -1"
    for i, (low, name) in reversed(list(enumerate(GAP_BINS))):
        label += f" when read_posdiff >= {low} then '{name}'"
        order += f" when read_posdiff >= {low} then {i}"
    return label + " end", order + " end"


def rates_query(by: str, f: ReportFilter, d: Dialect = POSTGRES) -> tuple[str, list]:
    where, params = _where(f, d, "started_at")
    gap_label, gap_order = _gap_bin()
    key = {
        "gap": f"{gap_order}, {gap_label}",
        "type": "dataset_type",
        "tape": "volume, media_type",
        "period": d.month("started_at"),
        "size": "case when size_bytes < 1e8 then '< 100 MB' when size_bytes < 1e9 then"
        " '100 MB - 1 GB' when size_bytes < 1e10 then '1 - 10 GB' else '>= 10 GB' end",
    }[by]
    # Size classes in size order, not in the order of their names.
    order = "min(size_bytes)" if by == "size" else key
    names = {
        "gap": f"{gap_label} as gap",
        "type": "dataset_type",
        "tape": "volume, media_type",
        "period": f"{key} as period",
        "size": f"{key} as size_class",
    }[by]
    return (
        f"select {names}, count(*)::bigint as reads, sum(size_bytes)::bigint as bytes,"
        f" avg(rate_mb_s)::{d.float8} as mean_rate_mb_s,"
        f" percentile_cont(0.25) within group (order by rate_mb_s)::{d.float8} as p25_rate_mb_s,"
        f" percentile_cont(0.5) within group (order by rate_mb_s)::{d.float8} as median_rate_mb_s,"
        f" percentile_cont(0.75) within group (order by rate_mb_s)::{d.float8} as p75_rate_mb_s,"
        f" sum(size_bytes)::{d.float8} / 1e6 / nullif(sum(duration_s), 0) as aggregate_rate_mb_s"
        f" from {M}.fct_transfer_rates{where} group by {key} order by {order}",
        params,
    )


def hints_query(by: str, f: ReportFilter, d: Dialect = POSTGRES) -> tuple[str, list]:
    """Collocation hints: their coverage by experiment, activity and month; each hint group
    at each level; per level, how well its groups sit on tape today, or how much of what each
    recall campaign read falls in one of its groups."""
    if f.dataset_type:
        raise InputError("report hints has no dataset type: hint groups are named by level")
    if by == "coverage":
        where, params = _where(f, d, "month")
        return (
            f"select experiment, activity, {d.date_month('month')} as month,"
            f" files::bigint as files, hinted_files::bigint as hinted_files,"
            f" hinted_share::{d.float8} as hinted_share, empty_files::bigint as empty_files,"
            f" absent_files::bigint as absent_files,"
            f" unreadable_files::bigint as unreadable_files,"
            f" contradictory_files::bigint as contradictory_files,"
            f" size_bytes::bigint as size_bytes, hinted_bytes::bigint as hinted_bytes,"
            f" hinted_bytes_share::{d.float8} as hinted_bytes_share,"
            f" empty_bytes::bigint as empty_bytes, truncated_files::bigint as truncated_files,"
            f" files_on_tape::bigint as files_on_tape"
            f" from {M}.fct_hint_coverage{where} order by experiment, activity, month",
            params,
        )
    if by == "recall":
        # Of the hinted files each campaign recalled, the share its largest group holds,
        # pooled per level: the level whose groups are what campaigns ask for scores near 1.
        where, params = _where(f, d, "campaign_start")
        return (
            f"select level, count(*)::bigint as campaigns,"
            f" sum(hinted_files)::bigint as hinted_files,"
            f" (sum(top_group_files)::{d.float8} / nullif(sum(hinted_files), 0))"
            f" as top_group_share, avg(groups)::{d.float8} as mean_groups,"
            f" sum(files_recalled)::bigint as files_recalled"
            f" from {M}.fct_hint_recall_groups{where} group by level order by level",
            params,
        )
    where, params = _where(f, d, "last_written_at")
    if by == "groups":
        return (
            f"select level, hint_group, files::bigint as files,"
            f" tapes_used::bigint as tapes_used, tapes_needed::bigint as tapes_needed,"
            f" mean_gap::{d.float8} as mean_gap,"
            f" interleaved_share::{d.float8} as interleaved_share,"
            f" size_bytes::bigint as size_bytes, announced_files::bigint as announced_files,"
            f" announced_bytes::bigint as announced_bytes,"
            f" files_on_tape::bigint as files_on_tape, n_locates::bigint as locates,"
            f" experiment, first_written_at, last_written_at"
            f" from {M}.fct_hint_groups{where} order by level, hint_group",
            params,
        )
    # Per level: the gaps and spans pooled over its groups (sums, not means of means).
    return (
        f"select level, count(*)::bigint as groups, sum(files)::bigint as files,"
        f" sum(tapes_used)::bigint as tapes_used, sum(tapes_needed)::bigint as tapes_needed,"
        f" (sum(mean_gap * n_counted_gaps) / nullif(sum(n_counted_gaps), 0))::{d.float8}"
        f" as mean_gap,"
        f" (sum(span_positions - held_positions)::{d.float8} / nullif(sum(span_positions), 0))"
        f" as interleaved_share, sum(n_locates)::bigint as locates,"
        f" sum(size_bytes)::bigint as size_bytes"
        f" from {M}.fct_hint_groups{where} group by level order by level",
        params,
    )


QUERIES = {
    "gaps": gaps_query,
    "duplicates": duplicates_query,
    "tapes": tapes_query,
    "occupancy": occupancy_query,
    "rates": rates_query,
    "hints": hints_query,
}


# The count each grouping's figures rest on: --min-files leaves out the groups with fewer, so that
# a dataset of one gap cannot top a ranking. A gap ranking rests on its counted gap samples
# (n), not on its files: the first file on each tape and aggregate members give no gap.
COUNT_COLUMN: dict[tuple[str, str], str] = {
    ("gaps", "type"): "n",
    ("gaps", "period"): "n",
    ("gaps", "dataset"): "n",
    ("gaps", "tape"): "n",
    ("duplicates", "file"): "copies",
    ("duplicates", "dataset"): "duplicated_files",
    ("duplicates", "tape"): "duplicated_files",
    ("tapes", "dataset"): "live_files",
    ("tapes", "type"): "datasets",
    ("occupancy", "tape"): "copies",
    ("occupancy", "media"): "tapes",
    ("rates", "gap"): "reads",
    ("rates", "type"): "reads",
    ("rates", "tape"): "reads",
    ("rates", "period"): "reads",
    ("rates", "size"): "reads",
    ("hints", "coverage"): "files",
    ("hints", "groups"): "files",
    ("hints", "level"): "groups",
    ("hints", "recall"): "campaigns",
}


# The columns that decide each table: what it is ranked by and what that rests on. A table
# fitted to a terminal never leaves them out.
DECIDES: dict[str, tuple[str, ...]] = {
    "gaps": ("placement_cost_s", "mu", "n"),
    "duplicates": ("copies", "duplicated_files", "extra_mounts"),
    "tapes": ("tapes_used", "tapes_needed", "excess_tapes"),
    "occupancy": ("occupancy", "mean_occupancy"),
    "rates": ("reads", "median_rate_mb_s", "aggregate_rate_mb_s"),
}


# Figures are given to this many significant digits: an engine that sums in another order
# (Spark's partitions, PostgreSQL's parallel workers) changes a float's last bits, never these.
SIGNIFICANT = 9


def rounded(frame: pl.DataFrame, digits: int = SIGNIFICANT) -> pl.DataFrame:
    """The frame with every float rounded to `digits` significant digits, each the nearest
    float to its decimal (scaled by an exact power of ten, rounded, scaled back)."""
    floats = [name for name, dtype in frame.schema.items() if dtype.is_float()]
    return frame.with_columns(_significant(pl.col(name), digits) for name in floats)


def _significant(value: pl.Expr, digits: int) -> pl.Expr:
    shift = (digits - 1 - value.abs().log10().floor()).fill_nan(0)
    up = (value * pl.lit(10.0).pow(shift)).round() / pl.lit(10.0).pow(shift)
    down = (value / pl.lit(10.0).pow(-shift)).round() * pl.lit(10.0).pow(-shift)
    # Powers of ten are exact floats up to 1e22: figures beyond (none a report gives) stay.
    return (
        pl.when((value == 0) | ~value.is_finite() | (shift.abs() > 22))
        .then(value)
        .when(shift >= 0)
        .then(up)
        .otherwise(down)
    )


def arrange(
    frame: pl.DataFrame,
    report: str,
    by: str,
    *,
    min_files: int | None = None,
    sort: str | None = None,
    descending: bool = False,
    limit: int | None = None,
) -> pl.DataFrame:
    """A report's rows with groups under `min_files` left out, sorted by `sort`, then cut to
    `limit`. Raises InputError naming the columns when `sort` is not one of them."""
    if min_files is not None:
        column = COUNT_COLUMN[(report, by)]
        frame = frame.filter(pl.col(column) >= min_files)
    return sorted_and_cut(frame, sort, descending, limit)


def report_query(
    report: str, by: str | None, f: ReportFilter, dialect: Dialect = POSTGRES
) -> tuple[str, list]:
    """The SQL (in `dialect`, its parameter markers) and parameters of one report."""
    chosen = by or DEFAULT_BY[report]
    sql, params = QUERIES[report](chosen, f, dialect)
    if f.limit:
        sql += f" limit {int(f.limit)}"
    return sql, params
