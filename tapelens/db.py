"""Connections: one place that opens them and turns failures into DatabaseUnavailable."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg import conninfo

from tapelens.errors import DatabaseError, DatabaseUnavailable

CONNECT_TIMEOUT_S = 10


def redact(dsn: str) -> str:
    """The DSN with any password removed, safe to print."""
    try:
        params = conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        # Not parseable: strip anything that looks like a URL password or a password= pair.
        dsn = re.sub(r"(://[^:/@]*):[^@]*@", r"\1:***@", dsn)
        return re.sub(r"(password\s*=\s*)\S+", r"\1***", dsn)
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
    return text or type(exc).__name__


def connect(dsn: str, *, autocommit: bool = False) -> psycopg.Connection:
    """Open a connection, or raise DatabaseUnavailable naming the server without its password."""
    try:
        return psycopg.connect(dsn, autocommit=autocommit, connect_timeout=CONNECT_TIMEOUT_S)
    except psycopg.OperationalError as exc:
        raise DatabaseUnavailable(redact(dsn), _hint(exc)) from None
    except psycopg.ProgrammingError as exc:
        raise DatabaseUnavailable(
            redact(dsn), f"invalid connection string ({_hint(exc)})"
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
