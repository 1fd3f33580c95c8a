"""A saved plan against the reads that followed: one definition (the view
tapelens.recall_plan_reads) behind `plan compare` and the dashboards' plan views, on a real
database."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import psycopg
from psycopg import sql

from tapelens.analysis.recall.store.saved_plans import compare_plan
from tapelens.dashboards.reader_role import VIEWS_SCHEMA, view_files

SAVED = datetime(2024, 3, 1, 12, 0, tzinfo=UTC)


def at(minutes: float) -> datetime:
    return SAVED + timedelta(minutes=minutes)


# (read_order, volume, path, file_id) of the plan
PLANNED = [
    (1, "A00001", "/d/one", "/d/one"),
    (2, "A00001", "/d/two", "/d/two"),
    (3, "A00002", "/d/three", "archive:3"),
    (4, "A00002", "/d/four", "/d/four"),
    (5, "A00003", "/d/five", "/d/five"),
]
# (volume, drive, file_id, path, started_at, duration_s, status)
TRANSFERS = [
    ("A00001", "d1", None, "/d/one", at(-30), 10.0, "ok"),  # before the plan: not its read
    ("A00001", "d1", None, "/d/one", at(5), 12.0, "ok"),
    ("A00001", "d1", None, "/d/one", at(50), 13.0, "ok"),  # a later read of the same file
    ("A00001", "d2", None, "/d/two", at(6), 20.0, "failed"),  # failed: not a read
    ("A00009", "d2", None, "/d/two", at(9), 21.0, "ok"),  # read from another volume
    ("A00002", "d1", "archive:3", None, at(7), 30.0, "ok"),  # the log names no path
    ("A00002", "d1", "archive:3", "/elsewhere", at(4), 31.0, "ok"),  # path given: not by id
    # file four is never read
    ("A00003", "d2", None, "/d/five", at(8), 40.0, "ok"),
]


def save_plan(conn: psycopg.Connection) -> None:
    conn.execute(
        "insert into tapelens.recall_plans (name, created_at, summary, params)"
        " values ('p', %s, %s, '{}')",
        [SAVED, json.dumps({"makespan_s": 100.0})],
    )
    with conn.cursor() as cur:
        cur.executemany(
            "insert into tapelens.recall_plan_files (plan_name, read_order, mount_order, drive,"
            " volume, position, path, file_id, size_bytes, predicted_start_s, predicted_end_s)"
            " values ('p', %s, 1, 'd1', %s, %s, %s, %s, 1000, %s, %s)",
            [(o, v, o, path, fid, 10.0 * o, 10.0 * o + 5) for o, v, path, fid in PLANNED],
        )
        cur.executemany(
            "insert into tapelens.transfers (source, direction, volume, drive, file_id, path,"
            " started_at, duration_s, status, ingest_run_id)"
            " values ('site', 'read', %s, %s, %s, %s, %s, %s, %s, 1)",
            TRANSFERS,
        )
    # another plan over the same files, saved later: its reads start later
    conn.execute(
        "insert into tapelens.recall_plans (name, created_at, summary, params)"
        " values ('later', %s, '{}', '{}')",
        [at(45)],
    )
    conn.execute(
        "insert into tapelens.recall_plan_files select 'later', read_order, mount_order, drive,"
        " volume, position, offset_bytes, path, file_id, size_bytes, requester,"
        " predicted_start_s, predicted_end_s from tapelens.recall_plan_files"
        " where plan_name = 'p'"
    )


def test_plan_compare_and_the_dashboards_see_the_same_first_reads(dsn: str) -> None:
    with psycopg.connect(dsn) as conn:
        save_plan(conn)
        conn.commit()
        files = compare_plan(conn, "p").files
        later = compare_plan(conn, "later").files
        conn.execute(sql.SQL("create schema {}").format(sql.Identifier(VIEWS_SCHEMA)))
        for path in view_files():
            conn.execute(path.read_text().encode())
        board = conn.execute(
            "select plan_name, read_order, actual_volume, actual_drive, actual_started_at"
            " from tapelens_dashboards.recall_plan_files order by 1, 2"
        ).fetchall()
    got = [
        (r["read_order"], r["actual_volume"], r["actual_drive"], r["actual_started_at"])
        for r in files.iter_rows(named=True)
    ]
    assert got == [
        (1, "A00001", "d1", at(5).timestamp()),
        (2, "A00009", "d2", at(9).timestamp()),
        (3, "A00002", "d1", at(7).timestamp()),
        (4, None, None, None),
        (5, "A00003", "d2", at(8).timestamp()),
    ]
    assert later["actual_started_at"].to_list() == [at(50).timestamp(), None, None, None, None]
    seen = {
        (plan, order): (volume, drive, started.timestamp() if started else None)
        for plan, order, volume, drive, started in board
    }
    compared = {("p", r[0]): r[1:] for r in got} | {
        ("later", r["read_order"]): (r["actual_volume"], r["actual_drive"], r["actual_started_at"])
        for r in later.iter_rows(named=True)
    }
    assert seen == compared
