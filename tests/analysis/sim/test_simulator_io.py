"""Simulator inputs from the catalog, its output files, and `tapelens simulate`."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import polars as pl
import psycopg
import pytest
from click.testing import CliRunner

from tapelens.analysis.recall.engine import predict_recall
from tapelens.analysis.sim import io as sim_io
from tapelens.analysis.sim.simulator import EVENTS_SCHEMA, Library, SimConfig, simulate
from tapelens.analysis.throughput.model import default_params
from tapelens.cli import cli
from tapelens.errors import InputError

T0 = datetime(2024, 3, 1, tzinfo=UTC)
GB = 1_000_000_000


def copy_row(copy_id: str, path: str, volume: str, position: int, written_days: int) -> tuple:
    return (
        "hpss",
        copy_id,
        path.rsplit("/", 1)[-1],  # file_id: the name (two copies share it)
        path,
        "/data/ds1",
        "AOD",
        "atlas",
        2 * GB,
        volume,
        position,
        T0 + timedelta(days=written_days),
        1,
    )


@pytest.fixture
def catalog(dsn: str) -> str:
    """Two tapes: A00001L7 (LTO-7 in the inventory) holds f1..f40 at positions 1..40;
    B00001L8 (not in the inventory: its label says LTO-8) holds a newer copy of f5 and f6;
    a removed copy of f7 on B is not live."""
    rows = [copy_row(f"a{i}", f"/data/ds1/f{i}", "A00001L7", i, 0) for i in range(1, 41)]
    rows += [copy_row("b5", "/data/ds1/f5", "B00001L8", 3, 30)]
    rows += [copy_row("b6", "/data/ds1/f6", "B00001L8", 4, 30)]
    rows += [copy_row("b7", "/data/ds1/f7", "B00001L8", 5, 31)]
    with psycopg.connect(dsn) as conn:
        conn.execute("insert into tapelens.tapes (volume, media_type) values ('A00001L7', 'LTO-7')")
        with conn.cursor() as cur:
            cur.executemany(
                """insert into tapelens.tape_files (source, copy_id, file_id, path, dataset,
                   dataset_type, experiment, size_bytes, volume, position, written_at,
                   ingest_run_id) values (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)""",
                rows,
            )
        conn.execute("update tapelens.tape_files set removed_at = now() where copy_id = 'b7'")
    return dsn


def request_file(tmp_path: Path) -> Path:
    lines = ["path,requester,submitted_at"]
    lines += [f"/data/ds1/f{i},alice,2024-05-01T00:00:00Z" for i in range(1, 11)]
    lines += ["/data/ds1/nope,alice,2024-05-01T00:00:00Z", "/data/ds1/f30,bob,2024-05-01T01:00:00Z"]
    path = tmp_path / "requests.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_request_list_becomes_newest_live_copies_in_submission_order(
    catalog: str, tmp_path: Path
) -> None:
    with psycopg.connect(catalog) as conn:
        source = sim_io.load_requests(conn, request_file(tmp_path))
    frame = source.requests
    assert frame.height == 11
    assert source.not_found["key"].to_list() == ["/data/ds1/nope"]
    volume = dict(zip(frame["path"], frame["volume"], strict=True))
    assert volume["/data/ds1/f5"] == volume["/data/ds1/f6"] == "B00001L8"  # the newest copies
    assert volume["/data/ds1/f7"] == "A00001L7"  # its newer copy was removed
    media = dict(zip(frame["volume"], frame["media_type"], strict=True))
    assert media == {"A00001L7": "LTO-7", "B00001L8": "LTO-8"}
    submit = dict(zip(frame["path"], frame["submit_s"], strict=True))
    assert submit["/data/ds1/f1"] == 0.0 and submit["/data/ds1/f30"] == 3600.0
    assert frame["path"][-1] == "/data/ds1/f30"  # submission order
    assert (frame["avg_object_bytes"] == 2 * GB).all()


def test_simulate_command_writes_summary_events_and_plot(catalog: str, tmp_path: Path) -> None:
    summary, events, plot = tmp_path / "s.json", tmp_path / "e.parquet", tmp_path / "p.png"
    args = ["--dsn", catalog, "simulate", "--requests", str(request_file(tmp_path))]
    args += ["--drives", "LTO8:2", "--summary", str(summary), "--events", str(events)]
    args += ["--plot", str(plot), "--fault", "drive:LTO-8#1:100:1h", "--retry", "cycle:1"]
    result = CliRunner().invoke(cli, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert printed == json.loads(summary.read_text())
    assert printed["files"] == printed["files_delivered"] == 11
    assert printed["not_found"] == 1
    listed = tmp_path / "s.not_found.csv"  # beside --summary, as plan recall -o writes it
    assert f"1 request not found (not in the catalog: 1): {listed}" in result.stderr
    assert "/data/ds1/nope" in listed.read_text()
    assert printed["mounts"] >= 2 and printed["scheduler"] == "sorted"
    assert set(printed["requester_done_s"]) == {"alice", "bob"}
    frame = pl.read_parquet(events)
    assert frame.schema == pl.Schema(EVENTS_SCHEMA)
    assert (
        frame.filter(pl.col("kind") == "read").height == printed["reads"] - printed["failed_reads"]
    )
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # As a table (the default): one figure a line, in the units every table uses.
    table = CliRunner().invoke(cli, args)
    assert table.exit_code == 0, table.output
    figures = dict(line.split(None, 1) for line in table.stdout.splitlines()[1:])
    assert figures["files"] == "11" and figures["scheduler"] == "sorted"
    assert figures["policy"] == "by-demand"  # plan recall's default
    assert figures["makespan_s"].count(":") == 2 and figures["rate_mb_s"].endswith(" MB/s")


def test_a_plan_file_simulates_close_to_its_prediction(catalog: str, tmp_path: Path) -> None:
    files = pl.DataFrame(
        {
            "volume": ["A00001L7"] * 20,
            "media_type": ["LTO-7"] * 20,
            "position": list(range(1, 40, 2)),
            "size_bytes": [2 * GB] * 20,
            "path": [f"/data/ds1/f{i}" for i in range(1, 40, 2)],
            "avg_object_bytes": [2e9] * 20,
        }
    )
    predicted = predict_recall(files, {"LTO-8": 1}, default_params())
    plan = predicted.files.drop("order").sort("start_s").with_row_index("order", offset=1)
    path = tmp_path / "plan.csv"
    columns = ["order", "drive", "volume", "position", "offset_bytes", "path", "size_bytes"]
    plan.select(*columns, "start_s", "end_s").write_csv(path)
    summary, plot = tmp_path / "summary.json", tmp_path / "occupancy.png"
    # Options after PLAN, as README and --help show them.
    argv = ["--dsn", catalog, "simulate", str(path), "--summary", str(summary), "--plot", str(plot)]
    argv += ["--format", "json"]
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert printed["scheduler"] == "planned" and printed["mounts"] == 1
    assert printed["plan"]["ratio"] == pytest.approx(1.0, abs=1e-9)
    assert printed["makespan_s"] == pytest.approx(predicted.makespan_s, abs=1e-3)
    assert json.loads(summary.read_text()) == printed
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plans_without_a_known_media_type_or_columns_are_refused(tmp_path: Path) -> None:
    plan = pl.DataFrame(
        {"drive": ["LTO-8#1"], "volume": ["XYZ123"], "position": [1], "size_bytes": [GB]}
    )
    with pytest.raises(InputError, match="media type unknown for volume"):
        sim_io.load_plan(None, plan)
    source = sim_io.load_plan(None, plan, assume_media="LTO-8")
    assert source.requests["media_type"].to_list() == ["LTO-8"]
    bad = tmp_path / "bad.csv"
    bad.write_text("volume,position\nA,1\n")
    with pytest.raises(InputError, match="lacks column"):
        sim_io.read_plan_file(bad)


def test_the_command_needs_one_input(tmp_path: Path) -> None:
    runner = CliRunner()
    neither = runner.invoke(cli, ["--dsn", "postgresql:///unused", "simulate"])
    assert isinstance(neither.exception, InputError)
    assert "either a PLAN or --requests" in str(neither.exception)


def test_occupancy_spans_merge_back_to_back_reads() -> None:
    requests = pl.DataFrame(
        {
            "volume": ["A00001L7"] * 5 + ["A00002L7"] * 5,
            "media_type": ["LTO-7"] * 10,
            "position": list(range(1, 6)) * 2,
            "size_bytes": [GB] * 10,
        }
    )
    result = simulate(
        requests,
        Library.from_counts({"LTO-8": 1}),
        default_params(),
        SimConfig(),
        np.random.default_rng(0),
    )
    spans = sim_io.occupancy_spans(result.events)
    assert spans["kind"].to_list() == ["mount", "read", "unmount"] * 2


def test_the_planners_json_export_is_a_plan(tmp_path: Path) -> None:
    files = [
        {"order": 2, "drive": "LTO-8#1", "volume": "T1", "position": 9, "size_bytes": GB},
        {"order": 1, "drive": "LTO-8#1", "volume": "T1", "position": 3, "size_bytes": GB},
    ]
    mounts = [{"mount_order": 1, "drive": "LTO-8#1", "volume": "T1", "media_type": "LTO-7"}]
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({"summary": {}, "mounts": mounts, "timeline": [], "files": files}))
    source = sim_io.load_plan(None, path)
    assert source.drives == ("LTO-8#1",)
    assert source.requests["position"].to_list() == [3, 9]  # plan order
    assert source.requests["media_type"].to_list() == ["LTO-7", "LTO-7"]
