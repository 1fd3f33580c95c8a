"""`tapelens plan recall` and `plan compare` end to end on a real database."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import polars as pl
import psycopg
import pytest
from click.testing import CliRunner

from tapelens.analysis.recall.requests.lists import parse_requests
from tapelens.analysis.recall.store.catalog import load_catalog, plan_from_database
from tapelens.analysis.recall.store.saved_plans import (
    PLAN_FILES_SCHEMA,
    compare_frames,
    compare_plan,
    save_plan,
)
from tapelens.cli import cli
from tapelens.errors import InputError, TapelensError
from tests.fixtures.tape_rest_server import TapeRestServer

GB = 1_000_000_000

TAPES = [("A1", "LTO-8", "full"), ("A2", "LTO-8", "full"), ("S1", "LTO-8", "full")]
TAPES += [("D1", "LTO-8", "disabled")]


def copies() -> list[tuple[object, ...]]:
    """(file_id, path, dataset, size, volume, position, offset, copy_no, days after 2021-01-01)"""
    rows: list[tuple[object, ...]] = []
    for i in range(6):
        rows.append((f"a{i}", f"/store/D/a{i}", "D", 2 * GB, "A1", 10 + i, None, 1, 0))
    for i in range(3):  # an aggregate of three members on A2
        rows.append((f"m{i}", f"/store/D/m{i}", "D", GB, "A2", 4, i * GB, 1, 0))
    rows.append(("b0", "/store/D/b 0", "D", 3 * GB, "A2", 7, None, 1, 0))
    rows.append(("a2", "/store/D/a2", "D", 2 * GB, "S1", 90, None, 2, 30))  # a stray retry
    rows.append(("x0", "/store/X/x0", "X", GB, "S1", 1, None, 1, 0))
    rows.append(("z0", "/store/Z/z0", "Z", GB, "D1", 1, None, 1, 0))  # only on a disabled tape
    return rows


@pytest.fixture
def site(dsn: str) -> str:
    with psycopg.connect(dsn) as conn:
        conn.execute(
            "insert into tapelens.ingest_runs (kind, format, source, path, sha256, status)"
            " values ('catalog', 'csv', 'test', 'hand', 'x', 'loaded')"
        )
        with conn.cursor() as cur:
            cur.executemany(
                "insert into tapelens.tapes (volume, media_type, state) values (%s, %s, %s)", TAPES
            )
            cur.executemany(
                "insert into tapelens.tape_files (source, copy_id, file_id, path, dataset,"
                " dataset_type, experiment, size_bytes, volume, position, offset_bytes,"
                " aggregate_id, copy_no, written_at, ingest_run_id)"
                " values ('test', %s, %s, %s, %s, 'RAW', 'exp', %s, %s, %s, %s,"
                " case when %s::bigint is null then null else %s || ':' || %s end, %s,"
                " timestamptz '2021-01-01 00:00:00+00' + make_interval(days => %s), 1)",
                [
                    (f"{v}:{p}:{o}", f, path, d, s, v, p, o, o, v, p, c, days)
                    for f, path, d, s, v, p, o, c, days in copies()
                ],
            )
    return dsn


def test_plan_recall_writes_plan_exports_and_saves_then_compares(site: str, tmp_path: Path) -> None:
    asked = tmp_path / "asked.csv"
    asked.write_text("dataset,path,requester\nD,,ann\n,/store/Z/z0,bob\n,/store/nope,bob\n")
    out = tmp_path / "out"
    out.mkdir()
    runner = CliRunner()
    args = ["--dsn", site, "plan", "recall", str(asked), "--drives", "LTO8:2"]
    args += ["-o", str(out / "plan.csv"), "--summary", str(out / "summary.json")]
    for fmt in ("json", "filelists", "dsmc", "tape-rest"):
        args += ["--export", fmt]
    args += ["--export-dir", str(out / "export"), "--save", "campaign-1"]
    result = runner.invoke(cli, args)
    assert result.exit_code == 0, result.output + repr(result.exception)
    assert "makespan" in result.stdout
    assert "saved plan 'campaign-1'" in result.stderr

    plan = pl.read_csv(out / "plan.csv")
    assert plan.columns[:8] == [
        "order",
        "drive",
        "volume",
        "position",
        "offset_bytes",
        "path",
        "file_id",
        "size_bytes",
    ]
    assert {"predicted_start_s", "predicted_end_s"} <= set(plan.columns)
    assert plan.height == 10
    assert set(plan["volume"]) == {"A1", "A2"}  # the stray copy on S1 is not used
    on_a2 = plan.filter(pl.col("volume") == "A2").sort("order")
    assert on_a2["file_id"].to_list() == ["m0", "m1", "m2", "b0"]

    summary = json.loads((out / "summary.json").read_text())
    assert summary["files"] == 10 and summary["mounts"] == 2
    assert summary["not_found"] == [{"line": 4, "kind": "path", "key": "/store/nope"}]
    assert summary["unavailable"]["by_reason"] == {"tape disabled": 1}
    assert summary["baselines"]["newest_copy"]["mounts"] == 3
    for problems in (out / "plan.not_found.csv", out / "export" / "not_found.csv"):
        assert "/store/nope" in problems.read_text()
    assert "/store/Z/z0" in (out / "plan.unavailable.csv").read_text()

    exported = json.loads((out / "export" / "plan.json").read_text())
    assert len(exported["files"]) == 10 and exported["summary"]["mounts"] == 2
    lists = sorted((out / "export" / "filelists").glob("*.txt"))
    assert len(lists) == 2
    a2_list = next(p for p in lists if p.name.endswith("_A2.txt")).read_text().splitlines()
    assert a2_list == ["/store/D/m0", "/store/D/m1", "/store/D/m2", "/store/D/b 0"]
    dsmc = out / "export" / "dsmc"
    a2_dsmc = next(dsmc.glob("*_A2.filelist")).read_text().splitlines()
    assert a2_dsmc[-1] == '"/store/D/b 0"'
    assert "dsmc retrieve -filelist=" in (dsmc / "retrieve.sh").read_text()
    recall_sh = (dsmc / "recall.sh").read_text()
    a2_name = next(dsmc.glob("*_A2.filelist")).name
    assert f"  dsmrecall -filelist={a2_name} $DSMRECALL_OPTS" in recall_sh.splitlines()
    bodies = sorted((out / "export" / "tape-rest").glob("batch-*.json"))
    assert len(bodies) == 2
    paths = [f["path"] for b in bodies for f in json.loads(b.read_text())["files"]]
    assert sorted(paths) == sorted(plan["path"].to_list())

    with psycopg.connect(site) as conn:
        stored = conn.execute(
            "select count(*) from tapelens.recall_plan_files where plan_name = 'campaign-1'"
        ).fetchone()
        assert stored == (10,)
        # Later, the transfers show four of the planned files read from A1.
        conn.execute(
            "insert into tapelens.transfers (source, direction, volume, path, size_bytes,"
            " started_at, duration_s, status, ingest_run_id)"
            " select 'test', 'read', 'A1', path, size_bytes,"
            "        now() + make_interval(secs => 60 * read_order), 9.0, 'ok', 1"
            " from tapelens.recall_plan_files"
            " where plan_name = 'campaign-1' and volume = 'A1' and read_order <= 8"
            " order by read_order limit 4"
        )
    as_table = runner.invoke(cli, ["--dsn", site, "plan", "compare", "campaign-1"])
    assert as_table.exit_code == 0, as_table.output + repr(as_table.exception)
    lines = as_table.stdout.splitlines()
    assert lines[0].split() == ["figure", "value"]
    assert ["files_read", "4"] in [line.split() for line in lines]
    compared = runner.invoke(
        cli, ["--dsn", site, "plan", "compare", "campaign-1", "--format", "json"]
    )
    assert compared.exit_code == 0, compared.output + repr(compared.exception)
    figures = json.loads(compared.stdout)
    assert figures["plan"] == "campaign-1"
    assert figures["planned_files"] == 10
    assert figures["files_read"] == 4
    assert figures["read_from_planned_volume"] == 4
    assert figures["order_rank_correlation"] == pytest.approx(1.0)


def test_saving_twice_replaces_and_unknown_plans_are_named(site: str) -> None:
    from tapelens.analysis.recall.plan.planner import PlanOptions

    asked = parse_requests(["dataset", "X"])
    options = PlanOptions(drives=(("LTO-8", 1),))
    with psycopg.connect(site) as conn:
        plan, params = plan_from_database(conn, asked, options)
        assert plan.files["volume"].to_list() == ["S1"]
        assert save_plan(conn, "p", plan, params) is False
        assert save_plan(conn, "p", plan, params) is True
        with pytest.raises(InputError, match="no saved recall plan named 'q' \\(saved plans: p\\)"):
            compare_plan(conn, "q")


def test_missing_request_file_is_an_expected_failure(tmp_path: Path) -> None:
    # The request list is read before any connection is made.
    nowhere = "postgresql://nobody@127.0.0.1:1/none"
    result = CliRunner().invoke(
        cli, ["--dsn", nowhere, "plan", "recall", str(tmp_path / "none.txt"), "--drives", "LTO8:1"]
    )
    assert result.exit_code != 0
    assert isinstance(result.exception, InputError)
    assert "cannot open" in str(result.exception)


def test_compare_frames_in_figures() -> None:
    files = pl.DataFrame(
        {
            "read_order": [1, 2, 3, 4],
            "drive": ["LTO-8#1"] * 4,
            "volume": ["A1", "A1", "A1", "A2"],
            "path": ["/a", "/b", "/c", "/d"],
            "file_id": ["a", "b", "c", "d"],
            "size_bytes": [GB] * 4,
            "predicted_start_s": [0.0, 10.0, 20.0, 30.0],
            "predicted_end_s": [10.0, 20.0, 30.0, 40.0],
            "actual_volume": ["A1", None, "B9", None],
            "actual_drive": ["d1", "d1", "d2", None],
            "actual_started_at": [1000.0, 1008.0, 1030.0, None],
            "actual_duration_s": [8.0, 20.0, 10.0, None],
        },
        schema_overrides=PLAN_FILES_SCHEMA,
    )
    summary, per_file = compare_frames(files, {"makespan_s": 40.0})
    assert summary["files_read"] == 3 and summary["files_not_read"] == 1
    assert summary["read_from_planned_volume"] == 2  # the null volume counts, B9 does not
    assert summary["actual_makespan_s"] == 40.0
    assert summary["actual_over_predicted"] == 1.0
    assert summary["median_abs_pct_error_duration"] == 25.0  # errors 25%, 50%, 0%
    assert summary["order_rank_correlation"] == pytest.approx(1.0)
    assert per_file["actual_start_s"].to_list()[:3] == [0.0, 8.0, 30.0]


def test_copies_are_found_whether_their_file_id_is_their_path_or_not(site: str) -> None:
    # HPSS's file id is the path (found through the path index); here the others' are not
    # (found through the file_id index, which holds only them).
    with psycopg.connect(site, autocommit=True) as conn:
        conn.execute(
            "insert into tapelens.tape_files (source, copy_id, file_id, path, dataset,"
            " dataset_type, experiment, size_bytes, volume, position, written_at, ingest_run_id)"
            " values ('hpss', 'h1', '/hpss/D/h1', '/hpss/D/h1', 'H', 'RAW', 'exp', 1, 'A1', 99,"
            " '2021-01-01', 1)"
        )
        for kind, key in (("path", "/hpss/D/h1"), ("file_id", "/hpss/D/h1"), ("file_id", "a1")):
            requests = pl.DataFrame({"kind": [kind], "key": [key]})
            found = load_catalog(conn, requests)
            assert found.height == 1, (kind, key)
            assert found["file_id"].to_list() == [key], (kind, key)
        # Named both by path and by dataset, a copy comes back once.
        both = pl.DataFrame({"kind": ["path", "dataset"], "key": ["/hpss/D/h1", "H"]})
        assert load_catalog(conn, both)["file_id"].to_list() == ["/hpss/D/h1"]
        # By path, a file whose id is not its path is found with its own id.
        found = load_catalog(conn, pl.DataFrame({"kind": ["path"], "key": ["/store/D/a2"]}))
        assert sorted(found["volume"].to_list()) == ["A1", "S1"]
        assert set(found["file_id"]) == {"a2"}


def test_requests_that_cannot_be_planned_are_errors_with_their_cause(
    site: str, tmp_path: Path
) -> None:
    with psycopg.connect(site) as conn:
        conn.execute(
            "update tapelens.tape_files set removed_at = '2024-05-06 07:00+00'"
            " where path = '/store/X/x0'"
        )
    runner = CliRunner()

    def plan(text: str, *more: str) -> tuple[int, str]:
        asked = tmp_path / "asked.txt"
        asked.write_text(text)
        argv = ["--dsn", site, "plan", "recall", str(asked), "--drives", "LTO8:2", *more]
        result = runner.invoke(cli, argv)
        if result.exception is None:
            return 0, result.output
        # An expected failure is a TapelensError: the command line prints it as one line.
        assert isinstance(result.exception, TapelensError), result.exception
        return 1, str(result.exception)

    code, said = plan("# nothing but a comment\n")
    assert code != 0 and "no requests (the file is empty" in said
    code, said = plan("/store/D/a1\n", "--policy", "weighted")
    assert code != 0 and "--policy weighted needs --group-weights" in said
    code, said = plan("/store/X/x0\n/store/nope\n")
    assert code != 0 and said.endswith(
        "nothing to recall on drives LTO-8:2: 2 requests name no live file"
        " (1 not in the catalog, 1 removed from the catalog)"
    )
    code, said = plan("/store/D/a1\n", "--drives", "LTO6:1")
    assert code != 0 and "1 files have no readable copy (no drive reads LTO-8: 1)" in said

    # With something to read, the plan goes ahead and lists each miss with its cause.
    out = tmp_path / "plan.csv"
    code, said = plan("/store/D/a1\n/store/X/x0\n/store/nope\n", "-o", str(out))
    assert code == 0, said
    missing = pl.read_csv(tmp_path / "plan.not_found.csv")
    assert missing.select("key", "cause").rows() == [
        ("/store/X/x0", "removed from the catalog (2024-05-06)"),
        ("/store/nope", "not in the catalog"),
    ]


def test_plan_policies_compares_the_same_request_under_each_policy(
    site: str, tmp_path: Path
) -> None:
    asked = tmp_path / "asked.csv"
    asked.write_text("dataset,path,requester\nD,,ann\n,/store/X/x0,bob\n")
    runner = CliRunner()
    base = ["--dsn", site, "plan", "policies", str(asked), "--drives", "LTO8:2"]
    result = runner.invoke(cli, [*base, "--format", "csv"])
    assert result.exception is None, result.exception
    table = pl.read_csv(io.StringIO(result.stdout))
    assert table["policy"].to_list() == ["fifo", "by-demand", "time-slider", "equal", "group"]
    assert set(table["files_read"]) == {11} and set(table["requesters"]) == {2}
    assert table["fairness"].is_between(0.5, 1.0).all()
    result = runner.invoke(cli, [*base, "--policy", "equal", "--requesters", "--format", "csv"])
    assert result.exception is None, result.exception
    served = pl.read_csv(io.StringIO(result.stdout))
    assert served.select("policy", "requester", "files").rows() == [
        ("equal", "ann", 10),
        ("equal", "bob", 1),
    ]
    weighted = runner.invoke(cli, [*base, "--policy", "weighted"])
    assert isinstance(weighted.exception, InputError)
    assert "--group-weights" in str(weighted.exception)


def test_a_plans_tape_rest_batches_are_submitted_and_followed(site: str, tmp_path: Path) -> None:
    asked = tmp_path / "asked.csv"
    asked.write_text("dataset\nD\n")
    runner = CliRunner()
    planned = runner.invoke(
        cli,
        ["--dsn", site, "plan", "recall", str(asked), "--drives", "LTO8:2"]
        + ["--export", "tape-rest", "--export-dir", str(tmp_path)],
    )
    assert planned.exit_code == 0, planned.output
    stage = tmp_path / "tape-rest"
    server = TapeRestServer(token="t").start()
    try:
        result = runner.invoke(
            cli,
            ["export", "tape-rest", str(stage), "--submit", server.base, "--poll", "0"]
            + ["--format", "csv"],
            env={"BEARER_TOKEN": "t"},
        )
    finally:
        server.stop()
    assert result.exit_code == 0, result.output
    batches = pl.read_csv(io.StringIO(result.stdout))
    assert batches["state"].to_list() == ["completed", "completed"]
    assert batches["staged"].sum() == 10
    staged = [
        [f["path"] for f in body["files"]]
        for method, path, body in server.log
        if method == "POST" and path.endswith("/stage")
    ]
    plan_order = [
        json.loads((stage / name).read_text())["files"]
        for name in pl.read_csv(stage / "index.csv")["file"]
    ]
    assert staged == [[f["path"] for f in files] for files in plan_order]


def test_a_long_plan_step_says_what_is_under_way(capsys: pytest.CaptureFixture[str]) -> None:
    # The catalog read is one statement: while it runs, a line every tick says so; a step's
    # own line follows when it ends, and what comes after it is planning. Quiet before tick_s.
    from tapelens.cli.plan import _Steps

    steps = _Steps("reading the requested files' copies from the catalog", tick_s=10.0)
    steps.quiet_s = 0.0
    start = steps.started
    steps.tick(start + 5.0)  # nothing said for 5 s: too soon
    steps.tick(start + 10.0)
    steps.tick(start + 15.0)  # 5 s after the last line: too soon
    steps.tick(start + 20.5)
    steps("read 1,000 copies from the database")
    steps.tick(steps.said_at + 10.0)
    lines = capsys.readouterr().err.splitlines()
    assert [line.rsplit(" (", 1)[0] for line in lines] == [
        "plan recall: reading the requested files' copies from the catalog",
        "plan recall: reading the requested files' copies from the catalog",
        "plan recall: read 1,000 copies from the database",
        "plan recall: planning",
    ]
    assert lines[0].endswith("(10.0 s)") and lines[1].endswith("(20.5 s)")


def test_the_plan_steps_ticker_stops_with_the_plan() -> None:
    from tapelens.cli.plan import _Steps

    with _Steps("reading", tick_s=0.01) as steps:
        pass
    assert not steps.ticking


def test_what_a_plan_leaves_out_is_counted_and_named_on_stderr(site: str, tmp_path: Path) -> None:
    """Without -o the requests not found and the files unavailable are named on stderr with
    their cause; with -o (recall or policies) they are listed beside the output and the stderr
    line says where."""
    asked = tmp_path / "asked.csv"
    asked.write_text("dataset,path\nD,\n,/store/Z/z0\n,/store/nope\n")
    runner = CliRunner()
    plain = runner.invoke(cli, ["--dsn", site, "plan", "recall", str(asked), "--drives", "LTO8:2"])
    assert plain.exit_code == 0, plain.output
    assert "1 request not found (not in the catalog: 1):\n  line 4: /store/nope" in plain.stderr
    assert "1 file unavailable (tape disabled: 1):\n  /store/Z/z0 (tape disabled)" in plain.stderr
    # The summary's durations read as every table's do: h:mm:ss.
    assert re.search(r"^makespan   \d+:\d\d:\d\d \(", plain.stdout, re.M), plain.stdout
    assert re.search(r"^baseline   FIFO direct: \d+:\d\d:\d\d,", plain.stdout, re.M)
    base = ["--dsn", site, "plan", "policies", str(asked), "--drives", "LTO8:2"]
    compared = runner.invoke(cli, [*base, "--policy", "fifo"])
    assert compared.exit_code == 0, compared.output
    assert "1 request not found (not in the catalog: 1):" in compared.stderr
    assert "/store/Z/z0 (tape disabled)" in compared.stderr
    out = tmp_path / "policies.csv"
    written = runner.invoke(cli, [*base, "--policy", "fifo", "-o", str(out)])
    assert written.exit_code == 0, written.output
    missing = pl.read_csv(tmp_path / "policies.not_found.csv")
    assert missing.select("line", "key").rows() == [(4, "/store/nope")]
    lost = pl.read_csv(tmp_path / "policies.unavailable.csv")
    assert lost.select("path", "reason").rows() == [("/store/Z/z0", "tape disabled")]
    assert f"(tape disabled: 1): {tmp_path / 'policies.unavailable.csv'}" in written.stderr
    assert pl.read_csv(out)["files_read"].to_list() == [10]


@pytest.mark.parametrize("name", ["plan.json", "plan.parquet"])
def test_a_plan_is_not_written_as_csv_into_a_file_named_for_another_format(
    site: str, tmp_path: Path, name: str
) -> None:
    asked = tmp_path / "asked.csv"
    asked.write_text("dataset\nD\n")
    target = tmp_path / name
    result = CliRunner().invoke(
        cli, ["--dsn", site, "plan", "recall", str(asked), "--drives", "LTO8:2", "-o", str(target)]
    )
    assert result.exit_code == 2 and "is written as CSV" in result.output
    assert not target.exists()
