"""The loader against a real TimescaleDB: all or nothing, idempotent, removals, rejects."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import polars as pl
import psycopg
import pytest

from tapelens.errors import ParseError
from tapelens.ingest.datasets import DatasetRules
from tapelens.ingest.formats import FORMATS
from tapelens.ingest.formats.base import ParseOptions
from tapelens.ingest.load import ShrinkGuard, ingest_file
from tapelens.ingest.load.catalog_diff import chunk_parts
from tapelens.ingest.load.upserts import apply_catalog
from tests.fixtures.fake_formats import FAKE_CATALOG

OPTS = ParseOptions(source="fake")


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


def stored(dsn: str, query: str) -> list[tuple]:
    with psycopg.connect(dsn) as conn:
        return conn.execute(query).fetchall()


def copies(dsn: str) -> list[tuple]:
    return stored(
        dsn,
        "select volume, position, size_bytes, path, dataset, dataset_type, removed_at is null"
        " from tapelens.tape_files order by volume, position",
    )


def test_load_derives_datasets_and_registers_tapes(dsn: str, tmp_path: Path) -> None:
    f = write(
        tmp_path / "a.txt",
        [
            "VTS104L7 1 100 /atlas/data18/d1/AOD.1._0001.pool.root.1",
            "VTS104L7 2 200 /atlas/data18/d1/AOD.1._0002.pool.root.1",
            "",
            "A85532 7 300 /star/run19/daq/st_physics_raw_1.daq",
        ],
    )
    result = ingest_file(dsn, FAKE_CATALOG, f, OPTS)
    assert (result.status, result.rows, result.rejects, result.skipped) == ("loaded", 3, 0, 1)
    assert copies(dsn) == [
        ("A85532", 7, 300, "/star/run19/daq/st_physics_raw_1.daq", "/star/run19/daq", "RAW", True),
        (
            "VTS104L7",
            1,
            100,
            "/atlas/data18/d1/AOD.1._0001.pool.root.1",
            "/atlas/data18/d1",
            "AOD",
            True,
        ),
        (
            "VTS104L7",
            2,
            200,
            "/atlas/data18/d1/AOD.1._0002.pool.root.1",
            "/atlas/data18/d1",
            "AOD",
            True,
        ),
    ]
    with psycopg.connect(dsn) as conn:
        tapes = conn.execute(
            "select volume, media_type, media_from from tapelens.tapes order by volume"
        ).fetchall()
        run = conn.execute("select rows, rejects, status from tapelens.ingest_runs").fetchall()
        ids = conn.execute(
            "select copy_id, file_id, coalesce(file_id, path) from tapelens.tape_files"
            " where volume = 'VTS104L7' order by position"
        ).fetchall()
    assert tapes == [("A85532", "unknown", "unknown"), ("VTS104L7", "LTO-7", "barcode")]
    assert run == [(3, 0, "loaded")]
    # HPSS has no file identity but the path: the file id is not stored again (migration 020)
    assert ids[0] == ("VTS104L7:1:", None, "/atlas/data18/d1/AOD.1._0001.pool.root.1")


def test_rerun_of_the_same_file_changes_nothing(dsn: str, tmp_path: Path) -> None:
    f = write(tmp_path / "a.txt", ["V00001L8 1 100 /x/d/a", "V00001L8 2 100 /x/d/b"])
    first = ingest_file(dsn, FAKE_CATALOG, f, OPTS)
    with psycopg.connect(dsn) as conn:
        before = conn.execute("select * from tapelens.tape_files order by copy_id").fetchall()
        # The run records the file's digest: a later load of the same bytes finds it by it.
        recorded = conn.execute("select sha256 from tapelens.ingest_runs").fetchall()
    assert recorded == [(hashlib.sha256(f.read_bytes()).hexdigest(),)]
    again = ingest_file(dsn, FAKE_CATALOG, f, OPTS)
    assert again.status == "unchanged" and again.run_id == first.run_id
    with psycopg.connect(dsn) as conn:
        after = conn.execute("select * from tapelens.tape_files order by copy_id").fetchall()
        runs = conn.execute("select count(*) from tapelens.ingest_runs").fetchone()
    assert before == after and runs == (1,)


def test_newer_dump_updates_and_marks_disappeared_copies_removed(dsn: str, tmp_path: Path) -> None:
    old = write(tmp_path / "old.txt", ["V00001L8 1 100 /x/d/a", "V00001L8 2 100 /x/d/b"])
    new = write(tmp_path / "new.txt", ["V00001L8 1 150 /x/d/a", "V00001L8 3 100 /x/d/c"])
    ingest_file(dsn, FAKE_CATALOG, old, OPTS)
    # One of two copies gone is more than the guard lets a dump retire unconfirmed.
    result = ingest_file(dsn, FAKE_CATALOG, new, OPTS, guard=ShrinkGuard(allow=True))
    assert (result.rows, result.removed) == (2, 1)
    rows = copies(dsn)
    assert [(r[1], r[2], r[6]) for r in rows] == [(1, 150, True), (2, 100, False), (3, 100, True)]


def test_a_retired_copy_is_found_by_its_tuple_id_only_while_it_is_the_row_read(
    dsn: str, tmp_path: Path
) -> None:
    # A newer dump retires the copies it no longer lists where the read of the stored copies
    # saw them (chunk, tuple id); the row there must still be the one read (digest, volume).
    ingest_file(dsn, FAKE_CATALOG, write(tmp_path / "a.txt", ["V00001L8 1 100 /x/d/a"]), OPTS)
    with psycopg.connect(dsn) as conn, conn.cursor() as cur:
        stored = cur.execute(
            "select tableoid::bigint, ctid::text, row_digest, volume from tapelens.tape_files"
        ).fetchone()
        assert stored is not None
        chunk, text, digest, volume = stored
        block, item = map(int, text.strip("()").split(","))
        tid = block << 16 | item  # packed, as the loader reads tuple ids
        cur.execute("create temp table _tapelens_stage (like tapelens.tape_files)")

        def retire(digest_read: int, volume_read: str) -> int:
            gone = pl.DataFrame(
                {"chunk": [chunk], "tid": [tid], "digest": [digest_read], "volume": [volume_read]}
            )
            apply_catalog(cur, "fake", [99], gone)
            row = cur.execute(
                "select count(*) from tapelens.tape_files where removed_at is not null"
            ).fetchone()
            return int(row[0]) if row else -1

        assert retire(digest + 1, volume) == 0  # another row now stands there
        assert retire(digest, "V00002L8") == 0
        assert retire(digest, volume) == 1
        conn.rollback()


TSM = next(f for f in FORMATS if f.name == "tsm-contents")
TSM_HEADER = (
    "VOLUME_NAME,NODE_NAME,TYPE,FILESPACE_NAME,FILE_NAME,AGGREGATED,FILE_SIZE,SEGMENT,CACHED,"
    "FILESPACE_ID,FILESPACE_HEXNAME,BITFILE_ID,OBJECT_ID"
)


def tsm_dump(
    folder: Path, files: list[tuple[int, int]], aggregated: dict[int, str] | None = None
) -> tuple[Path, ParseOptions]:
    """A TSM contents listing of volume VTS200L7 (in listing order: object id and size; alone
    unless `aggregated` gives the object's "i/n" in an aggregate) with its archives export."""
    folder.mkdir()
    member = aggregated or {}
    contents = [TSM_HEADER] + [
        f"VTS200L7,NODE,Arch,/pnfs,/d/f{o}.data,{member.get(o, 'No')},{size},1/1,No,7,/70,{o},{o}"
        for o, size in files
    ]
    archives = ["NODE_NAME,FILESPACE_NAME,HL_NAME,LL_NAME,OBJECT_ID,ARCHIVE_DATE,OWNER,DESCRIPTION"]
    archives += [f"NODE,/pnfs,/d/,f{o}.data,{o},2024-01-0{o} 10:00:00.000000,x," for o, _ in files]
    write(folder / "archives.csv", archives)
    options = replace(OPTS, source="tsm", extra={"archives": str(folder / "archives.csv")})
    return write(folder / "contents.csv", contents), options


def test_a_tsm_copy_keeps_its_place_when_copies_before_it_leave_the_listing(
    dsn: str, tmp_path: Path
) -> None:
    # TSM positions are ranks in the listing. A file deleted from the volume leaves its bytes
    # on the tape, so the copies after it have not moved: they keep their places (also when
    # another of their values changes), and a copy appended to the volume comes after them.
    first, options = tsm_dump(tmp_path / "a", [(1, 100), (2, 100), (3, 100), (4, 100), (5, 100)])
    ingest_file(dsn, TSM, first, options)
    newer, options = tsm_dump(tmp_path / "b", [(1, 100), (2, 100), (4, 150), (5, 100), (6, 100)])
    result = ingest_file(dsn, TSM, newer, options, guard=ShrinkGuard(allow=True))
    assert (result.rows, result.removed) == (5, 1)
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "select path, position, size_bytes, removed_at is null from tapelens.tape_files"
            " order by position"
        ).fetchall()
    assert rows == [
        ("/pnfs/d/f1.data", 1, 100, True),
        ("/pnfs/d/f2.data", 2, 100, True),
        ("/pnfs/d/f3.data", 3, 100, False),
        ("/pnfs/d/f4.data", 4, 150, True),
        ("/pnfs/d/f5.data", 5, 100, True),
        ("/pnfs/d/f6.data", 6, 100, True),
    ]
    # The last copy leaves; a later copy appended goes after its place, not onto it.
    for name, files in (("c", [1, 2, 4, 5]), ("d", [1, 2, 4, 5, 7])):
        dump, options = tsm_dump(tmp_path / name, [(o, 150 if o == 4 else 100) for o in files])
        ingest_file(dsn, TSM, dump, options, guard=ShrinkGuard(allow=True))
    places = stored(
        dsn,
        "select path, position, removed_at is null from tapelens.tape_files"
        " where path like '%f6%' or path like '%f7%' order by position",
    )
    assert places == [("/pnfs/d/f6.data", 6, False), ("/pnfs/d/f7.data", 7, True)]


