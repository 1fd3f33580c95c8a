"""A real Superset, started once for this module on a small site's marts.

Superset's virtualenv comes from $TAPELENS_HOME/superset/venv (built on first use: minutes, once);
the instance itself (config, secret key, metadata database, admin) lives in a temporary folder.
Browser checks use Debian's chromium (scripts/install-browser), never a downloaded browser.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import time
import urllib.parse
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner
from psycopg import sql

from tapelens.analysis.recall.datasets.stored import write_placement_costs
from tapelens.cli import cli
from tapelens.dashboards.assets import chart_key, load_assets
from tapelens.dashboards.ops import Served, reader_password, serve
from tapelens.dashboards.reader_role import (
    READER_ROLE,
    VIEWS_DIR,
    ReaderConnection,
    prepare_reader,
)
from tapelens.dashboards.superset.api import SupersetClient
from tapelens.dashboards.superset.install import (
    ADMIN_USER,
    ASSETS_DIR,
    VIEWER_ROLE,
    VIEWER_USER,
    DashboardsError,
    SupersetHome,
    viewer_password,
)
from tapelens.dashboards.superset.server import stop
from tapelens.dbt_runs import build
from tapelens.settings import default_home
from tests.conftest import _clone_template, with_dbname
from tests.fixtures.dashboard_site import PLAN_NAME, insert_site

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"
CHART_WAIT_S = 180.0
SAMPLE_SECRET_KEYS = {
    "CHANGE_ME_TO_A_COMPLEX_RANDOM_SECRET",
    "\2\1thisismyscretkey\1\2\\e\\y\\y\\h",
}


@pytest.fixture(scope="module")
def site_dsn(server_dsn: str, template_dsn: str) -> Iterator[str]:
    """A migrated database of this module's own, with the small site and its marts built."""
    name = f"d_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        _clone_template(conn, name)
    dsn = with_dbname(server_dsn, name)
    try:
        with psycopg.connect(dsn) as conn:
            insert_site(conn)
        build(dsn, exclude=["resource_type:test", "resource_type:unit_test"])
        with psycopg.connect(dsn) as conn:
            write_placement_costs(conn)  # what `marts build` does after dbt
            _record_loads(conn)
        yield dsn
    finally:
        with psycopg.connect(server_dsn, autocommit=True) as conn:
            conn.execute(
                sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name))
            )


# The loads the site's rows came from, as the loader records them in tapelens.ingest_runs
# (ingest/load/runs.py): kind, format, source, file, when the load committed in 2022, UTC
# (None: still running), its status, and its share of the kind's rows and its refused lines.
# The files one command loads commit together, with one finished_at (the catalog dump in two
# parts, the two PVL logs); an older load, a failed one and one still running are kept too,
# and the transfers come from two sources.
SITE_LOADS = [
    ("catalog", "hpss-lsp", "site", "ls-P.20220201.txt.gz", "02-01 06:00", "loaded", 1.0, 0),
    ("catalog", "hpss-lsp", "site", "ls-P.20220301.1.gz", "03-01 06:00", "loaded", 0.5, 2),
    ("catalog", "hpss-lsp", "site", "ls-P.20220301.2.gz", "03-01 06:00", "loaded", 0.5, 1),
    ("catalog", "hpss-lsp", "site", "ls-P.20220315.txt.gz", "03-15 06:00", "failed", 0, 0),
    ("tapes", "csv", "site", "inventory.csv", "03-01 05:00", "loaded", 1.0, 0),
    ("mounts", "hpss-pvl", "site", "pvl.log-20220201", "03-02 07:00", "loaded", 0.4, 0),
    ("mounts", "hpss-pvl", "site", "pvl.log-20220301", "03-02 07:00", "loaded", 0.6, 3),
    ("transfers", "staging-csv", "site", "staging-2022-03.csv", "03-02 07:05", "loaded", 1.0, 4),
    ("transfers", "staging-csv", "site", "staging-2022-04.csv", None, "running", 0, 0),
    ("transfers", "dcache-billing", "dcache", "billing-2022.01.31", "02-01 00:30", "loaded", 0, 0),
    ("hints", "fts-files", "fts", "t_file.tsv", "03-03 12:00", "loaded", 1.0, 0),
]
SITE_TABLES = {
    "catalog": "tape_files",
    "tapes": "tapes",
    "mounts": "mounts",
    "transfers": "transfers",
    "hints": "write_hints",
}


