"""Superset assets as files: the import bundle made from dashboards/bundle/, and exports back.

dashboards/bundle/ holds Superset's own export layout (metadata.yaml, databases/, datasets/,
charts/, dashboards/) in a normal form, so that an export of what was imported gives the same files:

- keys sorted, long strings (SQL, a chart's query context as indented JSON) as literal blocks,
  dataset columns and metrics sorted by name;
- nothing that one Superset instance numbers its own way: chart ids inside a dashboard are
  replaced by a number derived from the chart's UUID (the importer maps them back), dataset ids
  in charts by 0 (the importer sets them), file names come from titles without ids;
- no secret and no address: the database URI is a placeholder, filled in by `build_bundle`
  with the read-only role's URI (its password masked; the password travels apart);
- nothing the UI derives by itself: colours assigned on display, a filter's chartsInScope
  (Superset recomputes it from the filter's scope, which is kept).
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from tapelens.dashboards.reader_role import ReaderConnection
from tapelens.dashboards.superset.install import ASSETS_DIR
from tapelens.errors import InputError

ASSET_FOLDERS = ("databases", "datasets", "charts", "dashboards")
BUNDLE_ROOT = "tapelens_dashboards"
PLACEHOLDER_URI = "postgresql+psycopg2://tapelens_reader:XXXXXXXXXX@localhost:5432/tapelens"
METADATA = {"version": "1.0.0", "type": "assets"}
# Dashboard metadata the UI fills in on its own when a dashboard is shown.
DERIVED_METADATA = ("map_label_colors", "shared_label_colors", "color_scheme_domain")
# Chart parameters that name one instance's objects.
INSTANCE_PARAMS = ("slice_id", "dashboards", "datasource")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


# -- YAML in a stable form ---------------------------------------------------------------------


class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    if style:
        # Literal blocks cannot keep trailing spaces on a line; such text stays quoted.
        lines = value.split("\n")
        if any(line != line.rstrip() for line in lines):
            style = None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def dump_yaml(doc: Any) -> str:
    return yaml.dump(
        doc, Dumper=_Dumper, sort_keys=True, allow_unicode=True, default_flow_style=False, width=100
    )


def load_assets(directory: Path = ASSETS_DIR) -> dict[str, dict[str, Any]]:
    """Every asset file under directory, by its path relative to it (metadata.yaml included)."""
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(directory.rglob("*.yaml")):
        relative = path.relative_to(directory).as_posix()
        if relative != "metadata.yaml" and relative.split("/")[0] not in ASSET_FOLDERS:
            continue
        try:
            doc = yaml.safe_load(path.read_text())
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = mark.line + 1 if mark is not None else 0
            raise InputError(f"{path}:{line}: not valid YAML") from None
        if not isinstance(doc, dict):
            raise InputError(f"{path}:1: expected a mapping")
        found[relative] = doc
    if "metadata.yaml" not in found:
        raise InputError(f"{directory}: no metadata.yaml (not a Superset assets folder)")
    return found


# -- the import bundle -------------------------------------------------------------------------


def build_bundle(
    reader: ReaderConnection, directory: Path = ASSETS_DIR
) -> tuple[bytes, dict[str, str]]:
    """The zip to POST to /api/v1/assets/import/, and its `passwords` field.

    Every database entry gets the reader's URI with the password masked; the password itself
    is only in the returned mapping, never in the zip.
    """
    assets = load_assets(directory)
    passwords: dict[str, str] = {}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as bundle:
        for relative, doc in assets.items():
            if relative == "metadata.yaml":
                doc = dict(METADATA)
            elif relative.startswith("databases/"):
                doc = {**doc, "sqlalchemy_uri": reader.sqlalchemy_uri(masked=True)}
                passwords[relative] = reader.password
            bundle.writestr(f"{BUNDLE_ROOT}/{relative}", dump_yaml(doc))
    return buffer.getvalue(), passwords


def asset_uuids(folder: str, directory: Path = ASSETS_DIR) -> set[str]:
    """UUIDs of the assets of one folder (e.g. the dashboards) under directory."""
    root = directory / folder
    if not root.is_dir():
        return set()
    uuids = set()
    for path in root.rglob("*.yaml"):
        doc = yaml.safe_load(path.read_text())
        if isinstance(doc, dict) and doc.get("uuid"):
            uuids.add(str(doc["uuid"]))
    return uuids


# -- exports in normal form --------------------------------------------------------------------


def chart_key(uuid: str) -> int:
    """A chart's number inside dashboard files: derived from its UUID, so it is the same on
    every Superset (the importer replaces it with the instance's own chart id)."""
    return int(uuid.replace("-", "")[:7], 16)


def normalise_export(bundle: bytes) -> dict[str, str]:
    """Superset's export zip as files in normal form, by path relative to dashboards/."""
    docs = _read_bundle(bundle)
    out: dict[str, str] = {"metadata.yaml": dump_yaml(dict(METADATA))}
    names: dict[str, int] = {}
    for relative, doc in sorted(docs.items()):
        folder = relative.split("/")[0]
        if folder == "databases":
            doc = _database(doc)
            path = f"databases/{_safe(doc['database_name'])}.yaml"
        elif folder == "datasets":
            database = relative.split("/")[1]
            doc = _dataset(doc)
            path = f"datasets/{database}/{_safe(doc['table_name'])}.yaml"
        elif folder == "charts":
            doc = _chart(doc)
            path = f"charts/{_safe(doc['slice_name'])}.yaml"
        elif folder == "dashboards":
            doc = _dashboard(doc)
            path = f"dashboards/{_safe(doc['dashboard_title'])}.yaml"
        else:
            continue  # metadata, themes, tags: written by tapelens or not part of the assets
        names[path] = names.get(path, 0) + 1
        if names[path] > 1:
            path = path[: -len(".yaml")] + f"_{str(doc['uuid'])[:8]}.yaml"
        out[path] = dump_yaml(doc)
    return out


def write_assets(files: Mapping[str, str], directory: Path) -> list[Path]:
    """Replace the asset files under directory by `files` (other files there are kept)."""
    directory.mkdir(parents=True, exist_ok=True)
    for folder in ASSET_FOLDERS:
        for stale in sorted((directory / folder).rglob("*.yaml")):
            stale.unlink()
    written = []
    for relative, text in sorted(files.items()):
        target = directory / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        written.append(target)
    for folder in ASSET_FOLDERS:
        root = directory / folder
        for sub in sorted(root.rglob("*"), reverse=True):
            if sub.is_dir() and not any(sub.iterdir()):
                sub.rmdir()
    return written


def _read_bundle(bundle: bytes) -> dict[str, dict[str, Any]]:
    docs: dict[str, dict[str, Any]] = {}
    try:
        archive = zipfile.ZipFile(io.BytesIO(bundle))
    except zipfile.BadZipFile:
        raise InputError("Superset's export is not a zip file") from None
    with archive:
        for name in archive.namelist():
            if not name.endswith(".yaml") or "/" not in name:
                continue
            relative = name.split("/", 1)[1]  # below the bundle's top folder
            doc = yaml.safe_load(archive.read(name))
            if isinstance(doc, dict):
                docs[relative] = doc
    return docs


def _safe(name: str) -> str:
    return _UNSAFE.sub("_", name).strip("_") or "unnamed"


def _database(doc: dict[str, Any]) -> dict[str, Any]:
    doc = {k: v for k, v in doc.items() if k not in ("password", "ssh_tunnel")}
    doc["sqlalchemy_uri"] = PLACEHOLDER_URI
    return doc


def _dataset(doc: dict[str, Any]) -> dict[str, Any]:
    doc = dict(doc)
    doc["columns"] = sorted(doc.get("columns") or [], key=lambda c: str(c.get("column_name")))
    doc["metrics"] = sorted(doc.get("metrics") or [], key=lambda m: str(m.get("metric_name")))
    return doc


def _chart(doc: dict[str, Any]) -> dict[str, Any]:
    doc = dict(doc)
    params = {k: v for k, v in (doc.get("params") or {}).items() if k not in INSTANCE_PARAMS}
    doc["params"] = params
    raw = doc.get("query_context")
    if raw:
        context = json.loads(raw) if isinstance(raw, str) else raw
        context["datasource"] = {"id": 0, "type": "table"}
        form = context.get("form_data")
        if isinstance(form, dict):
            context["form_data"] = {k: v for k, v in form.items() if k not in INSTANCE_PARAMS}
        for query in context.get("queries") or []:
            if isinstance(query, dict) and "datasource" in query:
                query["datasource"] = context["datasource"]
        doc["query_context"] = json.dumps(context, indent=2, sort_keys=True) + "\n"
    return doc


def _dashboard(doc: dict[str, Any]) -> dict[str, Any]:
    doc = dict(doc)
    position = doc.get("position") or {}
    ids: dict[int, int] = {}
    for node in position.values():
        if isinstance(node, dict) and node.get("type") == "CHART":
            meta = node.setdefault("meta", {})
            if "uuid" in meta:
                key = chart_key(str(meta["uuid"]))
                if "chartId" in meta:
                    ids[int(meta["chartId"])] = key
                meta["chartId"] = key
    metadata = {k: v for k, v in (doc.get("metadata") or {}).items() if k not in DERIVED_METADATA}
    doc["metadata"] = _renumber_metadata(metadata, ids)
    if doc.get("theme_uuid") is None:
        doc.pop("theme_uuid", None)
    return doc


def _renumber_metadata(metadata: dict[str, Any], ids: dict[int, int]) -> dict[str, Any]:
    """Chart ids inside a dashboard's metadata, as chart keys."""

    def renumber(values: list[Any]) -> list[int]:
        return sorted(ids[int(v)] for v in values if int(v) in ids)

    for native in metadata.get("native_filter_configuration") or []:
        native.pop("chartsInScope", None)
        scope = native.get("scope")
        if isinstance(scope, dict) and scope.get("excluded"):
            scope["excluded"] = renumber(scope["excluded"])
    global_config = metadata.get("global_chart_configuration")
    if isinstance(global_config, dict):
        global_config.pop("chartsInScope", None)
        scope = global_config.get("scope")
        if isinstance(scope, dict) and scope.get("excluded"):
            scope["excluded"] = renumber(scope["excluded"])
    charts = metadata.get("chart_configuration")
    if isinstance(charts, dict):
        renumbered = {}
        for old, config in charts.items():
            if not str(old).isdigit() or int(old) not in ids:
                continue
            new = ids[int(old)]
            if isinstance(config, dict):
                config["id"] = new
                cross = config.get("crossFilters")
                if isinstance(cross, dict):
                    cross.pop("chartsInScope", None)
                    scope = cross.get("scope")
                    if isinstance(scope, dict) and scope.get("excluded"):
                        scope["excluded"] = renumber(scope["excluded"])
            renumbered[str(new)] = config
        metadata["chart_configuration"] = renumbered
    if metadata.get("timed_refresh_immune_slices"):
        metadata["timed_refresh_immune_slices"] = renumber(metadata["timed_refresh_immune_slices"])
    if isinstance(metadata.get("expanded_slices"), dict):
        metadata["expanded_slices"] = {
            str(ids[int(k)]): v for k, v in metadata["expanded_slices"].items() if int(k) in ids
        }
    return metadata
