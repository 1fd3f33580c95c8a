"""Every tape state word each system uses, through every inventory reader that takes it,
against the one table of docs/formats/inventories.md ("Every word, every reader").

The words come from each system's source: CTA's common/dataStructures/Tape.cpp
(STRING_TO_STATE_MAP) and tools/CtaAdminTextFormatter.cpp (`tape ls` prints `full` as
true/false) in cern-cta/CTA; Enstore's src/volume_clerk.py (set_system_inhibit's words) and
src/e_errors.py (NOACCESS, NOTALLOWED, DELETED) in Enstore-org/enstore; Spectrum Protect's
QUERY VOLUME reference and the HPSS Management Guide for the others (the sources section of
the same page).
"""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass
from pathlib import Path

import psycopg

from tapelens.ingest.formats import cta_tape_ls, enstore_vols, lookup, tapes_csv, tsm_volumes
from tapelens.ingest.formats.base import ParseOptions
from tapelens.ingest.load import ingest_file
from tapelens.tape_states import STATES

DOC = Path(__file__).resolve().parents[2] / "docs" / "formats" / "inventories.md"
ENSTORE_VOLS = Path(__file__).resolve().parents[1] / "data" / "catalog" / "enstore-vols.txt"
OPTS = ParseOptions(source="inventory")
_FULL = re.compile(r"^(?P<word>\S+), full (?P<flag>true|false)$")


@dataclass(frozen=True)
class Word:
    system: str
    word: str
    state: str
    readers: tuple[str, ...]
    volume: str

    @property
    def bare(self) -> str:
        """The word without CTA's full flag."""
        found = _FULL.match(self.word)
        return found["word"] if found else self.word

    @property
    def full(self) -> str:
        found = _FULL.match(self.word)
        return found["flag"] if found else ""


def table() -> list[Word]:
    """The rows of the docs' table of every word."""
    text = DOC.read_text()
    section = text.split("## Every word, every reader", 1)[1].split("\n## ", 1)[0]
    words = []
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 4 or cells[0] in ("system", "---"):
            continue
        system, word, state, readers = cells
        words.append(
            Word(
                system,
                word,
                state,
                tuple(r.strip() for r in readers.split(",")),
                f"V{len(words):04d}",
            )
        )
    return words


def states_read(module: object, path: Path) -> tuple[dict[str, tuple[str, str]], list[str]]:
    batches = list(module.parse(path, options=OPTS))  # type: ignore[attr-defined]
    rows = {
        row["volume"]: (row["state"], row["state_raw"])
        for batch in batches
        for row in batch.frame.iter_rows(named=True)
    }
    return rows, [f"{r.line_no}: {r.reason}" for b in batches for r in b.rejects]


def test_the_table_covers_every_state_and_every_system() -> None:
    words = table()
    assert {w.system for w in words} == {"CTA", "Spectrum Protect", "HPSS", "Enstore", "tapelens"}
    assert {w.state for w in words} == set(STATES)
    assert all(w.state in STATES for w in words)
    cta = {w.bare for w in words if w.system == "CTA"}
    # CTA's nine states (Tape.cpp STRING_TO_STATE_MAP)
    assert cta == {
        "ACTIVE",
        "BROKEN",
        "BROKEN_PENDING",
        "DISABLED",
        "REPACKING",
        "REPACKING_PENDING",
        "EXPORTED",
        "EXPORTED_PENDING",
        "REPACKING_DISABLED",
    }


