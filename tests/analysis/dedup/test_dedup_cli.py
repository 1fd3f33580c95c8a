"""`tapelens plan dedup` speaks as the other commands do: `--by dataset|tape`, `--sort` and
`--limit`, a filter or a drive type that matches nothing named with what exists, tables in one
unit per kind, -o FILE in the format its extension names."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from tapelens.cli import cli
from tapelens.errors import InputError
from tests.analysis.dedup.test_dedup import site  # noqa: F401 - the fixture

__all__ = ["site"]


def invoke(dsn: str, *args: str) -> tuple[int, str, str, BaseException | None]:
    result = CliRunner().invoke(cli, ["--dsn", dsn, "plan", "dedup", *args])
    return result.exit_code, result.stdout, result.stderr, result.exception


def test_by_takes_the_reports_words_and_the_former_plurals(site: str) -> None:  # noqa: F811
    shown = CliRunner().invoke(cli, ["plan", "dedup", "--help"]).output
    assert "[copy|dataset|tape]" in shown and "datasets" not in shown.split("--by")[1][:40]
    singular = invoke(site, "--by", "dataset", "--format", "csv", "--drives", "LTO8:2")
    plural = invoke(site, "--by", "datasets", "--format", "csv", "--drives", "LTO8:2")
    assert singular[0] == plural[0] == 0 and singular[1] == plural[1]
    assert singular[1].splitlines()[0].startswith("dataset,")


def test_sort_and_limit_cut_the_rows(site: str) -> None:  # noqa: F811
    code, out, _, _ = invoke(
        site, "--by", "tape", "--sort", "copies_to_retire", "--desc", "--limit", "1",
        "--format", "csv",
    )  # fmt: skip
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 2 and lines[1].startswith("S1,")
    code, _, _, exc = invoke(site, "--sort", "nope")
    assert isinstance(exc, InputError) and "action" in str(exc)


def test_a_filter_that_matches_nothing_names_what_exists(site: str) -> None:  # noqa: F811
    _, _, _, exc = invoke(site, "--dataset-type", "RWA")
    assert isinstance(exc, InputError)
    assert str(exc).startswith("--dataset-type 'RWA' matches nothing (known: RAW, ")
    _, _, _, exc = invoke(site, "--dataset", "Q")
    assert isinstance(exc, InputError) and "(known: D, E, F, X)" in str(exc)
    # A dataset that exists but has no duplicate says that instead.
    _, _, _, exc = invoke(site, "--dataset", "E")
    assert isinstance(exc, InputError) and "no file with more than one live copy" in str(exc)


def test_a_mistyped_drive_type_is_refused_with_the_known_ones(site: str) -> None:  # noqa: F811
    _, _, _, exc = invoke(site, "--drives", "LTO8:2,LT07:2")
    assert isinstance(exc, InputError)
    assert "unknown drive type 'LT07'" in str(exc) and "LTO-7" in str(exc)
    _, _, _, exc = invoke(site, "--drives", "LTO10:2")
    assert isinstance(exc, InputError) and "'LTO10'" in str(exc)


def test_tables_print_bytes_human_and_o_json_writes_json(site: str, tmp_path: Path) -> None:  # noqa: F811
    code, out, _, _ = invoke(site, "--by", "tape", "--drives", "LTO8:2")
    assert code == 0
    s1 = next(line for line in out.splitlines() if line.startswith("S1"))
    assert "8.00 GB" in s1 and "8000000000" not in s1
    target = tmp_path / "dedup.json"
    code, _, err, _ = invoke(site, "--by", "tape", "--drives", "LTO8:2", "-o", str(target))
    assert code == 0 and "(json)" in err
    rows = json.loads(target.read_text())
    assert {r["volume"] for r in rows} == {"A1", "A2", "S1"}
