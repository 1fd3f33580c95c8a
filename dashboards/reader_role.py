"""The database side of the dashboards: a read-only role and the views it reads.

Superset connects as `tapelens_reader`, a login role that can read the dbt marts
(tapelens_marts) and the dashboard views (tapelens_dashboards) and nothing else: no write, no
raw table. The views of dashboards/views/*.sql read raw tables (failed transfers, saved recall
plans) with their owner's rights, so the role reaches those rows only through them. They depend
on the canonical tables alone, never on a dbt model, so a `models build` does not drop them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import psycopg
from psycopg import sql

from tapelens.db import connection, redact
from tapelens.dbt_runs import MARTS_SCHEMA
from tapelens.errors import DatabaseError

READER_ROLE = "tapelens_reader"
VIEWS_SCHEMA = "tapelens_dashboards"
VIEWS_DIR = Path(__file__).resolve().parent / "views"
# The longest a dashboard query may run (Superset's own SQL Lab timeout is longer).
READER_STATEMENT_TIMEOUT = "60s"
# Where Superset reaches an embedded server that listens on a unix socket and on loopback.
LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class ReaderConnection:
    """How Superset reaches the tapelens database as the read-only role."""

    host: str
    port: int
    dbname: str
    user: str
    password: str

    def sqlalchemy_uri(self, masked: bool = True) -> str:
        """The URI for Superset (psycopg2 driver); the password masked as Superset masks it
        (it travels apart, in the import's `passwords` field)."""
        secret = "XXXXXXXXXX" if masked else quote(self.password, safe="")
        return (
            f"postgresql+psycopg2://{quote(self.user, safe='')}:{secret}@{self.host}:{self.port}"
            f"/{quote(self.dbname, safe='')}"
        )


def view_files() -> list[Path]:
    return sorted(VIEWS_DIR.glob("*.sql"))


def prepare_reader(dsn: str, password: str, host: str | None = None) -> ReaderConnection:
    """Create or update the reader role with `password`, (re)create the dashboard views, grant
    the role what the dashboards read, and say how to connect as it.

    The DSN's role needs CREATEROLE (or superuser) and must own the marts. `host` overrides the
    host Superset should use (default: the DSN's, or 127.0.0.1 for a unix socket).
    """
    with connection(dsn, autocommit=True) as conn:
        info = conn.info
        owner = info.user
        marts = conn.execute("select to_regnamespace(%s) is not null", [MARTS_SCHEMA]).fetchone()
        if not marts or not marts[0]:
            raise DatabaseError(
                f"the database at {redact(dsn)} has no {MARTS_SCHEMA} schema; "
                "run: tapelens marts build"
            )
        try:
            with conn.transaction():
                _ensure_role(conn, password)
                _create_views(conn)
                _grant(conn, info.dbname, owner)
        except psycopg.Error as exc:
            detail = " ".join(str(exc).split())
            raise DatabaseError(
                f"cannot set up the read-only role {READER_ROLE} at {redact(dsn)}: {detail}"
            ) from None
        socket_host = not info.host or info.host.startswith("/")
        return ReaderConnection(
            host=host or (LOOPBACK if socket_host else info.host),
            port=int(info.port),
            dbname=info.dbname,
            user=READER_ROLE,
            password=password,
        )


def _ensure_role(conn: psycopg.Connection, password: str) -> None:
    role = sql.Identifier(READER_ROLE)
    exists = conn.execute("select 1 from pg_roles where rolname = %s", [READER_ROLE]).fetchone()
    verb = sql.SQL("alter") if exists else sql.SQL("create")
    conn.execute(
        sql.SQL(
            "{} role {} with login nosuperuser nocreatedb nocreaterole noinherit "
            "noreplication password {}"
        ).format(verb, role, sql.Literal(password))
    )
    # A second lock on writes: every transaction of the role starts read-only.
    conn.execute(sql.SQL("alter role {} set default_transaction_read_only = on").format(role))
    # A dashboard query that runs away is cut off rather than holding a core and a snapshot.
    conn.execute(
        sql.SQL("alter role {} set statement_timeout = {}").format(
            role, sql.Literal(READER_STATEMENT_TIMEOUT)
        )
    )


def _create_views(conn: psycopg.Connection) -> None:
    schema = sql.Identifier(VIEWS_SCHEMA)
    conn.execute(sql.SQL("drop schema if exists {} cascade").format(schema))
    conn.execute(sql.SQL("create schema {}").format(schema))
    for path in view_files():
        conn.execute(path.read_text().encode())


def _grant(conn: psycopg.Connection, dbname: str, owner: str) -> None:
    role = sql.Identifier(READER_ROLE)
    conn.execute(sql.SQL("grant connect on database {} to {}").format(sql.Identifier(dbname), role))
    # The role reaches tapelens's database only. PostgreSQL lets every role connect to every
    # database unless PUBLIC's CONNECT is revoked: revoke it on the other databases this owner
    # owns (all of them on the embedded server; on a shared server, only its own), and say
    # explicitly that the reader may not connect to any other.
    others = conn.execute(
        "select datname from pg_database d join pg_roles r on r.oid = d.datdba"
        " where r.rolname = %s and d.datname <> %s and d.datallowconn",
        [owner, dbname],
    ).fetchall()
    for (other,) in others:
        database = sql.Identifier(other)
        conn.execute(sql.SQL("revoke connect on database {} from public").format(database))
        conn.execute(sql.SQL("revoke connect on database {} from {}").format(database, role))
    for name in (MARTS_SCHEMA, VIEWS_SCHEMA):
        schema = sql.Identifier(name)
        conn.execute(sql.SQL("grant usage on schema {} to {}").format(schema, role))
        conn.execute(sql.SQL("grant select on all tables in schema {} to {}").format(schema, role))
        # dbt replaces a table on every build: tables made later by the owner are readable too.
        conn.execute(
            sql.SQL(
                "alter default privileges for role {} in schema {} grant select on tables to {}"
            ).format(sql.Identifier(owner), schema, role)
        )
