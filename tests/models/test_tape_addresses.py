"""A tape object's byte address has one definition (macros/tape_objects.sql): the mart
plan_tape_objects builds it, the planner's catalog read renders the same macro for volumes the
marts do not cover, and the geometry's start_bytes_from_sizes is held equal to it here on the
real database."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tapelens.analysis.geometry.place import start_bytes_from_sizes
from tapelens.analysis.recall.store.addresses import (
    address_objects,
    stale_volumes,
    tape_objects_sql,
)
from tapelens.analysis.recall.store.catalog import load_catalog
from tapelens.analysis.whatif.store import read_copies_from
from tapelens.dbt_runs import build
from tapelens.frames import postgres_reader
from tests.fixtures.catalog_runs import LoadedCopy, record_catalog_load
from tests.fixtures.marts import MODELS_ONLY, reset, rows
from tests.props import examples

# (volume, position, size_bytes): several copies at one position are an aggregate's members.
Copy = tuple[str, int, int]
copy_lists = st.lists(
    st.tuples(
        st.sampled_from(["V1", "V2", "V3"]),
        st.integers(min_value=1, max_value=40),
        # whole bytes well below 2^53 in total: every sum is exact in double precision
        st.integers(min_value=0, max_value=10**12),
    ),
    min_size=1,
    max_size=60,
)


def python_addresses(copies: list[Copy]) -> dict[tuple[str, int], float]:
    found: dict[tuple[str, int], float] = {}
    for volume in {c[0] for c in copies}:
        mine = [c for c in copies if c[0] == volume]
        starts = start_bytes_from_sizes(
            np.array([c[1] for c in mine]), np.array([c[2] for c in mine])
        )
        found.update({(volume, c[1]): float(s) for c, s in zip(mine, starts, strict=True)})
    return found


@settings(max_examples=examples(40))
@given(copies=copy_lists)
def test_the_geometry_addresses_as_the_shared_sql_does(models_dsn: str, copies: list[Copy]) -> None:
    with psycopg.connect(models_dsn) as conn:
        conn.execute(
            "create temporary table some_copies (volume text, position bigint, size_bytes bigint)"
        )
        with conn.cursor() as cur:
            cur.executemany("insert into some_copies values (%s, %s, %s)", copies)
        query = tape_objects_sql("some_copies")
        sql_rows = conn.execute(f"select volume, position, start_bytes from ({query}) a").fetchall()  # type: ignore[arg-type]
        conn.rollback()
    assert {(v, p): float(s) for v, p, s in sql_rows} == python_addresses(copies)


@pytest.mark.slow
def test_the_mart_and_the_planners_catalog_read_give_the_same_addresses(
    models_dsn: str, dbt_home: Path
) -> None:
    """An aggregate (three members at one position), files alone, a removed copy whose bytes
    stay on the tape; the mart's start_bytes, the planner's from the catalog alone, and the
    geometry's agree, each object starting after the sum of the objects before it."""
    reset(models_dsn)
    # (path, volume, position, offset_bytes, size_bytes, removed)
    catalog = [
        ("/d/a", "V1", 1, None, 100, False),
        ("/d/b1", "V1", 2, 0, 30, False),
        ("/d/b2", "V1", 2, 30, 50, False),
        ("/d/b3", "V1", 2, 80, 20, False),
        ("/d/gone", "V1", 3, None, 700, True),
        ("/d/c", "V1", 4, None, 5, False),
        ("/d/e", "V2", 7, None, 9, False),
        ("/d/f", "V2", 9, None, 11, False),
    ]
    with psycopg.connect(models_dsn, autocommit=True) as conn, conn.cursor() as cur:
        cur.executemany(
            "insert into tapelens.tape_files (source, copy_id, path, dataset, dataset_type,"
            " experiment, size_bytes, volume, position, offset_bytes, written_at, ingest_run_id,"
            " removed_at, removed_run_id)"
            " values ('s', %s, %s, '/d', 'RAW', 'exp', %s, %s, %s, %s, timestamptz '2022-01-01', 1,"
            " case when %s then timestamptz '2023-01-01' end, case when %s then 2 end)",
            [
                (f"{v}:{p}:{o or 0}", path, size, v, p, o, gone, gone)
                for path, v, p, o, size, gone in catalog
            ],
        )
    expected = {("V1", 1): 0, ("V1", 2): 100, ("V1", 3): 200, ("V1", 4): 900}
    expected |= {("V2", 7): 0, ("V2", 9): 9}
    geometry = python_addresses([(v, p, size) for _, v, p, _, size, _ in catalog])
    assert geometry == {k: float(s) for k, s in expected.items()}

    wanted = [path for path, *_, gone in catalog if not gone]
    requests = pl.DataFrame({"kind": ["path"] * len(wanted), "key": wanted})
    with psycopg.connect(models_dsn) as conn:
        before_marts = load_catalog(conn, requests)
    build(
        models_dsn,
        select=["+plan_tape_layouts", "+fct_file_gaps"],
        exclude=MODELS_ONLY,
        log_dir=dbt_home / "dbt",
    )
    mart = {
        (r["volume"], r["position"]): r["start_bytes"]
        for r in rows(models_dsn, "select * from tapelens_marts.plan_tape_objects")
    }
    assert mart == expected
    with psycopg.connect(models_dsn) as conn:
        from_marts = load_catalog(conn, requests)
    for copies in (before_marts, from_marts):
        got = {
            r["path"]: r["start_bytes"]
            for r in copies.select("path", "start_bytes").iter_rows(named=True)
        }
        offsets = {path: o or 0 for path, _, _, o, *_ in catalog}
        assert got == {
            path: expected[(v, p)] + offsets[path] for path, v, p, _, _, gone in catalog if not gone
        }

    # The gap mart's byte gaps are the same addresses: the removed copy's 700 bytes at
    # position 3 lie between /d/b* and /d/c and a read passes over them.
    gaps = {
        (r["volume"], r["position"], r["offset_bytes"]): r["gap_bytes"]
        for r in rows(models_dsn, "select * from tapelens_marts.fct_file_gaps")
    }
    assert gaps == {
        ("V1", 1, None): None,
        ("V1", 2, 0): 0,
        ("V1", 2, 30): 0,
        ("V1", 2, 80): 0,
        ("V1", 4, None): 700,
        ("V2", 7, None): None,
        ("V2", 9, None): 0,
    }
    assert gaps_apart_from_addresses(models_dsn) == []


