"""`predict datasets` and `plan recall` of the same dataset, with the same drives and read order,
give the same predicted time: both run the one recall engine on the same copies."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner

from tapelens.cli import cli

GB = 1_000_000_000
T0 = datetime(2024, 3, 1, tzinfo=UTC)


def run(dsn: str, *args: str) -> str:
    result = CliRunner().invoke(cli, ["--dsn", dsn, *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.stderr
    assert result.exit_code == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("order", ["position", "rao"])
@pytest.mark.parametrize("drives", ["LTO8:1", "LTO8:3", "LTO8:2,LTO9:1"])
def test_predict_and_plan_agree_on_a_dataset(
    dsn: str, tmp_path: Path, drives: str, order: str
) -> None:
    # 'mixed' lives on its home tape among other datasets' files, with stray second copies of
    # some files on two other tapes and an LTO-7 tape of its own: the engine has copies to
    # choose between, tapes to share out, and a media type only some drives read.
    rows = []
    for p in range(1, 61):
        rows.append(("H00001L8", p, "mixed" if p % 2 else "others", 3 * GB, 1))
    rows += [("S00001L8", p, "mixed", 3 * GB, 2) for p in range(1, 21, 2)]
    rows += [("S00002L8", 10 + p, "mixed", 3 * GB, 2) for p in range(21, 41, 2)]
    rows += [("V00001L7", p, "mixed", 2 * GB, 1) for p in range(100, 105)]
    with psycopg.connect(dsn) as conn, conn.cursor() as cur:
        cur.executemany(
            """insert into tapelens.tape_files (source, copy_id, file_id, path, dataset,
                   dataset_type, experiment, size_bytes, volume, position, copy_no, written_at,
                   ingest_run_id)
               values ('test', %s, %s, %s, %s, 'AOD', 'atlas', %s, %s, %s, %s, %s, 1)""",
            [
                (f"{v}/{p}", f"{d}/{p % 60}", f"/{d}/{p % 60}", d, s, v, p, n, T0)
                for v, p, d, s, n in rows
            ],
        )
    predicted = json.loads(
        run(
            dsn,
            *("predict", "datasets", "--dataset", "mixed", "--drives", drives),
            *("--order", order, "--format", "json"),
        )
    )
    requests = tmp_path / "mixed.csv"
    requests.write_text("dataset\nmixed\n")
    summary = tmp_path / "plan.json"
    run(
        dsn,
        *("plan", "recall", str(requests), "--drives", drives, "--order", order),
        *("--summary", str(summary)),
    )
    plan = json.loads(summary.read_text())
    (row,) = predicted
    assert row["readable_files"] == plan["files"]
    assert row["now_tapes"] == plan["mounts"]
    assert row["now_s"] == pytest.approx(plan["makespan_s"], abs=5e-4)  # the summary rounds to ms
