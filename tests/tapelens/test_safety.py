"""Safe to run: no shell, owner-only secrets, no password in any message, a fenced reader role."""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from psycopg import conninfo

from tapelens.dashboards.reader_role import READER_ROLE, prepare_reader
from tapelens.dashboards.superset.install import SupersetHome, private_file, write_config
from tapelens.db import connect, redact
from tapelens.errors import DatabaseUnavailable, ServerError
from tapelens.server import server_for, start, stop
from tests.conftest import PG_BIN, PG_USER, with_dbname
from tests.fixtures.cli import run
from tests.props import examples

ROOT = Path(__file__).resolve().parents[2]
SHELL = re.compile(
    r"shell\s*=\s*True|os\.system\(|os\.popen\(|[\"']sh[\"'],\s*[\"']-c[\"']|\bsu -c\b"
)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_no_shell_anywhere() -> None:
    """Every program tapelens runs gets an argument list; no text is handed to a shell."""
    found = []
    for folder in ("tapelens", "ingest", "analysis", "bench", "scripts"):
        for path in (ROOT / folder).rglob("*"):
            if path.is_file() and path.suffix in {".py", ""}:
                for no, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                    if SHELL.search(line):
                        found.append(f"{path.relative_to(ROOT)}:{no}: {line.strip()}")
    assert found == []


@pytest.mark.slow
@pytest.mark.skipif(bool(os.environ.get("TAPELENS_TEST_DSN")), reason="uses the embedded server")
def test_a_home_with_a_quote_and_spaces_serves(tmp_path: Path) -> None:
    # Short: a unix socket path must stay under 108 bytes.
    base = Path(tempfile.mkdtemp(prefix="tl"))
    home = base / "it's a h&me #1"
    server = server_for(home, PG_BIN, PG_USER)
    try:
        dsn = start(server)
        with psycopg.connect(dsn) as conn:
            assert conn.execute("select 1").fetchone() == (1,)
        # Others get nothing; the server's user may only pass through (an ACL entry, shown
        # in the group bits when ACLs are in use).
        assert mode(home) & 0o067 == 0
        assert mode(server.log_file) == 0o600
    finally:
        stop(server)
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["$(touch PWNED)", "`touch PWNED`", 'a"b', "back\\slash"])
def test_a_home_a_shell_would_read_is_refused_before_anything_runs(
    tmp_path: Path, name: str
) -> None:
    home = tmp_path / name
    with pytest.raises(ServerError, match="PostgreSQL's tools would pass to a shell"):
        start(server_for(home, PG_BIN, PG_USER))
    assert not home.exists()
    assert not list(tmp_path.rglob("PWNED*")) and not Path("/tmp/PWNED").exists()
    shown = run("--home", str(home), "db", "up")
    assert shown.returncode != 0 and "Traceback" not in shown.stderr
    assert "would pass to a shell" in shown.stderr


def test_superset_files_are_owner_only_even_when_made_wider(tmp_path: Path) -> None:
    home = SupersetHome.under(tmp_path / "home")
    home.root.mkdir(parents=True, mode=0o755)
    home.root.chmod(0o755)
    db = home.metadata_db
    db.write_text("")
    db.chmod(0o644)
    write_config(home)
    private_file(db)
    assert mode(home.root) == 0o700
    assert mode(home.config_path) == 0o600
    assert mode(home.secret_key_path) == 0o600
    assert mode(db) == 0o600


USERS = st.text("abcdefghij", min_size=1, max_size=6)
# Passwords from other letters than the rest of the DSN, with every character that can confuse
# a parser: "@", ":", "/", "?", "&", "=", "'", '"', "\\", "%", space.
PASSWORDS = st.text("KLMNOPQRSTUVWXYZ0123456789@:/?&=' \"\\%#", min_size=1, max_size=16)


def dsn_forms(user: str, password: str) -> list[str]:
    quoted = password.replace("\\", "\\\\").replace("'", "\\'")
    return [
        f"postgresql://{user}:{password}@dbhost:5432/tapelens",
        f"postgres://{user}:{password}@/tapelens?host=/run/pg",
        f"postgresql://dbhost/tapelens?user={user}&password={password}",
        f"host=dbhost user={user} password={password} dbname=tapelens",
        f"host=dbhost user={user} password='{quoted}' dbname=tapelens",
        f"host=dbhost user={user} password='{quoted} dbname=tapelens",  # unclosed quote
        f"password = {password} host=dbhost",
        conninfo.make_conninfo(host="dbhost", user=user, password=password, dbname="tapelens"),
    ]


def leaks(shown: str, password: str) -> list[str]:
    """Pieces of 3+ characters of the password (not made only of separators) in `shown`."""
    pieces = {password[i : i + 3] for i in range(len(password) - 2)}
    return [p for p in pieces if p in shown and re.search(r"[A-Z0-9]", p)]


@settings(max_examples=examples(200))
@given(USERS, PASSWORDS)
def test_redact_never_shows_a_piece_of_the_password(user: str, password: str) -> None:
    for dsn in dsn_forms(user, password):
        assert leaks(redact(dsn), password) == [], dsn


@pytest.mark.parametrize(
    "password", ["p@ss:w/rd", "QUOTE'D WORD", "AB%40CD", "X/Y/Z@@W", "PASS WITH SPACE"]
)
def test_a_refused_connection_says_nothing_of_the_password(password: str) -> None:
    for dsn in dsn_forms("u", password):
        dsn = dsn.replace("dbhost", "/nonexistent/socket")
        with pytest.raises(DatabaseUnavailable) as err:
            connect(dsn)
        assert leaks(str(err.value), password) == [], (dsn, str(err.value))


@pytest.mark.slow
def test_cli_failures_are_one_line_without_password(tmp_path: Path) -> None:
    secret = "SECRETPASS9"
    bad = run("--dsn", f"postgresql://u:{secret}@/db?host=/nonexistent", "db", "status")
    assert bad.returncode != 0 and secret[:4] not in bad.stderr + bad.stdout
    assert "Traceback" not in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    unwritable = run("demo", "generate", "/proc/version/site", "--files", "100")
    assert unwritable.returncode != 0 and "Traceback" not in unwritable.stderr
    assert "tapelens: error: /proc/version/site" in unwritable.stderr


def test_the_reader_role_is_fenced(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("create schema if not exists tapelens_marts")
    prepare_reader(dsn, "reader-secret-1")
    params = conninfo.conninfo_to_dict(dsn)
    reader = conninfo.make_conninfo(
        **{**params, "user": READER_ROLE, "password": "reader-secret-1"}
    )
    with psycopg.connect(reader) as conn:
        assert conn.execute("show statement_timeout").fetchone() == ("1min",)
        assert conn.execute("show default_transaction_read_only").fetchone() == ("on",)
    with pytest.raises(psycopg.OperationalError, match="permission denied"):
        psycopg.connect(with_dbname(reader, "postgres")).close()
