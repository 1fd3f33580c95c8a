"""The copy a tape client recalls: the product's one rule (baselines.newest_copies), its
tie-breaks, and the synthetic world's own rule (world/operations.py) agreeing with it on the
shapes of the generated sites."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import polars as pl
import psycopg
import pytest

from tapelens.analysis.dedup.plan import _newest
from tapelens.analysis.recall.baselines.newest import newest_copies
from tapelens.world import generate, site_params
from tapelens.world.operations import _addressed, _newest_copies

T0 = datetime(2021, 1, 1, tzinfo=UTC)
T1 = datetime(2022, 1, 1, tzinfo=UTC)


def copies(rows: list[tuple[str, str, int, datetime | None, int | None, str]]) -> pl.DataFrame:
    """(file_id, volume, position, written_at, copy_no, tape_state) per copy."""
    return pl.DataFrame(
        rows,
        schema={
            "file_id": pl.String,
            "volume": pl.String,
            "position": pl.Int64,
            "written_at": pl.Datetime("us", "UTC"),
            "copy_no": pl.Int32,
            "tape_state": pl.String,
        },
        orient="row",
    )


def chosen(frame: pl.DataFrame) -> dict[str, str]:
    return dict(newest_copies(frame, "file_id").select("file_id", "volume").iter_rows())


def test_the_newest_written_copy_is_recalled() -> None:
    frame = copies([("f", "A", 1, T0, 2, "full"), ("f", "B", 1, T1, 1, "full")])
    assert chosen(frame) == {"f": "B"}


def test_a_copy_of_unknown_age_is_never_the_newest() -> None:
    # The duplicate clean-up's copy of this rule sorted an unknown time first.
    frame = copies([("f", "A", 1, None, 3, "full"), ("f", "B", 1, T0, 1, "full")])
    assert chosen(frame) == {"f": "B"}
    assert _newest(frame, ["file_id"])["volume"].to_list() == ["B"]


def test_a_copy_on_a_tape_that_cannot_be_mounted_comes_last() -> None:
    # The planner's newest-copy baseline did not look at the tape's state.
    frame = copies([("f", "A", 1, T0, 1, "full"), ("f", "B", 1, T1, 2, "disabled")])
    assert chosen(frame) == {"f": "A"}
    # with no readable copy at all the newest is still named
    assert chosen(frame.with_columns(tape_state=pl.lit("broken"))) == {"f": "B"}


def test_equal_times_go_to_the_highest_copy_number_then_the_catalog_order() -> None:
    frame = copies(
        [
            ("f", "A", 5, T0, 1, "full"),
            ("f", "B", 2, T0, 2, "full"),
            ("g", "D", 9, T0, 1, "full"),
            ("g", "C", 4, T0, 1, "full"),
            ("g", "C", 3, T0, 1, "full"),
        ]
    )
    assert chosen(frame) == {"f": "B", "g": "C"}
    g = newest_copies(frame, "file_id").filter(pl.col("file_id") == "g")
    assert g["position"].to_list() == [3]


def test_the_choice_does_not_depend_on_row_order() -> None:
    frame = copies(
        [
            ("f", "A", 5, T0, 1, "full"),
            ("f", "B", 2, T0, 1, "full"),
            ("f", "C", 1, T0, 1, "full"),
            ("h", "A", 7, T1, None, "full"),
            ("h", "B", 7, T1, None, None),
        ]
    )
    first = chosen(frame)
    for seed in range(5):
        assert chosen(frame.sample(fraction=1.0, shuffle=True, seed=seed)) == first
    assert first == {"f": "A", "h": "A"}


def test_dedup_reads_the_same_copies_as_the_planner_baseline() -> None:
    frame = copies(
        [
            ("f", "A", 1, T0, 1, "full"),
            ("f", "B", 1, T1, 2, "full"),
            ("g", "A", 2, None, 2, "full"),
            ("g", "C", 1, T0, 1, "readonly"),
            ("h", "D", 1, T1, 1, "repacked"),
            ("h", "A", 3, T0, 1, "full"),
            ("k", "A", 4, T0, 1, "full"),
        ]
    )
    dedup = _newest(frame, ["file_id"]).select("file_id", "volume", "position")
    baseline = newest_copies(frame, "file_id").select("file_id", "volume", "position")
    assert dedup.sort("file_id").equals(baseline.sort("file_id"))


@pytest.mark.parametrize("profile", ["bnl", "gridka", "cern", "fnal"])
def test_the_product_recalls_the_copies_the_world_recalls(
    profile: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The world keeps its own newest-copy rule (it is the truth the product is checked against);
    on every profile's generated site, at several campaign times, the product's rule picks the
    same copy of every file."""
    out = tmp_path_factory.mktemp(profile) / "site"
    generate(out, site_params(profile, files=4_000, seed=11, history=False))
    catalog = pl.read_parquet(out / "truth" / "copies.parquet").filter(~pl.col("removed"))
    tapes = pl.read_parquet(out / "truth" / "tapes.parquet")
    media = set(tapes["media_type"].drop_nulls().to_list())
    # _addressed keeps the catalog's rows in order; the product also sees their copy numbers.
    addressed = _addressed(catalog, tapes, media).with_columns(catalog["copy_no"])
    readable = addressed.filter("readable").drop("readable")
    several = readable.filter(pl.col("file_id").is_duplicated())["file_id"].n_unique()
    assert several > 0, "the site has files with several readable copies"
    wanted = catalog.select("file_id").unique(maintain_order=True)
    keys = ["file_id", "volume", "position", "offset_bytes"]
    for quantile in (0.5, 0.8, 1.0):
        t_s = float(readable["written_s"].quantile(quantile))  # type: ignore[arg-type]
        world = _newest_copies(wanted, readable.drop("copy_no"), t_s).select(keys)
        product = newest_copies(readable.filter(pl.col("written_s") <= t_s), "file_id")
        assert world.sort(keys).equals(product.select(keys).sort(keys)), (profile, quantile)


