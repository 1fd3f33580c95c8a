"""One vocabulary: the same option name for the same thing in every command; the former
spellings still work but are not listed."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from tapelens.analysis.recall.drives import parse_drives
from tapelens.cli import cli
from tapelens.cli.common import aliased, assume_media_option, dataset_type_option, hidden_alias
from tapelens.errors import InputError

COMMANDS = [
    ["report", "gaps"],
    ["predict", "datasets"],
    ["plan", "dedup"],
    ["whatif", "placement"],
]


@pytest.mark.parametrize("command", COMMANDS)
def test_dataset_type_is_spelled_one_way(command: list[str]) -> None:
    shown = CliRunner().invoke(cli, [*command, "--help"]).output
    assert "--dataset-type" in shown and "--type " not in shown


def test_limits_and_assumed_media_are_spelled_one_way() -> None:
    repack = CliRunner().invoke(cli, ["plan", "repack", "--help"]).output
    assert "--limit" in repack and "--top" not in repack
    for command in (["simulate"], ["predict", "datasets"]):
        shown = CliRunner().invoke(cli, [*command, "--help"]).output
        assert "--assume-media" in shown and "--media " not in shown


@click.command()
@dataset_type_option
@assume_media_option
@hidden_alias("--top", "limit", type=int)
@click.option("--limit", type=int, default=20, callback=aliased("limit"))
def probe(dataset_type: str | None, assume_media: str | None, limit: int) -> None:
    click.echo(f"{dataset_type} {assume_media} {limit}")


@pytest.mark.parametrize(
    "argv,printed",
    [
        ([], "None None 20"),
        (["--type", "AOD", "--top", "5", "--media", "lto8"], "AOD LTO-8 5"),
        (["--dataset-type", "RAW", "--limit", "7", "--assume-media", "LTO-9"], "RAW LTO-9 7"),
        (["--limit", "3", "--type", "RAW"], "RAW None 3"),
    ],
)
def test_former_spellings_reach_the_same_option(argv: list[str], printed: str) -> None:
    result = CliRunner().invoke(probe, argv)
    assert result.exit_code == 0, result.output
    assert result.output.strip() == printed


def test_an_unknown_media_type_is_refused_with_the_known_ones() -> None:
    result = CliRunner().invoke(probe, ["--assume-media", "LTO-99"])
    assert result.exit_code != 0 and "unknown media type 'LTO-99'" in result.output
    assert "LTO-8" in result.output


@pytest.mark.parametrize("spec,bad", [("LTO9:4,LT07:2", "LT07"), ("LTO10:2", "LTO10")])
def test_a_drive_type_the_media_catalog_does_not_know_is_refused(spec: str, bad: str) -> None:
    """A typo must not plan on drives that read nothing (every file 'unavailable', exit 0)."""
    with pytest.raises(InputError, match=f"unknown drive type '{bad}'") as raised:
        parse_drives(spec)
    assert "LTO-7" in str(raised.value) and "TS1160" in str(raised.value)
    assert parse_drives("lto9:4,LTO-7:2,TS1160=1") == {"LTO-9": 4, "LTO-7": 2, "TS1160": 1}


def test_exports_go_to_a_folder_in_every_plan() -> None:
    for command in (["plan", "recall"], ["plan", "repack"]):
        shown = CliRunner().invoke(cli, [*command, "--help"]).output
        assert "--export-dir" in shown and "--export-file" not in shown
