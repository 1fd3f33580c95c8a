"""What `tapelens dashboards serve | deploy | export | stop` do, as library functions.

serve: Superset's virtualenv, configuration, metadata and admin, the read-only database role,
       the server on 127.0.0.1, then the assets imported over the REST API.
deploy: the read-only role and the assets, imported into a Superset that runs elsewhere.
export: the dashboards of dashboards/ read back from a Superset, in normal form.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tapelens.dashboards.assets import asset_uuids, build_bundle, normalise_export, write_assets
from tapelens.dashboards.reader_role import ReaderConnection, prepare_reader
from tapelens.dashboards.superset.api import SupersetClient
from tapelens.dashboards.superset.install import (
    ADMIN_USER,
    ASSETS_DIR,
    VIEWER_USER,
    DashboardsError,
    Progress,
    SupersetHome,
    admin_password,
    ensure_admin,
    ensure_metadata,
    ensure_venv,
    ensure_viewer,
    quiet,
    read_or_create_secret,
    write_config,
)
from tapelens.dashboards.superset.server import Running, start

READER_PASSWORD_FILE = "reader.password"
# The database entry of dashboards/bundle/databases/, whose datasets the viewer may read.
DATABASE_NAME = "tapelens"
READER_PASSWORD_BYTES = 18


@dataclass(frozen=True)
class Served:
    """A running Superset with the tapelens dashboards in it."""

    url: str
    user: str
    generated_password: str | None  # set only when this call made the admin's password
    server: Running
    viewer: str = VIEWER_USER
    generated_viewer_password: str | None = None  # set only when this call made it


def reader_password(home: SupersetHome) -> str:
    """The read-only role's password, made once and kept (0600) with the Superset instance."""
    value, _ = read_or_create_secret(home.root / READER_PASSWORD_FILE, READER_PASSWORD_BYTES)
    return value


def install(home: SupersetHome, admin_pw: str | None, progress: Progress = quiet) -> str | None:
    """Everything before the first start; returns the admin password when it was generated."""
    ensure_venv(home, progress)
    write_config(home)
    ensure_metadata(home, progress)
    return ensure_admin(home, admin_pw)


def import_assets(
    client: SupersetClient, reader: ReaderConnection, directory: Path = ASSETS_DIR
) -> None:
    bundle, passwords = build_bundle(reader, directory)
    client.import_assets(bundle, passwords)


def serve(
    home: SupersetHome,
    dsn: str,
    port: int | None = None,
    admin_pw: str | None = None,
    directory: Path = ASSETS_DIR,
    progress: Progress = quiet,
) -> Served:
    """Set up (first time) and start Superset on 127.0.0.1, then import the dashboards."""
    reader = prepare_reader(dsn, reader_password(home))
    generated = install(home, admin_pw, progress)
    server = start(home, port=port, wait=True, progress=progress)
    client = SupersetClient(server.url)
    client.login(ADMIN_USER, admin_pw or admin_password(home))
    progress("importing the dashboards")
    import_assets(client, reader, directory)
    progress(f"giving the read-only user {VIEWER_USER!r} the dashboards' datasets")
    viewer_generated = ensure_viewer(home, DATABASE_NAME)
    return Served(server.url, ADMIN_USER, generated, server, VIEWER_USER, viewer_generated)


def deploy(
    url: str,
    user: str,
    password: str,
    dsn: str,
    home: SupersetHome,
    db_host: str | None = None,
    directory: Path = ASSETS_DIR,
) -> ReaderConnection:
    """Import the dashboards into the Superset at `url`, connected to the database of `dsn`
    through the read-only role (whose password is kept under `home`)."""
    home.root.mkdir(parents=True, exist_ok=True)
    reader = prepare_reader(dsn, reader_password(home), host=db_host)
    client = SupersetClient(url)
    client.login(user, password)
    import_assets(client, reader, directory)
    return reader


def export(
    url: str, user: str, password: str, out_dir: Path, known_dir: Path = ASSETS_DIR
) -> list[Path]:
    """Write the tapelens dashboards (those of `known_dir` and `out_dir`, by UUID) as they are
    now in the Superset at `url`, with everything they use, into out_dir."""
    wanted = asset_uuids("dashboards", known_dir) | asset_uuids("dashboards", out_dir)
    client = SupersetClient(url)
    client.login(user, password)
    ids = [d["id"] for d in client.dashboards() if str(d.get("uuid")) in wanted]
    if not ids:
        raise DashboardsError(
            f"none of the tapelens dashboards is in the Superset at {url}; "
            "run: tapelens dashboards deploy --url " + url
        )
    return write_assets(normalise_export(client.export_dashboards(sorted(ids))), out_dir)
