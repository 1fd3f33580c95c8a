"""Columnstore compression of the transfer and mount history (`tapelens db compress`).

On the Apache-2 edition (what a fresh machine installs) the command refuses and changes nothing.
On the community edition, where its module is installed, a second embedded server runs with it:
loads that reach compressed chunks (late rows, rows already there, mounts a later PVL log
completes) leave exactly the tables a database without compression has.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from tapelens.columnstore import LAYOUTS, compress
from tapelens.errors import DatabaseError
from tapelens.ingest.formats import lookup
from tapelens.ingest.manifest import ManifestInput, read_manifest
from tapelens.ingest.migrations import migrate
from tapelens.server import Server, community_module
from tapelens.world import generate, site_params
from tests.conftest import PG_BIN, temporary_server, with_dbname
from tests.fixtures.cli import run
from tests.fixtures.generated_site import load_input

ALL = timedelta(days=1)  # the generated history ends years ago: every chunk is older


def compression_enabled(dsn: str) -> list[bool]:
    with psycopg.connect(dsn) as conn:
        return [
            bool(r[0])
            for r in conn.execute(
                "select compression_enabled from timescaledb_information.hypertables"
                " where hypertable_schema = 'tapelens' order by hypertable_name"
            ).fetchall()
        ]


@pytest.mark.slow
def test_the_apache_edition_refuses_and_changes_nothing(dsn: str, tmp_path: Path) -> None:
    with psycopg.connect(dsn) as conn:
        if conn.execute("show timescaledb.license").fetchone() != ("apache",):
            pytest.skip("the test server runs the community edition")
        with pytest.raises(DatabaseError, match="community edition"):
            compress(conn, ALL)
    assert not any(compression_enabled(dsn))
    res = run("--dsn", dsn, "db", "compress")
    assert res.returncode == 4
    assert res.stderr.count("\n") == 1 and "Apache-2 edition" in res.stderr
    assert "Traceback" not in res.stderr


@pytest.mark.slow
def test_an_embedded_server_refuses_a_community_license_without_its_module(
    tmp_path: Path,
) -> None:
    if community_module(PG_BIN) is not None:
        pytest.skip("the community edition's module is installed here")
    res = run("--home", str(tmp_path / "home"), "--timescaledb-license", "timescale", "db", "up")
    assert res.returncode == 5
    assert "timescaledb-tsl" in res.stderr and "Traceback" not in res.stderr


@pytest.fixture(scope="module")
def community_server(community: Server) -> str:
    return community.dsn()


@pytest.fixture(scope="module")
def community() -> Iterator[Server]:
    """An embedded server running TimescaleDB's community edition, where its module exists."""
    if os.environ.get("TAPELENS_TEST_DSN") or community_module(PG_BIN) is None:
        pytest.skip("TimescaleDB's community edition is not installed beside the Apache-2 one")
    with temporary_server("tapelens-columnstore-", timescaledb_license="timescale") as server:
        yield server


def generated(tmp_path: Path, files: int, seed: int) -> Path:
    """A small synthetic site with its logs (BNL's systems: HPSS and its PVL mount logs)."""
    site = tmp_path / "site"
    generate(site, site_params("bnl", files=files, seed=seed))
    return site


def fresh(server_dsn: str, name: str) -> str:
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(
            sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name))
        )
        conn.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
    dsn = with_dbname(server_dsn, name)
    with psycopg.connect(dsn) as conn:
        migrate(conn, dsn)
    return dsn


def transfer_log(site: Path) -> ManifestInput:
    """The site's transfers in the canonical CSV (the manifest loads another view of them)."""
    return ManifestInput(site / "logs" / "transfers.csv", lookup("transfers", "csv"), None, {}, {})


def table(dsn: str, name: str) -> list[tuple[object, ...]]:
    with psycopg.connect(dsn) as conn:
        found = conn.execute(sql.SQL("select * from {}").format(sql.Identifier("tapelens", name)))
        return sorted(found.fetchall(), key=repr)


def test_loads_into_compressed_chunks_leave_what_uncompressed_ones_do(
    community_server: str, tmp_path: Path
) -> None:
    site = generated(tmp_path, files=3_000, seed=5)
    items = read_manifest(site / "manifest.json")
    pvl = [i for i in items if i.format.kind == "mounts" and i.format.name == "hpss-pvl"]
    transfers = transfer_log(site)
    assert len(pvl) >= 2
    # The transfer log in two halves that both span the whole history, then whole again (every
    # row already there): the second half and the whole file land in compressed chunks.
    header, *lines = transfers.path.read_text().splitlines(keepends=True)
    halves = [tmp_path / "transfers-even.csv", tmp_path / "transfers-odd.csv"]
    for k, half in enumerate(halves):
        half.write_text(header + "".join(lines[k::2]))

    plain = fresh(community_server, "plain")
    packed = fresh(community_server, "packed")
    # TimescaleDB stops a transaction that decompresses more rows than this (100,000 by
    # default, which a site's late log passes): a load must not be stopped by it.
    with psycopg.connect(community_server, autocommit=True) as conn:
        conn.execute(
            "alter database packed set timescaledb.max_tuples_decompressed_per_dml_transaction = 10"
        )
    steps: list[tuple[ManifestInput, Path | None]] = [(i, None) for i in pvl]
    steps += [(transfers, halves[0]), (transfers, halves[1]), (transfers, None)]
    compressed = 0
    for item, path in steps:
        load_input(plain, item, path)
        load_input(packed, item, path)
        with psycopg.connect(packed) as conn:
            compressed += sum(c.compressed_now for c in compress(conn, ALL))
    assert compressed >= 2 * len(steps) - 1, "every load reached a compressed chunk"
    for layout in LAYOUTS:
        got, want = table(packed, layout.table), table(plain, layout.table)
        assert len(got) > 100
        assert got == want, layout.table
    assert compression_enabled(packed) == [True, False, True]  # mounts, tape_files, transfers
    with psycopg.connect(packed) as conn:
        again = compress(conn, ALL)
    assert [c.compressed_now for c in again] == [0, 0]
    transfers_done = next(c for c in again if c.table == "transfers")
    assert transfers_done.compressed_before > 1


