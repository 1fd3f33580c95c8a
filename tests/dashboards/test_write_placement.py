"""The Write placement dashboard: its assets hold together, its datasets are the hint marts as
dbt builds them and the views over the kept families advice, and its figures are those of the
hints loaded and of the advice `plan families` kept.

That it imports into a real Superset, that every chart's query returns rows on the dashboard
site (which has collocation hints and a hand-written advice) and that the page renders in
chromium without a chart error is checked by tests/dashboards/test_superset.py, which walks
every chart and dashboard of the bundle. The advice's charts are checked here too, in a
Superset of their own over a small generated site with hints on which `plan families` ran:
what Superset answers and chromium shows are the rows the command kept.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.rows import dict_row

from tapelens.dashboards.assets import chart_key, load_assets
from tapelens.dashboards.ops import Served, serve
from tapelens.dashboards.superset.api import SupersetClient
from tapelens.dashboards.superset.install import ADMIN_USER, SupersetHome
from tapelens.dashboards.superset.server import stop
from tests.dashboards.test_superset import (
    SCREENSHOTS,
    _settled_screenshot,
    admin_browser,
    home,  # noqa: F401 - the fixture
    site_dsn,  # noqa: F401 - the fixture
)
from tests.fixtures.cli import run
from tests.fixtures.dashboard_site import DATASETS
from tests.fixtures.generated_site import load_hinted_site

TITLE = "Write placement"
HINT_MARTS = {"fct_hint_coverage", "fct_hint_groups", "fct_hint_recall_groups"}
# The views over the kept advice (dashboards/views/040_family_advice.sql).
ADVICE_VIEWS = {"family_advice", "advised_families"}
SCHEMAS = {"tapelens_marts": HINT_MARTS, "tapelens_dashboards": ADVICE_VIEWS}


def _board() -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """The dashboard, the charts on it, and the datasets by UUID."""
    assets = load_assets()
    boards = [d for k, d in assets.items() if k.startswith("dashboards/")]
    board = next(d for d in boards if d["dashboard_title"] == TITLE)
    charts = {d["uuid"]: d for k, d in assets.items() if k.startswith("charts/")}
    on_board = [
        charts[node["meta"]["uuid"]]
        for node in board["position"].values()
        if isinstance(node, dict) and node.get("type") == "CHART"
    ]
    datasets = {d["uuid"]: d for k, d in assets.items() if k.startswith("datasets/")}
    return board, on_board, datasets


def _names(doc: dict[str, Any]) -> tuple[set[str], set[str]]:
    """The columns and metrics a chart's saved query names."""
    columns: set[str] = set()
    metrics: set[str] = set()
    for query in json.loads(doc["query_context"])["queries"]:
        for column in query["columns"]:
            columns.add(column["sqlExpression"] if isinstance(column, dict) else column)
        columns.update(f["col"] for f in query["filters"])
        metrics.update(query["metrics"])
    return columns, metrics


def test_charts_read_the_hint_marts_and_advice_and_name_what_their_datasets_have() -> None:
    board, charts, datasets = _board()
    assert len(charts) >= 10
    assert {datasets[c["dataset_uuid"]]["table_name"] for c in charts} == HINT_MARTS | ADVICE_VIEWS
    for chart in charts:
        dataset = datasets[chart["dataset_uuid"]]
        assert dataset["table_name"] in SCHEMAS[dataset["schema"]]
        columns, metrics = _names(chart)
        assert columns <= {c["column_name"] for c in dataset["columns"]}, chart["slice_name"]
        assert metrics <= {m["metric_name"] for m in dataset["metrics"]}, chart["slice_name"]
        # the query Superset runs from the API is the one the page runs
        form = json.loads(chart["query_context"])["form_data"]
        assert form == chart["params"], chart["slice_name"]


def test_each_filter_leaves_out_exactly_the_charts_without_its_column() -> None:
    board, charts, datasets = _board()
    for native in board["metadata"]["native_filter_configuration"]:
        excluded = set(native["scope"]["excluded"])
        for chart in charts:
            dataset = datasets[chart["dataset_uuid"]]
            if native["filterType"] == "filter_time":
                has = dataset["main_dttm_col"] is not None
            else:
                column = native["targets"][0]["column"]["name"]
                has = column in {c["column_name"] for c in dataset["columns"]}
            assert (chart_key(chart["uuid"]) not in excluded) == has, (
                native["name"],
                chart["slice_name"],
            )


SUPERSET_TYPES = {
    "bigint": "BIGINT",
    "integer": "INTEGER",
    "double precision": "DOUBLE PRECISION",
    "text": "TEXT",
    "date": "DATE",
    "timestamp with time zone": "TIMESTAMP WITH TIME ZONE",
}


