"""The repack advisor on a synthetic site with known anomalies.

The generator scatters a dozen large datasets (their files trickle in over a year, so many
migrations write them, interleaved with everything else) and has three acknowledgement outages.
The advisor sees only the catalog and the marts; its top candidates must be the datasets the
generator scattered. Then the predicted gain of the top dataset repack is checked by rewriting
the catalog as the repack would leave it and planning the recall again. The stray-copy tapes
have a site of their own (test_repack_strays.py).
"""

from __future__ import annotations

import io
from pathlib import Path

import polars as pl
import psycopg
import pytest
from click.testing import CliRunner

from tapelens.analysis.recall.datasets.stored import write_placement_costs
from tapelens.analysis.recall.plan.planner import PlanOptions, RecallPlan
from tapelens.analysis.recall.plan.summary import duration
from tapelens.analysis.recall.requests.lists import requests_frame
from tapelens.analysis.recall.store.catalog import plan_from_database
from tapelens.analysis.repack.advisor import RepackOptions
from tapelens.analysis.repack.store import RepackAdvice, advise
from tapelens.catalog import file_identity
from tapelens.cli import cli
from tapelens.dbt_runs import build
from tapelens.media import BY_NAME as MEDIA
from tapelens.world import generate, site_params
from tests.fixtures.generated_site import load_site

pytestmark = pytest.mark.slow

DRIVES = {"LTO-7": 2, "LTO-8": 2, "LTO-9": 2}
SITE = {
    "files": 200_000,
    "seed": 5,
    "history": False,
    "scattered_datasets": 14,
    "scattered_min_files": 300,
    "ack_outages": 3,
}
PRECISION = 0.8  # precision of the top 10 against the truth
GAIN_TOLERANCE = 0.10
MODELS_ONLY = ["resource_type:test", "resource_type:unit_test"]
SITE_HORIZON_RECALLS = RepackOptions(drives=()).recalls_over_horizon


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("repack") / "site"
    generate(out, site_params("bnl", **SITE))
    return out


@pytest.fixture(scope="module")
def loaded(module_dsn: str, site: Path) -> str:
    load_site(module_dsn, site, {"tapes", "catalog"})
    build(module_dsn, exclude=MODELS_ONLY, log_dir=site.parent / "dbt")
    with psycopg.connect(module_dsn) as conn:
        write_placement_costs(conn)  # what `marts build` does after dbt
    return module_dsn


@pytest.fixture(scope="module")
def advised(loaded: str) -> tuple[str, RepackAdvice]:
    options = RepackOptions(drives=tuple(DRIVES.items()), top=10, screen=40)
    with psycopg.connect(loaded, autocommit=True) as conn:
        return loaded, advise(conn, options)


def precision_at_10(ranked: list[str], truth: set[str]) -> float:
    top = ranked[:10]
    return sum(t in truth for t in top) / len(top)


def test_the_generators_scattered_datasets_rank_on_top(
    advised: tuple[str, RepackAdvice], site: Path
) -> None:
    _, advice = advised
    ranked = advice.candidates
    datasets = pl.read_parquet(site / "truth" / "datasets.parquet")
    scattered = set(datasets.filter(pl.col("scattered"))["dataset"].to_list())
    assert len(scattered) == SITE["scattered_datasets"]
    top_datasets = ranked.filter(pl.col("kind") == "scattered-dataset")["target"].to_list()
    assert precision_at_10(top_datasets, scattered) >= PRECISION, top_datasets[:10]
    # Scattered datasets pay back fast: every one of them saves drive time on each recall.
    best = ranked.filter(pl.col("kind") == "scattered-dataset").head(10)
    assert (best["saving_per_recall_drive_h"] > 0).all()
    assert (best["payback_recalls"] < SITE_HORIZON_RECALLS).all()


def test_scattered_datasets_quote_the_placement_cost_every_command_quotes(
    advised: tuple[str, RepackAdvice],
) -> None:
    dsn, advice = advised
    with psycopg.connect(dsn) as conn:
        stored = dict(
            conn.execute(
                "select dataset, placement_cost_s from tapelens_marts.fct_dataset_placement_cost"
            ).fetchall()
        )
    scattered = advice.candidates.filter(pl.col("kind") == "scattered-dataset")
    assert scattered.height > 0
    for target, evidence in scattered.select("target", "evidence").iter_rows():
        assert evidence.startswith(f"placement cost {duration(stored[target])} of drive time;")


def test_plan_repack_from_the_command_line(
    advised: tuple[str, RepackAdvice], tmp_path: Path
) -> None:
    dsn, _ = advised
    vids = tmp_path / "repack.vids"
    plot = tmp_path / "gain.png"
    spec = ",".join(f"{d.replace('-', '')}:{n}" for d, n in DRIVES.items())
    result = CliRunner().invoke(
        cli,
        ["--dsn", dsn, "plan", "repack", "--top", "5", "--drives", spec, "--format", "csv"]
        + ["--export", "volumes", "--export-file", str(vids), "--plot", str(plot)],
    )
    assert result.exit_code == 0, result.stderr
    rows = pl.read_csv(io.StringIO(result.stdout))
    assert rows.height == 5 and rows["rank"].to_list() == [1, 2, 3, 4, 5]
    assert rows["net_gain_h"].is_sorted(descending=True)
    # The same ranking as the library gives with the same options.
    with psycopg.connect(dsn, autocommit=True) as conn:
        same = advise(conn, RepackOptions(drives=tuple(DRIVES.items()), top=5))
    assert rows["target"].to_list() == same.candidates["target"].head(5).to_list()
    volumes = vids.read_text().splitlines()
    assert volumes and len(volumes) == len(set(volumes))
    assert set(volumes) >= set(rows["volumes"][0].split(" "))
    assert plot.stat().st_size > 10_000
    assert "candidate(s) weighed" in result.stderr


