"""Connections: one place that opens them and turns failures into DatabaseUnavailable."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg import conninfo

from tapelens.errors import DatabaseError, DatabaseUnavailable

CONNECT_TIMEOUT_S = 10


_URL = re.compile(r"^\s*[A-Za-z][A-Za-z0-9+.-]*://")
# A keyword-form password: quoted (backslash escapes, perhaps never closed) or up to a space.
_KEYWORD_PASSWORD = re.compile(r"""(?i)(?:^|(?<=\s))password\s*=\s*(?:'(?:[^'\\]|\\.)*'?|\S*)""")
# In a URL's query the password runs to the end: an unencoded "&" in it cannot be told apart
# from the next parameter, so what follows it is not shown.
_QUERY_PASSWORD = re.compile(r"(?is)([?&])password=.*$")


def _without_password(dsn: str) -> str:
    """The DSN text with every possible password taken out, before any parsing.

    Parsing first would be wrong: a password holding "@", "/", ":" or a space can make libpq
    read part of it as the host, the port or the database, which would then be printed.
    """
    if _URL.match(dsn):
        scheme, rest = dsn.split("://", 1)
        # Everything up to the last "@" is user information; a password may contain "@".
        at = rest.rfind("@")
        if at >= 0:
            user = rest[:at].split(":", 1)[0]
            rest = (f"{user}@" if user else "") + rest[at + 1 :]
        rest = _QUERY_PASSWORD.sub(r"\1", rest)
        return f"{scheme}://" + (rest[:-1] if rest.endswith(("?", "&")) else rest)
    return _KEYWORD_PASSWORD.sub("", dsn)


def redact(dsn: str) -> str:
    """The DSN with any password removed, safe to print, whatever its form."""
    cleaned = _without_password(dsn)
    try:
        params = conninfo.conninfo_to_dict(cleaned)
    except psycopg.ProgrammingError:
        if _URL.match(cleaned):
            return cleaned.strip()  # the whole user information is gone already
        # A malformed keyword string (an unquoted space in a value, say): its pieces cannot be
        # told apart, so show only the host, if one can be seen.
        seen = re.search(r"(?i)(?:^|\s)host\s*=\s*([^\s']+)", cleaned)
        return f"(a connection string that does not parse{', host ' + seen[1] if seen else ''})"
    params.pop("password", None)
    host = str(params.pop("host", "") or "")
    port = params.pop("port", "")
    user = params.pop("user", "")
    dbname = params.pop("dbname", "")
    netloc = f"{user}@" if user else ""
    if host and not host.startswith("/"):
        netloc += host
    if port and not (host and host.startswith("/")):
        netloc += f":{port}"
    query = []
    if host.startswith("/"):
        query.append(f"host={host}")
        if port:
            query.append(f"port={port}")
    query += [f"{k}={v}" for k, v in sorted(params.items()) if v is not None]
    return f"postgresql://{netloc}/{dbname}" + ("?" + "&".join(query) if query else "")


def _hint(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    # psycopg repeats the server address in its message; keep the reason after it.
    for marker in ("failed: ", "error: "):
        if marker in text:
            text = text.rsplit(marker, 1)[-1]
    if "connection option" in text or "connection info" in text:
        # libpq quotes the value it could not use, which may be a piece of a password that a
        # stray "@", ":" or "/" pushed into the host or port.
        text = re.sub(r'"[^"]*"', '"..."', text)
    return text or type(exc).__name__


def connect(dsn: str, *, autocommit: bool = False) -> psycopg.Connection:
    """Open a connection, or raise DatabaseUnavailable naming the server without its password."""
    try:
        return psycopg.connect(dsn, autocommit=autocommit, connect_timeout=CONNECT_TIMEOUT_S)
    except psycopg.OperationalError as exc:
        raise DatabaseUnavailable(redact(dsn), _hint(exc)) from None
    except psycopg.ProgrammingError:
        # libpq's message quotes the piece it could not read, which may be part of a password.
        raise DatabaseUnavailable(
            redact(dsn), "invalid connection string (not a URL or keyword=value pairs)"
        ) from None


@contextmanager
def connection(dsn: str, *, autocommit: bool = False) -> Iterator[psycopg.Connection]:
    conn = connect(dsn, autocommit=autocommit)
    try:
        yield conn
    finally:
        conn.close()


def timescaledb_version(conn: psycopg.Connection) -> str | None:
    row = conn.execute(
        "select extversion from pg_extension where extname = 'timescaledb'"
    ).fetchone()
    return row[0] if row else None


# timescaledb.license's values, as users know the editions.
EDITIONS = {"apache": "Apache-2 edition", "timescale": "community edition"}


def timescaledb_edition(conn: psycopg.Connection) -> str | None:
    """'apache' (the Apache-2 code alone) or 'timescale' (the community edition); None when
    TimescaleDB is not loaded."""
    row = conn.execute(
        "select setting from pg_settings where name = 'timescaledb.license'"
    ).fetchone()
    return str(row[0]) if row else None


def require_timescaledb(conn: psycopg.Connection, dsn: str) -> str:
    """Create the extension if the server has it; refuse clearly when it does not."""
    version = timescaledb_version(conn)
    if version:
        return version
    available = conn.execute(
        "select default_version from pg_available_extensions where name = 'timescaledb'"
    ).fetchone()
    if not available:
        raise DatabaseError(
            f"the server at {redact(dsn)} has no timescaledb extension; install TimescaleDB 2.13+ "
            "(scripts/install-timescaledb) or use the embedded server (tapelens db up)"
        )
    try:
        conn.execute("create extension if not exists timescaledb")
    except psycopg.Error as exc:
        raise DatabaseError(
            f"cannot create the timescaledb extension at {redact(dsn)}: {_hint(exc)} "
            "(is it in shared_preload_libraries?)"
        ) from None
    return timescaledb_version(conn) or "?"
