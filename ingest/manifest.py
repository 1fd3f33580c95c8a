"""A manifest: a JSON list of input files with their kind, format and options.

The synthetic site writes one (OUT_DIR/manifest.json); sites can write their own to load a set of
dumps and logs in one command. Inputs load in dependency order: tapes, catalogs, mounts, transfers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from tapelens.errors import InputError
from tapelens.ingest.formats import Format, lookup
from tapelens.ingest.formats.base import ParseOptions

ORDER = {"tapes": 0, "catalog": 1, "mounts": 2, "transfers": 3, "hints": 4}
_OPTION_FIELDS = {f.name for f in fields(ParseOptions)} - {"extra", "source"}


@dataclass(frozen=True)
class ManifestInput:
    path: Path
    format: Format
    source: str | None
    options: dict[str, Any]  # ParseOptions fields
    extra: dict[str, Any]  # format-specific options


def read_manifest(path: Path) -> list[ManifestInput]:
    try:
        doc = json.loads(path.read_text())
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from None
    inputs = doc.get("inputs") if isinstance(doc, dict) else None
    if not isinstance(inputs, list):
        raise InputError(f"{path}: expected an object with an 'inputs' list")
    base = path.parent
    found = []
    for i, entry in enumerate(inputs, 1):
        if not isinstance(entry, dict) or not {"path", "kind", "format"} <= entry.keys():
            raise InputError(f"{path}: input {i} needs path, kind and format")
        if entry.get("skip"):
            continue
        raw_options = dict(entry.get("options") or {})
        source = entry.get("source") or raw_options.pop("source", None)
        options = {k: raw_options.pop(k) for k in list(raw_options) if k in _OPTION_FIELDS}
        if isinstance(options.get("columns"), list):
            options["columns"] = tuple(options["columns"])
        # Paths inside options (e.g. tsm-contents' archives file) are relative to the manifest.
        extra = {
            k: str(base / v)
            if k in ("archives", "mapping", "alt_map") and isinstance(v, str)
            else v
            for k, v in raw_options.items()
        }
        found.append(
            ManifestInput(
                base / entry["path"],
                lookup(entry["kind"], entry["format"]),
                source,
                options,
                extra,
            )
        )
    found.sort(key=lambda m: ORDER[m.format.kind])
    return found


def group_dumps(inputs: list[ManifestInput]) -> list[list[ManifestInput]]:
    """The inputs in load order, the files of one whole-catalog dump together.

    Catalog inputs of a whole-catalog format with the same source and options are parts of one
    dump, loaded as their union; every other input is a load of its own.
    """
    groups: list[list[ManifestInput]] = []
    by_dump: dict[str, list[ManifestInput]] = {}
    for item in inputs:
        if item.format.kind == "catalog" and not item.format.per_volume:
            key = json.dumps(
                [item.format.name, item.source, item.options, item.extra],
                sort_keys=True,
                default=str,
            )
            if key in by_dump:
                by_dump[key].append(item)
                continue
            by_dump[key] = [item]
            groups.append(by_dump[key])
        else:
            groups.append([item])
    return groups
