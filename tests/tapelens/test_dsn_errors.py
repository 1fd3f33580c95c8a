"""A DSN that cannot be used, however malformed, never shows a piece of its password.

Real connections that fail (a closed port on this machine, a host name that cannot resolve):
libpq and psycopg quote the host or option they could not use, and a password holding an
unescaped "@", ":", "/" or "?" gets split into those, so their messages would carry it.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tapelens.db import connect, mask_password, password_texts
from tapelens.errors import DatabaseUnavailable
from tests.fixtures.cli import run
from tests.props import examples

# A name that never resolves (RFC 2606 reserves .invalid), answered at once by the resolver.
NOWHERE = "nowhere.invalid"
PASSWORDS = ["Sekr1t@Pw", "Se:kr/1t?Pw", "SEK@R1T/PW:99", "Sek#r1t&Pw=7", "Sek r1t Pw"]


@pytest.fixture(scope="module")
def closed_port() -> Iterator[int]:
    """A port on 127.0.0.1 that nothing listens on: connections to it are refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        yield probe.getsockname()[1]  # bound but not listening: refused while the test runs


def shapes(password: str, port: int) -> list[str]:
    """The ways users write a DSN with this password, the password left unescaped."""
    quoted = password.replace("\\", "\\\\").replace("'", "\\'")
    escaped = "".join(c if c.isalnum() else f"%{ord(c):02X}" for c in password)
    return [
        f"postgresql://u:{password}@{NOWHERE}/db",
        f"postgresql://u:{password}@127.0.0.1:{port}/db",
        f"postgres://u:{password}@{NOWHERE}:{port}/db?sslmode=disable",
        f"postgresql://u:{escaped}@127.0.0.1:{port}/db",
        f"postgresql://127.0.0.1:{port}/db?user=u&password={password}",
        f"postgresql://{NOWHERE}/db?password={escaped}&user=u",
        f"host=127.0.0.1 port={port} user=u password={password} dbname=db",
        f"host={NOWHERE} user=u password='{quoted}' dbname=db",
        f"host=127.0.0.1 port={port} password='{quoted} dbname=db",  # the quote never closed
    ]


def pieces(password: str) -> set[str]:
    """Every 3-character piece of the password."""
    return {password[i : i + 3] for i in range(len(password) - 2)}


def shown_pieces(text: str, password: str) -> list[str]:
    return sorted(piece for piece in pieces(password) if piece in text)


@pytest.mark.parametrize("password", PASSWORDS)
def test_a_failed_connection_says_nothing_of_the_password(password: str, closed_port: int) -> None:
    for dsn in shapes(password, closed_port):
        with pytest.raises(DatabaseUnavailable) as err:
            connect(dsn)
        message = str(err.value)
        assert message.startswith("cannot reach the database at "), message
        assert shown_pieces(message, password) == [], (dsn, message)


def test_the_reported_failure_names_the_real_host() -> None:
    """The case that printed `failed to resolve host 'Pw@nowhere.invalid'`: now the host
    as the URL's last "@" gives it, and how to write the password."""
    with pytest.raises(DatabaseUnavailable) as err:
        connect(f"postgresql://u:Sekr1t@Pw@{NOWHERE}/db")
    message = str(err.value)
    assert f"postgresql://u@{NOWHERE}/db" in message
    assert "percent-encoded" in message and "Pw" not in message


# Every command that connects: through psycopg (db status), the dbt profile (marts build),
# ADBC (report gaps).
COMMANDS = (("db", "status"), ("marts", "build"), ("report", "gaps"))


@pytest.mark.slow
@pytest.mark.parametrize("password", PASSWORDS[:3])
def test_the_command_line_shows_no_piece_of_the_password(password: str, closed_port: int) -> None:
    dsns = shapes(password, closed_port)
    runs = [(dsn, COMMANDS[0]) for dsn in [*dsns[:3], dsns[6]]]
    runs += [(dsns[0], args) for args in COMMANDS[1:]]
    for dsn, args in runs:
        result = run("--dsn", dsn, *args)
        output = result.stdout + result.stderr
        assert result.returncode == 4, (dsn, args, output)
        errors = [line for line in output.splitlines() if line.startswith("tapelens: error:")]
        assert "Traceback" not in output and len(errors) == 1, output
        assert shown_pieces(output, password) == [], (dsn, args, output)


@pytest.mark.slow
def test_the_environment_dsn_is_masked_alike(closed_port: int) -> None:
    password = "Sekr1t@Pw:8"
    result = run("db", "status", env={"TAPELENS_DSN": shapes(password, closed_port)[0]})
    assert result.returncode == 4
    assert shown_pieces(result.stdout + result.stderr, password) == []


@settings(max_examples=examples(200))
# Leading or trailing spaces are not part of an unquoted keyword-form password (libpq skips
# them), so the drawn passwords have none.
@given(
    st.text("KLMNOPQRSTUVWXYZ0123456789@:/?&=' \"\\%#", min_size=3, max_size=16).filter(
        lambda text: text == text.strip()
    )
)
def test_every_piece_of_a_password_in_any_shape_is_masked(password: str) -> None:
    """Whatever libpq would quote back, a text made of the password's pieces is masked."""
    for dsn in shapes(password, 5432):
        assert password_texts(dsn), dsn
        masked = mask_password(f"failed to resolve host '{password}@host'", dsn)
        assert [p for p in shown_pieces(masked, password) if p.strip("@:/?&=' \"\\%#")] == [], (
            dsn,
            masked,
        )