def test_the_generic_csv_reads_every_word(tmp_path: Path, dsn: str) -> None:
    words = [w for w in table() if "csv" in w.readers]
    path = tmp_path / "tapes.csv"
    with path.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["volume", "media_type", "state", "full"])
        for w in words:
            writer.writerow([w.volume, "LTO8", w.bare, w.full])
    rows, rejects = states_read(tapes_csv, path)
    assert rejects == []
    assert {v: s for v, (s, _) in rows.items()} == {w.volume: w.state for w in words}
    assert {v: raw for v, (_, raw) in rows.items()} == {w.volume: w.bare for w in words}
    # and through the loader into the database's checked column
    result = ingest_file(dsn, lookup("tapes", "csv"), path, OPTS)
    assert result.rows == len(words)
    with psycopg.connect(dsn) as conn:
        stored = dict(conn.execute("select volume, state from tapelens.tapes").fetchall())
    assert stored == {w.volume: w.state for w in words}


def test_cta_tape_ls_reads_every_cta_word(tmp_path: Path) -> None:
    words = [w for w in table() if "cta-tape-ls" in w.readers]
    path = tmp_path / "tape-ls.json"
    # `cta-admin --json tape ls`: the TapeLsItem fields, full a JSON boolean.
    path.write_text(
        "".join(
            json.dumps(
                {
                    "vid": w.volume,
                    "mediaType": "LTO8",
                    "logicalLibrary": "IBMLIB4",
                    "tapepool": "atlas_raw",
                    "capacity": "12000000000000",
                    "full": w.full == "true",
                    "state": w.bare,
                }
            )
            + "\n"
            for w in words
        )
    )
    rows, rejects = states_read(cta_tape_ls, path)
    assert rejects == []
    assert rows == {w.volume: (w.state, w.bare) for w in words}


def test_tsm_volumes_reads_every_access_and_status(tmp_path: Path) -> None:
    words = [w for w in table() if "tsm-volumes" in w.readers]
    select = [w for w in words if "/" in w.word and "," not in w.word]
    detailed = [w for w in words if "," in w.word]
    assert select and detailed
    path = tmp_path / "volumes.txt"
    header = "VOLUME_NAME,STGPOOL_NAME,DEVCLASS_NAME,EST_CAPACITY_MB,PCT_UTILIZED,STATUS,ACCESS"
    lines = [header]
    for w in select:
        access, status = w.word.split("/")
        lines.append(f"{w.volume},TAPEPOOL,LTO8CLASS,11444091.8,50.0,{status},{access}")
    path.write_text("\n".join(lines) + "\n")
    rows, rejects = states_read(tsm_volumes, path)
    assert rejects == []
    assert {v: s for v, (s, _) in rows.items()} == {w.volume: w.state for w in select}

    # `query volume * format=detailed`: labels right-aligned on the colon.
    records = []
    for w in detailed:
        access, status = (part.strip() for part in w.word.split(","))
        records.append(
            f"                   Volume Name: {w.volume}\n"
            "             Storage Pool Name: TAPEPOOL\n"
            "             Device Class Name: LTO8CLASS\n"
            "            Estimated Capacity: 11,176.2 G\n"
            f"                 Volume Status: {status}\n"
            f"                        Access: {access}\n"
        )
    path.write_text("\n".join(records))
    rows, rejects = states_read(tsm_volumes, path)
    assert rejects == []
    assert {v: s for v, (s, _) in rows.items()} == {w.volume: w.state for w in detailed}


def test_a_word_no_system_uses_is_refused_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "tapes.csv"
    path.write_text("volume,state,full\nV1,SCRATCHED,\nV2,ACTIVE,maybe\nV3,ONLINE,\nV4,full,\n")
    rows, rejects = states_read(tapes_csv, path)
    assert list(rows) == ["V4"]
    assert rejects == [
        '2: state "SCRATCHED" is none of ' + ", ".join(STATES) + " nor a CTA, Spectrum Protect,"
        " HPSS or Enstore state",
        '3: full "maybe" is neither true nor false',
        '4: state "ONLINE" is none of ' + ", ".join(STATES) + " nor a CTA, Spectrum Protect,"
        " HPSS or Enstore state",
    ]