def _record_loads(conn: psycopg.Connection) -> None:
    """The site's loads in tapelens.ingest_runs, in the order they ran."""
    for kind, fmt, source, path, finished, status, share, rejects in SITE_LOADS:
        table = sql.Identifier("tapelens", SITE_TABLES[kind])
        (count,) = conn.execute(sql.SQL("select count(*) from {}").format(table)).fetchone() or (0,)
        at = None if finished is None else f"2022-{finished}+00"
        conn.execute(
            "insert into tapelens.ingest_runs (kind, format, source, path, sha256, status,"
            " started_at, finished_at, rows, rejects) values (%s, %s, %s, %s, md5(%s), %s,"
            " coalesce(%s::timestamptz, '2022-04-01 00:00+00') - interval '5 minutes', %s, %s, %s)",
            [kind, fmt, source, path, path, status, at, at, round(count * share), rejects],
        )


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> SupersetHome:
    tapelens_home = Path(os.environ.get("TAPELENS_HOME") or default_home())
    shared_venv = SupersetHome.under(tapelens_home).venv
    return SupersetHome(root=tmp_path_factory.mktemp("superset"), venv=shared_venv)


@pytest.fixture(scope="module")
def served(home: SupersetHome, site_dsn: str) -> Iterator[Served]:
    try:
        yield serve(home, site_dsn, progress=lambda message: print(message, flush=True))
    finally:
        stop(home)


@pytest.fixture(scope="module")
def client(served: Served, home: SupersetHome) -> SupersetClient:
    api = SupersetClient(served.url)
    assert served.generated_password
    api.login(ADMIN_USER, served.generated_password)
    return api


def test_every_chart_returns_rows(client: SupersetClient) -> None:
    charts = client.charts()
    in_git = [k for k in load_assets() if k.startswith("charts/")]
    assert len(charts) == len(in_git) >= 15
    empty = []
    for chart in charts:
        answer = client.chart_data(chart["id"])
        result = answer["result"][0]
        assert not result.get("error"), (chart["slice_name"], result.get("error"))
        if not result["rowcount"]:
            empty.append(chart["slice_name"])
    assert not empty


# The charts over the per-day aggregates of the gaps and the reads, and the figures they showed
# when they read the copies and reads themselves (fct_file_gaps, fct_transfer_rates): by
# chart, the chart's columns and metric as SQL over those marts (`where` for the filters), the
# time column the dashboards' time range applied to, and the native filters in the chart's
# scope (the read rates have no experiment).
AGGREGATED_CHARTS = {
    "Gap histogram (counted gaps, posdiff 1-99)": (
        "select posdiff, dataset_type, count(*) as copies from tapelens_marts.fct_file_gaps"
        " where gap_class = 'counted' and {where} group by 1, 2",
        "written_at",
        ("dataset_type", "experiment", "media_type"),
    ),
    "Read rate per day": (
        "select extract(epoch from date_trunc('day', started_at at time zone 'UTC'))"
        " * 1000 as read_day, media_type, sum(size_bytes) / 1e6 / nullif(sum(duration_s), 0)"
        " as read_rate_mb_s from tapelens_marts.fct_transfer_rates where {where} group by 1, 2",
        "started_at",
        ("dataset_type", "media_type"),
    ),
    "Read rate by file size": (
        "select case when size_bytes is null then 'unknown' when size_bytes < 1e8 then"
        " '1: < 0.1 GB' when size_bytes < 1e9 then '2: 0.1-1 GB' when size_bytes < 4e9 then"
        " '3: 1-4 GB' when size_bytes < 1e10 then '4: 4-10 GB' else '5: >= 10 GB' end"
        " as size_class, media_type, sum(size_bytes) / 1e6 / nullif(sum(duration_s), 0)"
        " as read_rate_mb_s from tapelens_marts.fct_transfer_rates where {where} group by 1, 2",
        "started_at",
        ("dataset_type", "media_type"),
    ),
    "Read rate against the gap at read time": (
        "select read_posdiff, media_type, sum(size_bytes) / 1e6 / nullif(sum(duration_s), 0)"
        " as read_rate_mb_s from tapelens_marts.fct_transfer_rates"
        " where read_gap_class = 'counted' and {where} group by 1, 2",
        "started_at",
        ("dataset_type", "media_type"),
    ),
}
# Values of the filters, as Superset adds them to a chart's query, and the time range by the
# time column it applies to (part of the site's writes, and of its reads); its bounds are
# midnights UTC, so that a day of the aggregates is wholly in or out of it.
CHART_FILTER_VALUES = {
    "dataset_type": ["AOD", "RAW"],
    "experiment": ["atlas"],
    "media_type": ["LTO-8", "LTO-9"],
}
CHART_TIME_RANGES = {
    "written_at": ("2019-09-01", "2020-12-01"),
    "started_at": ("2022-01-05", "2022-01-25"),
}


