"""Stage requests sent to a WLCG Tape REST API (v1) endpoint, and followed until done.

`plan recall --export tape-rest` writes one stage-request body per mount (batch-NNNNN.json, the
files one drive reads from one tape, in read order) and an index.csv naming each batch's tape
and drive. This module submits those batches in plan order and follows them:

- the endpoint is found as the API says: `GET <site>/.well-known/wlcg-tape-rest-api` lists the
  site's endpoints and the v1 one is used; a URL that has no discovery document is taken as
  the endpoint itself (`https://host:port/api/v1`);
- `POST <endpoint>/stage` with `{"files": [{"path": ...}, ...]}` answers 201 with
  `{"requestId": ...}`; `GET <endpoint>/stage/<id>` answers the request with a state per file
  (SUBMITTED, STARTED, COMPLETED, FAILED, CANCELLED); `POST <endpoint>/stage/<id>/cancel` with
  `{"paths": [...]}` cancels files; errors come as RFC 7807 problem documents (`type`, `title`,
  `status`, `detail`);
- the servers differ where the reference leaves room, and each is read as it writes: dCache
  (dCache/dcache, modules/dcache-frontend/.../restful/resources/tape/StageResources.java and
  providers/tape/StagedFileInfo.java) gives each file a `state` and no `onDisk`, answers a
  cancel naming a path outside the request with 400 and its reason in `title` and `detail`
  headers, and sends the Location header in lower case; EOS, CTA's disk buffer
  (cern-eos/eos, mgm/http/rest-api/json/tape/jsonifiers/stage/GetStageBulkRequestJsonifier.cc),
  gives each file `onDisk` and, when it failed, `error`, and no `state`;
- at most `in_flight` batches are outstanding at once (by default as many as the plan has
  drives): the tape system then sees the plan's mounts in the plan's order rather than every
  file at once, which it would queue by its own rules;
- what was submitted is kept in the export folder (`submission.json`, written aside and
  renamed), so running the submission again follows the requests already made instead of
  making them twice, and `--no-wait` can be run again and again (from cron) until all is done;
- the bearer token comes from the environment (`BEARER_TOKEN`, or a file named by
  `BEARER_TOKEN_FILE`, as WLCG's bearer token discovery has it) and is never printed; it is
  sent over https, or over http to this machine only.
"""

from __future__ import annotations

import json
import os
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from ipaddress import ip_address
from pathlib import Path
from typing import Any

import polars as pl

from tapelens.errors import InputError, TapelensError

WELL_KNOWN = "/.well-known/wlcg-tape-rest-api"
API_VERSION = "v1"
TOKEN_ENV = "BEARER_TOKEN"
TOKEN_FILE_ENV = "BEARER_TOKEN_FILE"
STATE_FILE = "submission.json"
# A file's states in the API; CANCELED is how some servers spell it.
DONE_OK = frozenset({"COMPLETED"})
DONE_BAD = frozenset({"FAILED", "CANCELLED", "CANCELED"})
PENDING = frozenset({"SUBMITTED", "STARTED"})
# Transient replies (the server busy or restarting) are tried again after a pause.
RETRY_STATUSES = frozenset({429, 502, 503, 504})
RETRIES = 4
RETRY_PAUSE_S = 5.0
HTTP_TIMEOUT_S = 60.0

Progress = Callable[[str], None]


class TapeRestError(TapelensError):
    """The endpoint cannot be reached or answered other than the API says."""

    exit_code = 1


# -- the endpoint ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Endpoint:
    uri: str  # the v1 API root: stage requests go to <uri>/stage
    sitename: str = ""


def bearer_token(env: Mapping[str, str] | None = None) -> str | None:
    """The bearer token of the environment: BEARER_TOKEN, else the file BEARER_TOKEN_FILE names."""
    env = os.environ if env is None else env
    token = env.get(TOKEN_ENV, "").strip()
    if token:
        return token
    path = env.get(TOKEN_FILE_ENV, "").strip()
    if not path:
        return None
    try:
        return Path(path).read_text().strip() or None
    except OSError as exc:
        raise InputError(
            f"{TOKEN_FILE_ENV} names {path}, which cannot be read: {exc.strerror}"
        ) from None


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ip_address(host).is_loopback
    except ValueError:
        return False


