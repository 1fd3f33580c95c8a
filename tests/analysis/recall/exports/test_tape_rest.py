"""Submitting a plan's Tape REST stage requests to a local server that follows the API's
reference and the ways dCache and EOS write its replies (tests/fixtures/tape_rest_server.py
cites the reference and the implementations' source)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from tapelens.analysis.recall.exports import tape_rest
from tapelens.cli import cli
from tapelens.errors import InputError
from tests.fixtures.cli import run
from tests.fixtures.tape_rest_server import TapeRestServer

pytestmark = pytest.mark.timeout(120)

TOKEN = "s3cr3t-t0ken-value"


@pytest.fixture
def server() -> Iterator[TapeRestServer]:
    running = TapeRestServer(token=TOKEN).start()
    try:
        yield running
    finally:
        running.stop()


def write_export(folder: Path, batches: list[tuple[str, str, list[str]]]) -> Path:
    """A folder as `plan recall --export tape-rest` writes it: one body per mount and index.csv."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for n, (drive, volume, paths) in enumerate(batches, start=1):
        name = f"batch-{n:05d}.json"
        (folder / name).write_text(json.dumps({"files": [{"path": p} for p in paths]}) + "\n")
        rows.append((n, drive, volume, len(paths), name))
    pl.DataFrame(
        rows, schema=["mount_order", "drive", "volume", "files", "file"], orient="row"
    ).write_csv(folder / "index.csv")
    return folder


PLAN = [
    ("d1", "A1", ["/a/1", "/a/2"]),
    ("d2", "A2", ["/b/1"]),
    ("d1", "A3", ["/c/1", "/c/2", "/c/3"]),
    ("d2", "A4", ["/d/1"]),
]


def _client(server: TapeRestServer, url: str | None = None) -> tape_rest.Client:
    return tape_rest.Client(url or server.base, TOKEN, sleep=lambda _: None)


def _submitting(
    server: TapeRestServer, tmp_path: Path
) -> tuple[Path, list[tape_rest.Batch], tape_rest.Client, tape_rest.Endpoint]:
    """The PLAN export in a folder, its batches, a client of the server and its endpoint."""
    folder = write_export(tmp_path / "stage", PLAN)
    client = _client(server)
    return folder, tape_rest.read_batches(folder), client, client.discover()


def _stage_bodies(server: TapeRestServer) -> list[list[str]]:
    return [
        [f["path"] for f in body["files"]]
        for method, path, body in server.log
        if method == "POST" and path == "/api/v1/stage"
    ]


def test_discovery_finds_the_v1_endpoint(server: TapeRestServer) -> None:
    endpoint = _client(server).discover()
    assert endpoint == tape_rest.Endpoint(f"{server.base}/api/v1", "TEST-SITE")
    # An endpoint URL is used as it is.
    assert _client(server, server.base + "/api/v1/").discover().uri == f"{server.base}/api/v1"
    server.well_known = False
    with pytest.raises(tape_rest.TapeRestError, match=r"HTTP 404: Not Found.*api/v1"):
        _client(server).discover()


def test_batches_go_in_plan_order_within_the_window_until_all_are_staged(
    server: TapeRestServer, tmp_path: Path
) -> None:
    folder, batches, client, endpoint = _submitting(server, tmp_path)
    outstanding_at_each_stage = []

    def save(state: tape_rest.Submission) -> None:
        outstanding_at_each_stage.append(
            sum(1 for b in state.batches if b.request_id and not b.done)
        )
        tape_rest.save_state(folder, state)

    done = tape_rest.submit(
        client,
        endpoint,
        batches,
        tape_rest.load_state(folder, batches, endpoint.uri),
        in_flight=2,
        poll_s=0,
        disk_lifetime="P1D",
        save=save,
    )
    assert [b.state for b in done.batches] == ["completed"] * 4
    assert sum(b.completed for b in done.batches) == 7
    assert _stage_bodies(server) == [p for _, _, p in PLAN]  # plan order, each batch once
    assert max(outstanding_at_each_stage) == 2
    first = next(b for m, p, b in server.log if m == "POST" and p == "/api/v1/stage")
    assert first["files"][0] == {"path": "/a/1", "diskLifetime": "P1D"}
    recorded = json.loads((folder / tape_rest.STATE_FILE).read_text())
    assert recorded["endpoint"] == endpoint.uri
    assert all(b["request_id"] for b in recorded["batches"])


def test_a_second_run_follows_the_requests_already_made(
    server: TapeRestServer, tmp_path: Path
) -> None:
    folder, batches, client, endpoint = _submitting(server, tmp_path)

    def run() -> tape_rest.Submission:
        return tape_rest.submit(
            client,
            endpoint,
            batches,
            tape_rest.load_state(folder, batches, endpoint.uri),
            in_flight=2,
            wait=False,
            save=lambda state: tape_rest.save_state(folder, state),
        )

    first = run()
    assert [b.state for b in first.batches] == ["staging", "staging", "waiting", "waiting"]
    for _ in range(4):
        latest = run()
    assert [b.state for b in latest.batches] == ["completed"] * 4
    assert _stage_bodies(server) == [p for _, _, p in PLAN]  # never twice
    # Another endpoint's record is refused rather than mixed.
    with pytest.raises(InputError, match="submitted to"):
        tape_rest.load_state(folder, batches, "https://elsewhere.example.org/api/v1")