def test_transfers_are_linked_to_the_copy_the_product_calls_the_newest(dsn: str) -> None:
    """The canonical view tapelens.transfers_linked (migration 024) picks, for a read that names
    only the path, the copy newest_copies picks among the copies written before it."""
    # (path, volume, position, written_at, copy_no)
    catalog = [
        ("/d/f", "B", 1, T0, 1),
        ("/d/f", "A", 7, T0, 2),  # same second, higher copy number
        ("/d/g", "C", 5, T0, 1),
        ("/d/g", "A", 9, T0, 1),  # full tie: the first volume by name
        ("/d/h", "C", 2, T0, 1),
        ("/d/h", "D", 3, T1, 1),  # newer
        ("/d/h", "E", 4, T1 + timedelta(days=400), 3),  # written after the read: not it
    ]
    read_at = T1 + timedelta(days=1)
    with psycopg.connect(dsn) as conn:
        with conn.cursor() as cur:
            cur.executemany(
                "insert into tapelens.tape_files (source, copy_id, path, dataset, dataset_type,"
                " experiment, size_bytes, volume, position, written_at, copy_no, ingest_run_id)"
                " values ('s', %s, %s, '/d', 'RAW', 'exp', 1, %s, %s, %s, %s, 1)",
                [(f"{v}:{p}", path, v, p, w, n) for path, v, p, w, n in catalog],
            )
            cur.executemany(
                "insert into tapelens.transfers (source, direction, path, started_at, status,"
                " ingest_run_id) values ('site', 'read', %s, %s, 'ok', 1)",
                [(path, read_at) for path in ("/d/f", "/d/g", "/d/h")],
            )
        linked = conn.execute(
            "select path, linked_volume, linked_position from tapelens.transfers_linked"
        ).fetchall()
    frame = pl.DataFrame(
        [r for r in catalog if r[3] <= read_at],
        schema={
            "path": pl.String,
            "volume": pl.String,
            "position": pl.Int64,
            "written_at": pl.Datetime("us", "UTC"),
            "copy_no": pl.Int32,
        },
        orient="row",
    )
    newest = newest_copies(frame, "path").select("path", "volume", "position").rows()
    assert sorted(linked) == sorted(newest)
    assert sorted(linked) == [("/d/f", "A", 7), ("/d/g", "A", 9), ("/d/h", "D", 3)]