class Client:
    """HTTP calls to one Tape REST endpoint (urllib; no shell, no external program)."""

    def __init__(
        self,
        url: str,
        token: str | None = None,
        ca_path: str | None = None,
        timeout_s: float = HTTP_TIMEOUT_S,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise InputError(f"--submit {url!r}: expected an http(s) URL of the site or endpoint")
        if token and parsed.scheme == "http" and not _loopback(parsed.hostname):
            raise InputError(
                f"--submit {url}: a bearer token is only sent over https (or to this machine)"
            )
        self.url = url.rstrip("/")
        self.token = token
        self.timeout_s = timeout_s
        self.sleep = sleep
        self.context = (
            ssl.create_default_context(capath=ca_path) if ca_path else ssl.create_default_context()
        )

    def call(self, method: str, url: str, body: Any = None) -> tuple[int, Any, Mapping[str, str]]:
        """(status, decoded JSON or None, headers); retries transient failures."""
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        for attempt in range(RETRIES + 1):
            request = urllib.request.Request(url, data=data, headers=headers, method=method)
            try:
                with urllib.request.urlopen(
                    request, timeout=self.timeout_s, context=self.context
                ) as reply:
                    return reply.status, _json(reply.read()), dict(reply.headers)
            except urllib.error.HTTPError as exc:
                if exc.code in RETRY_STATUSES and attempt < RETRIES:
                    self.sleep(RETRY_PAUSE_S * 2**attempt)
                    continue
                return exc.code, _json(exc.read()), dict(exc.headers or {})
            except (urllib.error.URLError, OSError) as exc:
                if attempt < RETRIES:
                    self.sleep(RETRY_PAUSE_S * 2**attempt)
                    continue
                reason = getattr(exc, "reason", exc)
                raise TapeRestError(
                    f"{method} {url}: cannot reach the endpoint: {reason}"
                ) from None
        raise AssertionError("unreachable")

    def discover(self) -> Endpoint:
        """The endpoint: `url` itself when it has a path (https://host/api/v1), else the v1
        endpoint the site's discovery document lists."""
        parsed = urllib.parse.urlsplit(self.url)
        if parsed.path not in ("", "/"):
            return Endpoint(self.url)
        where = self.url + WELL_KNOWN
        status, doc, _ = self.call("GET", where)
        if status != 200:
            raise TapeRestError(
                f"GET {where}: {_problem(status, doc)}; give the endpoint's own URL"
                " (https://host:port/api/v1) when the site has no discovery document"
            )
        endpoints = doc.get("endpoints") if isinstance(doc, dict) else None
        if not isinstance(endpoints, list):
            raise TapeRestError(f"GET {where}: expected a document with a list of endpoints")
        for entry in endpoints:
            if isinstance(entry, dict) and entry.get("version") == API_VERSION and entry.get("uri"):
                uri = urllib.parse.urljoin(self.url + "/", str(entry["uri"]))
                return Endpoint(uri.rstrip("/"), str(doc.get("sitename", "")))
        raise TapeRestError(f"GET {where}: the site lists no {API_VERSION} endpoint")

    def stage(self, endpoint: Endpoint, files: list[dict[str, Any]]) -> str:
        url = f"{endpoint.uri}/stage"
        status, doc, headers = self.call("POST", url, {"files": files})
        if status not in (200, 201):
            raise TapeRestError(f"POST {url}: {_problem(status, doc, headers)}")
        request_id = doc.get("requestId") if isinstance(doc, dict) else None
        if not request_id:
            # The Location header names the request too (…/stage/<id>).
            location = headers.get("Location") or headers.get("location") or ""
            request_id = location.rstrip("/").rsplit("/", 1)[-1] if "/stage/" in location else ""
        if not request_id:
            raise TapeRestError(f"POST {url}: the reply names no requestId")
        return str(request_id)

    def status(self, endpoint: Endpoint, request_id: str) -> list[dict[str, Any]]:
        url = f"{endpoint.uri}/stage/{urllib.parse.quote(request_id, safe='')}"
        status, doc, headers = self.call("GET", url)
        if status != 200:
            raise TapeRestError(f"GET {url}: {_problem(status, doc, headers)}")
        files = doc.get("files") if isinstance(doc, dict) else None
        if not isinstance(files, list) or not all(isinstance(f, dict) for f in files):
            raise TapeRestError(f"GET {url}: expected a request with a list of files")
        return files

    def cancel(self, endpoint: Endpoint, request_id: str, paths: Sequence[str]) -> None:
        url = f"{endpoint.uri}/stage/{urllib.parse.quote(request_id, safe='')}/cancel"
        status, doc, headers = self.call("POST", url, {"paths": list(paths)})
        if status not in (200, 204):
            raise TapeRestError(f"POST {url}: {_problem(status, doc, headers)}")


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw.strip() else None
    except ValueError:
        return None


def _problem(status: int, doc: Any, headers: Mapping[str, str] | None = None) -> str:
    """One line from an HTTP error: its problem document (RFC 7807: title, detail), else the
    `title` and `detail` headers dCache puts some reasons in."""
    source: Mapping[str, Any] = doc if isinstance(doc, dict) else {}
    words = [str(source[k]) for k in ("title", "detail") if source.get(k)]
    if not words and headers:
        lower = {k.lower(): v for k, v in headers.items()}
        words = [str(lower[k]) for k in ("title", "detail") if lower.get(k)]
    return f"HTTP {status}: {' - '.join(words)}" if words else f"HTTP {status}"


# -- the batches of an export ------------------------------------------------------------------


@dataclass(frozen=True)
class Batch:
    name: str  # batch-00001.json
    mount_order: int
    drive: str
    volume: str
    paths: tuple[str, ...]


def read_batches(folder: Path) -> list[Batch]:
    """The stage-request bodies of a `tape-rest` export, in submission order."""
    index_path = folder / "index.csv"
    if not index_path.is_file():
        raise InputError(
            f"{index_path}: no such file; expected the folder written by"
            " `plan recall --export tape-rest --export-dir DIR`"
        )
    try:
        index = pl.read_csv(index_path, schema_overrides={"drive": pl.String, "volume": pl.String})
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise InputError(f"{index_path}: cannot be read as the export's index: {exc}") from None
    missing = {"mount_order", "drive", "volume", "files", "file"} - set(index.columns)
    if missing:
        raise InputError(f"{index_path}:1: expected the columns {sorted(missing)} in the header")
    batches = []
    for line_no, row in enumerate(index.iter_rows(named=True), start=2):
        body_path = folder / str(row["file"])
        try:
            body = json.loads(body_path.read_text())
            paths = tuple(str(f["path"]) for f in body["files"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise InputError(
                f"{index_path}:{line_no}: {row['file']} is not a stage request body"
                f' {{"files": [{{"path": ...}}]}} ({type(exc).__name__})'
            ) from None
        if len(paths) != row["files"]:
            raise InputError(
                f"{index_path}:{line_no}: {row['file']} holds {len(paths)} files, the index says"
                f" {row['files']}"
            )
        batches.append(
            Batch(str(row["file"]), int(row["mount_order"]), row["drive"], row["volume"], paths)
        )
    if not batches:
        raise InputError(f"{index_path}: the export holds no batch")
    return batches


# -- following the requests --------------------------------------------------------------------


@dataclass
class BatchState:
    """What is known of one batch's stage request."""

    name: str
    volume: str
    drive: str
    files: int
    request_id: str = ""
    submitted_at: str = ""
    completed: int = 0
    failed: int = 0
    errors: dict[str, str] = field(default_factory=dict)  # path -> the server's reason

    @property
    def state(self) -> str:
        if not self.request_id:
            return "waiting"
        if self.completed + self.failed >= self.files:
            return "failed" if self.completed == 0 else "partial" if self.failed else "completed"
        return "staging"

    @property
    def done(self) -> bool:
        return self.state in ("completed", "partial", "failed")


@dataclass
class Submission:
    endpoint: str
    batches: list[BatchState]

    def to_json(self) -> str:
        return json.dumps(
            {"endpoint": self.endpoint, "batches": [asdict(b) for b in self.batches]}, indent=1
        )


def load_state(folder: Path, batches: Sequence[Batch], endpoint: str | None = None) -> Submission:
    """The submission recorded in the folder, or a new one; one made at another endpoint than
    `endpoint` is refused (None: whichever endpoint it was made at)."""
    fresh = [BatchState(b.name, b.volume, b.drive, len(b.paths)) for b in batches]
    path = folder / STATE_FILE
    if not path.exists():
        return Submission(endpoint or "", fresh)
    try:
        doc = json.loads(path.read_text())
        recorded = {b["name"]: BatchState(**b) for b in doc["batches"]}
        recorded_endpoint = str(doc["endpoint"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(
            f"{path}: not a submission record ({type(exc).__name__}); move it away to submit anew"
        ) from None
    if endpoint is not None and recorded_endpoint != endpoint:
        raise InputError(
            f"{path}: these batches were submitted to {recorded_endpoint}, not {endpoint};"
            " move the file away to submit them again elsewhere"
        )
    return Submission(recorded_endpoint, [recorded.get(b.name, b) for b in fresh])


def save_state(folder: Path, submission: Submission) -> None:
    target = folder / STATE_FILE
    aside = target.with_name(f".{target.name}.partial")
    aside.write_text(submission.to_json() + "\n")
    aside.replace(target)


def _tally(state: BatchState, files: list[dict[str, Any]]) -> BatchState:
    completed = failed = 0
    errors: dict[str, str] = {}
    for entry in files:
        word = str(entry.get("state") or "").upper()
        if not word:
            # No state (EOS): on disk is staged, an error is a failure, else still pending.
            word = (
                "COMPLETED"
                if entry.get("onDisk") is True
                else "FAILED"
                if entry.get("error")
                else ""
            )
        if word in DONE_OK:
            completed += 1
        elif word in DONE_BAD:
            failed += 1
            errors[str(entry.get("path", ""))] = str(entry.get("error") or word.lower())
    return replace(state, completed=completed, failed=failed, errors=errors)


def submit(
    client: Client,
    endpoint: Endpoint,
    batches: Sequence[Batch],
    submission: Submission,
    *,
    in_flight: int,
    wait: bool = True,
    poll_s: float = 60.0,
    timeout_s: float | None = None,
    disk_lifetime: str | None = None,
    save: Callable[[Submission], None] = lambda _: None,
    progress: Progress = lambda _: None,
    clock: Callable[[], float] = time.monotonic,
) -> Submission:
    """Submit the batches in order, at most `in_flight` outstanding, and follow them: until all
    are done (`wait`), or once (submit what the window allows, poll what is out, return)."""
    if in_flight < 1:
        raise InputError(f"--in-flight {in_flight}: expected at least 1")
    by_name = {b.name: b for b in batches}
    started = clock()
    while True:
        for i, state in enumerate(submission.batches):
            if state.request_id and not state.done:
                submission.batches[i] = _tally(state, client.status(endpoint, state.request_id))
        outstanding = sum(1 for s in submission.batches if s.request_id and not s.done)
        for i, state in enumerate(submission.batches):
            if outstanding >= in_flight:
                break
            if state.request_id:
                continue
            files: list[dict[str, Any]] = [{"path": p} for p in by_name[state.name].paths]
            if disk_lifetime:
                files = [{**f, "diskLifetime": disk_lifetime} for f in files]
            request_id = client.stage(endpoint, files)
            submission.batches[i] = replace(
                state,
                request_id=request_id,
                submitted_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            )
            outstanding += 1
            save(submission)  # before the next request: a failure must not lose this one
            progress(
                f"submitted {state.name} ({state.files} files on {state.volume}): {request_id}"
            )
        save(submission)
        progress(_progress_line(submission))
        if all(s.done for s in submission.batches) or not wait:
            return submission
        if timeout_s is not None and clock() - started >= timeout_s:
            raise TapeRestError(
                f"not all batches staged after {timeout_s:.0f} s ({_progress_line(submission)});"
                " run the command again to go on following them"
            )
        client.sleep(poll_s)


def cancel(
    client: Client, endpoint: Endpoint, batches: Sequence[Batch], submission: Submission
) -> int:
    """Cancel every submitted batch not yet done; the number of batches cancelled."""
    by_name = {b.name: b for b in batches}
    cancelled = 0
    for state in submission.batches:
        if state.request_id and not state.done:
            client.cancel(endpoint, state.request_id, by_name[state.name].paths)
            cancelled += 1
    return cancelled


def _progress_line(submission: Submission) -> str:
    states = [s.state for s in submission.batches]
    files = sum(s.files for s in submission.batches)
    done = sum(s.completed for s in submission.batches)
    failed = sum(s.failed for s in submission.batches)
    return (
        f"{states.count('completed') + states.count('partial') + states.count('failed')}"
        f"/{len(states)} batches done, {states.count('staging')} staging;"
        f" {done:,}/{files:,} files staged, {failed:,} failed"
    )


def table(submission: Submission) -> pl.DataFrame:
    """One row per batch: its tape, drive, request and how far it got."""
    return pl.DataFrame(
        [
            {
                "batch": s.name,
                "volume": s.volume,
                "drive": s.drive,
                "files": s.files,
                "state": s.state,
                "staged": s.completed,
                "failed": s.failed,
                "request_id": s.request_id,
            }
            for s in submission.batches
        ]
    )


def failures(submission: Submission) -> pl.DataFrame:
    """One row per file the server reported failed or cancelled, with its reason."""
    rows = [
        {"batch": s.name, "volume": s.volume, "path": path, "error": reason}
        for s in submission.batches
        for path, reason in s.errors.items()
    ]
    return pl.DataFrame(
        rows,
        schema={"batch": pl.String, "volume": pl.String, "path": pl.String, "error": pl.String},
    )
