"""The assets as files: the import bundle and the normal form of exports (no Superset needed)."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
import yaml

from tapelens.dashboards.assets import (
    BUNDLE_ROOT,
    PLACEHOLDER_URI,
    build_bundle,
    chart_key,
    load_assets,
    normalise_export,
    write_assets,
)
from tapelens.dashboards.reader_role import ReaderConnection
from tapelens.errors import InputError

READER = ReaderConnection("db.example.org", 5433, "tapelens", "tapelens_reader", "s3cr3t-pw")
CHART_UUID = "0b2f9c1e-1111-4222-8333-444455556666"


def test_bundle_has_one_top_folder_and_no_password() -> None:
    bundle, passwords = build_bundle(READER)
    with zipfile.ZipFile(io.BytesIO(bundle)) as archive:
        names = archive.namelist()
        text = b"".join(archive.read(n) for n in names)
        database = yaml.safe_load(archive.read(f"{BUNDLE_ROOT}/databases/tapelens.yaml"))
        metadata = yaml.safe_load(archive.read(f"{BUNDLE_ROOT}/metadata.yaml"))
    assert {n.split("/")[0] for n in names} == {BUNDLE_ROOT}
    assert b"s3cr3t-pw" not in text
    assert passwords == {"databases/tapelens.yaml": "s3cr3t-pw"}
    assert database["sqlalchemy_uri"] == (
        "postgresql+psycopg2://tapelens_reader:XXXXXXXXXX@db.example.org:5433/tapelens"
    )
    assert metadata == {"type": "assets", "version": "1.0.0"}


def test_assets_in_git_name_only_marts_and_dashboard_views() -> None:
    assets = load_assets()
    schemas = {doc["schema"] for k, doc in assets.items() if k.startswith("datasets/")}
    assert schemas == {"tapelens_marts", "tapelens_dashboards"}
    charts = [doc for k, doc in assets.items() if k.startswith("charts/")]
    assert charts and all(json.loads(c["query_context"])["queries"] for c in charts)
    titles = {doc["dashboard_title"] for k, doc in assets.items() if k.startswith("dashboards/")}
    assert titles == {
        "Placement health",
        "Recall operations",
        "Recall campaigns",
        "Drives and media",
        "Write placement",
    }
    assert assets["databases/tapelens.yaml"]["sqlalchemy_uri"] == PLACEHOLDER_URI


def _export_zip(files: dict[str, object]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, doc in files.items():
            archive.writestr(f"dashboard_export_20260101T000000/{name}", yaml.safe_dump(doc))
    return buffer.getvalue()


def test_export_is_put_in_normal_form() -> None:
    chart = {
        "slice_name": "Mounts per day",
        "uuid": CHART_UUID,
        "params": {"datasource": "17__table", "slice_id": 42, "metrics": ["mounts"]},
        "query_context": json.dumps(
            {"datasource": {"id": 17, "type": "table"}, "form_data": {"slice_id": 42}}
        ),
    }
    dashboard = {
        "dashboard_title": "Recall operations",
        "uuid": "d0000000-0000-4000-8000-000000000001",
        "theme_uuid": None,
        "position": {
            "CHART-a": {"type": "CHART", "meta": {"chartId": 42, "uuid": CHART_UUID}},
        },
        "metadata": {
            "native_filter_configuration": [
                {"id": "NATIVE_FILTER-x", "chartsInScope": [42], "scope": {"excluded": [42]}}
            ],
            "chart_configuration": {"42": {"id": 42, "crossFilters": {"chartsInScope": [7]}}},
            "shared_label_colors": ["LTO-8"],
            "map_label_colors": {"LTO-8": "#123456"},
        },
    }
    database = {
        "database_name": "tapelens",
        "uuid": "d0000000-0000-4000-8000-000000000002",
        "sqlalchemy_uri": "postgresql+psycopg2://tapelens_reader:XXXXXXXXXX@10.1.2.3:5432/x",
    }
    files = normalise_export(
        _export_zip(
            {
                "metadata.yaml": {"version": "1.0.0", "type": "Dashboard", "timestamp": "now"},
                "charts/Mounts_per_day_42.yaml": chart,
                "dashboards/Recall_operations_3.yaml": dashboard,
                "databases/tapelens.yaml": database,
            }
        )
    )
    assert sorted(files) == [
        "charts/Mounts_per_day.yaml",
        "dashboards/Recall_operations.yaml",
        "databases/tapelens.yaml",
        "metadata.yaml",
    ]
    key = chart_key(CHART_UUID)
    out_chart = yaml.safe_load(files["charts/Mounts_per_day.yaml"])
    assert out_chart["params"] == {"metrics": ["mounts"]}
    assert json.loads(out_chart["query_context"]) == {
        "datasource": {"id": 0, "type": "table"},
        "form_data": {},
    }
    out_dash = yaml.safe_load(files["dashboards/Recall_operations.yaml"])
    assert out_dash["position"]["CHART-a"]["meta"]["chartId"] == key
    native = out_dash["metadata"]["native_filter_configuration"][0]
    assert native == {"id": "NATIVE_FILTER-x", "scope": {"excluded": [key]}}
    assert out_dash["metadata"]["chart_configuration"] == {
        str(key): {"id": key, "crossFilters": {}}
    }
    assert "shared_label_colors" not in out_dash["metadata"]
    assert "theme_uuid" not in out_dash
    assert yaml.safe_load(files["databases/tapelens.yaml"])["sqlalchemy_uri"] == PLACEHOLDER_URI
    assert "10.1.2.3" not in "".join(files.values())
    # the normal form is a fixed point
    again = normalise_export(
        _export_zip({k: yaml.safe_load(v) for k, v in files.items() if k != "metadata.yaml"})
    )
    assert again == files


def test_write_assets_replaces_asset_files_only(tmp_path: Path) -> None:
    (tmp_path / "charts").mkdir()
    (tmp_path / "charts" / "gone.yaml").write_text("slice_name: gone\n")
    (tmp_path / "superset-constraints.txt").write_text("pins\n")
    write_assets({"metadata.yaml": "version: 1.0.0\n", "charts/a.yaml": "x: 1\n"}, tmp_path)
    assert not (tmp_path / "charts" / "gone.yaml").exists()
    assert (tmp_path / "charts" / "a.yaml").read_text() == "x: 1\n"
    assert (tmp_path / "superset-constraints.txt").read_text() == "pins\n"


def test_bad_yaml_names_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "metadata.yaml").write_text("version: 1.0.0\n")
    (tmp_path / "charts").mkdir()
    (tmp_path / "charts" / "bad.yaml").write_text("slice_name: a\nparams: [1, 2\n")
    with pytest.raises(InputError, match=r"bad\.yaml:\d+: not valid YAML"):
        load_assets(tmp_path)


def test_every_chart_is_described_and_every_dashboard_opens_with_a_header_and_tiles() -> None:
    assets = load_assets()
    charts = {doc["uuid"]: doc for k, doc in assets.items() if k.startswith("charts/")}
    for doc in charts.values():
        assert doc.get("description") and len(doc["description"]) > 20, doc["slice_name"]
    for key, doc in assets.items():
        if not key.startswith("dashboards/"):
            continue
        position = doc["position"]
        rows = position["GRID_ID"]["children"]
        first = [position[c] for c in position[rows[0]]["children"]]
        assert [c["type"] for c in first] == ["MARKDOWN"], key
        assert first[0]["meta"]["code"].startswith(f"**{doc['dashboard_title']}**")
        tiles = [charts[position[c]["meta"]["uuid"]] for c in position[rows[1]]["children"]]
        assert sum(t["viz_type"] == "big_number_total" for t in tiles) >= 3, key
        on_board = [
            charts[n["meta"]["uuid"]]
            for n in position.values()
            if isinstance(n, dict) and n.get("type") == "CHART"
        ]
        assert all(c["slice_name"] for c in on_board)


def test_no_chart_groups_by_day_over_the_whole_history() -> None:
    """Mounts and failures come in campaigns: daily bars over years are unreadable."""
    for key, doc in load_assets().items():
        if key.startswith("charts/") and doc["viz_type"] == "echarts_timeseries_bar":
            assert doc["params"].get("time_grain_sqla") in (None, "P1W", "P1M"), key
