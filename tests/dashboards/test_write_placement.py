"""The Write placement dashboard: its assets hold together, its datasets are the hint marts as
dbt builds them, and its figures are those of the hints loaded.

That it imports into a real Superset, that every chart's query returns rows on the dashboard
site (which has collocation hints) and that the page renders in chromium without a chart error
is checked by tests/dashboards/test_superset.py, which walks every chart and dashboard of the
bundle.
"""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest
from psycopg import sql

from tapelens.dashboards.assets import chart_key, load_assets
from tests.dashboards.test_superset import site_dsn  # noqa: F401 - the fixture
from tests.fixtures.dashboard_site import DATASETS

TITLE = "Write placement"
HINT_MARTS = {"fct_hint_coverage", "fct_hint_groups", "fct_hint_recall_groups"}


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


def test_charts_read_the_hint_marts_and_name_what_their_datasets_have() -> None:
    board, charts, datasets = _board()
    assert len(charts) >= 6
    assert {datasets[c["dataset_uuid"]]["table_name"] for c in charts} == HINT_MARTS
    for chart in charts:
        dataset = datasets[chart["dataset_uuid"]]
        assert dataset["schema"] == "tapelens_marts"
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


@pytest.mark.slow
def test_datasets_are_the_marts_and_every_metric_has_a_value(site_dsn: str) -> None:  # noqa: F811
    board, charts, datasets = _board()
    with psycopg.connect(site_dsn) as conn:
        for dataset in {c["dataset_uuid"]: datasets[c["dataset_uuid"]] for c in charts}.values():
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