def _datasets_are_built(dsn: str, schema: str) -> None:
    """The board's datasets of `schema` have the columns and types the database has, and every
    metric a value."""
    board, charts, datasets = _board()
    with psycopg.connect(dsn) as conn:
        for dataset in {c["dataset_uuid"]: datasets[c["dataset_uuid"]] for c in charts}.values():
            if dataset["schema"] != schema:
                continue
            table = sql.Identifier(dataset["schema"], dataset["table_name"])
            built = conn.execute(
                "select column_name, data_type from information_schema.columns"
                " where table_schema = %s and table_name = %s",
                [dataset["schema"], dataset["table_name"]],
            ).fetchall()
            assert {c["column_name"]: c["type"] for c in dataset["columns"]} == {
                name: SUPERSET_TYPES[kind] for name, kind in built
            }, dataset["table_name"]
            for metric in dataset["metrics"]:
                (value,) = conn.execute(
                    sql.SQL("select {} from {}").format(sql.SQL(metric["expression"]), table)
                ).fetchone() or (None,)
                assert value is not None, (dataset["table_name"], metric["metric_name"])


@pytest.mark.slow
def test_datasets_are_the_marts_and_every_metric_has_a_value(site_dsn: str) -> None:  # noqa: F811
    _datasets_are_built(site_dsn, "tapelens_marts")


def _metric(conn: psycopg.Connection, table: str, name: str, where: str = "true") -> Any:
    _, _, datasets = _board()
    dataset = next(d for d in datasets.values() if d["table_name"] == table)
    expression = next(m["expression"] for m in dataset["metrics"] if m["metric_name"] == name)
    row = conn.execute(
        sql.SQL("select {} from {} where {}").format(
            sql.SQL(expression), sql.Identifier("tapelens_marts", table), sql.SQL(where)
        )
    ).fetchone()
    assert row is not None
    return row[0]


@pytest.mark.slow
def test_the_tiles_say_what_the_loaded_hints_say(site_dsn: str) -> None:  # noqa: F811
    with psycopg.connect(site_dsn) as conn:
        counts = conn.execute(
            "select count(*) filter (where status = 'ok'), count(*) filter (where status ="
            " 'empty'), count(*) from tapelens.write_hints"
        ).fetchone()
        assert counts is not None
        ok, empty, total = counts
        assert 0 < ok < total and empty > 0  # the site has both, so the figures can differ
        assert _metric(conn, "fct_hint_coverage", "hinted_share") == pytest.approx(ok / total)
        assert _metric(conn, "fct_hint_coverage", "empty_files") == empty
        # A broad level's group holds all of a narrower one's: it can only hold more of what
        # a campaign read.
        shares = [
            _metric(conn, "fct_hint_recall_groups", "top_group_share", f"level = {level}")
            for level in range(4)
        ]
        assert all(s is not None for s in shares)
        assert shares == sorted(shares, reverse=True)
        # After the cutover the site writes each dataset (level 3) on a tape run of its own,
        # the datasets of one experiment (level 0) on several tapes, far below their capacity.
        experiments = {row[0] for row in DATASETS}
        assert _metric(conn, "fct_hint_groups", "scattered_groups", "level = 3") == 0
        assert _metric(conn, "fct_hint_groups", "scattered_groups", "level = 0") == len(experiments)


# -- the advice's charts over a real `plan families` run -------------------------------------

FILES = 600
SEED = 3
ADVISE = ["plan", "families", "--write-drives", "6", "--batch-bytes", "4TB"]
HOURS = "Recall drive hours, recorded and advised"
MOUNTS = "Recall mounts, recorded and advised"
COST = "What the advice costs at write time"
FAMILIES = "Advised tape families per pool"


