"""Collocation hints of written files, in the shapes the tools that carry them print.

The archive metadata is built as Rucio's tape metadata plugins build it (rucio/rucio
lib/rucio/transfertool/fts3_plugins.py; the CMS policy package's dmwm/CMSRucio
src/policy/CMSRucioPolicy/algorithms/tape_colocation.py: levels 0-3, additional_hints with the
activity and level 3's length and size, file_metadata, schema_version 1) and serialised as
fts-rest-flask stores it in t_file.archive_metadata (json.dumps: cern-fts/fts-rest-flask
src/fts3rest/fts3rest/model/base.py, Json.process_bind_param). The FTS export has the columns
of cern-fts/fts3 src/db/schema/mysql/fts-schema-10.0.1.sql (t_file), printed as `mysql -B`
prints (tab separated, NULL, backslash escapes). The storage-side CSV carries the value of the
ArchiveMetadata header as dCache receives it (base64 of the JSON) and hands it to its HSM
script as -archive_metadata= (dCache/dcache DcacheResourceFactory.java, commit 1731eae972).
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner

from tapelens.cli import cli
from tapelens.errors import ParseError
from tapelens.ingest.formats import lookup
from tapelens.ingest.formats.base import ParseOptions
from tapelens.ingest.formats.wlcg_hints import MetadataReader, read_metadata
from tapelens.ingest.load import ingest_files

HINTS = Path(__file__).parent.parent / "data" / "hints"
CMS_ARCHIVE = "/eos/ctacms/archive/cms"
PARKING = "/ParkingVBF5/Run2024C-v1/RAW"


def cms_doc(container: str = PARKING) -> dict[str, object]:
    return {
        "collocation_hints": {"0": "parking", "1": "RAW", "2": "Run2024C", "3": container},
        "additional_hints": {"activity": "T0 Tape", "3": {"length": 1520, "size": 4.1e12}},
        "file_metadata": {"size": 2697458123, "md5": None, "adler32": "7c0a91e3"},
        "schema_version": 1,
    }


def test_the_cms_document_reads_as_four_levels_with_the_containers_announced_size() -> None:
    hints = read_metadata(json.dumps(cms_doc()))
    assert hints.status == "ok"
    assert hints.levels == ("parking", "RAW", "Run2024C", PARKING, None)
    # 4.1e12 is how JSON may print the container's bytes: a whole number, kept exact
    assert (hints.lengths[3], hints.sizes[3]) == (1520, 4_100_000_000_000)
    assert (hints.activity, hints.schema_version, hints.file_size) == ("T0 Tape", 1, 2697458123)


# ATLAS's AOD data as its policy package sends it (ATLASArchiveMetadataPlugin
# .get_atlas_archive_metadata, the AOD/data branch): "0" the data type with "_data", "1" the
# stream, "2" the project, "3" the version (the r-tag), "4" the parent dataset; a level Rucio
# knows nothing of is a JSON null (`or None`); the dataset's length and size announced at "3".
AOD_DATASET = "data24_13p6TeV.00480000.physics_Main.merge.AOD.f1450_m2248"
AOD_DATA = {
    "file_metadata": {"size": 3145728000, "md5": None, "adler32": "1f2e3d4c"},
    "additional_hints": {"activity": "T0 Export", "3": {"length": 412, "size": 1.3e12}},
    "schema_version": 1,
    "collocation_hints": {
        "0": "AOD_data",
        "1": "physics_Main",
        "2": "data24_13p6TeV",
        "3": None,
        "4": AOD_DATASET,
    },
}


def test_atlas_aod_data_reads_with_its_fifth_level_and_a_null_level() -> None:
    hints = read_metadata(json.dumps(AOD_DATA))
    assert (hints.status, hints.reason) == ("ok", None)
    assert hints.levels == ("AOD_data", "physics_Main", "data24_13p6TeV", None, AOD_DATASET)
    assert (hints.lengths[3], hints.sizes[3]) == (412, 1_300_000_000_000)


def test_four_levels_keep_the_digest_they_had_before_level_4_was_read() -> None:
    # md5 of "levels" and the four levels joined by \x1f, as the rows already stored have it.
    four = read_metadata(json.dumps(cms_doc()))
    assert four.digest() == _md5("\x1f".join(["levels", "parking", "RAW", "Run2024C", PARKING]))
    five = read_metadata(json.dumps(AOD_DATA))
    assert five.digest() == _md5(
        "\x1f".join(["levels", "AOD_data", "physics_Main", "data24_13p6TeV", "", AOD_DATASET])
    )


def _md5(text: str) -> str:
    return hashlib.md5(text.encode(), usedforsecurity=False).hexdigest()


def test_the_header_form_base64_reads_as_the_json_itself() -> None:
    text = json.dumps(cms_doc())
    assert read_metadata(base64.b64encode(text.encode()).decode()) == read_metadata(text)


@pytest.mark.parametrize(
    ("value", "status", "reason"),
    [
        (None, "absent", None),
        ("NULL", "absent", None),
        ('{"collocation_hints": {}}', "empty", "collocation_hints names no level"),
        (
            '{"collocation_hints": {"0": "", "1": "", "2": "", "3": ""}}',
            "empty",
            "collocation_hints names no level",
        ),
        ('{"scheduling_hints": {"priority": 20}}', "empty", "no collocation_hints"),
        (
            "{'collocation_hints': {'0': 'data'}}",
            "malformed",
            "archive metadata is not JSON (Expecting property name enclosed in double quotes at 1)",
        ),
        (
            '{"collocation_hints": {"1": "data", "5": "more"}}',
            "malformed",
            'collocation level "5" is not one of 0-4',
        ),
        (
            '{"collocation_hints": {"1": "data", "4": ["a", "b"]}}',
            "malformed",
            'collocation level "4" is a JSON array, not a string',
        ),
        (
            '{"collocation_hints": {"0": 7}}',
            "malformed",
            'collocation level "0" is a JSON number, not a string',
        ),
        (
            '{"collocation_hints": {"0": "data"}, "additional_hints": {"0": {"size": 1.5}}}',
            "malformed",
            "additional_hints.0.size 1.5 is not a whole number",
        ),
        ('["data", "RAW"]', "malformed", "archive metadata is a JSON array, not an object"),
        ("bm90IGpzb24=", "malformed", "archive metadata is neither JSON nor base64 of JSON"),
        (
            '{"collocation_hints": {"0": "data", "1": "RA',
            "truncated",
            "archive metadata stops after 44 bytes before its JSON closes (cut short)",
        ),
    ],
)
def test_each_kind_of_bad_or_empty_metadata_gets_its_status_and_reason(
    value: str | None, status: str, reason: str | None
) -> None:
    hints = read_metadata(value)
    assert (hints.status, hints.reason) == (status, reason)
    assert hints.levels == (None, None, None, None, None)
    # What cannot be read is kept as it came, for the site to look at.
    assert hints.raw == (value if status in ("malformed", "truncated") else None)


def test_a_document_closed_out_of_turn_is_malformed_not_cut_short() -> None:
    assert read_metadata('{"collocation_hints": {"0": "data"]').status == "malformed"


def load(dsn: str, name: str, fmt: str = "fts-files", *, strict: bool = False) -> list[str]:
    runner = CliRunner()
    args = ["--dsn", dsn, "ingest", "hints", "--format", fmt, str(HINTS / name)]
    args += ["--path-map", f"{CMS_ARCHIVE}=/cms"] + (["--strict"] if strict else [])
    result = runner.invoke(cli, args)
    if result.exception is not None:
        raise result.exception
    return result.stderr.splitlines()


def stored(dsn: str, query: str) -> list[tuple[object, ...]]:
    with psycopg.connect(dsn) as conn:
        return conn.execute(query).fetchall()


def test_an_fts_export_loads_every_written_file_with_its_hints_counted(dsn: str) -> None:
    said = load(dsn, "fts-t_file.tsv")
    # 16 records: a FAILED and an ACTIVE transfer wrote nothing (skipped with the header),
    # line 17's finish time is no time; the repeat of line 2 is read, and stored once.
    assert said[0].startswith(f"{HINTS / 'fts-t_file.tsv'}: 13 rows loaded, 3 lines skipped")
    assert stored(dsn, "select count(*) from tapelens.write_hints") == [(12,)]
    assert said[1] == (
        f"3 lines refused, first: {HINTS / 'fts-t_file.tsv'}:13: archive metadata is not JSON"
        " (Expecting property name enclosed in double quotes at 1)"
    )
    assert said[2] == ("hints: 4 ok, 3 empty, 1 absent, 1 malformed, 1 truncated, 2 contradictory")
    rows = stored(
        dsn,
        "select file_key, level_0, level_3, length_3, size_3, experiment, status"
        " from tapelens.write_hints where level_0 = 'hiraw' order by written_at",
    )
    hi = "/cms/store/hidata/HIRun2024B/HIPhysicsRawPrime5/RAW/v1/000/388/624/00000/"
    container = "/HIPhysicsRawPrime5/HIRun2024B-v1/RAW"
    assert rows == [
        (hi + "fa0795b5-633b-461c-bc21-02d40a118dd2.root", "hiraw", container, 880,
         3_300_000_000_000, "cms", "ok"),
        (hi + "0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9.root", "hiraw", container, 880,
         3_300_000_000_000, "cms", "ok"),
    ]  # fmt: skip
    refused = stored(dsn, "select line_no, reason from tapelens.ingest_rejects order by line_no")
    assert [r[0] for r in refused] == [13, 14, 17]
    kept = stored(
        dsn,
        "select status, raw_metadata from tapelens.write_hints"
        " where status in ('malformed', 'truncated') order by status",
    )
    lines = (HINTS / "fts-t_file.tsv").read_text().splitlines()
    as_written = [lines[n - 1].split("\t")[-1] for n in (13, 14)]
    assert kept == [("malformed", as_written[0]), ("truncated", as_written[1])]
    assert len(as_written[1].encode()) == 4096


def test_a_file_written_twice_with_other_hints_is_contradictory_both_times(dsn: str) -> None:
    load(dsn, "fts-t_file.tsv")
    rows = stored(
        dsn,
        "select written_at::text, level_3, status, reason from tapelens.write_hints"
        " where file_key like '%0a6e2d0c-97b1-4c1e-9a55-3e2f0d1c8b10.root' order by written_at",
    )
    reason = "2 records of this file name different levels"
    assert rows == [
        ("2024-06-02 11:25:40+00", PARKING, "contradictory", reason),
        ("2024-06-05 14:06:55+00", "/ParkingVBF5/Run2024C-PromptReco-v1/RAW", "contradictory",
         reason),
    ]  # fmt: skip


def test_a_later_export_that_contradicts_a_stored_file_marks_the_stored_record(
    dsn: str, tmp_path: Path
) -> None:
    load(dsn, "fts-t_file.csv")  # three parking files, all ok
    later = tmp_path / "t_file-later.tsv"
    header = "file_id\tfile_state\tdest_surl\tfinish_time\tarchive_metadata"
    surl = (
        "davs://eosctacms.cern.ch:8444//eos/ctacms/archive/cms/store/data/Run2024C/ParkingVBF5"
        "/RAW/v1/000/380/115/00000/5f0e8a4b-2c7d-4e9a-8b1f-6d3c2a1e0f99.root"
    )
    doc = json.dumps(cms_doc("/ParkingVBF5/Run2024C-v2/RAW"))
    later.write_text(f"{header}\n90400001\tFINISHED\t{surl}\t2024-07-01 10:00:00\t{doc}\n")
    runner = CliRunner()
    args = ["--dsn", dsn, "ingest", "hints", "--format", "fts-files", str(later)]
    result = runner.invoke(cli, [*args, "--path-map", f"{CMS_ARCHIVE}=/cms"])
    assert result.exception is None, result.exception
    assert stored(
        dsn, "select status, count(*) from tapelens.write_hints group by status order by status"
    ) == [("contradictory", 2), ("ok", 2)]


def test_loading_the_same_export_again_changes_nothing(dsn: str) -> None:
    load(dsn, "fts-t_file.tsv")
    before = stored(dsn, "select * from tapelens.write_hints order by file_key, written_at")
    again = load(dsn, "fts-t_file.tsv")
    assert again == [f"{HINTS / 'fts-t_file.tsv'}: unchanged (already loaded as run 1)"]
    assert stored(dsn, "select * from tapelens.write_hints order by file_key, written_at") == (
        before
    )


def test_strict_stops_at_the_first_unreadable_metadata_and_loads_nothing(dsn: str) -> None:
    with pytest.raises(ParseError) as err:
        load(dsn, "fts-t_file.tsv", strict=True)
    assert str(err.value) == (
        f"{HINTS / 'fts-t_file.tsv'}:13: archive metadata is not JSON"
        " (Expecting property name enclosed in double quotes at 1)"
    )
    assert stored(dsn, "select count(*) from tapelens.write_hints") == [(0,)]
    assert stored(dsn, "select status from tapelens.ingest_runs") == [("failed",)]


def test_a_csv_of_header_values_reads_base64_and_json_and_keys_by_pnfsid(dsn: str) -> None:
    said = load(dsn, "storage-archive-metadata.csv", "csv")
    assert said[-1] == "hints: 2 ok, 1 malformed"
    rows = stored(
        dsn,
        "select file_key, written_at::text, level_3, experiment, status"
        " from tapelens.write_hints order by written_at",
    )
    assert rows == [
        ("0000A1B2C3D4E5F60718293A4B5C6D7E8F90", "2024-06-02 09:31:00+00", PARKING, "cms", "ok"),
        ("0000B2C3D4E5F60718293A4B5C6D7E8F90A1", "2024-06-02 09:32:10+00", PARKING, "cms", "ok"),
        ("0000C3D4E5F60718293A4B5C6D7E8F90A1B2", "2024-06-02 09:33:00+00", None, "cms",
         "malformed"),
    ]  # fmt: skip
    refused = stored(dsn, "select line_no, reason from tapelens.ingest_rejects order by line_no")
    assert refused == [
        (4, "archive metadata is neither JSON nor base64 of JSON"),
        (5, "neither a path nor a file id (pnfsid, archive_id)"),
    ]


def test_kit_attributes_name_the_dataset_as_the_narrowest_level(dsn: str) -> None:
    said = load(dsn, "kit-attributes.csv", "kit")
    assert said[-1] == "hints: 2 ok, 1 empty, 1 malformed"
    dataset = "data18_13TeV.00358031.physics_Main.daq.RAW"
    rows = stored(
        dsn,
        "select level_0, level_3, length_3, size_3, experiment, status, reason"
        " from tapelens.write_hints order by written_at",
    )
    assert rows == [
        (None, dataset, 2211, 8891202233111, "atlas", "ok", None),
        (None, dataset, 2211, 8891202233111, "atlas", "ok", None),
        (None, None, None, None, "atlas", "malformed", 'dataset_length "22x1" is not an integer'),
        (None, None, None, None, "atlas", "empty", "no dataset_name"),
    ]


def test_atlas_aod_data_loads_its_fifth_level(dsn: str, tmp_path: Path) -> None:
    value = base64.b64encode(json.dumps(AOD_DATA).encode()).decode()
    path = "/pnfs/example.org/atlas/data24_13p6TeV/AOD/AOD.41000000._000001.pool.root.1"
    export = tmp_path / "aod.csv"
    export.write_text(
        "path,written_at,size,vo,archive_metadata\n"
        f"{path},2024-07-01T10:00:00+00:00,3145728000,atlas,{value}\n"
    )
    result = CliRunner().invoke(
        cli, ["--dsn", dsn, "ingest", "hints", "--format", "csv", str(export)]
    )
    assert result.exception is None, result.output
    assert result.stderr.splitlines()[-1] == "hints: 1 ok"
    query = "select level_2, level_3, level_4, length_3, status from tapelens.write_hints"
    rows = stored(dsn, query)
    assert rows == [("data24_13p6TeV", None, AOD_DATASET, 412, "ok")]


def test_one_load_of_several_exports_is_all_or_nothing_per_file(dsn: str, tmp_path: Path) -> None:
    broken = tmp_path / "broken.tsv"
    broken.write_text("file_id\tfile_state\tdest_surl\tfinish_time\tarchive_metadata\n1\tFINISHED")
    options = ParseOptions(source="fts", strict=True)
    fmt = lookup("hints", "fts-files")
    with pytest.raises(ParseError) as err:
        ingest_files(dsn, fmt, [HINTS / "fts-t_file.csv", broken], options)
    assert str(err.value) == f"{broken}:2: 2 fields where 5 are expected"
    # The first export loaded in its own transaction; the broken one left nothing.
    assert stored(dsn, "select count(*) from tapelens.write_hints") == [(3,)]


def test_values_read_once_are_never_taken_for_one_another() -> None:
    reader = MetadataReader(limit=2)
    values = [
        json.dumps(cms_doc()),
        json.dumps(cms_doc("/ParkingVBF5/Run2024C-v2/RAW")),
        json.dumps(cms_doc()) + " ",  # the same document, another value
        json.dumps(AOD_DATA),
        "{'collocation_hints': {'0': 'data'}}",
        None,
    ]
    # Each value twice, in turn: the second reads come from what was remembered, past its limit.
    for value in [*values, *values, *reversed(values)]:
        assert reader.read(value) == read_metadata(value)
    assert reader.read(values[0]).levels[3] == PARKING
    assert reader.read(values[1]).levels[3] == "/ParkingVBF5/Run2024C-v2/RAW"


def test_a_malformed_record_after_ten_thousand_good_ones_is_refused_alone(
    dsn: str, tmp_path: Path
) -> None:
    export = tmp_path / "many.csv"
    doc = json.dumps(cms_doc())
    quoted = '"' + doc.replace('"', '""') + '"'
    lines = ["path,written_at,size,archive_metadata"]
    lines += [f"/cms/store/f{n}.root,2024-06-02T11:00:00Z,{n},{quoted}" for n in range(10_000)]
    lines.append("/cms/store/bad.root,2024-06-02T11:00:00Z,1,\"{'collocation_hints': {}}\"")
    lines.append(f"/cms/store/last.root,2024-06-02T12:00:00Z,10000,{quoted}")
    export.write_text("\n".join(lines) + "\n")
    result = CliRunner().invoke(
        cli, ["--dsn", dsn, "ingest", "hints", "--format", "csv", str(export)]
    )
    assert result.exception is None, result.output
    assert result.stderr.splitlines()[1:] == [
        f"1 lines refused, first: {export}:10002: archive metadata is not JSON"
        " (Expecting property name enclosed in double quotes at 1)",
        "hints: 10,001 ok, 1 malformed",
    ]
    rows = stored(
        dsn,
        "select status, count(*), count(distinct size_bytes), min(level_3), max(level_3)"
        " from tapelens.write_hints group by status order by status",
    )
    assert rows == [("malformed", 1, 1, None, None), ("ok", 10_001, 10_001, PARKING, PARKING)]