def test_a_tsm_aggregate_keeps_the_name_of_its_place(dsn: str, tmp_path: Path) -> None:
    # An aggregate's name is its place ("volume:position"). When a file before it leaves the
    # listing, the aggregate keeps its place and its name, also when a member's size changes;
    # an aggregate appended after it is named after the place it is given.
    first, options = tsm_dump(
        tmp_path / "a", [(1, 100), (2, 100), (3, 100), (4, 100)], {2: "1/2", 3: "2/2"}
    )
    ingest_file(dsn, TSM, first, options)
    newer, options = tsm_dump(
        tmp_path / "b",
        [(2, 100), (3, 120), (4, 100), (5, 10), (6, 10)],
        {2: "1/2", 3: "2/2", 5: "1/2", 6: "2/2"},
    )
    ingest_file(dsn, TSM, newer, options, guard=ShrinkGuard(allow=True))
    rows = stored(
        dsn,
        "select path, position, offset_bytes, aggregate_id, size_bytes"
        " from tapelens.tape_files where removed_at is null order by position, offset_bytes",
    )
    assert rows == [
        ("/pnfs/d/f2.data", 2, 0, "VTS200L7:2", 100),
        ("/pnfs/d/f3.data", 2, 100, "VTS200L7:2", 120),
        ("/pnfs/d/f4.data", 3, None, None, 100),
        ("/pnfs/d/f5.data", 4, 0, "VTS200L7:4", 10),
        ("/pnfs/d/f6.data", 4, 10, "VTS200L7:4", 10),
    ]


