"""Superset in a virtualenv of its own: install, configure, start and stop it.

Superset pins SQLAlchemy < 2 and pandas < 2.2, so it cannot share tapelens's environment. Its
virtualenv is built once from dashboards/superset-requirements.txt and the pinned
dashboards/superset-constraints.txt and reused while those files are unchanged. Layout of an
instance directory (`$TAPELENS_HOME/superset` for `tapelens dashboards serve`):

    venv/                  the virtualenv (may live elsewhere: a cache shared by instances)
    secret_key             Superset's SECRET_KEY, random, mode 0600
    admin.password         the admin's password, mode 0600
    viewer.password        the read-only viewer's password, mode 0600
    superset_config.py     the configuration Superset reads
    superset.db            the metadata database (SQLite)
    superset.log           the server's log
    server.json            pid, port and URL of the running server
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import secrets
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from tapelens.errors import TapelensError

DASHBOARDS_DIR = Path(__file__).resolve().parent.parent
# Superset's import bundle: metadata.yaml, databases/, datasets/, charts/ and dashboards/ as
# Superset itself exports them (its "datasets" are the tables and views a chart reads).
ASSETS_DIR = DASHBOARDS_DIR / "bundle"
REQUIREMENTS = DASHBOARDS_DIR / "superset-requirements.txt"
CONSTRAINTS = DASHBOARDS_DIR / "superset-constraints.txt"
SUPERSET_VERSION = "6.1.0"
ADMIN_USER = "admin"
# The read-only login: sees the tapelens dashboards, charts and datasets, edits nothing, no SQL Lab.
VIEWER_USER = "viewer"
VIEWER_ROLE = "tapelens_viewer"
PASSWORD_BYTES = 18
SECRET_KEY_BYTES = 42
STAMP = "tapelens-stamp"
TEMPLATE_DB = "tapelens-metadata-template.db"

Progress = Callable[[str], None]


class DashboardsError(TapelensError):
    """Superset could not be installed, configured, started or reached."""

    exit_code = 6


def quiet(_: str) -> None:
    """A Progress that says nothing."""
    pass


@dataclass(frozen=True)
class SupersetHome:
    """One Superset instance: its directory, and the virtualenv it runs from."""

    root: Path
    venv: Path

    @classmethod
    def under(cls, tapelens_home: Path) -> SupersetHome:
        root = tapelens_home.expanduser().absolute() / "superset"
        return cls(root=root, venv=root / "venv")

    @property
    def bin(self) -> Path:
        return self.venv / "bin"

    @property
    def secret_key_path(self) -> Path:
        return self.root / "secret_key"

    @property
    def admin_password_path(self) -> Path:
        return self.root / "admin.password"

    @property
    def viewer_password_path(self) -> Path:
        return self.root / "viewer.password"

    @property
    def config_path(self) -> Path:
        return self.root / "superset_config.py"

    @property
    def metadata_db(self) -> Path:
        return self.root / "superset.db"

    @property
    def log_path(self) -> Path:
        return self.root / "superset.log"

    @property
    def state_path(self) -> Path:
        return self.root / "server.json"

    def env(self) -> dict[str, str]:
        """The environment Superset's commands run with: its config, its data directory."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
        env.update(
            SUPERSET_CONFIG_PATH=str(self.config_path),
            SUPERSET_HOME=str(self.root),
            FLASK_APP="superset",
            # Superset's and its packages' own switches for usage telemetry: off.
            SCARF_NO_ANALYTICS="true",
            DO_NOT_TRACK="1",
            PATH=f"{self.bin}{os.pathsep}{env.get('PATH', '')}",
        )
        return env


# -- secrets -----------------------------------------------------------------------------------


def write_private(path: Path, text: str) -> None:
    """Write a file only its owner can read (created 0600, never briefly wider)."""
    private_dir(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    path.chmod(0o600)


def read_or_create_secret(path: Path, nbytes: int) -> tuple[str, bool]:
    """The secret kept in path, made on first use; (secret, made now)."""
    if path.is_file():
        value = path.read_text().strip()
        if value:
            return value, False
    value = secrets.token_urlsafe(nbytes)
    write_private(path, value + "\n")
    return value, True


def new_password() -> str:
    return secrets.token_urlsafe(PASSWORD_BYTES)


# -- the virtualenv ----------------------------------------------------------------------------


def requirements_digest() -> str:
    """What the virtualenv is built from: the two pinned files and the Python version."""
    digest = hashlib.sha256()
    for path in (REQUIREMENTS, CONSTRAINTS):
        digest.update(path.read_bytes())
    digest.update(f"{sys.version_info.major}.{sys.version_info.minor}".encode())
    return digest.hexdigest()


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Serialise builds of one virtualenv between processes (a test run and a user, say)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _run(
    argv: list[str], what: str, env: dict[str, str] | None = None, stdin: str | None = None
) -> str:
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, env=env, input=stdin, check=False
        )
    except FileNotFoundError as exc:
        raise DashboardsError(f"{what}: {exc.filename} not found") from None
    if done.returncode != 0:
        lines = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()]
        last = lines[-1].strip() if lines else f"exit status {done.returncode}"
        raise DashboardsError(f"{what} failed: {last}")
    return done.stdout