def _chart_rows(answer: dict[str, Any]) -> dict[tuple[object, ...], float]:
    """A chart data answer's rows: its metric (the last column) by the values of the others."""
    result = answer["result"][0]
    assert not result.get("error"), result.get("error")
    metric = result["colnames"][-1]
    return {
        tuple(v for k, v in sorted(row.items()) if k != metric): row[metric]
        for row in result["data"]
    }


def _sql_rows(dsn: str, query: str) -> dict[tuple[object, ...], float]:
    """The rows of query the same way: its last column by the values of the others."""
    with psycopg.connect(dsn) as conn:
        cur = conn.execute(query.encode())
        names = [d.name for d in cur.description or []]
        found = {}
        for values in cur.fetchall():
            row = dict(zip(names, values, strict=True))
            metric = row.pop(names[-1])
            key = tuple(int(v) if isinstance(v, Decimal) else v for _, v in sorted(row.items()))
            found[key] = None if metric is None else float(metric)
        return found


def _assert_same_figures(
    got: dict[tuple[object, ...], float], expected: dict[tuple[object, ...], float], what: str
) -> None:
    assert expected, f"{what}: the site has no rows for it"
    assert set(got) == set(expected), what
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, rel=1e-9), (what, key)


def test_the_gap_and_read_rate_charts_show_the_figures_of_the_copies_and_reads(
    client: SupersetClient, site_dsn: str
) -> None:
    """The gap histogram and the three read rate charts read the per-day aggregates
    (agg_gap_histogram, agg_read_rates_daily, agg_read_rates_by_gap), which a Spark build
    copies to the dashboards' database: they show the figures they showed over the copies and
    reads of fct_file_gaps and fct_transfer_rates, as saved and with the dashboards' filters
    set."""
    charts = {c["slice_name"]: c["id"] for c in client.charts()}
    for name, (query, time_column, scope) in AGGREGATED_CHARTS.items():
        start, end = CHART_TIME_RANGES[time_column]
        as_saved = _chart_rows(client.chart_data(charts[name]))
        _assert_same_figures(as_saved, _sql_rows(site_dsn, query.format(where="true")), name)

        # The chart's saved query with the filters set, as the dashboard sends it.
        context = json.loads(
            client.get_json(f"/api/v1/chart/{charts[name]}")["result"]["query_context"]
        )
        added = [{"col": c, "op": "IN", "val": CHART_FILTER_VALUES[c]} for c in scope]
        for q in context["queries"]:
            q["filters"] = [
                {**f, "val": f"{start} : {end}"} if f["op"] == "TEMPORAL_RANGE" else f
                for f in q["filters"]
            ] + added
        filtered = _chart_rows(client.send_json("POST", "/api/v1/chart/data", context))
        where = " and ".join(
            [f"{time_column} >= '{start}T00:00:00Z' and {time_column} < '{end}T00:00:00Z'"]
            + [f"{c} in ({', '.join(repr(v) for v in CHART_FILTER_VALUES[c])})" for c in scope]
        )
        expected = _sql_rows(site_dsn, query.format(where=where))
        _assert_same_figures(filtered, expected, f"{name}, filtered")
        assert len(filtered) < len(as_saved), name  # the filters took effect