def test_a_newer_dump_derives_the_dataset_fields_again_under_new_rules(
    dsn: str, tmp_path: Path
) -> None:
    # Digests are taken before the dataset fields are derived; the rules seed them. Under the
    # same rules a newer dump writes only what changed; under new rules every copy it lists is
    # written again with the fields the new rules give.
    def written() -> list[tuple]:
        with psycopg.connect(dsn) as conn:
            return conn.execute(
                "select path, dataset, ingest_run_id from tapelens.tape_files order by path"
            ).fetchall()

    lines = ["V00001L8 1 100 /x/run1/a", "V00001L8 2 100 /x/run1/b"]
    first = ingest_file(dsn, FAKE_CATALOG, write(tmp_path / "a.txt", lines), OPTS)
    lines.append("V00001L8 3 100 /x/run1/c")
    second = ingest_file(dsn, FAKE_CATALOG, write(tmp_path / "b.txt", lines), OPTS)
    assert [(p, r) for p, _, r in written()] == [
        ("/x/run1/a", first.run_id),
        ("/x/run1/b", first.run_id),
        ("/x/run1/c", second.run_id),
    ]
    rule = DatasetRules(dataset=r"^/x/(?P<dataset>[^/]+)/")
    lines.append("V00001L8 4 1 /x/z/d")
    third = ingest_file(dsn, FAKE_CATALOG, write(tmp_path / "c.txt", lines), OPTS, rules=rule)
    assert written() == [
        ("/x/run1/a", "run1", third.run_id),
        ("/x/run1/b", "run1", third.run_id),
        ("/x/run1/c", "run1", third.run_id),
        ("/x/z/d", "z", third.run_id),
    ]


