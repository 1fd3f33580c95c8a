"""What every command shares: the resolved settings and the database they talk to."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import click
import polars as pl

from tapelens.db import connection
from tapelens.errors import ServerError
from tapelens.ingest.migrations import migrate
from tapelens.server import Server, server_for, start
from tapelens.settings import default_home


@dataclass
class App:
    dsn_option: str | None
    home: Path
    pg_bin: Path
    pg_user: str

    @classmethod
    def from_options(cls, dsn: str | None, home: str | None, pg_bin: str, pg_user: str) -> App:
        return cls(
            dsn_option=dsn or None,
            home=Path(home).expanduser() if home else default_home(),
            pg_bin=Path(pg_bin),
            pg_user=pg_user,
        )

    @property
    def embedded(self) -> bool:
        return self.dsn_option is None

    def server(self) -> Server:
        return server_for(self.home, self.pg_bin, self.pg_user)

    def dsn(self, create: bool = False) -> str:
        """The database every command uses: --dsn/TAPELENS_DSN, else the embedded server of
        the home directory, started (and migrated) when it is stopped. A home without a server
        is an error naming the command that makes one: a fresh, empty server started by a
        mistyped home would answer every question with nothing. `create`: the command makes
        one (`demo run`)."""
        if self.dsn_option:
            return self.dsn_option
        server = self.server()
        if not create and not server.initialised():
            raise ServerError(
                f"no tapelens server in {server.home}; start one with `tapelens db up`"
                " (or point tapelens at a database with --dsn or TAPELENS_DSN)"
            )
        if not server.running():
            click.echo(f"tapelens: starting the embedded server in {server.home}", err=True)
            dsn = start(server)
            with connection(dsn) as conn:
                migrate(conn, dsn)
            return dsn
        return server.dsn()


pass_app = click.make_pass_decorator(App)


def drives_for(
    drives: dict[str, int], files: pl.DataFrame, readers: Mapping[str, tuple[str, ...]]
) -> dict[str, int]:
    """The drives a command uses: those given or listed in tapelens.drives, else (said on
    stderr) one drive of the first type that reads each media type present in `files`."""
    if drives:
        return drives
    assumed: dict[str, int] = {}
    for media in files["media_type"].unique().drop_nulls().to_list():
        for drive_type in readers.get(media, ())[:1]:
            assumed[drive_type] = 1
    spec = ",".join(f"{k}:{v}" for k, v in sorted(assumed.items()))
    click.echo(f"no --drives and no drives in tapelens.drives: assuming {spec}", err=True)
    return assumed