def test_db_compress_shrinks_the_history_and_keeps_a_policy(
    community_server: str, tmp_path: Path
) -> None:
    site = generated(tmp_path, files=3_000, seed=6)
    dsn = fresh(community_server, "cli")
    load_input(dsn, transfer_log(site))
    with psycopg.connect(dsn) as conn:
        rows_before = conn.execute("select count(*) from tapelens.transfers").fetchone()
    res = run("--dsn", dsn, "db", "compress", "--older-than", "30", "--policy")
    assert res.returncode == 0, res.stderr
    header, *body = res.stdout.splitlines()
    assert header.split()[:2] == ["table", "compressed"]
    cells = {line.split()[0]: line.split() for line in body}
    assert int(cells["transfers"][1]) > 0
    before_mb, after_mb = float(cells["transfers"][4]), float(cells["transfers"][5])
    assert after_mb < before_mb / 3, "the transfer history compresses several times over"
    assert "chunks compressed" in res.stderr and "ETA" in res.stderr
    with psycopg.connect(dsn) as conn:
        assert conn.execute("select count(*) from tapelens.transfers").fetchone() == rows_before
        policies = conn.execute(
            "select hypertable_name, config->>'compress_after' from timescaledb_information.jobs"
            " where proc_name = 'policy_compression' order by 1"
        ).fetchall()
    assert policies == [("mounts", "30 days"), ("transfers", "30 days")]
    res = run("--dsn", dsn, "db", "status")
    assert res.returncode == 0, res.stderr
    assert "(community edition)" in res.stdout
    line = next(ln for ln in res.stdout.splitlines() if "tapelens.transfers" in ln)
    assert line.endswith(f"({cells['transfers'][1]} of {cells['transfers'][1]} chunks compressed)")
    # Run again with another age: nothing left to compress, the policies follow the new age.
    res = run("--dsn", dsn, "db", "compress", "--older-than", "60", "--policy")
    assert res.returncode == 0, res.stderr
    assert all(line.split()[1] == "0" for line in res.stdout.splitlines()[1:])
    with psycopg.connect(dsn) as conn:
        ages = conn.execute(
            "select distinct config->>'compress_after' from timescaledb_information.jobs"
            " where proc_name = 'policy_compression'"
        ).fetchall()
    assert ages == [("60 days",)]


def test_a_catalog_load_refuses_a_catalog_compressed_by_hand(
    community_server: str, tmp_path: Path
) -> None:
    site = generated(tmp_path, files=1_000, seed=7)
    dsn = fresh(community_server, "catalog")
    items = read_manifest(site / "manifest.json")
    catalog = next(i for i in items if i.format.kind == "catalog")
    for item in items:
        if item.format.kind in ("tapes", "catalog"):
            load_input(dsn, item)
    newer = tmp_path / "ls-P-newer.txt"
    lines = catalog.path.read_text().splitlines(keepends=True)
    newer.write_text("".join(line for n, line in enumerate(lines) if n % 50 != 7))
    stored = "select count(*), count(removed_at) from tapelens.tape_files"
    with psycopg.connect(dsn, autocommit=True) as conn:
        before = conn.execute(stored).fetchone()
        conn.execute(
            "alter table tapelens.tape_files set (timescaledb.compress,"
            " timescaledb.compress_segmentby = 'source, volume')"
        )
        conn.execute("select compress_chunk(c) from show_chunks('tapelens.tape_files') c")
    with pytest.raises(DatabaseError, match="compressed chunks.*decompress_chunk"):
        load_input(dsn, catalog, newer)
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert conn.execute(stored).fetchone() == before
        conn.execute("select decompress_chunk(c, true) from show_chunks('tapelens.tape_files') c")
    load_input(dsn, catalog, newer)
    with psycopg.connect(dsn) as conn:
        after = conn.execute(stored).fetchone()
    assert after is not None and before is not None and after[1] > before[1]


def test_db_up_says_when_the_running_server_has_another_edition(community: Server) -> None:
    res = run("--home", str(community.home), "db", "up")
    assert res.returncode == 0, res.stderr
    assert "community edition" in res.stderr and "db down, then db up" in res.stderr
    res = run("--home", str(community.home), "--timescaledb-license", "timescale", "db", "up")
    assert res.returncode == 0 and "edition" not in res.stderr
