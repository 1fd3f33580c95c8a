"""Connections: one place that opens them and turns failures into DatabaseUnavailable."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import unquote

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
        # The query's password first: an "@" in it must not be read as the end of the user
        # information.
        rest = _QUERY_PASSWORD.sub(r"\1", rest)
        # Everything up to the last "@" is user information; a password may contain "@".
        at = rest.rfind("@")
        if at >= 0:
            user = rest[:at].split(":", 1)[0]
            rest = (f"{user}@" if user else "") + rest[at + 1 :]
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


# A URL's user information: up to the last "@" before the host (a password may hold "@").
_URL_USERINFO = re.compile(r"^\s*[A-Za-z][A-Za-z0-9+.-]*://(?P<userinfo>.*)@", re.DOTALL)
# Where a keyword-form password starts; what follows may run to the end when it does not parse.
_KEYWORD_START = re.compile(r"(?i)(?:^|(?<=\s))password\s*=\s*")
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
# Pieces of a password shorter than this are not masked: they would mask ordinary words.
_PIECE = 3


def password_texts(dsn: str) -> list[str]:
    """Every text of the DSN that may hold its password, as written and percent-decoded.

    Read without trusting the DSN to parse: in a URL, everything after the first ":" of the
    user information (up to the last "@"), and a `password=` query parameter to the end; in
    the keyword form, the password's value, or all that follows `password=` when the string
    does not parse. Too much rather than too little: these texts are only ever masked.
    """
    texts: list[str] = []
    url = _URL_USERINFO.match(dsn)
    if url and ":" in url["userinfo"]:
        texts.append(url["userinfo"].split(":", 1)[1])
    for found in re.finditer(r"(?i)[?&]password=", dsn):
        texts.append(dsn[found.end() :])
    if not _URL.match(dsn):
        for found in _KEYWORD_START.finditer(dsn):
            value = dsn[found.end() :]
            texts.append(value)
            if value.startswith("'"):  # quoted, perhaps never closed: as libpq unescapes it
                texts.append(re.sub(r"\\(.)", r"\1", value[1:]))
    try:
        parsed = conninfo.conninfo_to_dict(dsn).get("password")
    except psycopg.ProgrammingError:
        parsed = None
    if parsed:
        texts.append(str(parsed))
    texts += [unquote(text) for text in texts]
    return [text for text in dict.fromkeys(texts) if text]


def mask_password(text: str, dsn: str) -> str:
    """`text` with every run of 3 or more characters that also occurs in a possible password
    of `dsn` replaced by "***"."""
    pieces = {
        secret[i : i + _PIECE]
        for secret in password_texts(dsn)
        for i in range(len(secret) - _PIECE + 1)
    }
    covered = [False] * len(text)
    for i in range(len(text) - _PIECE + 1):
        if text[i : i + _PIECE] in pieces:
            covered[i : i + _PIECE] = [True] * _PIECE
    out: list[str] = []
    for i, char in enumerate(text):
        if not covered[i]:
            out.append(char)
        elif i == 0 or not covered[i - 1]:
            out.append("***")
    return "".join(out)


def _needs_escaping(dsn: str) -> bool:
    """Whether a URL's password holds a character that must be percent-encoded."""
    url = _URL_USERINFO.match(dsn)
    if not url or ":" not in url["userinfo"]:
        return False
    return bool(re.search(r"[@:/?#\[\]]", url["userinfo"].split(":", 1)[1]))


def _safe_hint(exc: Exception, dsn: str) -> str:
    """The reason a connection failed, with nothing of the password in it.

    libpq and psycopg quote the host, port or option they could not use; when a password
    holding "@", "/" or "?" was split wrongly, that quote holds a piece of it. A quoted value
    is kept only where the redacted DSN shows it anyway, and pieces of any possible password
    are masked whatever the message's shape.
    """
    shown = redact(dsn)
    hint = _QUOTED.sub(
        lambda quoted: (
            quoted[0] if quoted[0][1:-1] in shown else f"{quoted[0][0]}...{quoted[0][0]}"
        ),
        _hint(exc),
    )
    hint = mask_password(hint, dsn)
    if _needs_escaping(dsn):
        hint += " (a password holding @ : / ? # [ or ] must be percent-encoded in a URL: @ is %40)"
    return hint


def unavailable(dsn: str, exc: Exception) -> DatabaseUnavailable:
    """The error to raise when a connection to `dsn` failed with `exc`, whichever client
    (psycopg, ADBC) tried: the DSN and the reason shown with nothing of the password."""
    return DatabaseUnavailable(redact(dsn), _safe_hint(exc, dsn))


def connect(dsn: str, *, autocommit: bool = False) -> psycopg.Connection:
    """Open a connection, or raise DatabaseUnavailable naming the server without its password."""
    try:
        return psycopg.connect(dsn, autocommit=autocommit, connect_timeout=CONNECT_TIMEOUT_S)
    except psycopg.OperationalError as exc:
        raise unavailable(dsn, exc) from None
    except psycopg.ProgrammingError:
        # libpq's message quotes the piece it could not read, which may be part of a password.
        reason = "invalid connection string (not a URL or keyword=value pairs)"
        if _needs_escaping(dsn):
            reason += "; a password holding @ : / ? # [ or ] must be percent-encoded in a URL"
        raise DatabaseUnavailable(redact(dsn), reason) from None


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
