"""Versioned SQL migrations in ingest/schema/, each applied once in its own transaction."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from importlib import resources
from typing import LiteralString, cast

import psycopg

from tapelens.db import redact, require_timescaledb
from tapelens.errors import DatabaseError

SCHEMA = "tapelens"
_NAME = re.compile(r"^(\d{3})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()


def available() -> list[Migration]:
    """Every migration shipped with tapelens, in version order."""
    folder = resources.files("tapelens.ingest") / "schema"
    found = []
    for entry in folder.iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append(Migration(int(match[1]), match[2], entry.read_text()))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise DatabaseError(f"two migrations share a version number: {versions}")
    return found


def applied_versions(conn: psycopg.Connection) -> set[int]:
    exists = conn.execute("select to_regclass('tapelens.schema_migrations')").fetchone()
    if not exists or exists[0] is None:
        return set()
    return {r[0] for r in conn.execute("select version from tapelens.schema_migrations")}


def schema_version(conn: psycopg.Connection) -> int:
    versions = applied_versions(conn)
    return max(versions) if versions else 0


def migrate(conn: psycopg.Connection, dsn: str) -> list[Migration]:
    """Apply the missing migrations; return those applied (empty when up to date)."""
    conn.autocommit = True
    require_timescaledb(conn, dsn)
    conn.execute(f"create schema if not exists {SCHEMA}")
    conn.execute(
        """create table if not exists tapelens.schema_migrations (
               version integer primary key,
               name text not null,
               checksum text not null,
               applied_at timestamptz not null default now())"""
    )
    done = applied_versions(conn)
    applied = []
    for migration in available():
        if migration.version in done:
            continue
        try:
            with conn.transaction():
                # A second migrator racing us waits here, then finds the version applied.
                conn.execute("lock table tapelens.schema_migrations in exclusive mode")
                if migration.version in applied_versions(conn):
                    continue
                conn.execute(cast(LiteralString, migration.sql))
                conn.execute(
                    "insert into tapelens.schema_migrations (version, name, checksum)"
                    " values (%s, %s, %s)",
                    [migration.version, migration.name, migration.checksum],
                )
        except psycopg.Error as exc:
            raise DatabaseError(
                f"migration {migration.version:03d}_{migration.name} failed on {redact(dsn)}: "
                f"{' '.join(str(exc).split())}"
            ) from None
        applied.append(migration)
    return applied
