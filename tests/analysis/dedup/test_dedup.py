"""Duplicate clean-up plan: the rules on hand-made catalogs, properties on random ones, and
`tapelens plan dedup` on a real database."""

from __future__ import annotations

import io
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import polars as pl
import psycopg
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from tapelens.analysis.dedup.plan import classify_copies, dedup_plan
from tapelens.analysis.recall.schedule.drives import readable_by_catalog
from tapelens.analysis.throughput.model import default_params
from tapelens.cli import cli
from tapelens.errors import InputError
from tapelens.tape_states import NOT_RECALLABLE
from tests.props import examples

GB = 1_000_000_000
T0 = datetime(2021, 1, 1, tzinfo=UTC)
PARAMS = default_params()
READERS = readable_by_catalog()
DRIVES = {"LTO-8": 1}


def copy(
    file_id: str,
    volume: str,
    position: int,
    *,
    dataset: str = "D",
    day: float = 0.0,
    copy_no: int = 1,
    checksum: str | None = None,
    tape_state: str | None = "full",
    size_bytes: int = 2 * GB,
) -> dict[str, Any]:
    return {
        "file_id": file_id,
        "dataset": dataset,
        "dataset_type": "RAW",
        "volume": volume,
        "position": position,
        "size_bytes": size_bytes,
        "copy_no": copy_no,
        "written_at": T0 + timedelta(days=day),
        "checksum": checksum,
        "tape_state": tape_state,
        "media_type": "LTO-8",
    }


def frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame(
        rows,
        schema={
            "file_id": pl.String,
            "dataset": pl.String,
            "dataset_type": pl.String,
            "volume": pl.String,
            "position": pl.Int64,
            "size_bytes": pl.Int64,
            "copy_no": pl.Int32,
            "written_at": pl.Datetime("us", "UTC"),
            "checksum": pl.String,
            "tape_state": pl.String,
            "media_type": pl.String,
        },
    )


def tape(
    volume: str, prefix: str, n: int, *, dataset: str = "D", **kw: Any
) -> list[dict[str, Any]]:
    """n single-copy files of one dataset at positions 1..n of a tape."""
    return [copy(f"{prefix}{i}", volume, 100 + i, dataset=dataset, **kw) for i in range(n)]


def verdict(classified: pl.DataFrame, file_id: str, volume: str) -> dict[str, Any]:
    rows = classified.filter((pl.col("file_id") == file_id) & (pl.col("volume") == volume))
    assert rows.height == 1, rows
    return rows.row(0, named=True)


def test_oldest_copy_with_its_dataset_beats_an_older_stray_copy() -> None:
    rows = tape("A", "a", 5)
    rows += [copy("f", "S", 1, day=-30), copy("f", "A", 7, day=0, copy_no=2)]
    rows += tape("S", "x", 3, dataset="X")  # S holds other datasets' files, none of D's
    out = classify_copies(frame(rows))
    assert out["file_id"].unique().to_list() == ["f"]  # single copies never appear
    kept, stray = verdict(out, "f", "A"), verdict(out, "f", "S")
    assert (kept["action"], kept["with_dataset"], kept["verify_checksum"]) == ("keep", True, True)
    assert kept["reason"] == "oldest copy with its dataset"
    assert (stray["action"], stray["with_dataset"], stray["stray"]) == ("retire", False, True)
    assert not stray["verify_checksum"] and "stray" in stray["reason"]
    assert kept["copies"] == stray["copies"] == 2


def test_with_no_copy_beside_its_dataset_the_oldest_is_kept() -> None:
    out = classify_copies(frame([copy("f", "A", 1, day=3), copy("f", "B", 1, day=1)]))
    assert verdict(out, "f", "B")["action"] == "keep"
    assert verdict(out, "f", "B")["reason"] == "oldest copy; no copy sits with its dataset"
    assert verdict(out, "f", "A")["stray"]