def test_lenient_rejects_are_kept_with_their_reason(dsn: str, tmp_path: Path) -> None:
    f = write(tmp_path / "bad.txt", ["V00001L8 1 100 /x/d/a", "V00001L8 x1 100 /x/d/b", "junk"])
    result = ingest_file(dsn, FAKE_CATALOG, f, OPTS)
    assert (result.rows, result.rejects) == (1, 2)
    assert result.rejects_summary.startswith(f"2 lines refused, first: {f}:2: expected volume")
    with psycopg.connect(dsn) as conn:
        rejects = conn.execute(
            "select line_no, raw from tapelens.ingest_rejects order by line_no"
        ).fetchall()
    assert rejects == [(2, "V00001L8 x1 100 /x/d/b"), (3, "junk")]


def test_strict_loads_nothing_and_names_file_and_line(dsn: str, tmp_path: Path) -> None:
    f = write(tmp_path / "bad.txt", ["V00001L8 1 100 /x/d/a", "V00001L8 x1 100 /x/d/b"])
    with pytest.raises(ParseError) as err:
        ingest_file(dsn, FAKE_CATALOG, f, ParseOptions(source="fake", strict=True))
    assert str(err.value).startswith(f"{f}:2: expected volume position size path")
    assert copies(dsn) == []
    with psycopg.connect(dsn) as conn:
        assert conn.execute("select status from tapelens.ingest_runs").fetchall() == [("failed",)]


def test_a_value_the_table_refuses_is_that_lines_rejection(dsn: str, tmp_path: Path) -> None:
    # A negative size passes the parser but not the table's check constraint, in batch 3.
    lines = [f"V00001L8 {i} 100 /x/d/f{i}" for i in range(1, 30)] + ["V00001L8 99 -5 /x/d/neg"]
    f = write(tmp_path / "neg.txt", lines)
    with pytest.raises(ParseError) as err:
        ingest_file(dsn, FAKE_CATALOG, f, ParseOptions(source="fake", batch_rows=10, strict=True))
    assert (err.value.line, err.value.reason) == (30, "size_bytes is negative (-5)")
    assert copies(dsn) == []
    result = ingest_file(dsn, FAKE_CATALOG, f, ParseOptions(source="fake", batch_rows=10))
    assert (result.rows, result.rejects) == (29, 1)
    assert result.rejects_summary.endswith(f"{f}:30: size_bytes is negative (-5)")