@pytest.fixture(scope="module")
def advice_dsn(module_dsn: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A small generated site with hints, its hint marts built and `plan families` run on it."""
    load_hinted_site(module_dsn, tmp_path_factory.mktemp("write-placement"), FILES, SEED)
    done = run("--dsn", module_dsn, *ADVISE)
    assert done.returncode == 0, done.stderr
    return module_dsn


@pytest.fixture(scope="module")
def advice_served(home: SupersetHome, advice_dsn: str) -> Iterator[Served]:  # noqa: F811
    try:
        yield serve(home, advice_dsn, progress=lambda message: print(message, flush=True))
    finally:
        stop(home)


def _chart_rows(served: Served) -> dict[str, list[dict[str, Any]]]:
    """The rows Superset answers for each chart of the advice, by chart name."""
    client = SupersetClient(served.url)
    assert served.generated_password
    client.login(ADMIN_USER, served.generated_password)
    out = {}
    for chart in client.charts():
        if chart["slice_name"] in (HOURS, MOUNTS, COST, FAMILIES):
            result = client.chart_data(chart["id"])["result"][0]
            assert not result.get("error"), (chart["slice_name"], result.get("error"))
            out[chart["slice_name"]] = result["data"]
    assert len(out) == 4
    return out


def _kept(dsn: str) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]], list[Any]]:
    """Per pool the recorded and the advised row `plan families` kept, and its families."""
    with psycopg.connect(dsn) as conn, conn.cursor(row_factory=dict_row) as cur:
        table = cur.execute("select * from tapelens.family_advice").fetchall()
        families = cur.execute("select * from tapelens.advised_families").fetchall()
    recorded = {r["pool"]: r for r in table if r["placement"] == "recorded"}
    advised = {r["pool"]: r for r in table if r["advised"]}
    return recorded, advised, families


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_the_advice_charts_show_the_advice_plan_families_kept(
    advice_served: Served, advice_dsn: str
) -> None:
    _datasets_are_built(advice_dsn, "tapelens_dashboards")
    charts = _chart_rows(advice_served)
    recorded, advised, families = _kept(advice_dsn)
    assert len(advised) >= 2 and advised.keys() == recorded.keys()
    # Something to show: the site's recalls ask for whole hint groups, so some pool is told
    # to collocate, and saves recall mounts by it.
    assert any(
        r["level"] is not None and r["recall_mounts"] < recorded[p]["recall_mounts"]
        for p, r in advised.items()
    )
    figures = {
        HOURS: ("recall_hours", "recall_hours"),
        MOUNTS: ("recall_mounts", "recall_mounts"),
    }
    for name, (now, then) in figures.items():
        shown = {row["pool"]: row for row in charts[name]}
        assert shown.keys() == advised.keys(), name
        for pool, row in shown.items():
            assert row[f"recorded_{now}"] == pytest.approx(recorded[pool][now]), (name, pool)
            assert row[f"advised_{then}"] == pytest.approx(advised[pool][then]), (name, pool)
    costs = {row["pool"]: row for row in charts[COST]}
    for pool, row in costs.items():
        assert row["write_mounts"] == advised[pool]["write_mounts"]
        assert row["partly_filled_tapes"] == advised[pool]["partly_filled_tapes"]
        assert row["recorded_partly_filled_tapes"] == recorded[pool]["partly_filled_tapes"]
    shown_families = {(r["pool"], r["family"]): r for r in charts[FAMILIES]}
    kept = {(f["pool"], f["name"]): f for f in families}
    kept_pools = {f["pool"] for f in families}
    # Every family, and one row for each pool told to keep writing as now.
    keeping = {(p, "-") for p, r in advised.items() if r["level"] is None}
    assert keeping == {(p, "-") for p in advised if p not in kept_pools}
    assert shown_families.keys() == kept.keys() | keeping
    for key, family in kept.items():
        row = shown_families[key]
        assert (row["files"], row["tapes"]) == (family["files"], family["tapes"])
        assert row["size_tb"] == pytest.approx(family["bytes"] / 1e12)
        assert row["advice"] == f"collocate by hint level {advised[key[0]]['level']}"
        rest = "files of no group large enough"
        assert row["hint_values"] == (family["hint_group"] or rest)
        assert row["hint_level"] == (
            "-" if family["hint_level"] is None else str(family["hint_level"])
        )


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_the_advice_renders_in_chromium(advice_served: Served, advice_dsn: str) -> None:
    board, _, _ = _board()
    # Superset holds the header's markdown in a chart holder too.
    holding = [
        node
        for node in board["position"].values()
        if isinstance(node, dict) and node.get("type") in ("CHART", "MARKDOWN")
    ]
    _, _, families = _kept(advice_dsn)
    largest = max(families, key=lambda f: (f["bytes"], f["name"]))
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with admin_browser(advice_served) as (_, page):
        page.goto(f"{advice_served.url}/superset/dashboard/write-placement/")
        shot = SCREENSHOTS / "write-placement-advice.png"
        assert _settled_screenshot(page, shot) == len(holding)
        holders = page.locator("[data-test='dashboard-component-chart-holder']")
        errors = holders.locator("[role='alert']")
        assert errors.count() == 0, errors.first.inner_text()
        assert holders.filter(has_text="No results").count() == 0
        table = holders.filter(has_text=FAMILIES)
        assert table.get_by_text(largest["name"], exact=True).count() == 1
        shots = {HOURS: "hours", MOUNTS: "mounts", COST: "cost", FAMILIES: "families"}
        for name, short in shots.items():
            chart = holders.filter(has_text=name)
            if name != FAMILIES:
                assert chart.locator("canvas, svg").count() >= 1, name
            # Each chart on its own, scrolled into view: a picture of it, not a blank.
            shot = SCREENSHOTS / f"write-placement-advice-{short}.png"
            chart.screenshot(path=str(shot))
            assert shot.stat().st_size > 10_000, name