def venv_ready(home: SupersetHome) -> bool:
    stamp = home.venv / STAMP
    return stamp.is_file() and stamp.read_text().strip() == requirements_digest()


def ensure_venv(home: SupersetHome, progress: Progress = quiet) -> Path:
    """Build Superset's virtualenv unless the one there was built from the same pins."""
    with _locked(home.venv.parent / (home.venv.name + ".lock")):
        if venv_ready(home):
            return home.venv
        if home.venv.exists():
            _run(["rm", "-rf", str(home.venv)], "removing an outdated Superset virtualenv")
        progress(f"creating Superset's virtualenv in {home.venv} (a few minutes, once)")
        _run([sys.executable, "-m", "venv", str(home.venv)], "python -m venv")
        _run(
            [
                str(home.bin / "pip"),
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "-r",
                str(REQUIREMENTS),
                "-c",
                str(CONSTRAINTS),
            ],
            f"installing Superset {SUPERSET_VERSION} from {REQUIREMENTS.name}",
        )
        (home.venv / STAMP).write_text(requirements_digest() + "\n")
    return home.venv


# -- configuration and metadata database ------------------------------------------------------

_CONFIG = '''\
"""Superset configuration written by tapelens (rewritten on every start; edits are lost)."""

from pathlib import Path

from sqlalchemy import event
from sqlalchemy.engine import Engine

SECRET_KEY = Path({secret!r}).read_text().strip()
SQLALCHEMY_DATABASE_URI = {metadata_uri!r}
# The login form and the REST API keep CSRF protection; the API client sends the token.
WTF_CSRF_ENABLED = True
RATELIMIT_STORAGE_URI = "memory://"
CONTENT_SECURITY_POLICY_WARNING = False
# Nothing phones home: no Scarf telemetry pixel in the pages, no map tiles from Mapbox.
SCARF_ANALYTICS = False
MAPBOX_API_KEY = ""
# No anonymous access and no self-registration: every user is made by tapelens or an admin.
PUBLIC_ROLE_LIKE = None
AUTH_USER_REGISTRATION = False
# Superset's metadata stays small and local: WAL lets the server's threads read while one
# writes, and skipping fsync keeps `superset db upgrade` from taking minutes.
@event.listens_for(Engine, "connect")
def _sqlite_pragmas(dbapi_connection, _record):
    if type(dbapi_connection).__module__.startswith("sqlite3"):
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()
'''


def private_dir(path: Path) -> None:
    """A directory only its owner can enter (made 0700, or narrowed to it)."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.chmod(0o700)


def private_file(path: Path) -> None:
    """Narrow an existing file (a database, a log) to its owner; create it empty if missing."""
    path.touch(mode=0o600, exist_ok=True)
    path.chmod(0o600)


def write_config(home: SupersetHome) -> Path:
    """superset_config.py with a SECRET_KEY of this instance's own (made once, kept 0600)."""
    # Superset's folder holds its secret key, the reader's password, its metadata database (with
    # the connection password) and its log: owner-only, also when made earlier with wider modes.
    private_dir(home.root)
    read_or_create_secret(home.secret_key_path, SECRET_KEY_BYTES)
    text = _CONFIG.format(
        secret=str(home.secret_key_path), metadata_uri=f"sqlite:///{home.metadata_db}"
    )
    write_private(home.config_path, text)
    return home.config_path


def _metadata_stamp(home: SupersetHome) -> Path:
    return home.root / "superset.db.stamp"


def ensure_metadata(home: SupersetHome, progress: Progress = quiet) -> None:
    """Create Superset's metadata database (`superset db upgrade` and `superset init`).

    Both take about a minute; the result before any user or connection exists is kept next to
    the virtualenv and copied into new instances.
    """
    digest = requirements_digest()
    stamp = _metadata_stamp(home)
    if home.metadata_db.is_file() and stamp.is_file() and stamp.read_text().strip() == digest:
        private_file(home.metadata_db)
        return
    template = home.venv / TEMPLATE_DB
    env = home.env()
    superset = str(home.bin / "superset")
    if not home.metadata_db.is_file() and template.is_file():
        _copy_sqlite(template, home.metadata_db)
    else:
        progress("creating Superset's metadata database (about a minute)")
        _run([superset, "db", "upgrade"], "superset db upgrade", env=env)
        _run([superset, "init"], "superset init", env=env)
        if not template.is_file():
            _copy_sqlite(home.metadata_db, template)
    stamp.write_text(digest + "\n")
    private_file(home.metadata_db)


def _copy_sqlite(source: Path, target: Path) -> None:
    """A consistent copy of a SQLite database (its WAL included)."""
    with (
        contextlib.closing(sqlite3.connect(source)) as src,
        contextlib.closing(sqlite3.connect(target)) as dst,
    ):
        src.backup(dst)