def _instant(value: object) -> datetime:
    """A time as Superset's chart data gives it (epoch milliseconds, or ISO text)."""
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value / 1000, UTC)
    return datetime.fromisoformat(str(value)).astimezone(UTC)


def test_the_data_as_of_chart_shows_each_inputs_newest_load(
    client: SupersetClient, site_dsn: str
) -> None:
    """The "Data as of" chart shows per kind of input and source its newest successful load:
    the runs of tapelens.ingest_runs that committed last, the files of one command together
    (rows and refused lines summed, the first file named), failed and running loads left out,
    and nothing of a Spark copy on a database loaded on PostgreSQL."""
    with psycopg.connect(site_dsn) as conn:
        runs = conn.execute(
            "select kind, source, format, path, finished_at, rows, rejects"
            " from tapelens.ingest_runs where status = 'loaded' order by run_id"
        ).fetchall()
    newest: dict[tuple[str, str], datetime] = {}
    for kind, source, _, _, finished_at, _, _ in runs:
        newest[kind, source] = max(finished_at, newest.get((kind, source), finished_at))
    expected = {}
    for key, finished_at in newest.items():
        load = [r for r in runs if (r[0], r[1]) == key and r[4] == finished_at]
        expected[key] = {
            "format": load[0][2],
            "path": load[0][3],
            "files": len(load),
            "as_of": finished_at,
            "rows": sum(r[5] for r in load),
            "rejects": sum(r[6] for r in load),
        }
    assert any(load["files"] == 2 for load in expected.values())  # a load of two files

    charts = {c["slice_name"]: c["id"] for c in client.charts()}
    result = client.chart_data(charts["Data as of"])["result"][0]
    assert not result.get("error"), result.get("error")
    got = {
        (row["kind"], row["source"]): {
            "format": row["format"],
            "path": row["path"],
            "files": row["files"],
            "as_of": _instant(row["as_of"]),
            "rows": row["rows"],
            "rejects": row["rejects"],
        }
        for row in result["data"]
    }
    assert len(got) == len(result["data"])
    assert got == expected
    assert all(
        row["engine"] == "PostgreSQL" and row["published_at"] is None for row in result["data"]
    )
    shown = [_instant(row["as_of"]) for row in result["data"]]
    assert shown == sorted(shown, reverse=True)  # newest first, as the chart orders it

    # On the dashboards whose figures the loads make, none of their filters applied to it.
    assets = load_assets()
    chart_uuid = assets["charts/Data_as_of.yaml"]["uuid"]
    boards = {d["dashboard_title"]: d for k, d in assets.items() if k.startswith("dashboards/")}
    for title in ("Placement health", "Recall operations", "Drives and media", "Recall campaigns"):
        on_board = [
            n["meta"]["uuid"]
            for n in boards[title]["position"].values()
            if isinstance(n, dict) and n.get("type") == "CHART"
        ]
        assert chart_uuid in on_board, title
        for native in boards[title]["metadata"]["native_filter_configuration"]:
            assert chart_key(chart_uuid) in native["scope"]["excluded"], (title, native["name"])


