"""The errors tapelens raises for expected failures.

Library code raises these with the context a user needs; only the CLI turns them into a one-line
message and a non-zero exit status.
"""

from __future__ import annotations

from pathlib import Path


class TapelensError(Exception):
    """Base of every expected failure: its str() is the one-line message shown to the user."""

    exit_code = 1


class ParseError(TapelensError):
    """A line of an input file is not what its format says it should be."""

    exit_code = 3

    def __init__(self, path: str | Path, line: int, reason: str) -> None:
        self.path = str(path)
        self.line = line
        self.reason = reason
        super().__init__(f"{self.path}:{line}: {reason}")


class InputError(TapelensError):
    """An input file cannot be read at all (missing, unreadable, wrong compression)."""

    exit_code = 3


class ConfigError(TapelensError):
    """A setting is missing or invalid; says where it was looked for."""

    exit_code = 2

    def __init__(self, setting: str, where_looked: str, reason: str = "") -> None:
        self.setting = setting
        self.where_looked = where_looked
        detail = f": {reason}" if reason else ""
        super().__init__(f"setting {setting}{detail} (looked in {where_looked})")


class DatabaseUnavailable(TapelensError):
    """The database cannot be reached; the DSN shown never carries a password."""

    exit_code = 4

    def __init__(self, dsn_without_password: str, hint: str) -> None:
        self.dsn = dsn_without_password
        self.hint = hint
        super().__init__(f"cannot reach the database at {dsn_without_password}: {hint}")


class DatabaseError(TapelensError):
    """The database answered, but not as tapelens needs (missing extension, failed statement)."""

    exit_code = 4


class ServerError(TapelensError):
    """The embedded TimescaleDB server could not be set up, started or stopped."""

    exit_code = 5
