"""Charts of the report figures (--plot FILE.png): one picture per report, same numbers."""

from __future__ import annotations

import math
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl


def plot_report(report: str, by: str, frame: pl.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import ScalarFormatter

    fig, ax = plt.subplots(figsize=(9, 5), dpi=110)
    if frame.height == 0:
        ax.text(0.5, 0.5, "no data", ha="center", va="center")
    elif report == "gaps" and by in ("type", "period"):
        # One x axis for every type, in time order: write months as dates (months without
        # data keep their place), the cutover split as two places, before then after. Periods
        # with no counted gap have no mean and are left out.
        periods = period_order(frame["period"].unique().to_list())
        months = by == "period" and all(_is_month(p) for p in periods)
        at: dict[str, Any] = {
            p: (datetime.strptime(p, "%Y-%m") if months else i) for i, p in enumerate(periods)
        }
        rank = {p: i for i, p in enumerate(periods)}
        shown = frame.filter(pl.col("mu").is_not_null())
        for dtype, part in shown.group_by("dataset_type", maintain_order=True):
            part = part.sort(pl.col("period").replace_strict(rank, return_dtype=pl.Int64))
            ax.errorbar(
                [at[p] for p in part["period"].to_list()],
                part["mu"].to_list(),
                yerr=part["sem"].fill_null(0).to_list(),
                marker="o",
                markersize=3,
                lw=0.8,
                capsize=2,
                label=str(dtype[0]),
            )
        if not months:
            ax.set_xticks(range(len(periods)), periods)
        ax.set_xlabel("write month" if by == "period" else "written before / after the cutover")
        ax.set_ylabel("mean counted gap (posdiff 1-99), ± standard error")
        ax.axhline(1.0, color="grey", lw=0.8, ls=":")
        ax.legend(fontsize=8)
        ax.tick_params(axis="x", rotation=60, labelsize=7)
    elif report == "gaps":
        means = [m for m in frame["mu"].drop_nulls().to_list() if m > 0]
        if means and max(means) / min(means) > 8:
            # Mean gaps run from 1 (streaming) to tens: log-spaced bins on a log axis, so the
            # many datasets near 1 and the few scattered ones both show.
            first, last = math.log10(min(means)), math.log10(max(means))
            edges = [10 ** (first + (last - first) * i / 40) for i in range(41)]
            ax.hist(means, bins=edges)
            ax.set_xscale("log")
            ax.xaxis.set_major_formatter(ScalarFormatter())  # 1, 10, not 10^0, 10^1
        else:
            ax.hist(means, bins=40)
        ax.set_xlabel(f"mean counted gap per {by} (posdiff 1-99)")
        ax.set_ylabel(f"{by}s")
    elif report == "duplicates" and by == "file":
        ax.hist(
            frame["copies"].to_list(), bins=range(2, _int(frame["copies"].max(), 2) + 2), log=True
        )
        ax.set_xlabel("copies per duplicated file")
        ax.set_ylabel("files")
    elif report == "duplicates":
        ax.hist(frame["duplicated_files"].to_list(), bins=40, log=True)
        ax.set_xlabel(f"duplicated files per {by}")
    elif report == "tapes" and by == "dataset":
        ax.scatter(frame["tapes_needed"].to_list(), frame["tapes_used"].to_list(), s=8)
        top = max(_int(frame["tapes_used"].max(), 1), 1)
        ax.plot([0, top], [0, top], color="grey", lw=0.8, ls=":")
        ax.set_xlabel("tapes needed at capacity")
        ax.set_ylabel("tapes used")
    elif report == "tapes":
        ax.bar(frame["dataset_type"].to_list(), frame["mean_tapes_used"].to_list())
        ax.set_ylabel("mean tapes used per dataset")
    elif report == "occupancy" and by == "tape":
        ax.hist(frame["occupancy"].drop_nulls().to_list(), bins=40)
        ax.set_xlabel("occupancy (live bytes / capacity)")
        ax.set_ylabel("tapes")
    elif report == "occupancy":
        ax.bar(frame["media_type"].to_list(), frame["mean_occupancy"].to_list())
        ax.set_ylabel("mean occupancy")
    elif report == "rates" and by == "gap":
        # One bin a place, in gap order, with the middle half of the reads' rates around the
        # median: a read-rate curve that a few reads cannot make zigzag.
        bins = list(range(frame.height))
        median = frame["median_rate_mb_s"].to_list()
        low = [m - q for m, q in zip(median, frame["p25_rate_mb_s"].to_list(), strict=True)]
        high = [q - m for m, q in zip(median, frame["p75_rate_mb_s"].to_list(), strict=True)]
        ax.errorbar(bins, median, yerr=[low, high], fmt="o", capsize=3)
        ax.set_xticks(bins, [f"{g}\n{n:,} reads" for g, n in frame.select("gap", "reads").rows()])
        ax.tick_params(axis="x", labelsize=7)
        ax.set_xlabel("gap at read time (posdiff from the previous read in the mount)")
        ax.set_ylabel("read rate, MB/s (median, 25th-75th percentile)")
    elif report == "hints":
        _plot_hints(ax, by, frame)
    else:
        labels = [str(v) for v in frame[frame.columns[0]].to_list()]
        ax.bar(labels, frame["median_rate_mb_s"].to_list())
        ax.set_ylabel("median rate (MB/s)")
        ax.tick_params(axis="x", rotation=60, labelsize=7)
    ax.set_title(f"tapelens report {report} --by {by}")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _plot_hints(ax: Any, by: str, frame: pl.DataFrame) -> None:
    """Coverage: the share of files with hints per month, a line per experiment; groups: tapes
    used against needed, a colour per level; per level: the mean gap of its groups, or the share
    of a recall campaign's files its largest group holds."""
    if by == "coverage":
        months = frame.group_by("experiment", "month").agg(
            (pl.col("hinted_files").sum() / pl.col("files").sum()).alias("share")
        )
        for (experiment,), part in months.sort("month").group_by("experiment", maintain_order=True):
            ax.plot(part["month"].to_list(), part["share"].to_list(), marker="o", label=experiment)
        ax.set_ylabel("share of written files with hints")
        ax.legend(fontsize=8)
        ax.tick_params(axis="x", rotation=60, labelsize=7)
    elif by == "groups":
        for (level,), part in frame.group_by("level", maintain_order=True):
            ax.scatter(
                part["tapes_needed"].to_list(),
                part["tapes_used"].to_list(),
                s=8,
                label=f"level {level}",
            )
        top = max(_int(frame["tapes_used"].max(), 1), 1)
        ax.plot([0, top], [0, top], color="grey", lw=0.8, ls=":")
        ax.set_xlabel("tapes needed at capacity")
        ax.set_ylabel("tapes used")
        ax.legend(fontsize=8)
    elif by == "recall":
        levels = [str(v) for v in frame["level"].to_list()]
        ax.bar(levels, frame["top_group_share"].fill_null(0).to_list())
        ax.set_xlabel("hint level (0 broad, 3 narrow)")
        ax.set_ylabel("share of a campaign's files in its largest group")
    else:
        ax.bar([str(v) for v in frame["level"].to_list()], frame["mean_gap"].fill_null(0).to_list())
        ax.set_xlabel("hint level (0 broad, 3 narrow)")
        ax.set_ylabel("mean gap between a group's files")


def period_order(periods: list[str]) -> list[str]:
    """Periods in time order: write months (YYYY-MM) sort as text; the cutover split is
    "before" then "after"."""
    rank = {"before": 0, "after": 1}
    return sorted(periods, key=lambda p: (rank.get(p, -1), p))


def _is_month(period: str) -> bool:
    try:
        datetime.strptime(period, "%Y-%m")
    except ValueError:
        return False
    return True


def _int(value: object, default: int) -> int:
    return int(value) if isinstance(value, int | float) else default
