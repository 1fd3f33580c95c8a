"""The what-if chart (--plot FILE.png): mean gap by placement and dataset type, same numbers."""

from __future__ import annotations

from pathlib import Path

import polars as pl


def plot_mean_gap(frame: pl.DataFrame, path: Path) -> None:
    """Grouped bars: one group per dataset type (and period when split), one bar per placement
    (each policy replayed, and the actual placement)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 5), dpi=110)
    rows = frame.filter(pl.col("mean_gap").is_not_null()) if frame.height else frame
    if rows.height == 0:
        ax.text(0.5, 0.5, "no data", ha="center", va="center")
    else:
        split = rows["period"].n_unique() > 1 or rows["period"][0] != "all"
        label = (
            pl.concat_str("dataset_type", "period", separator=" ")
            if split
            else pl.col("dataset_type")
        )
        rows = rows.with_columns(label.alias("_group"))
        groups = rows["_group"].unique(maintain_order=True).to_list()
        placements = rows["placement"].unique(maintain_order=True).to_list()
        width = 0.8 / len(placements)
        for k, placement in enumerate(placements):
            part = rows.filter(pl.col("placement") == placement)
            value = dict(zip(part["_group"].to_list(), part["mean_gap"].to_list(), strict=True))
            xs = [i + (k - (len(placements) - 1) / 2) * width for i in range(len(groups))]
            ax.bar(xs, [value.get(g, 0.0) for g in groups], width, label=str(placement))
        ax.set_xticks(range(len(groups)), groups)
        ax.axhline(1.0, color="grey", lw=0.8, ls=":")
        ax.set_ylabel("mean read-through gap (posdiff)")
        ax.legend(fontsize=8)
        ax.tick_params(axis="x", rotation=60 if len(groups) > 8 else 0, labelsize=7)
    ax.set_title("tapelens whatif placement: mean gap by placement")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
