"""Repack candidates as a picture: drive hours saved per recall against repack cost."""

from __future__ import annotations

from pathlib import Path

import polars as pl


def plot_gain_cost(candidates: pl.DataFrame, path: Path) -> None:
    """One point per candidate, coloured by kind, with the payback lines of 1, 3 and 10
    recalls: points above a line pay back in fewer recalls."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 5), dpi=110)
    usable = (
        candidates.filter(pl.col("saving_per_recall_drive_h") > 0)
        if "saving_per_recall_drive_h" in candidates.columns
        else candidates.clear()
    )
    if usable.height == 0:
        ax.text(0.5, 0.5, "no candidate saves drive time", ha="center", va="center")
    else:
        for kind, part in usable.group_by("kind", maintain_order=True):
            ax.scatter(
                part["repack_cost_h"].to_list(),
                part["saving_per_recall_drive_h"].to_list(),
                s=14,
                label=str(kind[0]),
            )
        top = max(usable["repack_cost_h"].to_list() + [1.0])
        for recalls in (1, 3, 10):
            ax.plot([0, top], [0, top / recalls], color="grey", lw=0.7, ls=":")
            ax.annotate(f"payback {recalls}", (top, top / recalls), fontsize=7, color="grey")
        ax.set_xscale("symlog")
        ax.set_yscale("symlog")
        ax.legend(fontsize=8)
    ax.set_xlabel("repack cost (drive hours: read + write)")
    ax.set_ylabel("drive hours saved per recall")
    ax.set_title("tapelens plan repack: gain vs cost")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
