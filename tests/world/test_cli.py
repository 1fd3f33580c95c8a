"""`tapelens demo generate` as a user runs it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tapelens.cli import cli, main
from tapelens.errors import InputError


def test_generate_writes_a_site_and_summarises_it(tmp_path: Path) -> None:
    out = tmp_path / "site"
    args = ["demo", "generate", str(out), "--files", "3000", "--seed", "2", "--no-history"]
    result = CliRunner().invoke(cli, [*args, "--profile", "cern", "--start", "2019-01-01"])
    assert result.exit_code == 0, result.output
    assert "copies" in result.stdout and "mean gap" in result.stdout
    assert "generating 3,000 files (cern, seed 2)" in result.stderr
    m = json.loads((out / "manifest.json").read_text())
    assert (m["profile"], m["seed"], m["files"]) == ("cern", 2, 3000)
    assert m["params"]["start"] == "2019-01-01" and m["params"]["end"] == "2024-12-31"
    assert (out / "catalog" / "tf-ls.jsonl").is_file()
    assert (out / "truth" / "README.md").is_file()


def test_generate_refuses_a_directory_that_holds_other_files(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    result = CliRunner().invoke(cli, ["demo", "generate", str(tmp_path), "--files", "100"])
    assert isinstance(result.exception, InputError)
    assert "not empty" in str(result.exception)
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_bad_dates_are_one_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["demo", "generate", str(tmp_path / "s"), "--start", "2024-01-01", "--end", "2023-01-01"]
    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("tapelens: error: setting end") and err.count("\n") == 1
    result = CliRunner().invoke(cli, ["demo", "generate", str(tmp_path), "--profile", "nersc"])
    assert result.exit_code == 2 and "nersc" in result.output