def test_dashboards_in_a_real_browser(served: Served, client: SupersetClient) -> None:
    dashboards = sorted(client.dashboards(), key=lambda d: d["slug"])
    assert [d["slug"] for d in dashboards] == [
        "drives-and-media",
        "placement-health",
        "recall-campaigns",
        "recall-operations",
        "write-placement",
    ]
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with admin_browser(served) as (browser, page):
        for dashboard in dashboards:
            page.goto(f"{served.url}/superset/dashboard/{dashboard['slug']}/")
            shot = SCREENSHOTS / f"{dashboard['slug']}.png"
            holders = _settled_screenshot(page, shot)
            errors = page.locator(
                "[data-test='dashboard-component-chart-holder'] [role='alert'], .ant-alert-error"
            )
            assert errors.count() == 0, (dashboard["slug"], errors.first.inner_text())
            empty = page.locator(
                "[data-test='dashboard-component-chart-holder']:has-text('No results')"
            )
            assert empty.count() == 0, (dashboard["slug"], empty.first.inner_text())
            assert holders >= 3
            assert shot.stat().st_size > 30_000
        # Every native filter set at once: each applies only to charts that have its column.
        for dashboard in dashboards:
            page.goto(
                f"{served.url}/superset/dashboard/{dashboard['slug']}/"
                f"?native_filters={_filter_state(dashboard['uuid'])}"
            )
            _settled_screenshot(page, SCREENSHOTS / f"{dashboard['slug']}-filtered.png")
            errors = page.locator("[data-test='dashboard-component-chart-holder'] [role='alert']")
            assert errors.count() == 0, (dashboard["slug"], errors.first.inner_text())
        # The read-only viewer sees the dashboard, with no way to edit it.
        viewer = browser.new_context(viewport={"width": 1600, "height": 1200}).new_page()
        log_in(viewer, served.url, VIEWER_USER, str(served.generated_viewer_password))
        viewer.goto(f"{served.url}/superset/dashboard/drives-and-media/")
        holders = _settled_screenshot(viewer, SCREENSHOTS / "drives-and-media-viewer.png")
        assert holders >= 3
        assert viewer.get_by_role("button", name="Edit dashboard").count() == 0
        assert viewer.get_by_text("SQL", exact=True).count() == 0  # no SQL menu


@contextmanager
def admin_browser(served: Served) -> Iterator[tuple[Any, Any]]:
    """Debian's chromium, headless, with a page logged in to `served` as its admin."""
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} missing: run scripts/install-browser")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1200})
            log_in(page, served.url, ADMIN_USER, str(served.generated_password))
            yield browser, page
        finally:
            browser.close()


def log_in(page: Any, url: str, user: str, password: str) -> None:
    """Log in to the Superset at url through its login page."""
    page.goto(f"{url}/login/")
    page.fill("input#username", user)
    page.fill("input#password", password)
    page.keyboard.press("Enter")
    page.wait_for_url(lambda at: "/login" not in at, timeout=60_000)


FILTER_VALUES = {
    "drive": "D4",
    "dataset_type": "AOD",
    "experiment": "atlas",
    "media_type": "LTO-8",
    "plan_name": PLAN_NAME,
}
TIME_RANGE = "2020-01-01 : 2023-01-01"


def _filter_state(dashboard_uuid: str) -> str:
    """The rison `native_filters` URL parameter setting every filter of the dashboard."""
    doc = next(
        d
        for k, d in load_assets().items()
        if k.startswith("dashboards/") and d["uuid"] == dashboard_uuid
    )
    states = []
    for native in doc["metadata"]["native_filter_configuration"]:
        fid = native["id"]
        if native["filterType"] == "filter_time":
            extra = f"(time_range:'{TIME_RANGE}')"
            value = f"'{TIME_RANGE}'"
        else:
            column = native["targets"][0]["column"]["name"]
            value = f"!('{FILTER_VALUES[column]}')"
            extra = f"(filters:!((col:{column},op:IN,val:{value})))"
        states.append(f"{fid}:(extraFormData:{extra},filterState:(value:{value}),id:{fid})")
    return urllib.parse.quote(f"({','.join(states)})")


_RENDERED = """() => {
    const holders = [...document.querySelectorAll(
        "[data-test='dashboard-component-chart-holder']")];
    const done = holders.filter(h => h.querySelector(
        "canvas, svg, table, [role='alert'], strong"));
    const loading = document.querySelectorAll("[data-test='loading-indicator']").length;
    return [holders.length, done.length, loading];
}"""