@pytest.mark.parametrize("direct", [True, False])
def test_a_row_the_server_refuses_is_found_and_refused_alone(
    dsn: str, tmp_path: Path, direct: bool
) -> None:
    """A constraint the loader's checks do not know (a site's own): the load bisects to the row."""
    with psycopg.connect(dsn) as conn:
        conn.execute(
            "alter table tapelens.tape_files add constraint site_rule check (path <> '/x/d/f17')"
        )
    if not direct:  # an earlier load: the copies go through the staging table
        ingest_file(dsn, FAKE_CATALOG, write(tmp_path / "a.txt", ["V00002L8 1 1 /y/a"]), OPTS)
    lines = [f"V00001L8 {i} 100 /x/d/f{i}" for i in range(1, 40)]
    f = write(tmp_path / "site.txt", lines)
    options = ParseOptions(source="fake", batch_rows=10)
    result = ingest_file(dsn, FAKE_CATALOG, f, options, guard=ShrinkGuard(allow=True))
    assert (result.rows, result.rejects) == (38, 1)
    assert result.first_reject is not None and result.first_reject.line_no == 17
    assert "refused by the database" in result.first_reject.reason
    assert "site_rule" in result.first_reject.reason
    assert len([c for c in copies(dsn) if c[0] == "V00001L8"]) == 38
    with pytest.raises(ParseError) as err:
        ingest_file(
            dsn,
            FAKE_CATALOG,
            write(tmp_path / "site2.txt", [*lines, "V00001L8 99 1 /x/d/z"]),
            ParseOptions(source="fake", batch_rows=10, strict=True),
        )
    assert err.value.line == 17


def test_duplicate_copy_in_one_file_falls_back_to_the_staged_path(dsn: str, tmp_path: Path) -> None:
    f = write(tmp_path / "dup.txt", ["V00001L8 1 100 /x/d/a", "V00001L8 1 100 /x/d/a"])
    result = ingest_file(dsn, FAKE_CATALOG, f, OPTS)
    assert result.status == "loaded"
    assert len(copies(dsn)) == 1


