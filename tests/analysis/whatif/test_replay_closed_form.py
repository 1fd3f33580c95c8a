"""The replay against a case worked out by hand: D datasets whose files arrive interleaved over
B migrations, written to one tape by one drive.

Each migration holds m files of every dataset, arrived in turn (d0, d1, d2, d3, d0, ...).

- sorted-by-directory: within a migration a dataset's m files are adjacent (gap 1); from its
  last file in one migration to its first in the next lie the (D - 1) m files of the other
  datasets, so that gap is (D - 1) m + 1. Mean over the n - 1 = B m - 1 gaps of a dataset:
  (B (m - 1) + (B - 1) ((D - 1) m + 1)) / (B m - 1).
- fifo: the turn makes every gap D, across migrations too (the dataset's last file in one is
  the d-th of its last turn, its next the d-th of the next migration's first turn).
- One migration of everything (B = 1 here, m = n): sorted gives 1, fifo gives D.

This is why a replay with daily migrations can show a far larger gap for sorted writes than a
site that migrates every few terabytes or months: a sort can only group what waits together.
"""

from __future__ import annotations

from dataclasses import replace

import polars as pl
import pytest

from tapelens.analysis.whatif.replay import WhatIfParams, arrival_note, replay
from tapelens.analysis.whatif.stats import summarise

GB = 1_000_000_000
DAY = 86_400.0
D, B, M = 4, 4, 5  # datasets, migrations, files of each dataset per migration


def stream(migrations: int = B, per: int = M) -> pl.DataFrame:
    rows = []
    for b in range(migrations):
        t0 = b * 3 * DAY  # migrations well apart: a day's window closes on each alone
        for k in range(per):
            for d in range(D):
                rows.append(
                    {
                        "dataset": f"/data/d{d}",
                        "dataset_type": "AOD",
                        "path": f"/data/d{d}/f{b * per + k:03d}",
                        "size_bytes": GB,
                        "arrived_at": t0 + 10.0 * (k * D + d),
                    }
                )
    return pl.DataFrame(rows)


def mean_gap(placed: pl.DataFrame) -> float:
    stats = summarise(placed, "arrived_at", None, None, None)
    (mu,) = stats.filter(pl.col("dataset_type") == "AOD")["mean_gap"].to_list()
    return float(mu)


PARAMS = WhatIfParams(window_s=DAY, write_drives=1, aggregate=False)


def test_sorted_migrations_of_a_day_give_the_worked_out_gap() -> None:
    placed = replay(stream(), replace(PARAMS, policy="sorted-by-directory"))
    expected = (B * (M - 1) + (B - 1) * ((D - 1) * M + 1)) / (B * M - 1)
    assert mean_gap(placed) == pytest.approx(expected)  # 64 / 19 = 3.37
    assert placed["volume"].n_unique() == 1


def test_fifo_migrations_of_a_day_give_the_worked_out_gap() -> None:
    assert mean_gap(replay(stream(), PARAMS)) == pytest.approx(D)


def test_one_migration_sorts_every_dataset_together() -> None:
    whole = WhatIfParams(window_s=30 * DAY, write_drives=1, aggregate=False)
    sorted_whole = WhatIfParams(
        policy="sorted-by-directory", window_s=30 * DAY, write_drives=1, aggregate=False
    )
    assert mean_gap(replay(stream(), sorted_whole)) == pytest.approx(1.0)
    assert mean_gap(replay(stream(), whole)) == pytest.approx(D)


def test_a_window_shorter_than_the_datasets_arrival_is_pointed_out() -> None:
    note = arrival_note(stream(), PARAMS)
    assert note is not None and "4 of 4 datasets" in note and "--sort-window" in note
    assert arrival_note(stream(), WhatIfParams(window_s=30 * DAY)) is None
