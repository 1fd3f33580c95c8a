"""Tables for people, raw numbers for programs: one unit per kind and a fitted width in the
table format only, the columns that decide always shown; --columns in every format, obeyed;
-o FILE written in the format its extension names."""

from __future__ import annotations

import json
from pathlib import Path

import click
import polars as pl
import pytest
from click.testing import CliRunner

from tapelens.cli.output import (
    LONG_CELL,
    emit,
    emit_summary,
    format_option,
    human_units,
    render,
    table_fitted,
)

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
    assert shown["makespan_s"].to_list() == ["1d 2:03:04", "0:00:42.5"]
    assert shown["rate_mb_s"].to_list() == ["291.9 MB/s", None]
    assert shown["occupancy"].to_list() == ["73.5%", "0.0%"]
    assert shown["files"].to_list() == [1298, 3]


def test_one_unit_per_kind_durations_bytes_and_counts() -> None:
    """Minutes never print as m:ss beside hours; bytes_* columns are bytes; a count computed as
    a float prints whole, a mean of counts does not."""
    frame = pl.DataFrame(
        {
            "placement_cost_s": [1419.0, 41_828.0],
            "recall_now_h": [0.5, 26.25],
            "bytes_to_retire": [153_065_783_580, 0],
            "tapes_freed": [0.0, 2.0],
            "mounts_saved": [3.0, -1.0],
            "tapes_per_dataset_mean": [1.5, 2.25],
            "mean_occupancy": [0.008, 0.5],
        }
    )
    shown = human_units(frame)
    assert shown["placement_cost_s"].to_list() == ["0:23:39", "11:37:08"]
    assert shown["recall_now_h"].to_list() == ["0:30:00", "1d 2:15:00"]
    assert shown["bytes_to_retire"].to_list() == ["153.07 GB", "0 B"]
    assert shown["tapes_freed"].to_list() == [0, 2]
    assert shown["mounts_saved"].to_list() == [3, -1]
    assert shown["tapes_per_dataset_mean"].to_list() == [1.5, 2.25]
    assert shown["mean_occupancy"].to_list() == ["0.8%", "50.0%"]
    table, _ = table_fitted(frame, 200)
    assert "0.000" not in table and "23:39 " not in table.replace("0:23:39", "")


def test_a_fitted_table_keeps_its_first_columns_and_shortens_long_text() -> None:
    text, left = table_fitted(FRAME, 80)
    lines = text.splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert lines[0].split()[:2] == ["dataset", "files"] and left and left[-1] == "notes"
    assert "…" in lines[1] and len(lines[1].split()[0]) == LONG_CELL
    whole, none_left = table_fitted(FRAME, None)
    assert none_left == [] and FRAME["dataset"][0] in whole and "6496863610" in whole


def test_the_columns_that_decide_are_never_left_out() -> None:
    """The ranking column sits last: at 80 columns the others before it go, not it."""
    text, left = table_fitted(FRAME, 80, keep=("notes", "rate_mb_s"))
    header = text.splitlines()[0].split()
    assert {"dataset", "notes", "rate_mb_s"} <= set(header)
    assert "notes" not in left and "rate_mb_s" not in left and left
    assert all(len(line) <= 80 for line in text.splitlines())


def test_columns_asked_for_wrap_instead_of_being_dropped() -> None:
    text, left = table_fitted(FRAME, 80, wrap=True)
    assert left == []
    blocks = text.split("\n\n")
    assert len(blocks) >= 2 and all(b.splitlines()[0].startswith("dataset") for b in blocks)
    headers = {word for b in blocks for word in b.splitlines()[0].split()}
    assert headers == set(FRAME.columns)
    assert all(len(line) <= 80 for line in text.splitlines())


def test_csv_and_json_keep_raw_numbers() -> None:
    assert "6496863610" in render(FRAME, "csv")
    assert json.loads(render(FRAME, "json"))[0]["size_bytes"] == 6_496_863_610


@click.command()
@format_option
def printer(fmt: str, output: str | None) -> None:
    emit(FRAME, fmt, output, keep=("notes",))


@pytest.mark.parametrize(
    "name,extra,kind",
    [
        ("x.json", [], "json"),
        ("x.parquet", [], "parquet"),
        ("x.CSV", [], "csv"),
        ("x.txt", [], "table"),
        ("x.json", ["--format", "csv"], "csv"),
    ],
)
def test_the_output_files_extension_decides_unless_format_says(
    tmp_path: Path, name: str, extra: list[str], kind: str
) -> None:
    target = tmp_path / name
    result = CliRunner().invoke(printer, ["-o", str(target), *extra])
    assert result.exit_code == 0, result.output
    if kind == "parquet":
        assert pl.read_parquet(target)["size_bytes"].to_list() == FRAME["size_bytes"].to_list()
        return
    text = target.read_text()
    if kind == "json":
        assert json.loads(text)[1]["dataset"] == "/short"
    elif kind == "csv":
        assert text.splitlines()[0] == ",".join(FRAME.columns)
    else:
        assert text.splitlines()[0].split()[0] == "dataset" and "," not in text.splitlines()[0]
    assert f"({kind})" in result.stderr


def test_columns_named_are_all_printed_at_80_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    asked = "dataset,notes,size_bytes,makespan_s,rate_mb_s,occupancy,files"
    result = CliRunner().invoke(printer, ["--columns", asked])
    assert result.exit_code == 0, result.output
    headers = {w for line in result.stdout.split("\n\n") for w in line.splitlines()[0].split()}
    assert headers == set(asked.split(",")) and "more column" not in result.stderr


def test_a_summary_prints_one_figure_a_line_in_units_or_as_json() -> None:
    summary = {
        "files": 739,
        "makespan_s": 3220.4,
        "drive_busy_share": {"LTO-9#1": 0.916},
        "requester_done_s": {"default": 2843.1},
        "drives": {"LTO-9": 2},
        "not_found": [],
    }

    @click.command()
    @click.option("--json", "as_json", is_flag=True)
    def show(as_json: bool) -> None:
        emit_summary(summary, "json" if as_json else "table")

    table = CliRunner().invoke(show, []).stdout.splitlines()
    figures = dict(line.split(None, 1) for line in table[1:])
    assert table[0].split() == ["figure", "value"]
    assert figures == {
        "files": "739",
        "makespan_s": "0:53:40",
        "drive_busy_share.LTO-9#1": "91.6%",
        "requester_done_s.default": "0:47:23",
        "drives.LTO-9": "2",
        "not_found": "-",
    }
    assert json.loads(CliRunner().invoke(show, ["--json"]).stdout) == summary