_ADMIN_SCRIPT = """
import sys
from superset.app import create_app

name = sys.argv[1]
password = sys.stdin.readline().rstrip("\\n")
app = create_app()
with app.app_context():
    from superset import security_manager as sm

    user = sm.find_user(username=name)
    if user is None:
        made = sm.add_user(name, "tapelens", "admin", name + "@localhost",
                           sm.find_role("Admin"), password=password)
        if not made:
            sys.exit("could not create the admin user")
    else:
        sm.reset_password(user.id, password)
"""


def ensure_admin(home: SupersetHome, password: str | None = None) -> str | None:
    """Make sure the admin exists with a known password.

    With `password` (from the user), the admin gets it. Without, the password kept in the
    instance is used; when there is none yet, one is generated and returned so that the caller
    can show it once. The password goes to Superset on standard input, never on a command line.
    """
    generated = None
    known = home.admin_password_path.is_file() and _admin_exists(home)
    if password is None:
        if known:
            return None
        password = generated = new_password()
    elif known and admin_password(home) == password:
        return None
    _run(
        [str(home.bin / "python"), "-c", _ADMIN_SCRIPT, ADMIN_USER],
        "creating Superset's admin user",
        env=home.env(),
        stdin=password + "\n",
    )
    write_private(home.admin_password_path, password + "\n")
    return generated


_VIEWER_SCRIPT = """
import sys
from superset.app import create_app

name, role_name, database_name = sys.argv[1:4]
password = sys.stdin.readline().rstrip("\\n")
app = create_app()
with app.app_context():
    from superset import db, security_manager as sm
    from superset.connectors.sqla.models import SqlaTable
    from superset.models.core import Database

    # What the Gamma role may do, less every write, every import, SQL Lab and Explore's editor.
    writes = ("write", "add", "edit", "delete", "save", "overwrite", "import", "upload", "copy",
              "muldelete", "tag", "share", "favstar", "warm_up")
    editors = {"SQL Lab", "SQLLab", "SQL Editor", "Saved Queries", "SavedQuery", "Query",
               "Query Search", "Row Level Security", "Tags", "Tag", "Upload a CSV",
               "Upload a Columnar file", "Upload Excel", "Manage"}
    kept = [
        pv for pv in sm.find_role("Gamma").permissions
        if not any(w in pv.permission.name for w in writes)
        and pv.view_menu.name not in editors
        and pv.permission.name not in ("can_explore", "can_sqllab", "can_execute_sql_query")
    ]
    database = db.session.query(Database).filter_by(database_name=database_name).one_or_none()
    tables = [] if database is None else (
        db.session.query(SqlaTable).filter_by(database_id=database.id).all())
    for table in tables:
        pv = sm.find_permission_view_menu("datasource_access", table.perm)
        if pv is None:
            sm.add_permission_view_menu("datasource_access", table.perm)
            pv = sm.find_permission_view_menu("datasource_access", table.perm)
        kept.append(pv)
    role = sm.find_role(role_name) or sm.add_role(role_name)
    role.permissions = kept
    user = sm.find_user(username=name)
    if user is None:
        if not sm.add_user(name, "tapelens", "viewer", name + "@localhost", role,
                           password=password):
            sys.exit("could not create the viewer user")
    else:
        user.roles = [role]
        sm.reset_password(user.id, password)
    db.session.commit()
"""


def ensure_viewer(home: SupersetHome, database_name: str) -> str | None:
    """The read-only role (re)made from the datasets of `database_name` now in Superset, and
    the viewer user with it. Its password is made once, kept 0600 in the instance and returned
    when it was made now (to be shown once)."""
    password, made = read_or_create_secret(home.viewer_password_path, PASSWORD_BYTES)
    _run(
        [
            str(home.bin / "python"),
            "-c",
            _VIEWER_SCRIPT,
            VIEWER_USER,
            VIEWER_ROLE,
            database_name,
        ],
        "creating Superset's read-only viewer",
        env=home.env(),
        stdin=password + "\n",
    )
    return password if made else None


def _stored_password(path: Path, who: str) -> str:
    """A generated password kept in the home (owner-only file)."""
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        raise DashboardsError(
            f"no {who} password in {path}; run: tapelens dashboards serve"
        ) from None


def viewer_password(home: SupersetHome) -> str:
    return _stored_password(home.viewer_password_path, "viewer")


def _admin_exists(home: SupersetHome) -> bool:
    try:
        uri = f"file:{home.metadata_db}?mode=ro"
        with contextlib.closing(sqlite3.connect(uri, uri=True)) as conn:
            row = conn.execute("select 1 from ab_user where username = ?", [ADMIN_USER]).fetchone()
    except sqlite3.Error:
        return False
    return row is not None


def admin_password(home: SupersetHome) -> str:
    return _stored_password(home.admin_password_path, "admin")