def show_volume(label: str, first: str, second: str, comment: str = "") -> str:
    """A volume line as Enstore's src/volume_clerk_client.py show_volume prints it:
    "%-16s %9s   (%-10s %9s %-8s %9s)   %-16s %-36s", then the comment after a space."""
    avail = f"{1.5:7.2f}GB"  # capacity_str: GiB to two decimals
    t0 = "0402-1116" if first != "none" else ""
    t1 = "0311-0950" if second != "none" else ""
    line = (
        f"{label:<16} {avail:>9}   ({first:<10} {t0:>9} {second:<8} {t1:>9})   "
        f"{'CD-LTO8F1':<16} {'cms.raw.cpio_odc':<36}"
    )
    return line + (" " + comment if comment else "")


def test_enstore_vols_reads_every_inhibit_pair(tmp_path: Path) -> None:
    words = [w for w in table() if "enstore-vols" in w.readers]
    assert words
    path = tmp_path / "vols.txt"
    # show_volume_header: "%-16s %9s   %-41s   %-16s %-36s %-12s"
    header = (
        f"{'label':<16} {'avail.':>9}   {'system_inhibit':<41}   {'library':<16} "
        f"{'volume_family':<36} {'comment':<12}"
    )
    body = [show_volume(w.volume, *w.word.split("/")) for w in words]
    path.write_text(header + "\n\n" + "\n".join(body) + "\n")
    rows, rejects = states_read(enstore_vols, path)
    assert rejects == []
    assert rows == {w.volume: (w.state, w.word) for w in words}


def test_enstore_vols_listing() -> None:
    """tests/data/catalog/enstore-vols.txt, laid out as show_volume prints (a comment after the
    family, blank inhibit times, an overlong second inhibit pushing the columns right)."""
    batches = list(enstore_vols.parse(ENSTORE_VOLS, options=OPTS))
    rows = {r["volume"]: r for b in batches for r in b.frame.iter_rows(named=True)}
    rejects = {r.line_no: r.reason for b in batches for r in b.rejects}
    assert {v: (r["state"], r["state_raw"]) for v, r in rows.items()} == {
        "VR4101L8": ("full", "none/full"),
        "VR4102L8": ("filling", "none/none"),
        "VR4103": ("unavailable", "NOACCESS/full"),
        "VR4104": ("disabled", "NOTALLOWED/readonly"),
        "VR4105": ("repacked", "none/migrated"),
        "VR4106": ("repacking", "none/migrating"),
        "VR4107": ("full", "none/duplicated"),
        "VR4108": ("empty", "DELETED/none"),
        "VR4109": ("filling", "writing/none"),
        "VR4110": ("repacking", "none/cloning"),
        "VR4111": ("full", "none/cloned"),
        "VR4112": ("repacking", "none/duplicating"),
    }
    # media from the label's suffix, else the library's LTO generation; the family is the pool
    assert (rows["VR4101L8"]["media_type"], rows["VR4101L8"]["media_from"]) == ("LTO-8", "barcode")
    assert (rows["VR4105"]["media_type"], rows["VR4105"]["media_from"]) == ("LTO-7", "inventory")
    assert rows["VR4103"]["pool"] == "cms.raw.cpio_odc"
    assert rows["VR4103"]["capacity_bytes"] is None  # avail. is the space left, not capacity
    assert rejects == {
        15: 'system inhibit "SCRATCHED none" is not a pair of Enstore inhibits',
        16: 'volume "VR4101L8" already listed on line 3',
    }


def test_enstore_vols_loads(dsn: str) -> None:
    result = ingest_file(dsn, lookup("tapes", "enstore-vols"), ENSTORE_VOLS, OPTS)
    assert (result.rows, result.rejects) == (12, 2)
    with psycopg.connect(dsn) as conn:
        found = conn.execute(
            "select state, state_raw from tapelens.tapes where volume = 'VR4104'"
        ).fetchone()
    assert found == ("disabled", "NOTALLOWED/readonly")