def test_retiring_can_cost_mounts_and_says_so_as_a_negative_saving() -> None:
    # Both newest copies sit on A (one mount now); the oldest, which are kept, on B and C.
    rows = [copy("f", "A", 1, day=3), copy("f", "B", 1, day=1)]
    rows += [copy("g", "A", 2, day=3), copy("g", "C", 1, day=1)]
    plan = dedup_plan(frame(rows), PARAMS, DRIVES, READERS)
    (row,) = plan.datasets.to_dicts()
    assert (row["mounts_now"], row["mounts_after"], row["mounts_saved"]) == (1, 2, -1)
    assert plan.summary["mounts_saved"] == -1


def test_a_copy_on_a_readable_tape_beats_an_older_one_on_a_disabled_tape() -> None:
    rows = tape("A", "a", 3, tape_state="disabled") + tape("B", "b", 3)
    rows += [copy("f", "A", 1, day=0, tape_state="disabled"), copy("f", "B", 1, day=9)]
    out = classify_copies(frame(rows))
    assert verdict(out, "f", "B")["action"] == "keep"
    assert verdict(out, "f", "B")["reason"] == "oldest readable copy with its dataset"
    old = verdict(out, "f", "A")
    assert (old["action"], old["reason"], old["stray"]) == ("retire", "tape disabled", False)


def test_every_copy_unreadable_still_keeps_one() -> None:
    rows = [copy("f", v, 1, day=d, tape_state="unavailable") for v, d in (("A", 1), ("B", 2))]
    out = classify_copies(frame(rows))
    assert out["action"].sort().to_list() == ["keep", "retire"]
    assert verdict(out, "f", "A")["reason"].startswith("no copy on a readable tape")


def test_differing_checksums_leave_every_copy_for_review() -> None:
    rows = tape("A", "a", 3)
    rows += [
        copy("f", "A", 1, checksum="ad32:0A1B"),
        copy("f", "S", 1, day=5, checksum="ad32:ffff"),
    ]
    rows += [copy("f", "S", 2, day=6)]  # unknown checksum: no evidence either way
    rows += [
        copy("g", "A", 2, checksum="ad32:0a1b"),
        copy("g", "S", 3, day=5, checksum="AD32:0A1B"),
    ]
    out = classify_copies(frame(rows))
    f = out.filter(pl.col("file_id") == "f")
    assert f["action"].to_list() == ["review"] * 3
    assert f["verify_checksum"].all() and not f["stray"].any()
    assert f["reason"].str.contains("checksums differ").all()
    g = out.filter(pl.col("file_id") == "g")  # same checksum, spelt differently
    assert sorted(g["action"].to_list()) == ["keep", "retire"]


