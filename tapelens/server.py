"""The embedded TimescaleDB server: a private PostgreSQL 15 cluster under the tapelens home.

Layout under the home directory:
    pgdata/    the cluster (owned by the user that runs the server)
    run/       the unix socket directory
    server.log PostgreSQL's log
PostgreSQL refuses to run as root, so when tapelens runs as root the cluster is owned and run by
an unprivileged system user (the `postgres` user of the Debian package by default).
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from tapelens.errors import ServerError

DATABASE = "tapelens"
ROLE = "tapelens"
START_TIMEOUT_S = 60

# Settings the embedded cluster starts with; sized for a workstation, not a shared server.
SERVER_CONF = {
    "shared_preload_libraries": "'timescaledb'",
    "timescaledb.telemetry_level": "off",
    "listen_addresses": "'127.0.0.1'",
    "shared_buffers": "'512MB'",
    "work_mem": "'64MB'",
    "maintenance_work_mem": "'512MB'",
    "max_wal_size": "'4GB'",
    "synchronous_commit": "off",
    "max_locks_per_transaction": "256",
    "logging_collector": "off",
}


@dataclass(frozen=True)
class Server:
    home: Path
    pg_bin: Path
    run_as: str | None  # system user that owns and runs the cluster; None = the caller
    # TimescaleDB's edition: "apache" (the Apache-2 code alone) or "timescale" (the community
    # edition, which adds columnstore compression and background policies; its module must be
    # installed beside the extension's).
    timescaledb_license: str = "apache"

    @property
    def data_dir(self) -> Path:
        return self.home / "pgdata"

    @property
    def socket_dir(self) -> Path:
        return self.home / "run"

    @property
    def log_file(self) -> Path:
        return self.home / "server.log"

    def port(self) -> int:
        conf = self.data_dir / "postgresql.auto.conf"
        for line in self._read(conf).splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "port":
                return int(value.strip().strip("'"))
        raise ServerError(f"no port recorded in {conf}; remove {self.data_dir} and run db up again")

    def dsn(self, database: str = DATABASE) -> str:
        # The socket path percent-encoded: the home may hold spaces, quotes, "&" or "#".
        host = quote(str(self.socket_dir), safe="/")
        return f"postgresql://{ROLE}@/{database}?host={host}&port={self.port()}"

    def initialised(self) -> bool:
        return (self.data_dir / "PG_VERSION").exists() or self._exists_as_owner(
            self.data_dir / "PG_VERSION"
        )

    def running(self) -> bool:
        if not self.initialised():
            return False
        result = self._run(["pg_ctl", "status", "-D", str(self.data_dir)], check=False)
        return result.returncode == 0

    # -- helpers -------------------------------------------------------------------------------

    def _read(self, path: Path) -> str:
        try:
            return path.read_text()
        except PermissionError:
            return self._as_owner(["cat", str(path)]).stdout

    def _exists_as_owner(self, path: Path) -> bool:
        if self.run_as is None:
            return False
        return self._as_owner(["test", "-e", str(path)], check=False).returncode == 0

    def _as_owner(self, argv: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
        prefix = ["runuser", "-u", self.run_as, "--"] if self.run_as else []
        try:
            return subprocess.run(
                prefix + argv,
                capture_output=True,
                text=True,
                check=check,
                cwd=self.home if self.home.is_dir() else "/",
                env={**os.environ, "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"},
            )
        except FileNotFoundError as exc:
            raise ServerError(
                f"{exc.filename} not found; run scripts/install-timescaledb"
            ) from None
        except subprocess.CalledProcessError as exc:
            detail = (exc.stderr or exc.stdout or "").strip().splitlines()
            last = detail[-1] if detail else f"exit status {exc.returncode}"
            raise ServerError(
                f"{Path(argv[0]).name} failed: {last} (log: {self.log_file})"
            ) from None

    def _run(self, argv: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
        program = self.pg_bin / argv[0]
        if not program.exists():
            raise ServerError(
                f"{program} not found; install PostgreSQL 15 and TimescaleDB with "
                "scripts/install-timescaledb (or set TAPELENS_PG_BIN)"
            )
        return self._as_owner([str(program), *argv[1:]], check=check)


# PostgreSQL's own initdb and pg_ctl start the server through a shell, with the data directory
# and log paths in double quotes: inside them these characters still expand ($(...), `...`) or
# end the quote, so a home path holding one would run as the server's user.
SHELL_UNSAFE = frozenset('"$`\\\n')
LICENSES = ("apache", "timescale")


def server_for(
    home: Path, pg_bin: Path, pg_user: str, timescaledb_license: str = "apache"
) -> Server:
    """The server under `home`; run by `pg_user` when the caller is root."""
    if timescaledb_license not in LICENSES:
        raise ServerError(
            f"TimescaleDB license {timescaledb_license!r} is not one of {', '.join(LICENSES)}"
        )
    unsafe = sorted(SHELL_UNSAFE & set(str(home)))
    if unsafe:
        shown = " ".join(repr(c) for c in unsafe)
        raise ServerError(
            f"the tapelens home {str(home)!r} holds {shown}, which PostgreSQL's tools would pass"
            " to a shell; set TAPELENS_HOME (or --home) to a path without them"
        )
    run_as = pg_user if os.geteuid() == 0 else None
    return Server(
        home=home.expanduser().absolute(),
        pg_bin=pg_bin,
        run_as=run_as,
        timescaledb_license=timescaledb_license,
    )


def community_module(pg_bin: Path) -> Path | None:
    """TimescaleDB's community-edition module in the server's library directory, if installed.

    Debian's packages and tapelens's own install script build the Apache-2 edition alone; the
    community edition's module comes from Timescale's packages or a build of their source.
    """
    libdir = pg_bin.parent / "lib"
    found = sorted(libdir.glob("timescaledb-tsl-*.so"))
    return found[-1] if found else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _grant_traverse(path: Path, user: str) -> None:
    """Let `user` reach `path` (search permission only) on every ancestor that denies it."""
    uid = pwd.getpwnam(user).pw_uid
    for ancestor in [*reversed(path.parents), path]:
        st = ancestor.stat()
        if st.st_uid == uid or st.st_mode & 0o001:
            continue
        if shutil.which("setfacl"):
            subprocess.run(["setfacl", "-m", f"u:{user}:x", str(ancestor)], check=True)
        else:
            ancestor.chmod(st.st_mode | 0o001)


def _prepare_dirs(server: Server) -> None:
    # The home holds the cluster, its log and Superset's secrets: its owner's alone.
    server.home.mkdir(mode=0o700, parents=True, exist_ok=True)
    # The server's log can quote statements (a failed ALTER ROLE ... PASSWORD among them).
    server.log_file.touch(mode=0o600, exist_ok=True)
    server.log_file.chmod(0o600)
    if server.run_as:
        try:
            entry = pwd.getpwnam(server.run_as)
        except KeyError:
            raise ServerError(
                f"system user {server.run_as!r} does not exist; install postgresql-15 or set "
                "TAPELENS_PG_USER to an unprivileged user"
            ) from None
        _grant_traverse(server.home, server.run_as)
        for d in (server.data_dir, server.socket_dir):
            d.mkdir(mode=0o700, exist_ok=True)
            os.chown(d, entry.pw_uid, entry.pw_gid)
        os.chown(server.log_file, entry.pw_uid, entry.pw_gid)
    else:
        server.data_dir.mkdir(mode=0o700, exist_ok=True)
        server.socket_dir.mkdir(mode=0o700, exist_ok=True)


def _initdb(server: Server) -> None:
    _prepare_dirs(server)
    server._run(
        [
            "initdb",
            "-D",
            str(server.data_dir),
            "-U",
            ROLE,
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            "--encoding=UTF8",
            "--locale=C.UTF-8",
        ]
    )
    conf = "".join(f"{k} = {v}\n" for k, v in SERVER_CONF.items())
    conf += f"port = {_free_port()}\nunix_socket_directories = {_conf_string(server.socket_dir)}\n"
    # postgresql.auto.conf is read last, so these win over the template postgresql.conf.
    _append_as_owner(server, server.data_dir / "postgresql.auto.conf", conf)


def _conf_string(value: object) -> str:
    """A postgresql.conf string value: single-quoted, quotes doubled, backslashes escaped."""
    text = str(value).replace("\\", "\\\\").replace("'", "''")
    return f"'{text}'"


def _append_as_owner(server: Server, path: Path, text: str) -> None:
    # `tee -a` as the cluster's owner: an argument list, so no part of the path is ever read by
    # a shell (a home such as /srv/it's $(x) stays a path).
    prefix = ["runuser", "-u", server.run_as, "--"] if server.run_as else []
    subprocess.run(
        [*prefix, "tee", "-a", str(path)],
        input=text,
        text=True,
        check=True,
        stdout=subprocess.DEVNULL,
    )


def start(server: Server) -> str:
    """Initialise (first time) and start the cluster; return its DSN. A no-op when running."""
    if not server.initialised():
        _initdb(server)
    if not server.running():
        argv = ["pg_ctl", "start", "-D", str(server.data_dir), "-l", str(server.log_file)]
        if server.timescaledb_license != "apache":
            if community_module(server.pg_bin) is None:
                raise ServerError(
                    f"TimescaleDB license {server.timescaledb_license!r} needs the community"
                    f" edition's module (timescaledb-tsl-*.so) in {server.pg_bin.parent / 'lib'};"
                    " this installation has the Apache-2 edition only"
                )
            # One of LICENSES, checked above: nothing a user typed reaches pg_ctl's shell.
            argv += ["-o", f"-c timescaledb.license={server.timescaledb_license}"]
        server._run([*argv, "-w", "-t", str(START_TIMEOUT_S)])
    _ensure_database(server)
    return server.dsn()


def _ensure_database(server: Server) -> None:
    import psycopg

    with psycopg.connect(server.dsn("postgres"), autocommit=True) as conn:
        exists = conn.execute("select 1 from pg_database where datname = %s", [DATABASE]).fetchone()
        if not exists:
            conn.execute(f'create database "{DATABASE}"')


def stop(server: Server) -> bool:
    """Stop the cluster; False when it was not running."""
    if not server.running():
        return False
    server._run(["pg_ctl", "stop", "-D", str(server.data_dir), "-m", "fast", "-w"])
    return True
