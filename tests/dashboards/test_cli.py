"""`tapelens dashboards` failures that need no Superset: one clear line each."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tapelens.cli import cli, main
from tapelens.dashboards.reader_role import prepare_reader
from tapelens.errors import DatabaseError


def _main(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """The console entry point, which turns expected failures into one line."""
    with pytest.raises(SystemExit) as done:
        main(args)
    return int(done.value.code or 0), capsys.readouterr().err


def test_stop_without_a_server(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["--home", str(tmp_path), "dashboards", "stop"])
    assert result.exit_code == 0 and "not running" in result.stderr


def test_deploy_needs_the_password_variable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = _main(
        [
            "--home",
            str(tmp_path),
            "--dsn",
            "postgresql://nobody@127.0.0.1:9/x",
            "dashboards",
            "deploy",
            "--url",
            "http://127.0.0.1:9",
            "--password-env",
            "NO_SUCH_VAR",
        ],
        capsys,
    )
    assert code == 2
    assert err.count("\n") == 1 and "NO_SUCH_VAR" in err


def test_export_without_a_local_server(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _main(
        ["--home", str(tmp_path), "dashboards", "export", "-o", str(tmp_path)], capsys
    )
    assert code == 6
    assert err == "tapelens: error: no local Superset runs; give --url or run: dashboards serve\n"


def test_reader_needs_the_marts(dsn: str) -> None:
    with pytest.raises(DatabaseError, match="run: tapelens marts build"):
        prepare_reader(dsn, "unused-password")
