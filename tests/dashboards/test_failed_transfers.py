"""Failed transfers carry the drive and the error the logs give: the staging export's optional
drive and error columns, the synthetic site's staging export, and the drive of the covering
mount where a log names only the tape (the dashboards' failed_transfers view)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import psycopg
import pytest
from psycopg import sql

from tapelens.dashboards.reader_role import VIEWS_SCHEMA, view_files
from tapelens.ingest.formats import staging_csv
from tapelens.ingest.formats.base import ParseOptions
from tapelens.world.logs import write_logs
from tapelens.world.operations import OperationsParams
from tests.world.test_operations import busy_site, run

T0 = datetime(2022, 1, 10, 8, 0, tzinfo=UTC)


def _parse(path: Path) -> pl.DataFrame:
    batches = list(staging_csv.parse(path, options=ParseOptions(source="test")))
    return pl.concat([b.frame for b in batches])


def test_staging_export_with_drive_and_error_columns(tmp_path: Path) -> None:
    path = tmp_path / "staging.csv"
    path.write_text(
        "file,tape,position,size,submission_time,queued_time,end_time,status,drive,error\n"
        "/a/1,A8553200,1,10,2021-01-01 00:00:00,2021-01-01 00:01:00,2021-01-01 00:02:00,"
        "failed,D7,tape read error: medium error\n"
        "/a/2,A8553200,2,10,2021-01-01 00:00:00,2021-01-01 00:01:00,2021-01-01 00:02:00,"
        "failed,,\n"
        "/a/3,A8553200,3,10,2021-01-01 00:00:00,2021-01-01 00:01:00,2021-01-01 00:02:00,"
        "done,D7,\n"
    )
    rows = _parse(path).select("path", "drive", "status", "error").rows()
    assert rows == [
        ("/a/1", "D7", "failed", "tape read error: medium error"),
        ("/a/2", None, "failed", "failed"),  # no message: the status stands for it
        ("/a/3", "D7", "ok", None),
    ]


def test_the_synthetic_sites_staging_export_carries_the_error_text(tmp_path: Path) -> None:
    copies, tapes = busy_site()
    params = OperationsParams(
        campaigns=3,
        files_per_campaign=60,
        failure_probability=0.2,
        drives_per_media=2,
        start=datetime(2020, 12, 1, tzinfo=UTC),
        end=datetime(2021, 1, 15, tzinfo=UTC),
    )
    history = run(copies, tapes, params, seed=3)
    entries = write_logs("bnl", history, tmp_path, False)
    (entry,) = [e for e in entries if e["format"] == "staging-csv"]
    got = _parse(tmp_path / entry["path"]).filter(pl.col("status") == "failed")
    truth = history.transfers.filter(pl.col("status") != "ok")
    assert got.height == truth.height > 0
    assert sorted(got["error"].to_list()) == sorted(truth["error"].to_list())
    assert "failed" not in set(got["error"].to_list()) - set(truth["error"].to_list())


@pytest.fixture
def views_dsn(dsn: str) -> str:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("create schema if not exists {}").format(sql.Identifier(VIEWS_SCHEMA)))
        for path in view_files():
            conn.execute(path.read_text().encode())
    return dsn


def test_failed_transfers_get_the_drive_of_the_covering_mount(views_dsn: str) -> None:
    with psycopg.connect(views_dsn) as conn:
        conn.execute(
            "insert into tapelens.tapes (volume, media_type, pool, state)"
            " values ('V1', 'LTO-8', 'p', 'full'), ('V2', 'LTO-8', 'p', 'full')"
        )
        conn.execute(
            """insert into tapelens.tape_files (source, copy_id, file_id, path, dataset,
                   dataset_type, experiment, size_bytes, volume, position, written_at,
                   ingest_run_id)
               values ('s', 'c1', '/d/f1', '/d/f1', '/d', 'RAW', 'x', 10, 'V2', 1, %s, 1)""",
            [T0 - timedelta(days=30)],
        )
        conn.execute(
            """insert into tapelens.mounts (source, volume, drive, requested_at, mounted_at,
                   dismounted_at, ingest_run_id)
               values ('s', 'V1', 'D1', %s, %s, %s, 1), ('s', 'V1', 'D2', %s, %s, %s, 1),
                      ('s', 'V2', 'D3', %s, %s, %s, 1)""",
            [
                T0,
                T0 + timedelta(minutes=1),
                T0 + timedelta(hours=1),
                T0 + timedelta(hours=2),
                T0 + timedelta(hours=2, minutes=1),
                T0 + timedelta(hours=3),
                T0,
                T0 + timedelta(minutes=1),
                T0 + timedelta(hours=1),
            ],
        )
        failed = [
            # (volume, drive, path, started_at, error)
            ("V1", None, "/x/a", T0 + timedelta(minutes=10), "medium error"),  # first mount
            ("V1", None, "/x/b", T0 + timedelta(hours=2, minutes=5), "medium error"),
            ("V1", "D9", "/x/c", T0 + timedelta(minutes=20), "drive error"),  # the log's own
            (None, None, "/d/f1", T0 + timedelta(minutes=30), "rc 10006"),  # path only
            ("V1", None, "/x/d", T0 + timedelta(hours=5), None),  # no mount covers it
        ]
        conn.execute(
            "insert into tapelens.transfers (source, direction, volume, drive, path, started_at,"
            " status, error, ingest_run_id) values"
            + ",".join(["('s', 'read', %s, %s, %s, %s, 'failed', %s, 1)"] * len(failed)),
            [v for row in failed for v in row],
        )
        rows = conn.execute(
            "select path, volume, drive, drive_from, error"
            " from tapelens_dashboards.failed_transfers order by path"
        ).fetchall()
    assert rows == [
        ("/d/f1", "V2", "D3", "mount", "rc 10006"),
        ("/x/a", "V1", "D1", "mount", "medium error"),
        ("/x/b", "V1", "D2", "mount", "medium error"),
        ("/x/c", "V1", "D9", "log", "drive error"),
        ("/x/d", "V1", "unknown", "unknown", "no error text"),
    ]