def test_96_copies_on_5_tapes_retire_95() -> None:
    rows = tape("A", "a", 10)
    rows.append(copy("f", "A", 50, day=0))
    for i in range(95):
        rows.append(copy("f", f"R{i % 5}", 1 + i // 5, day=1 + i, copy_no=2 + i))
    rows += tape("R0", "x", 4, dataset="X")
    copies = frame(rows)
    out = classify_copies(copies)
    assert out.height == 96 and (out["copies"] == 96).all()
    assert Counter(out["action"].to_list()) == {"keep": 1, "retire": 95}
    assert verdict(out, "f", "A")["action"] == "keep"
    assert out.filter(pl.col("action") == "retire")["stray"].all()

    plan = dedup_plan(copies, PARAMS, DRIVES, READERS)
    assert plan.copies.equals(out)
    d = plan.datasets.row(0, named=True)
    assert plan.datasets.height == 1 and d["dataset"] == "D"
    assert (d["files_duplicated"], d["copies_to_retire"], d["bytes_to_retire"]) == (1, 95, 190 * GB)
    # The tape client recalls the newest copy (on R4): two mounts now, one once retired.
    assert (d["mounts_now"], d["mounts_after"], d["mounts_saved"]) == (2, 1, 1)
    assert d["recall_now_s"] > d["recall_after_s"] > 0
    assert d["recall_saved_s"] == pytest.approx(d["recall_now_s"] - d["recall_after_s"])
    tapes = plan.tapes.filter(pl.col("volume").str.starts_with("R"))
    assert tapes["copies_to_retire"].to_list() == [19] * 5
    assert tapes["bytes_to_retire"].to_list() == [38 * GB] * 5
    assert plan.tapes.filter(pl.col("volume") == "A")["copies_kept"].item() == 1
    assert plan.summary["copies_to_retire"] == 95 and plan.summary["mounts_saved"] == 1
    assert plan.summary["stray_copies"] == 95 and plan.summary["untimed_copies"] == 0


def test_epoch_seconds_and_no_optional_columns() -> None:
    rows = frame(tape("A", "a", 2) + [copy("f", "A", 1), copy("f", "S", 1, day=2)])
    bare = rows.select(
        "file_id", "dataset", "volume", "position", "size_bytes", "copy_no",
        pl.col("written_at").dt.epoch("s").alias("written_at"),
    )  # fmt: skip
    out = classify_copies(bare)
    assert verdict(out, "f", "A")["action"] == "keep"
    plan = dedup_plan(bare, PARAMS, DRIVES)
    assert plan.summary["untimed_copies"] > 0
    assert plan.datasets["recall_now_s"].is_null().all()
    assert plan.datasets["mounts_saved"].to_list() == [1]


def test_no_duplicates_gives_empty_frames_and_missing_columns_an_error() -> None:
    copies = frame(tape("A", "a", 3))
    plan = dedup_plan(copies, PARAMS, DRIVES, READERS)
    assert plan.copies.height == plan.datasets.height == plan.tapes.height == 0
    assert plan.summary["files_duplicated"] == 0 and plan.summary["mounts_saved"] == 0
    with pytest.raises(InputError, match="written_at"):
        classify_copies(copies.drop("written_at"))


VOLUMES = [f"V{i}" for i in range(6)]
STATES = st.sampled_from(["full", "full", "disabled", "unavailable", None])
# One copy: volume, day written, copy number, checksum (if the file's copies may differ), GB.
COPY = st.tuples(
    st.sampled_from(VOLUMES),
    st.integers(0, 5),
    st.integers(1, 3),
    st.sampled_from([None, "c0", "c1"]),
    st.integers(1, 5),
)
# One file: dataset, how its checksums look, its 1-6 copies.
FILE = st.tuples(
    st.sampled_from(["D1", "D2", "D3"]),
    st.sampled_from(["none", "same", "random"]),
    st.lists(COPY, min_size=1, max_size=6),
)


@st.composite
def catalogs(draw: st.DrawFn) -> pl.DataFrame:
    states = dict(zip(VOLUMES, draw(st.lists(STATES, min_size=6, max_size=6)), strict=True))
    rows = []
    for i, (dataset, sums, copies) in enumerate(draw(st.lists(FILE, min_size=1, max_size=25))):
        for volume, day, copy_no, checksum, size_gb in copies:
            rows.append(
                copy(
                    f"f{i}",
                    volume,
                    len(rows) + 1,
                    dataset=dataset,
                    day=day,
                    copy_no=copy_no,
                    checksum={"none": None, "same": "c0", "random": checksum}[sums],
                    tape_state=states[volume],
                    size_bytes=size_gb * GB,
                )
            )
    return frame(rows)


@pytest.mark.slow
@settings(max_examples=examples(80))
@given(catalogs())
def test_properties_on_random_catalogs(copies: pl.DataFrame) -> None:
    out = classify_copies(copies)
    counts = Counter(copies["file_id"].to_list())
    duplicated = {f for f, n in counts.items() if n > 1}
    key = ["file_id", "volume", "position"]
    # Every input copy of a duplicated file appears once, and nothing else does.
    assert sorted(out.select(key).rows()) == sorted(
        copies.filter(pl.col("file_id").is_in(list(duplicated))).select(key).rows()
    )
    sums = {
        f: set(c)
        for f, c in copies.group_by("file_id").agg(pl.col("checksum").drop_nulls()).iter_rows()
    }
    for (file_id,), group in out.group_by(["file_id"]):
        actions = Counter(group["action"].to_list())
        assert (group["copies"] == counts[file_id]).all()
        if len(sums[file_id]) > 1:
            assert actions == {"review": counts[file_id]}
        else:
            assert actions["keep"] == 1 and actions["review"] == 0
            assert actions["retire"] == counts[file_id] - 1  # never the last copy
            kept = group.filter(pl.col("action") == "keep").row(0, named=True)
            any_readable = (~group["tape_state"].is_in(NOT_RECALLABLE).fill_null(False)).any()
            if any_readable:
                assert kept["tape_state"] not in NOT_RECALLABLE
    assert (out["verify_checksum"] == (out["action"] != "retire")).all()
    assert (~out["stray"] | (out["action"] == "retire")).all()

    plan = dedup_plan(copies, PARAMS, DRIVES, READERS)
    assert plan.summary["copies_to_retire"] == (out["action"] == "retire").sum()
    assert plan.summary["files_duplicated"] == len(duplicated)
    assert set(plan.datasets["dataset"]) == set(out["dataset"])
    assert (plan.datasets["mounts_after"] >= 1).all()


# --- tapelens plan dedup on a real database ---------------------------------------------------

TAPES = [("A1", "LTO-8", "full"), ("A2", "LTO-8", "full"), ("S1", "LTO-8", "full")]


def site_rows() -> list[tuple[object, ...]]:
    """(file_id, dataset, type, volume, position, copy_no, day, checksum), 2 GB each."""
    rows: list[tuple[object, ...]] = []
    rows += [(f"d{i}", "D", "RAW", "A1", 1 + i, 1, 0, f"c{i}") for i in range(6)]
    rows += [(f"d{i}", "D", "RAW", "A2", i - 5, 1, 0, f"c{i}") for i in range(6, 10)]
    # Retries on S1: d1, d2, d7 once, d3 twice.
    rows += [("d1", "D", "RAW", "S1", 1, 2, 5, "c1"), ("d2", "D", "RAW", "S1", 2, 2, 5, None)]
    rows += [("d3", "D", "RAW", "S1", 3, 2, 6, "c3"), ("d3", "D", "RAW", "S1", 4, 3, 7, "c3")]
    rows += [("d7", "D", "RAW", "S1", 5, 2, 5, "c7")]
    # F: one file whose two copies disagree on their checksum.
    rows += [("f0", "F", "AOD", "A2", 8, 1, 0, "aa"), ("f0", "F", "AOD", "S1", 6, 2, 5, "bb")]
    rows += [("f1", "F", "AOD", "A2", 9, 1, 0, "f1")]
    # Datasets without duplicates are left out.
    rows += [("e0", "E", "AOD", "A2", 10, 1, 0, None), ("x0", "X", "RAW", "S1", 10, 1, 0, None)]
    return rows


@pytest.fixture
def site(dsn: str) -> str:
    with psycopg.connect(dsn) as conn:
        conn.execute(
            "insert into tapelens.ingest_runs (kind, format, source, path, sha256, status)"
            " values ('catalog', 'csv', 'test', 'hand', 'x', 'loaded')"
        )
        with conn.cursor() as cur:
            cur.executemany(
                "insert into tapelens.tapes (volume, media_type, state) values (%s, %s, %s)", TAPES
            )
            cur.executemany(
                "insert into tapelens.tape_files (source, copy_id, file_id, path, dataset,"
                " dataset_type, experiment, size_bytes, volume, position, copy_no, written_at,"
                " checksum, ingest_run_id)"
                " values ('test', %s, %s, %s, %s, %s, 'exp', %s, %s, %s, %s,"
                " timestamptz '2021-01-01 00:00:00+00' + make_interval(days => %s), %s, 1)",
                [
                    (f"{v}:{p}", f, f"/store/{d}/{f}", d, t, 2 * GB, v, p, c, day, s)
                    for f, d, t, v, p, c, day, s in site_rows()
                ],
            )
            # A removed copy is not live: it neither counts as a copy nor is listed.
            cur.execute(
                "update tapelens.tape_files set removed_at = now()"
                " where file_id = 'd7' and volume = 'S1'"
            )
    return dsn


def run(dsn: str, *args: str) -> tuple[pl.DataFrame, str]:
    result = CliRunner().invoke(cli, ["--dsn", dsn, "plan", "dedup", "--format", "csv", *args])
    assert result.exit_code == 0, result.output + repr(result.exception)
    return pl.read_csv(io.StringIO(result.stdout)), result.stderr


@pytest.mark.slow
def test_plan_dedup_cli_on_a_database(site: str) -> None:
    copies, err = run(site)
    assert "4 files duplicated: 4 copies to retire (8.0 GB, 4 stray), 1 files to review" in err
    assert "save 1 mounts (5 -> 4)" in err
    assert "assuming LTO-8:1" in err  # no drives anywhere: one per media type
    assert copies.columns[:13] == [
        "file_id", "dataset", "volume", "position", "size_bytes", "copy_no", "written_at",
        "copies", "action", "reason", "with_dataset", "stray", "verify_checksum",
    ]  # fmt: skip
    assert sorted(copies["file_id"].unique().to_list()) == ["d1", "d2", "d3", "f0"]
    retire = copies.filter(pl.col("action") == "retire")
    assert sorted(retire.select("file_id", "position").rows()) == [
        ("d1", 1),
        ("d2", 2),
        ("d3", 3),
        ("d3", 4),
    ]
    assert (retire["volume"] == "S1").all() and retire["stray"].all()
    kept = copies.filter(pl.col("action") == "keep")
    assert (kept["volume"] == "A1").all() and kept["verify_checksum"].all()
    assert copies.filter(pl.col("file_id") == "f0")["action"].to_list() == ["review"] * 2

    datasets, _ = run(site, "--by", "datasets", "--drives", "LTO8:2")
    d = datasets.filter(pl.col("dataset") == "D").row(0, named=True)
    assert (d["dataset_type"], d["files_duplicated"], d["copies_to_retire"]) == ("RAW", 3, 4)
    assert d["bytes_to_retire"] == 8 * GB
    # Now: newest copies of d1..d3 on S1, so A1, A2 and S1; after: A1 and A2.
    assert (d["mounts_now"], d["mounts_after"], d["mounts_saved"]) == (3, 2, 1)
    assert d["recall_now_s"] > d["recall_after_s"]
    f = datasets.filter(pl.col("dataset") == "F").row(0, named=True)
    assert (f["files_review"], f["copies_to_retire"], f["mounts_saved"]) == (1, 0, 0)
    assert datasets.height == 2

    tapes, _ = run(site, "--by", "tapes")
    s1 = tapes.filter(pl.col("volume") == "S1").row(0, named=True)
    assert (s1["copies_to_retire"], s1["bytes_to_retire"], s1["copies_review"]) == (4, 8 * GB, 1)
    assert tapes.filter(pl.col("volume") == "A1")["copies_kept"].item() == 3

    only_f, _ = run(site, "--dataset", "F")
    assert only_f["file_id"].unique().to_list() == ["f0"]
    by_type, _ = run(site, "--type", "RAW")
    assert set(by_type["dataset"]) == {"D"}
    missing = CliRunner().invoke(cli, ["--dsn", site, "plan", "dedup", "--dataset", "E"])
    assert isinstance(missing.exception, InputError)
    assert "no file with more than one live copy" in str(missing.exception)