def rewrite_collocated(conn: psycopg.Connection, dataset: str) -> None:
    """The catalog as a repack leaves it: one copy per file, the dataset's tape objects in
    position order on new tapes of its main media type, filled to capacity; the old copies
    marked removed."""
    rows = conn.execute(
        f"""select {file_identity("t")}, t.volume, t.position, t.offset_bytes, t.size_bytes,
                  coalesce(tp.media_type, 'unknown'), t.copy_no
           from tapelens.tape_files as t left join tapelens.tapes as tp using (volume)
           where t.dataset = %s and t.removed_at is null""",
        [dataset],
    ).fetchall()
    names = ["file_id", "volume", "position", "offset_bytes", "size_bytes", "media", "copy_no"]
    copies = pl.DataFrame(rows, schema=names, orient="row")
    main = (
        copies.group_by("media")
        .agg(pl.col("size_bytes").sum())
        .sort("size_bytes", descending=True)["media"][0]
    )
    capacity = MEDIA[main].capacity_bytes
    one = copies.sort("file_id", "copy_no").unique("file_id", keep="first")
    objects = (
        one.group_by("volume", "position")
        .agg(pl.col("size_bytes").sum().alias("object_bytes"))
        .sort("volume", "position")
        .with_columns(
            ((pl.col("object_bytes").cum_sum() - pl.col("object_bytes")) // capacity).alias("tape")
        )
        .with_columns(pl.int_range(1, pl.len() + 1).over("tape").alias("new_position"))
    )
    placed = one.join(objects, on=["volume", "position"])
    suffix = MEDIA[main].barcode_suffix
    conn.execute(
        "update tapelens.tape_files set removed_at = now()"
        " where dataset = %s and removed_at is null",
        [dataset],
    )
    for tape in placed["tape"].unique().to_list():
        conn.execute(
            "insert into tapelens.tapes (volume, barcode, media_type, capacity_bytes, state)"
            " values (%s, %s, %s, %s, 'full')",
            [f"RP{tape:04d}", f"RP{tape:04d}{suffix}", main, capacity],
        )
    with conn.cursor() as cur:
        cur.executemany(
            f"""insert into tapelens.tape_files
                   (source, copy_id, file_id, path, dataset, dataset_type, experiment,
                    size_bytes, volume, position, offset_bytes, aggregate_id, copy_no,
                    written_at, ingest_run_id)
               select source, %s, file_id, path, dataset, dataset_type, experiment,
                      size_bytes, %s, %s,
                      offset_bytes,
                      case when offset_bytes is null then null else %s end, 1, written_at,
                      ingest_run_id
               from tapelens.tape_files
               where {file_identity()} = %s and volume = %s and position = %s""",
            [
                (
                    f"repacked:{r['file_id']}",
                    f"RP{r['tape']:04d}",
                    r["new_position"],
                    f"RP{r['tape']:04d}:{r['new_position']}",
                    r["file_id"],
                    r["volume"],
                    r["position"],
                )
                for r in placed.iter_rows(named=True)
            ],
        )


def test_predicted_gain_of_a_repack_is_confirmed_by_replanning_the_rewritten_catalog(
    advised: tuple[str, RepackAdvice],
) -> None:
    dsn, advice = advised
    top = advice.candidates.filter(pl.col("kind") == "scattered-dataset").row(0, named=True)
    dataset = top["target"]
    options = PlanOptions(drives=tuple(DRIVES.items()), baselines=False)
    asked = requests_frame([dataset], "dataset")
    with psycopg.connect(dsn, autocommit=True) as conn:
        before, _ = plan_from_database(conn, asked, options)
        rewrite_collocated(conn, dataset)
        after, _ = plan_from_database(conn, asked, options)

    def drive_h(plan: RecallPlan) -> float:
        return float(plan.schedule.tapes["total_s"].sum()) / 3600

    # The re-planned recall on the rewritten catalog confirms the advisor's prediction: the
    # drive hours saved, and the elapsed recall before and after (the planner chooses copies
    # and shares drives its own way, so within a tolerance rather than exactly).
    planned_saving_h = drive_h(before) - drive_h(after)
    assert after.schedule.mounts == top["mounts_after"]
    assert planned_saving_h > 0
    assert top["saving_per_recall_drive_h"] == pytest.approx(planned_saving_h, rel=GAIN_TOLERANCE)
    assert top["recall_now_h"] == pytest.approx(
        before.schedule.makespan_s / 3600, rel=GAIN_TOLERANCE
    )
    assert top["recall_after_h"] == pytest.approx(
        after.schedule.makespan_s / 3600, rel=GAIN_TOLERANCE
    )
