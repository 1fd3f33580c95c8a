"""Tape inventories in each system's own words: CTA `tape ls`, Spectrum Protect volumes, and
a generic CSV with their state words (tests/data/catalog/inventory-*)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tapelens.errors import InputError
from tapelens.ingest.formats import cta_tape_ls, lookup, tsm_volumes
from tapelens.ingest.formats.base import ParseOptions
from tapelens.ingest.formats.tape_states import any_state, cta_state, tsm_state
from tapelens.ingest.load import ingest_file
from tapelens.tape_states import STATES
from tests.props import examples

DATA = Path(__file__).parent.parent / "data" / "catalog"
OPTS = ParseOptions(source="inventory")


def parsed(module: object, name: str) -> tuple[dict[str, dict], dict[int, str], int]:
    batches = list(module.parse(DATA / name, options=OPTS))  # type: ignore[attr-defined]
    rows = {r["volume"]: r for b in batches for r in b.frame.iter_rows(named=True)}
    return (
        rows,
        {r.line_no: r.reason for b in batches for r in b.rejects},
        sum(b.skipped for b in batches),
    )


def test_every_system_word_maps_into_the_vocabulary() -> None:
    for word in (
        "DISABLED",
        "REPACKING",
        "REPACKING_PENDING",
        "REPACKING_DISABLED",
        "BROKEN",
        "BROKEN_PENDING",
        "EXPORTED",
        "EXPORTED_PENDING",
    ):
        assert cta_state(word, True) in STATES
    assert (cta_state("ACTIVE", True), cta_state("ACTIVE", False)) == ("full", "filling")
    for access in ("READONLY", "UNAVAILABLE", "DESTROYED", "OFFSITE"):
        assert tsm_state(access, "FULL") in STATES
    for status in ("FILLING", "FULL", "EMPTY", "PENDING"):
        assert tsm_state("READWRITE", status) in STATES
    assert tsm_state("SCRATCHED", "FULL") is None
    # the words of `query volume f=d`
    assert (tsm_state("Read/Write", "Filling"), tsm_state("Read-Only", "Full")) == (
        "filling",
        "readonly",
    )
    # CTA's ACTIVE without its full flag: in service, stored as filling
    assert any_state("Broken") == "broken" and any_state("ACTIVE") == "filling"
    assert (any_state("ACTIVE", True), any_state("READWRITE")) == ("full", "filling")
    # HPSS virtual volume conditions
    assert [any_state(w) for w in ("RWC", "RW", "ro", "EOM", "EMPTY", "DOWN")] == [
        "filling",
        "filling",
        "readonly",
        "full",
        "empty",
        "unavailable",
    ]


def test_cta_tape_ls_text_table() -> None:
    rows, rejects, skipped = parsed(cta_tape_ls, "inventory-cta-tape-ls.txt")
    states = {v: (r["state"], r["state_raw"]) for v, r in rows.items()}
    assert states == {
        "L81234": ("full", "ACTIVE"),
        "L81235": ("filling", "ACTIVE"),
        "L81236": ("disabled", "DISABLED"),
        "L81237": ("repacking", "REPACKING"),
        "L81238": ("broken", "BROKEN"),
        "L81239": ("exported", "EXPORTED"),
        "L81240": ("repacking", "REPACKING_PENDING"),
        "I10001": ("full", "ACTIVE"),
    }
    assert rows["L81234"]["capacity_bytes"] == 12_000_000_000_000
    assert (rows["L81234"]["media_type"], rows["I10001"]["media_type"]) == ("LTO-8", "3592-JE")
    assert rows["L81236"]["pool"] == "atlas_raw"
    assert rejects == {
        9: 'state "MISPLACED" is not a CTA tape state (ACTIVE, DISABLED, BROKEN, ...)',
        10: 'vid "L81234" already listed on line 2',
    }
    assert skipped == 1


def test_cta_tape_ls_json(tmp_path: Path) -> None:
    path = tmp_path / "tape-ls.json"
    path.write_text(
        '{"vid":"L81234","mediaType":"LTO8","logicalLibrary":"IBMLIB4","tapepool":"atlas_raw",'
        '"capacity":"12000000000000","full":true,"state":"BROKEN"}\n'
    )
    batches = list(cta_tape_ls.parse(path, options=OPTS))
    (row,) = [r for b in batches for r in b.frame.iter_rows(named=True)]
    assert (row["state"], row["state_raw"], row["capacity_bytes"]) == (
        "broken",
        "BROKEN",
        12_000_000_000_000,
    )


def test_tsm_volumes_with_dsmadmc_banner() -> None:
    rows, rejects, skipped = parsed(tsm_volumes, "inventory-tsm-volumes.txt")
    states = {v: r["state"] for v, r in rows.items()}
    assert states == {
        "A00001L8": "full",
        "A00002L8": "filling",
        "A00003L8": "empty",
        "A00004L8": "empty",
        "A00005L8": "readonly",
        "A00006L8": "exported",
        "A00007L8": "unavailable",
        "A00008L8": "destroyed",
        "VTS104L7": "full",
    }
    assert rows["A00006L8"]["state_raw"] == "OFFSITE/FULL"
    assert rows["A00001L8"]["capacity_bytes"] == round(11444091.8 * 2**20)
    assert (rows["A00001L8"]["media_type"], rows["VTS104L7"]["media_type"]) == ("LTO-8", "LTO-7")
    assert sorted(rejects) == [21, 22]
    assert "SCRATCHED" in rejects[22]
    assert skipped == 12  # banner, session lines, blanks, ANS messages, header


def test_tsm_query_volume_detailed_records() -> None:
    # `query volume * format=detailed`: one "Label: value" record per volume.
    rows, rejects, skipped = parsed(tsm_volumes, "inventory-tsm-query-volume.txt")
    states = {v: r["state"] for v, r in rows.items()}
    assert states == {
        "A00001L8": "full",
        "A00002L8": "filling",
        "A00003L8": "empty",
        "A00005L8": "readonly",
        "A00006L8": "exported",
        "A00007L8": "unavailable",
        "A00008L8": "destroyed",
    }
    assert rows["A00006L8"]["state_raw"] == "Offsite, Full"
    assert rows["A00001L8"]["pool"] == "TAPEPOOL"
    # "11,176.2 G" and "10.9 T": one decimal of binary units.
    assert rows["A00001L8"]["capacity_bytes"] == round(11176.2 * 2**30)
    assert rows["A00002L8"]["capacity_bytes"] == round(10.9 * 2**40)
    assert rows["A00002L8"]["media_type"] == "LTO-8"
    # A record is refused on its first line, naming the line at fault.
    assert rejects == {
        227: 'Estimated Capacity "lots" (line 230) is not a size like 2.5 T',
        254: 'access "Scratched" with status "Filling" is not a volume state',
        281: 'volume "A00002L8" already listed on line 38',
    }
    # Every line is a row, a refusal or a skip: the banner, messages, blank lines, the record
    # lines after the first, and the disk pool volume (status On-Line: not a tape).
    lines = (DATA / "inventory-tsm-query-volume.txt").read_text().count("\n")
    assert len(rows) + len(rejects) + skipped == lines
    assert len(rows) + len(rejects) == 10


def test_tsm_query_volume_record_with_a_stray_line(tmp_path: Path) -> None:
    listing = tmp_path / "volumes.txt"
    listing.write_text(
        "                   Volume Name: A00001L8\n"
        "                 Volume Status: Full\n"
        "a line without a label\n"
        "                        Access: Read/Write\n"
        "\n"
        "                   Volume Name: A00002L8\n"
        "                        Access: Read/Write\n"
    )
    batches = list(tsm_volumes.parse(listing, options=OPTS))
    assert [(r.line_no, r.reason) for b in batches for r in b.rejects] == [
        (1, "line 3 \"a line without a label\" is not 'Label: value'"),
        (6, "the volume's record has no 'Volume Status:' line"),
    ]


@pytest.mark.parametrize(
    ("fmt", "name", "count"),
    [
        ("cta-tape-ls", "inventory-cta-tape-ls.txt", 8),
        ("tsm-volumes", "inventory-tsm-volumes.txt", 9),
        ("tsm-volumes", "inventory-tsm-query-volume.txt", 7),
    ],
)
def test_loads_keep_the_systems_words(dsn: str, fmt: str, name: str, count: int) -> None:
    result = ingest_file(dsn, lookup("tapes", fmt), DATA / name, OPTS)
    assert result.rows == count
    with psycopg.connect(dsn) as conn:
        found = conn.execute("select count(*), count(state_raw) from tapelens.tapes").fetchone()
    assert found == (count, count)


def test_tsm_volumes_without_a_header_is_one_clear_error(tmp_path: Path) -> None:
    bare = tmp_path / "volumes.txt"
    bare.write_text("A00001L8,TAPEPOOL,LTO8CLASS,11444091.8,99.1,FULL,READWRITE\n")
    with pytest.raises(InputError, match="neither a header line naming VOLUME_NAME"):
        list(tsm_volumes.parse(bare, options=OPTS))


_TSM_WORDS = ["READWRITE", "READONLY", "UNAVAILABLE", "DESTROYED", "OFFSITE", "FILLING", "FULL"]
_TSM_WORDS += ["EMPTY", "PENDING", "SCRATCHED", "", "readonly", "Full", "ACTIVE", "x,y"]


@settings(max_examples=examples(60), deadline=None)
@given(
    access=st.one_of(st.sampled_from(_TSM_WORDS), st.text("ADEFILNORSTUWY_ ,", max_size=12)),
    status=st.one_of(st.sampled_from(_TSM_WORDS), st.text("ADEFILNORSTUWY_ ,", max_size=12)),
)
def test_tsm_state_words_map_or_are_refused_by_name(access: str, status: str) -> None:
    # Whatever words a volume line carries, it becomes a row in the vocabulary (never a silent
    # 'unknown') or that line's refusal; nothing else escapes.
    header = "VOLUME_NAME,STGPOOL_NAME,DEVCLASS_NAME,EST_CAPACITY_MB,PCT_UTILIZED,STATUS,ACCESS"
    line = f"A00001L8,TAPEPOOL,LTO8CLASS,11444091.8,99.1,{status},{access}"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "volumes.txt"
        path.write_text(f"{header}\n{line}\n")
        batches = list(tsm_volumes.parse(path, options=OPTS))
    rows = [r for b in batches for r in b.frame.iter_rows(named=True)]
    rejects = [r for b in batches for r in b.rejects]
    disk = status.replace("-", "").replace(" ", "").upper() in tsm_volumes.DISK_STATUSES
    assert len(rows) + len(rejects) == (0 if disk and "," not in access + status else 1)
    for row in rows:
        assert row["state"] in STATES and row["state"] != "unknown"
        assert row["state"] == tsm_state(access, status)
    for reject in rejects:
        assert reject.line_no == 2 and reject.reason


def test_cta_tape_ls_as_the_current_release_prints_it() -> None:
    """`cta-admin tape ls` since CTA's 2025 releases: the "order" (purchase order) column after
    the library and "instance" before the comment (github.com/cern-cta/CTA,
    tools/CtaAdminTextFormatter.cpp, printTapeLsHeader and print(const TapeLsItem&); cells
    right-aligned to their column and followed by one space, an empty cell "-", the comment
    flush left, capacity as dataSizeToStr prints it). Fixture laid out by those rules:
    tests/data/catalog/inventory-cta-tape-ls-2025.txt."""
    rows, rejects, skipped = parsed(cta_tape_ls, "inventory-cta-tape-ls-2025.txt")
    assert rejects == {} and skipped == 1
    assert {v: (r["state"], r["state_raw"]) for v, r in rows.items()} == {
        "M90001": ("full", "ACTIVE"),
        "M90002": ("disabled", "DISABLED"),
        "M90003": ("repacking", "REPACKING_PENDING"),
    }
    assert {r["library"] for r in rows.values()} == {"IBMLIB5"}
    assert {r["pool"] for r in rows.values()} == {"cms_raw"}
    assert {(r["media_type"], r["capacity_bytes"]) for r in rows.values()} == {
        ("LTO-9", 18_000_000_000_000)
    }
