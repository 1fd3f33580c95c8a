"""The db command group against the embedded server, and the failure paths users meet first."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from tapelens.cli import cli
from tapelens.db import connection, redact
from tapelens.ingest.migrations import applied_versions, available
from tests.fixtures.cli import run


@pytest.mark.slow
@pytest.mark.skipif(bool(os.environ.get("TAPELENS_TEST_DSN")), reason="uses the embedded server")
def test_db_up_status_down_cycle(tmp_path: Path) -> None:
    env = {"TAPELENS_HOME": str(tmp_path / "home")}
    first = run("db", "up", env=env)
    assert first.returncode == 0, first.stderr
    second = run("db", "up", env=env)
    assert second.returncode == 0, second.stderr
    assert first.stdout == second.stdout
    assert first.stdout.startswith("postgresql://")
    try:
        st = run("db", "status", env=env)
        assert st.returncode == 0, st.stderr
        assert "timescaledb  2." in st.stdout
        for table in (
            "media_types",
            "tapes",
            "tape_files",
            "transfers",
            "mounts",
            "ingest_runs",
            "ingest_rejects",
            "drives",
        ):
            assert f"tapelens.{table}" in st.stdout
        assert "missing" not in st.stdout
        # A server left running by an older tapelens is brought up to date by the next command:
        # here migration 24 is missing (a view made with `create or replace`, so it applies again).
        with connection(first.stdout.strip(), autocommit=True) as conn:
            conn.execute("delete from tapelens.schema_migrations where version = 24")
        again = run("db", "status", env=env)
        assert again.returncode == 0, again.stderr
        assert "migrating the embedded server" in again.stderr
        with connection(first.stdout.strip()) as conn:
            assert applied_versions(conn) == {m.version for m in available()}
        quiet = run("db", "status", env=env)
        assert "migrating" not in quiet.stderr
    finally:
        down = run("db", "down", env=env)
    assert down.returncode == 0, down.stderr
    after = run("db", "status", env=env)
    assert after.returncode != 0
    assert "not running" in after.stderr
    assert run("db", "down", env=env).stderr.strip() == "not running"


@pytest.mark.slow
def test_unreachable_server_one_line_no_password() -> None:
    result = run("db", "status", env={"TAPELENS_DSN": "postgresql://u:s3cret@127.0.0.1:1/x"})
    assert result.returncode != 0
    assert "s3cret" not in result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "127.0.0.1:1" in lines[0] and "Traceback" not in result.stderr


@pytest.mark.slow
def test_wrong_dsn_is_one_clear_line() -> None:
    result = run("db", "status", env={"TAPELENS_DSN": "host=x password=s3cret nonsense"})
    assert result.returncode != 0
    assert "s3cret" not in result.stdout + result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_wrong_database_name_on_a_live_server(dsn: str) -> None:
    from tests.conftest import with_dbname

    bad = with_dbname(dsn, "no_such_database")
    result = CliRunner().invoke(cli, ["--dsn", bad, "db", "status"], standalone_mode=False)
    assert result.exception is not None
    assert "no_such_database" in str(result.exception)


def test_db_migrate_and_status_on_a_given_dsn(dsn: str) -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["--dsn", dsn, "db", "migrate"])
    assert result.exit_code == 0, result.output
    assert "schema up to date" in result.stderr
    result = runner.invoke(cli, ["--dsn", dsn, "db", "status"])
    assert result.exit_code == 0, result.output
    assert "tapelens.media_types" in result.stdout and "10" in result.stdout


@pytest.mark.parametrize(
    ("dsn", "shown"),
    [
        ("postgresql://u:s3cret@h:5432/db", "postgresql://u@h:5432/db"),
        (
            "host=/tmp/run port=5 user=u password=s3cret dbname=d",
            "postgresql://u@/d?host=/tmp/run&port=5",
        ),
        ("postgresql://u:s3cret@h/db?sslmode=require", "postgresql://u@h/db?sslmode=require"),
    ],
)
def test_redact_drops_passwords(dsn: str, shown: str) -> None:
    assert redact(dsn) == shown


@pytest.mark.slow
def test_a_home_without_a_server_is_an_error_not_a_fresh_server(tmp_path: Path) -> None:
    home = tmp_path / "typo"
    result = run("report", "gaps", env={"TAPELENS_HOME": str(home)})
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert result.stderr.strip() == (
        f"tapelens: error: no tapelens server in {home}; start one with `tapelens db up`"
        " (or point tapelens at a database with --dsn or TAPELENS_DSN)"
    )
    assert not (home / "pgdata").exists() and not any(home.rglob("PG_VERSION"))


@pytest.mark.slow
def test_older_schema_is_named_with_the_command_that_updates_it(dsn: str) -> None:
    """A database migrated by an earlier tapelens lacks what this one reads: the error says the
    schema's version and `tapelens db migrate`, not only the missing table."""
    with connection(dsn, autocommit=True) as conn:
        conn.execute("drop table tapelens.recall_plans cascade")
        conn.execute("delete from tapelens.schema_migrations where version >= 4")
    result = run("--dsn", dsn, "plan", "compare", "campaign-x")
    assert result.returncode == 4, result.stderr
    need = available()[-1].version
    assert f"schema is at version 3, this tapelens needs {need}" in result.stderr
    assert "tapelens db migrate" in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_current_schema_keeps_the_plain_message(dsn: str) -> None:
    """With the schema up to date, a missing saved plan is named as such, no migration hint."""
    result = run("--dsn", dsn, "plan", "compare", "campaign-x")
    assert result.returncode != 0
    assert "no saved recall plan named 'campaign-x'" in result.stderr
    assert "db migrate" not in result.stderr