def test_failed_files_keep_the_servers_reason_and_transient_errors_are_retried(
    server: TapeRestServer, tmp_path: Path
) -> None:
    server.failing = {"/c/2": "file is on a disabled tape"}
    server.fail_next = [503, 503]
    folder, batches, client, endpoint = _submitting(server, tmp_path)
    done = tape_rest.submit(
        client, endpoint, batches, tape_rest.load_state(folder, batches), in_flight=4, poll_s=0
    )
    assert [b.state for b in done.batches] == ["completed", "completed", "partial", "completed"]
    assert tape_rest.failures(done).rows() == [
        ("batch-00003.json", "A3", "/c/2", "file is on a disabled tape")
    ]


@pytest.mark.parametrize("flavour", ["dcache", "eos"])
def test_each_servers_way_of_writing_a_files_state_is_read(
    server: TapeRestServer, tmp_path: Path, flavour: str
) -> None:
    # dCache writes a state and no onDisk (dCache/dcache, modules/dcache-frontend/.../
    # providers/tape/StagedFileInfo.java); EOS writes onDisk and an error, and no state
    # (cern-eos/eos, mgm/http/rest-api/json/tape/jsonifiers/stage/
    # GetStageBulkRequestJsonifier.cc): a failed file there has only its error to say so.
    server.flavour = flavour
    server.failing = {"/c/2": "file is on a disabled tape"}
    folder, batches, client, endpoint = _submitting(server, tmp_path)
    done = tape_rest.submit(
        client,
        endpoint,
        batches,
        tape_rest.load_state(folder, batches),
        in_flight=4,
        poll_s=0,
        timeout_s=20,  # a failure read as pending would never end
    )
    assert [b.state for b in done.batches] == ["completed", "completed", "partial", "completed"]
    assert tape_rest.failures(done)["error"].to_list() == ["file is on a disabled tape"]


@pytest.mark.parametrize("flavour", ["reference", "dcache"])
def test_a_refused_cancel_says_why(server: TapeRestServer, tmp_path: Path, flavour: str) -> None:
    # A path the request does not hold is refused with 400: the reason in a problem document
    # (giacomini/storm-tape src/io.cpp file_missing_to_json; cern-eos/eos
    # mgm/http/rest-api/action/tape/stage/CancelStageBulkRequest.cc), or, from dCache, in the
    # title and detail headers of an empty reply (StageResources.java, cancel).
    server.flavour = flavour
    server.steps_to_complete = 99
    client = _client(server)
    endpoint = client.discover()
    request_id = client.stage(endpoint, [{"path": "/a/1"}])
    with pytest.raises(
        tape_rest.TapeRestError,
        match=r"HTTP 400: .* - /z/9 does not belong to the request",
    ):
        client.cancel(endpoint, request_id, ["/a/1", "/z/9"])
    client.cancel(endpoint, request_id, ["/a/1"])
    assert [f["state"] for f in server.requests[request_id].files] == ["CANCELLED"]


def test_cancel_cancels_the_outstanding_batches(server: TapeRestServer, tmp_path: Path) -> None:
    server.steps_to_complete = 99
    folder, batches, client, endpoint = _submitting(server, tmp_path)
    made = tape_rest.submit(
        client, endpoint, batches, tape_rest.load_state(folder, batches), in_flight=2, wait=False
    )
    assert tape_rest.cancel(client, endpoint, batches, made) == 2
    states = {f["state"] for r in server.requests.values() for f in r.files}
    assert states == {"CANCELLED"}


@pytest.mark.slow
def test_the_token_is_required_sent_only_safely_and_never_printed(
    server: TapeRestServer, tmp_path: Path
) -> None:
    folder = write_export(tmp_path / "stage", PLAN[:1])
    args = ["export", "tape-rest", str(folder), "--submit", server.base, "--poll", "0"]
    refused = run(*args, env={"BEARER_TOKEN": "wrong-token"})
    assert refused.returncode == 1
    assert refused.stderr.splitlines()[-1] == (
        f"tapelens: error: POST {server.base}/api/v1/stage: HTTP 401: Unauthorized"
        " - a valid bearer token is needed"
    )
    good = run(*args, env={"BEARER_TOKEN": TOKEN})
    assert good.returncode == 0, good.stderr
    assert "completed" in good.stdout
    for result in (refused, good):
        assert "t0ken" not in result.stdout + result.stderr
        assert "wrong-token" not in result.stdout + result.stderr
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    assert tape_rest.bearer_token({"BEARER_TOKEN_FILE": str(token_file)}) == TOKEN
    with pytest.raises(InputError, match="only sent over https"):
        tape_rest.Client("http://tape.example.org/api/v1", TOKEN)


def test_the_command_shows_batches_without_submitting(tmp_path: Path) -> None:
    folder = write_export(tmp_path / "stage", PLAN)
    result = CliRunner().invoke(
        cli, ["export", "tape-rest", str(folder), "--format", "csv"], env={"BEARER_TOKEN": TOKEN}
    )
    assert result.exit_code == 0, result.output
    shown = pl.read_csv(result.stdout.encode())
    assert shown["volume"].to_list() == ["A1", "A2", "A3", "A4"]
    assert set(shown["state"]) == {"waiting"}


def test_a_folder_that_is_not_an_export_is_one_line(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run("export", "tape-rest", str(empty))
    assert result.returncode == 3
    assert result.stderr.startswith(f"tapelens: error: {empty}/index.csv: no such file")
    assert len(result.stderr.splitlines()) == 1
    folder = write_export(tmp_path / "stage", PLAN)
    (folder / "batch-00002.json").write_text('{"paths": ["/b/1"]}')
    result = run("export", "tape-rest", str(folder))
    assert result.returncode == 3
    assert "index.csv:3: batch-00002.json is not a stage request body" in result.stderr
