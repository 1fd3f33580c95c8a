"""Tables for people, raw numbers for programs: human units and a fitted width in the table
format only; --columns in every format."""

from __future__ import annotations

import json

import polars as pl

from tapelens.cli.output import LONG_CELL, human_units, render, table_fitted

FRAME = pl.DataFrame(
    {
        "dataset": ["/atlas/" + "x" * 100, "/short"],
        "files": [1298, 3],
        "size_bytes": [6_496_863_610, 999],
        "makespan_s": [93_784.0, 42.5],
        "rate_mb_s": [291.94, None],
        "occupancy": [0.7345, 0.0],
        "notes": ["a", "b"],
    }
)


def test_units_follow_the_column_names() -> None:
    shown = human_units(FRAME)
    assert shown["size_bytes"].to_list() == ["6.50 GB", "999 B"]
    assert shown["makespan_s"].to_list() == ["1d 2:03:04", "42.5 s"]
    assert shown["rate_mb_s"].to_list() == ["291.9 MB/s", None]
    assert shown["occupancy"].to_list() == ["73.5%", "0.0%"]
    assert shown["files"].to_list() == [1298, 3]


def test_a_fitted_table_keeps_its_first_columns_and_shortens_long_text() -> None:
    text, left = table_fitted(FRAME, 80)
    lines = text.splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert lines[0].split()[:2] == ["dataset", "files"] and left and left[-1] == "notes"
    assert "…" in lines[1] and len(lines[1].split()[0]) == LONG_CELL
    whole, none_left = table_fitted(FRAME, None)
    assert none_left == [] and FRAME["dataset"][0] in whole and "6496863610" in whole


def test_csv_and_json_keep_raw_numbers() -> None:
    assert "6496863610" in render(FRAME, "csv")
    assert json.loads(render(FRAME, "json"))[0]["size_bytes"] == 6_496_863_610
