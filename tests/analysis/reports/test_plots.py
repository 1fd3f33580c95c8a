"""The report charts: every shape a report prints can be drawn, in a meaningful order."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from tapelens.analysis.reports.plots import period_order, plot_report

PNG = b"\x89PNG\r\n\x1a\n"


def gaps(periods: list[str], mus: list[float | None]) -> pl.DataFrame:
    n = len(periods)
    return pl.DataFrame(
        {
            "dataset_type": ["AOD"] * (n - 1) + ["RAW"],
            "period": periods,
            "mu": mus,
            "n": [0 if mu is None else 3 for mu in mus],
            "sigma": [None] * n,
            "sem": [None] * n,
        },
        schema_overrides={"mu": pl.Float64, "sigma": pl.Float64, "sem": pl.Float64},
    )


def test_a_period_without_counted_gaps_is_left_out_of_the_chart(tmp_path: Path) -> None:
    # A month whose files are all firsts or aggregate members has n = 0 and no mean.
    frame = gaps(["2021-03", "2021-01", "2021-08", "2021-02"], [1.5, None, 2.0, 1.0])
    path = tmp_path / "period.png"
    plot_report("gaps", "period", frame, path)
    assert path.read_bytes()[:8] == PNG


def test_the_cutover_split_reads_before_then_after(tmp_path: Path) -> None:
    assert period_order(["after", "before"]) == ["before", "after"]
    assert period_order(["2021-10", "2020-02", "2021-01"]) == ["2020-02", "2021-01", "2021-10"]
    path = tmp_path / "type.png"
    plot_report("gaps", "type", gaps(["after", "before", "before"], [1.0, 2.5, None]), path)
    assert path.read_bytes()[:8] == PNG