def _settled_screenshot(page: Any, shot: Path) -> int:
    """Wait until every chart of the dashboard shows a plot, a table or an error, take the
    screenshot, and make sure the charts were still all there when it was taken (the dashboard
    re-renders once its filters load)."""
    deadline = time.monotonic() + CHART_WAIT_S
    seen = (0, 0, 0)
    while time.monotonic() < deadline:
        total, done, loading = seen = tuple(page.evaluate(_RENDERED))
        if total and done == total and not loading:
            time.sleep(2.0)
            page.screenshot(path=str(shot), full_page=True)
            if tuple(page.evaluate(_RENDERED)) == (total, total, 0):
                return int(total)
        time.sleep(1.0)
    raise AssertionError(f"charts rendered, of charts, loading: {seen} after {CHART_WAIT_S} s")


def test_reader_role_reads_marts_only(served: Served, home: SupersetHome, site_dsn: str) -> None:
    reader = prepare_reader(site_dsn, reader_password(home))
    with _connect(reader) as conn:
        row = conn.execute("select count(*) from tapelens_marts.fct_file_gaps").fetchone()
        assert row and row[0] > 0
        row = conn.execute("select count(*) from tapelens_dashboards.recall_plan_files").fetchone()
        assert row and row[0] > 0
    statements = [
        "insert into tapelens_marts.dim_datasets (dataset) values ('x')",
        "update tapelens_marts.dim_datasets set files = 0",
        "delete from tapelens_marts.fct_file_gaps",
        "select count(*) from tapelens.tape_files",
        "select count(*) from tapelens.transfers",
        "select count(*) from tapelens.recall_plans",
        "set transaction read write; delete from tapelens_marts.fct_file_gaps",
        "create table tapelens_marts.intruder (x int)",
    ]
    for statement in statements:
        with _connect(reader) as conn, pytest.raises(psycopg.Error) as refused:
            conn.execute(statement)
        assert isinstance(
            refused.value,
            psycopg.errors.InsufficientPrivilege | psycopg.errors.ReadOnlySqlTransaction,
        ), statement


def _connect(reader: ReaderConnection) -> psycopg.Connection:
    return psycopg.connect(
        host=reader.host,
        port=reader.port,
        dbname=reader.dbname,
        user=reader.user,
        password=reader.password,
    )


def test_no_default_admin_password_and_a_secret_key_of_its_own(
    served: Served, home: SupersetHome
) -> None:
    for guess in ("admin", "general", "password"):
        with pytest.raises(DashboardsError, match="refused the login"):
            SupersetClient(served.url).login(ADMIN_USER, guess)
    assert served.generated_password and len(served.generated_password) >= 20
    for private in (home.secret_key_path, home.admin_password_path, home.config_path):
        assert stat.S_IMODE(private.stat().st_mode) == 0o600, private
    # The key Superset runs with, read the way Superset reads it, is not a sample key.
    check = (
        "import superset_config as c, sys; "
        f"sys.exit(0 if len(c.SECRET_KEY) >= 40 and c.SECRET_KEY not in {SAMPLE_SECRET_KEYS!r} "
        "else 1)"
    )
    done = subprocess.run(
        [str(home.bin / "python"), "-c", check], cwd=home.root, env=home.env(), check=False
    )
    assert done.returncode == 0


def test_export_reproduces_the_yaml_in_git(served: Served, tmp_path: Path) -> None:
    out = tmp_path / "exported"
    shutil.copytree(VIEWS_DIR, out / "views")  # other files are left alone
    result = CliRunner().invoke(
        cli,
        ["dashboards", "export", "--url", served.url, "-o", str(out)],
        env={"TAPELENS_SUPERSET_PASSWORD": str(served.generated_password)},
    )
    assert result.exit_code == 0, result.output
    assert str(served.generated_password) not in result.output
    exported = {p.relative_to(out).as_posix() for p in out.rglob("*.yaml")}
    in_git = {p.relative_to(ASSETS_DIR).as_posix() for p in ASSETS_DIR.rglob("*.yaml")}
    assert exported == in_git
    for relative in sorted(in_git):
        assert (out / relative).read_text() == (ASSETS_DIR / relative).read_text(), relative
    assert (out / "views").is_dir()
    database = (out / "databases" / "tapelens.yaml").read_text()
    assert "XXXXXXXXXX" in database and READER_ROLE in database


