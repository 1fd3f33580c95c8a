"""`tapelens marts build` from the command line, and the failures a user meets."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner
from psycopg import conninfo

from tapelens.cli import cli, main
from tapelens.cli.marts import _parse_vars
from tapelens.dbt_runs import build, dbt_args
from tapelens.errors import DatabaseError
from tests.fixtures.marts import reset


def test_vars_are_typed() -> None:
    assert _parse_vars(
        ("cutover_date=2021-01-01", "small_file_bytes=5", "main_tapes_share=0.8")
    ) == {
        "cutover_date": dt.date(2021, 1, 1),
        "small_file_bytes": 5,
        "main_tapes_share": 0.8,
    }
    result = CliRunner().invoke(cli, ["--dsn", "postgresql:///x", "marts", "build", "--var", "x"])
    assert result.exit_code == 2
    assert "expected key=value" in result.stderr


def test_dbt_output_stays_out_of_the_source_tree(tmp_path: Path) -> None:
    args = dbt_args("build", tmp_path, ["fct_file_gaps+"], True, {"cutover_date": "2021-01-01"})
    assert args[args.index("--target-path") + 1] == str(tmp_path / "target")
    assert args[args.index("--log-path") + 1] == str(tmp_path)
    assert "--no-send-anonymous-usage-stats" in args
    assert args[args.index("--vars") + 1] == '{"cutover_date": "2021-01-01"}'
    assert "--full-refresh" in args


def test_unmigrated_database_is_refused(empty_dsn: str, tmp_path: Path) -> None:
    with pytest.raises(DatabaseError, match="tapelens db migrate"):
        build(empty_dsn, log_dir=tmp_path)


@pytest.mark.slow
def test_cli_build_prints_a_summary(models_dsn: str, dbt_home: Path) -> None:
    reset(models_dsn)
    result = CliRunner().invoke(
        cli, ["--dsn", models_dsn, "--home", str(dbt_home), "marts", "build", "-s", "stg_tapes"]
    )
    assert result.exit_code == 0, result.output
    assert "models built: 1  tests passed: 2  tests failed: 0" in result.stderr
    assert result.stdout == ""
    assert (dbt_home / "dbt" / "dbt.log").is_file()
    assert not any(name.startswith("TAPELENS_DBT_") for name in os.environ)


@pytest.mark.slow
def test_failing_model_is_one_line_naming_it(
    models_dsn: str, dbt_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = "pw-never-shown"
    with_password = conninfo.make_conninfo(models_dsn, password=secret)
    with psycopg.connect(models_dsn, autocommit=True) as conn:
        conn.execute("alter table tapelens.drives rename to drives_elsewhere")
    try:
        with pytest.raises(SystemExit) as exited:
            main(
                [
                    "--dsn",
                    with_password,
                    "--home",
                    str(dbt_home),
                    "models",
                    "build",
                    "-s",
                    "stg_drives",
                ]
            )
    finally:
        with psycopg.connect(models_dsn, autocommit=True) as conn:
            conn.execute("alter table tapelens.drives_elsewhere rename to drives")
    assert exited.value.code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("tapelens: error: marts build failed")
    assert "model stg_drives" in err[-1] and "does not exist" in err[-1]
    assert "Traceback" not in "\n".join(err)
    assert secret not in "\n".join(err)
    assert secret not in (dbt_home / "dbt" / "dbt.log").read_text()
