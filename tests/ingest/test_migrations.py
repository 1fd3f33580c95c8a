from __future__ import annotations

import psycopg
import pytest
from psycopg import conninfo, sql

from tapelens.errors import DatabaseError
from tapelens.ingest.migrations import available, migrate, schema_version
from tapelens.media import MEDIA_TYPES, seed_sql
from tapelens.status import CANONICAL_TABLES, status


def test_migrations_apply_once_then_noop(empty_dsn: str) -> None:
    with psycopg.connect(empty_dsn) as conn:
        first = migrate(conn, empty_dsn)
        assert [m.version for m in first] == [m.version for m in available()]
        again = migrate(conn, empty_dsn)
        assert again == []
        assert schema_version(conn) == available()[-1].version
        recorded = conn.execute("select count(*) from tapelens.schema_migrations").fetchone()
        assert recorded == (len(available()),)


def test_every_canonical_table_exists_and_raw_tables_are_hypertables(dsn: str) -> None:
    with psycopg.connect(dsn) as conn:
        st = status(conn)
        assert st.timescaledb_version and st.timescaledb_version.startswith("2.")
        assert all(st.row_counts[t] is not None for t in CANONICAL_TABLES)
        hypertables = {
            r[0]
            for r in conn.execute(
                "select hypertable_name from timescaledb_information.hypertables"
                " where hypertable_schema = 'tapelens'"
            )
        }
        assert hypertables == {"tape_files", "transfers", "mounts"}


def test_media_types_seed_matches_the_python_catalog(dsn: str) -> None:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "select media_type, native_rate_mb_s, capacity_bytes, load_s, locate_avg_s,"
            " readable_by from tapelens.media_types order by media_type"
        ).fetchall()
    expected = sorted(
        (
            m.media_type,
            m.native_rate_mb_s,
            m.capacity_bytes,
            m.load_s,
            m.locate_avg_s,
            list(m.readable_by),
        )
        for m in MEDIA_TYPES
    )
    assert rows == expected
    shipped = available()[1].sql
    assert seed_sql() in shipped, "regenerate 002_media_types.sql: python -m tapelens.media"


def test_lto7_figures_are_the_published_ones(dsn: str) -> None:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "select robot_s, load_s, locate_avg_s, rewind_avg_s, unload_s, native_rate_mb_s"
            " from tapelens.media_types where media_type = 'LTO-7'"
        ).fetchone()
    assert row == (11, 13, 59, 62, 22, 300)


def test_refuses_a_database_where_timescaledb_cannot_be_had(empty_dsn: str) -> None:
    # A role that may connect but not create the (untrusted) extension sees the server as
    # lacking TimescaleDB: migrate must refuse with a message naming it, and change nothing.
    role = "no_ext_" + conninfo.conninfo_to_dict(empty_dsn)["dbname"]
    with psycopg.connect(empty_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("create role {} login").format(sql.Identifier(role)))
    params = conninfo.conninfo_to_dict(empty_dsn)
    params["user"] = role
    limited = conninfo.make_conninfo(**params)
    try:
        with psycopg.connect(limited) as conn, pytest.raises(DatabaseError) as err:
            migrate(conn, limited)
        assert "timescaledb" in str(err.value)
        with psycopg.connect(empty_dsn) as conn:
            assert conn.execute("select to_regclass('tapelens.tape_files')").fetchone() == (None,)
    finally:
        with psycopg.connect(empty_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("drop role {}").format(sql.Identifier(role)))


def test_tsm_aggregate_members_are_named_after_their_place_again(dsn: str) -> None:
    # Migration 016: a TSM aggregate member named after a later rank gets its place's name;
    # other systems' aggregate names (Enstore's package ids) stay as they are.
    fix = next(m for m in available() if m.version == 16)
    with psycopg.connect(dsn) as conn:
        for run_id, fmt in ((1, "tsm-contents"), (2, "enstore-list")):
            conn.execute(
                "insert into tapelens.ingest_runs (run_id, kind, format, source, path, sha256,"
                " status) overriding system value values (%s, 'catalog', %s, 's', 'p', %s,"
                " 'loaded')",
                [run_id, fmt, str(run_id)],
            )
        for copy_id, run_id, aggregate in (("a", 1, "VTS200L7:1"), ("b", 2, "PKG001")):
            conn.execute(
                "insert into tapelens.tape_files (source, copy_id, file_id, path, dataset,"
                " dataset_type, experiment, size_bytes, volume, position, offset_bytes,"
                " aggregate_id, written_at, ingest_run_id) values ('s', %s, %s, %s, 'd', 't',"
                " 'e', 1, 'VTS200L7', 2, 0, %s, '2024-01-01', %s)",
                [copy_id, copy_id, copy_id, aggregate, run_id],
            )
        conn.execute(fix.sql)
        names = conn.execute(
            "select copy_id, aggregate_id from tapelens.tape_files order by copy_id"
        ).fetchall()
    assert names == [("a", "VTS200L7:2"), ("b", "PKG001")]