def test_the_viewer_sees_the_dashboards_and_edits_nothing(
    served: Served, home: SupersetHome, client: SupersetClient
) -> None:
    assert served.viewer == VIEWER_USER
    assert served.generated_viewer_password == viewer_password(home)
    assert len(served.generated_viewer_password) >= 20
    assert stat.S_IMODE(home.viewer_password_path.stat().st_mode) == 0o600
    viewer = SupersetClient(served.url)
    viewer.login(VIEWER_USER, served.generated_viewer_password)
    seen = sorted(d["slug"] for d in viewer.dashboards())
    assert seen == sorted(d["slug"] for d in client.dashboards())
    charts = viewer.charts()
    assert len(charts) == len(client.charts())
    answer = viewer.chart_data(charts[0]["id"])
    assert not answer["result"][0].get("error")
    me = viewer.get_json("/api/v1/me/roles/")["result"]
    assert list(me["roles"]) == [VIEWER_ROLE]
    refused = [
        ("PUT", f"/api/v1/chart/{charts[0]['id']}", {"slice_name": "renamed"}),
        ("DELETE", f"/api/v1/chart/{charts[0]['id']}", None),
        (
            "POST",
            "/api/v1/chart/",
            {"slice_name": "new", "datasource_id": 1, "datasource_type": "table"},
        ),
        ("PUT", f"/api/v1/dashboard/{viewer.dashboards()[0]['id']}", {"dashboard_title": "x"}),
        ("POST", "/api/v1/sqllab/execute/", {"database_id": 1, "sql": "select 1"}),
        ("POST", "/api/v1/database/", {"database_name": "x", "sqlalchemy_uri": "sqlite://"}),
    ]
    for method, path, payload in refused:
        with pytest.raises(DashboardsError, match=r"answered 40[13]") as done:
            viewer.send_json(method, path, payload or {})
        assert "answered 40" in str(done.value), (method, path)
    with pytest.raises(DashboardsError, match=r"answered 40[13]"):
        viewer.get_json("/api/v1/query/")


def test_superset_files_are_owner_only_and_telemetry_is_off(
    served: Served, home: SupersetHome
) -> None:
    assert stat.S_IMODE(home.root.stat().st_mode) == 0o700
    for private in (
        home.metadata_db,
        home.log_path,
        home.viewer_password_path,
        home.root / "reader.password",
    ):
        assert stat.S_IMODE(private.stat().st_mode) == 0o600, private
    # The settings Superset runs with, read as Superset reads them.
    check = (
        "import superset_config as c, sys; "
        "sys.exit(0 if c.SCARF_ANALYTICS is False and c.PUBLIC_ROLE_LIKE is None "
        "and not c.AUTH_USER_REGISTRATION and c.MAPBOX_API_KEY == '' else 1)"
    )
    done = subprocess.run(
        [str(home.bin / "python"), "-c", check], cwd=home.root, env=home.env(), check=False
    )
    assert done.returncode == 0
    assert home.env()["SCARF_NO_ANALYTICS"] == "true"
    assert "SCARF_ANALYTICS = False" in home.config_path.read_text()


def test_reader_role_has_a_statement_timeout_and_one_database(
    served: Served, home: SupersetHome, site_dsn: str, server_dsn: str
) -> None:
    reader = prepare_reader(site_dsn, reader_password(home))
    with _connect(reader) as conn:
        row = conn.execute("show statement_timeout").fetchone()
        assert row and row[0] == "1min"
        row = conn.execute("show default_transaction_read_only").fetchone()
        assert row and row[0] == "on"
    with psycopg.connect(server_dsn) as conn:
        (maintenance,) = conn.execute("select current_database()").fetchone() or ("",)
    assert maintenance and maintenance != reader.dbname
    with pytest.raises(psycopg.OperationalError, match="permission denied"):
        psycopg.connect(
            host=reader.host,
            port=reader.port,
            dbname=maintenance,
            user=reader.user,
            password=reader.password,
        )
