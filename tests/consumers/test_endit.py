"""ENDIT's retriever reading the tape hint file `export endit-hints` writes.

endit_lookup.pl follows the lookup of neicnordic/endit tsmretriever.pl (readtapelist and the
request loop): requests are the hex-named files of its request folder, each looked up by that
name in the hint file's first line; one it does not find goes to the single `default` job.
The catalog fixtures are `dsmadmc -dataonly=yes -tabdelim "q content VOL f=d"` listings (the
fields neicnordic/endit tsm_getvolumecontent.pl splits: node, type, filespace, its hex, its id,
file name, its hex, aggregated, size, segment, cached, linked, fragment) of objects that
tsmarchiver.pl archived as <dir_out>/<pnfsid>, with dir_out /grid/pool/out.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import psycopg
import pytest

from tests.consumers.run import endit_lookup
from tests.fixtures.cli import run

DATA = Path(__file__).parent / "data"
LISTED_AT = "2024-05-02T10:00:00Z"


def _catalog(dsn: str) -> dict[str, str]:
    """The live copies' base names and volumes, as the catalog holds them."""
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "select regexp_replace(path, '^.*/', ''), volume from tapelens.tape_files"
            " where removed_at is null"
        ).fetchall()
    return dict(rows)


@pytest.mark.slow
def test_hints_from_a_catalog_of_what_endit_archived_reach_their_tapes(
    dsn: str, tmp_path: Path
) -> None:
    for listing in sorted(DATA.glob("*.qcontent.txt")):
        loaded = run(
            "--dsn", dsn, "ingest", "catalog", "--format", "tsm-qcontent",
            "--listed-at", LISTED_AT, str(listing),
        )  # fmt: skip
        assert loaded.returncode == 0, loaded.stderr
    hint_file = tmp_path / "tapehints" / "NODE.json"
    hint_file.parent.mkdir()
    exported = run("--dsn", dsn, "export", "endit-hints", "-o", str(hint_file))
    assert exported.returncode == 0, exported.stderr
    assert "left out" not in exported.stderr
    on_tape = _catalog(dsn)
    # A request for a file on no tape (not yet archived, say) stays in the default job.
    stranger = "0000" + "F" * 32
    log, jobs = endit_lookup(hint_file, [*on_tape, stranger], tmp_path / "request")
    assert log == f"loaded {len(on_tape)} entries"
    assert jobs == {**on_tape, stranger: "default"}
    assert len(set(jobs.values())) == 3


def test_a_hint_file_keyed_otherwise_puts_every_request_in_the_default_job(tmp_path: Path) -> None:
    # Why a catalog whose names are not pnfsids is refused: the retriever loads such a file
    # without a word and then finds no request in it. And why the file is one line: the
    # retriever decodes the first line only, so an indented file is not loaded at all.
    pnfsid = "0000004C9A19B5FA480398AED8A6CD61107D"
    by_name = tmp_path / "by-name.json"
    by_name.write_text(json.dumps({"f1.data": {"volid": "A00017L8", "order": 0}}) + "\n")
    log, jobs = endit_lookup(by_name, [pnfsid], tmp_path / "request")
    assert (log, jobs) == ("loaded 1 entries", {pnfsid: "default"})
    indented = tmp_path / "indented.json"
    indented.write_text(json.dumps({pnfsid: {"volid": "A00017L8", "order": 0}}, indent=1))
    log, jobs = endit_lookup(indented, [pnfsid], tmp_path / "request")
    assert log.startswith("not loaded") and jobs == {pnfsid: "default"}


@pytest.mark.slow
def test_a_catalog_of_paths_is_keyed_through_the_sites_pnfsid_map(dsn: str, tmp_path: Path) -> None:
    # An HPSS catalog: its paths are not pnfsids, so the hint file is refused without a map,
    # and made through Chimera's path -> pnfsid list (data/chimera-paths.csv, as `psql --csv`
    # prints a select of inumber2path(inumber), ipnfsid) with the HPSS prefix mapped to dCache's.
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "insert into tapelens.tapes (volume, media_type, state) values"
            " ('H00001', 'LTO-8', 'full'), ('H00002', 'LTO-8', 'full')"
        )
        conn.execute(
            "insert into tapelens.tape_files (source, copy_id, file_id, path, dataset,"
            " dataset_type, experiment, size_bytes, volume, position, written_at, ingest_run_id)"
            " select 'hpss', n::text, p, p, 'D', 'RAW', 'atlas', 1000 * n, v, n, '2022-01-01', 1"
            " from (values (1, '/hpss/atlas/data18/RAW/run00348885/f1.data', 'H00001'),"
            " (2, '/hpss/atlas/data18/RAW/run00348885/f2.data', 'H00002'),"
            " (3, '/hpss/atlas/user/with,comma.root', 'H00002'),"
            " (4, '/hpss/atlas/user/not-in-chimera.root', 'H00001'),"
            " (5, '/hpss/cms/elsewhere.root', 'H00001')) as t(n, p, v)"
        )
    hint_file = tmp_path / "NODE.json"
    refused = run("--dsn", dsn, "export", "endit-hints", "-o", str(hint_file))
    assert refused.returncode != 0
    assert len(refused.stderr.strip().splitlines()) == 1
    assert "pnfsid" in refused.stderr and "--pnfsid-map FILE" in refused.stderr
    assert not hint_file.exists()

    # The site's dump with one broken line: refused alone, the rest used.
    chimera = tmp_path / "chimera.csv"
    chimera.write_text((DATA / "chimera-paths.csv").read_text() + "/pnfs/example.org/x,zz\n")
    exported = run(
        "--dsn", dsn, "export", "endit-hints", "-o", str(hint_file), "--pnfsid-map", str(chimera),
        "--path-map", "/hpss/atlas=/pnfs/example.org/data/atlas",
    )  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    refused_lines = tmp_path / "NODE.pnfsid-map-refused.csv"
    assert (
        f"1 lines of {chimera} refused (first {chimera}:6: expected a pnfsid of 24 or 36 hex"
        f" digits, got 'zz'): {refused_lines}" in exported.stderr
    )
    assert pl.read_csv(refused_lines)["line"].to_list() == [6]
    left_out = tmp_path / "NODE.left-out.csv"
    assert (
        f"2 files left out (1 no --path-map prefix matched, 1 not in the pnfsid map): {left_out}"
        in exported.stderr
    )
    assert sorted(pl.read_csv(left_out)["path"]) == [
        "/hpss/atlas/user/not-in-chimera.root",
        "/hpss/cms/elsewhere.root",
    ]
    pnfsid_of = dict(pl.read_csv(DATA / "chimera-paths.csv").rows())
    with psycopg.connect(dsn) as conn:
        expected = {
            pnfsid_of[path.replace("/hpss/atlas", "/pnfs/example.org/data/atlas")]: volume
            for path, volume in conn.execute(
                "select path, volume from tapelens.tape_files where path like '/hpss/atlas/%'"
            )
            if path.replace("/hpss/atlas", "/pnfs/example.org/data/atlas") in pnfsid_of
        }
    log, jobs = endit_lookup(hint_file, sorted(pnfsid_of.values()), tmp_path / "request")
    assert log == "loaded 3 entries"
    assert {r: t for r, t in jobs.items() if t != "default"} == expected
    assert len(expected) == 3