def test_killing_a_load_midway_leaves_zero_rows(dsn: str, tmp_path: Path) -> None:
    f = write(tmp_path / "big.txt", [f"V00001L8 {i} 100 /x/d/f{i}" for i in range(1, 20_001)])
    code = (
        "import sys; from tapelens.ingest.load import ShrinkGuard, ingest_file;"
        "from tapelens.ingest.formats.base import ParseOptions;"
        "from tests.fixtures.fake_formats import FAKE_CATALOG;"
        "o = ParseOptions(source='fake', batch_rows=500, extra={'delay_per_batch': 0.05});"
        "ingest_file(sys.argv[1], FAKE_CATALOG, sys.argv[2], o,"
        " progress=lambda b, t, r: print(r, flush=True))"
    )
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(
        [sys.executable, "-c", code, dsn, str(f)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    assert proc.stdout is not None
    for line in proc.stdout:  # wait until rows are flowing into the COPY
        if int(line) >= 5_000:
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    time.sleep(0.5)  # the server notices the dropped connection and rolls back
    assert copies(dsn) == []
    with psycopg.connect(dsn) as conn:
        assert conn.execute("select count(*) from tapelens.ingest_runs").fetchone() == (0,)


def indexes(dsn: str) -> list[str]:
    with psycopg.connect(dsn) as conn:
        return [
            r[0]
            for r in conn.execute(
                "select indexdef from pg_indexes where schemaname = 'tapelens'"
                " and tablename = 'tape_files' order by indexname"
            )
        ]


def test_names_with_backslashes_tabs_and_null_markers_load_as_written(
    dsn: str, tmp_path: Path
) -> None:
    # COPY's text format escapes what it uses itself: the names come back byte for byte.
    from tapelens.ingest.formats import lookup

    names = ["/d/back\\slash", "/d/tab\there", "/d/\\N", "/d/ends\\", "/d/\\t literally"]
    f = tmp_path / "names.csv"
    f.write_text(
        "volume,position,size_bytes,path,written_at\n"
        + "".join(f'V00001L8,{i},10,"{n}",2024-01-02T03:04:05Z\n' for i, n in enumerate(names, 1))
    )
    before = indexes(dsn)
    result = ingest_file(dsn, lookup("catalog", "csv"), f, ParseOptions(source="names"))
    assert result.rows == len(names)
    with psycopg.connect(dsn) as conn:
        stored = [
            r[0]
            for r in conn.execute(
                "select path from tapelens.tape_files where source = 'names' order by position"
            )
        ]
    assert stored == names
    # The first load went without the indexes and built them again, the same ones.
    assert indexes(dsn) == before


def test_a_file_id_is_stored_only_where_it_is_not_the_path(dsn: str, tmp_path: Path) -> None:
    from analysis.recall.plan.planner import PlanOptions
    from analysis.recall.requests.lists import requests_frame
    from analysis.recall.store.catalog import plan_from_database
    from tapelens.ingest.formats import lookup

    f = tmp_path / "ids.csv"
    f.write_text(
        "volume,position,size_bytes,path,file_id,written_at\n"
        "V00001L8,1,10,/d/a,/d/a,2024-01-02T03:04:05Z\n"
        "V00001L8,2,10,/d/b,4711,2024-01-02T03:04:06Z\n"
        "V00002L8,1,10,/d/c,,2024-01-02T03:04:07Z\n"
    )
    opts = ParseOptions(source="ids")
    assert ingest_file(dsn, lookup("catalog", "csv"), f, opts).rows == 3
    query = "select path, file_id from tapelens.tape_files where source = 'ids' order by path"
    assert stored(dsn, query) == [("/d/a", None), ("/d/b", "4711"), ("/d/c", None)]
    # A newer dump listing the same copies (in another order) matches them all: no row written.
    rows_of = "select path, xmin::text from tapelens.tape_files where source = 'ids' order by path"
    before = stored(dsn, rows_of)
    lines = f.read_text().splitlines()
    again = write(tmp_path / "ids-again.csv", [lines[0], *reversed(lines[1:])])
    assert ingest_file(dsn, lookup("catalog", "csv"), again, opts).status == "loaded"
    assert stored(dsn, rows_of) == before
    # Readers see each file's identity: its path where none other was stored.
    asked = requests_frame(["/d/a", "4711", "/d/c"], "file_id")
    with psycopg.connect(dsn) as conn:
        plan, _ = plan_from_database(conn, asked, PlanOptions(drives=(("LTO-8", 1),)))
    assert sorted(plan.schedule.files["file_id"].to_list()) == ["/d/a", "/d/c", "4711"]


def index_ids(dsn: str) -> dict[str, int]:
    with psycopg.connect(dsn) as conn:
        return {
            str(name): int(oid)
            for name, oid in conn.execute(
                "select c.relname, i.indexrelid::bigint from pg_index i"
                " join pg_class c on c.oid = i.indexrelid"
                " where i.indrelid = 'tapelens.tape_files'::regclass"
            )
        }


@pytest.mark.parametrize(
    ("fmt", "source", "kept"), [("hpss-lsp", "ls-P.txt", True), ("cta-tf", "cta-tf-ls.txt", False)]
)
def test_a_first_load_keeps_the_index_none_of_its_rows_enters(
    dsn: str, fmt: str, source: str, kept: bool
) -> None:
    # HPSS copies' file id is their path: the file-id index (copies whose id differs) gets
    # none of them, and is kept through the load instead of built again by a full scan; CTA's
    # archive ids go into it, and it is built again like the others (new objects, the same
    # definitions).
    from tapelens.ingest.formats import lookup

    before, definitions = index_ids(dsn), indexes(dsn)
    data = Path(__file__).resolve().parents[1] / "data" / "catalog" / source
    assert ingest_file(dsn, lookup("catalog", fmt), data, ParseOptions(source="s")).rows
    after = index_ids(dsn)
    assert (after["tape_files_file_id"] == before["tape_files_file_id"]) is kept
    rebuilt = [n for n in before if n != "tape_files_file_id"]
    assert all(after[n] != before[n] for n in rebuilt)
    assert indexes(dsn) == definitions


def test_a_failed_first_load_keeps_the_indexes(dsn: str, tmp_path: Path) -> None:
    before = indexes(dsn)
    f = write(tmp_path / "bad.txt", ["V00001L8 1 100 /x/d/a", "V00001L8 x 100 /x/d/b"])
    with pytest.raises(ParseError):
        ingest_file(dsn, FAKE_CATALOG, f, ParseOptions(source="fake", strict=True))
    assert indexes(dsn) == before
    dup = write(tmp_path / "dup.txt", ["V00001L8 1 100 /x/d/a", "V00001L8 1 100 /x/d/a"])
    ingest_file(dsn, FAKE_CATALOG, dup, OPTS)
    assert indexes(dsn) == before


def test_a_newer_dump_writes_only_what_changed(dsn: str, tmp_path: Path) -> None:
    first = [f"V00001L8 {i} 100 /x/d/f{i}" for i in range(1, 11)]
    one = ingest_file(dsn, FAKE_CATALOG, write(tmp_path / "1.txt", first), OPTS)
    # f2 grew, f3 left, f11 is new; the seven others are as they were.
    second = [line for line in first if not line.endswith("/f3")]
    second = [line.replace("2 100 /x/d/f2", "2 150 /x/d/f2") for line in second]
    second.append("V00001L8 11 100 /x/d/f11")
    two = ingest_file(dsn, FAKE_CATALOG, write(tmp_path / "2.txt", second), OPTS)
    assert (two.rows, two.removed) == (10, 1)
    with psycopg.connect(dsn) as conn:
        runs = dict(
            conn.execute(
                "select path, ingest_run_id from tapelens.tape_files where removed_at is null"
            ).fetchall()
        )
        gone = conn.execute(
            "select path, removed_run_id from tapelens.tape_files where removed_at is not null"
        ).fetchall()
    assert runs.pop("/x/d/f2") == two.run_id and runs.pop("/x/d/f11") == two.run_id
    assert set(runs.values()) == {one.run_id}  # unchanged rows keep the run that wrote them
    assert gone == [("/x/d/f3", two.run_id)]
    # The first dump again: f3 comes back, f11 leaves, f2 shrinks back.
    three = ingest_file(dsn, FAKE_CATALOG, write(tmp_path / "3.txt", first), OPTS)
    assert three.removed == 1
    assert [c[2] for c in copies(dsn) if c[6]] == [100] * 10


def test_the_catalog_chunks_are_split_by_size(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        # Copies written in five half-years: five chunks, the first the largest.
        for k, n in enumerate((500, 100, 100, 100, 100)):
            conn.execute(
                "insert into tapelens.tape_files (source, copy_id, file_id, path, dataset,"
                " dataset_type, experiment, size_bytes, volume, position, written_at,"
                " ingest_run_id) select 'hpss', %s || ':' || g, 'f' || g, '/p/' || g, 'd', 't',"
                " 'e', 1, 'V' || %s, g, timestamptz '2020-01-01' + %s * interval '200 days', 1"
                " from generate_series(1, %s) g",
                [str(k), str(k), k, n * 100],
            )
    parts = chunk_parts(dsn, 2)
    assert sorted(len(p) for p in parts) == [1, 4]  # the big chunk alone, the four small ones
    assert len({c for p in parts for c in p}) == 5
    assert chunk_parts(dsn, 8) and len(chunk_parts(dsn, 8)) == 5