def gaps_apart_from_addresses(dsn: str) -> list[dict[str, object]]:
    """The rows of fct_file_gaps whose gap_bytes is not the bytes between the previous file's
    object and its own in plan_tape_objects (the one byte address): none, unless the two marts
    have drifted apart."""
    return rows(
        dsn,
        """select g.volume, g.position, g.gap_bytes,
                  greatest(o.start_bytes - (p.start_bytes + p.object_bytes), 0) as by_address
           from tapelens_marts.fct_file_gaps g
           join tapelens_marts.plan_tape_objects o
             on o.volume = g.volume and o.position = g.position
           join tapelens_marts.plan_tape_objects p
             on p.volume = g.volume and p.position = g.prev_position
           where g.gap_bytes is distinct from
                 greatest(o.start_bytes - (p.start_bytes + p.object_bytes), 0)""",
    )


def stale_rule(conn: psycopg.Connection) -> tuple[bool, tuple[str, ...] | None]:
    """The marts' stale volumes as the planner's catalog read takes them: address_objects on
    the cursor of its transaction, after its copies are in plan_copies."""
    with conn.transaction(), conn.cursor() as cur:
        cur.execute(
            "create temporary table plan_copies on commit drop as"
            " select volume from tapelens.tape_files"
        )
        _, addressing = address_objects(cur)
    return addressing.from_marts, addressing.stale_volumes


def one_stale_rule(dsn: str) -> tuple[bool, tuple[str, ...] | None]:
    """The stale volumes, the same through the planner's cursor and through a frame reader
    (the whole-catalog reads', and the Spark planner's on Spark), else the test fails."""
    with psycopg.connect(dsn) as conn:
        on_cursor = stale_rule(conn)
    through_reader = stale_volumes(postgres_reader(dsn))
    assert on_cursor == through_reader, "the planner's read and the frame reader's differ"
    return through_reader


@pytest.mark.slow
def test_a_whole_catalog_read_takes_the_marts_addresses_and_sums_the_changed_tapes(
    models_dsn: str, dbt_home: Path
) -> None:
    """The whole-catalog read of `plan families` and `whatif placement` (catalog_objects_sql):
    the addresses of the marts for the tapes the build saw, the tape a later catalog load
    changed summed again from the catalog, every tape summed where no marts are built or a
    whole-catalog load came after the build; the planner's read (address_objects) takes the
    same tapes for changed at every step."""
    reset(models_dsn)
    catalog: list[LoadedCopy] = [("/d/a", "V1", 1, 100), ("/d/b", "V1", 2, 30)]
    catalog += [("/d/e", "V2", 7, 9), ("/d/f", "V2", 9, 11)]

    def addresses() -> dict[str, int]:
        copies = read_copies_from(postgres_reader(models_dsn))
        return dict(copies.select("path", "start_bytes").iter_rows())

    with psycopg.connect(models_dsn, autocommit=True) as conn:
        record_catalog_load(conn, catalog)
    summed = {"/d/a": 0, "/d/b": 100, "/d/e": 0, "/d/f": 9}
    assert addresses() == summed  # no marts: every tape summed
    assert one_stale_rule(models_dsn) == (False, None)
    build(models_dsn, select=["+plan_tape_layouts"], exclude=MODELS_ONLY, log_dir=dbt_home / "dbt")
    assert addresses() == summed
    assert one_stale_rule(models_dsn) == (True, ())
    with psycopg.connect(models_dsn, autocommit=True) as conn:
        # The marts' address is the one read for a tape the build saw as it is ...
        conn.execute(
            "update tapelens_marts.plan_tape_objects set start_bytes = 101"
            " where volume = 'V1' and position = 2"
        )
        assert addresses() == summed | {"/d/b": 101}
        # ... and a tape a later catalog load changed is summed again: a new file at
        # position 8 of V2 moves /d/f along by its 4 bytes.
        record_catalog_load(conn, [("/d/g", "V2", 8, 4)])
    assert addresses() == summed | {"/d/b": 101, "/d/g": 9, "/d/f": 13}
    assert one_stale_rule(models_dsn) == (True, ("V2",))
    with psycopg.connect(models_dsn) as conn:
        # A database without a table of load runs has had no load after the build.
        conn.execute("alter table tapelens.ingest_runs rename to ingest_runs_elsewhere")
        assert stale_rule(conn) == (True, ())
        conn.rollback()
    with psycopg.connect(models_dsn, autocommit=True) as conn:
        # After a whole-catalog load any tape may have changed: every one is summed again.
        record_catalog_load(conn, [("/d/h", "V3", 1, 5)], whole=True)
    assert addresses() == summed | {"/d/g": 9, "/d/f": 13, "/d/h": 0}
    assert one_stale_rule(models_dsn) == (True, None)
