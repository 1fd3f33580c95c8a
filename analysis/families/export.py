"""The advised tape families as the tape systems take them.

- Spectrum Protect: an administrative macro of `define collocgroup` and `define collocmember`
  commands (IBM's command reference: DEFINE COLLOCGROUP, DEFINE COLLOCMEMBER with FILESPACE=):
  a collocation group per family, its member the file space the family's files are archived
  under on the node that writes them. Names of at most 30 characters.
- CTA: `cta-admin` commands, after cern-cta/CTA cmdline/CtaAdminCmdParse.hpp: per family a tape
  pool (`tapepool add --name --vo --partialtapesnumber --encrypted --comment`), a storage class
  (`storageclass add --name --numberofcopies --vo --comment`) and its archive route
  (`archiveroute add --storageclass --copynb --tapepool --comment`).
- HPSS: the file families as a CSV (family id, name, pool, level, the hint group it takes in),
  for the administrator to define them and tag the directories.
- dCache: a JSON mapping from hint values to family, for the HSM script that receives
  `-archive_metadata=` (base64 of the JSON): take the collocation hints' levels 0..k, join them
  with " | ", look up "k: <joined>", then the same for k-1 ... 0, else the pool's rest family.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl

from tapelens.analysis.whatif.families import LEVELS, REST
from tapelens.errors import InputError

SYSTEMS = ("tsm", "cta", "hpss", "dcache")
FILES = {
    "tsm": "collocation-groups.mac",
    "cta": "cta-admin.sh",
    "hpss": "hpss-file-families.csv",
    "dcache": "hsm-families.json",
}
TSM_NAME_CHARS = 30  # DEFINE COLLOCGROUP: the name is at most 30 characters
TSM_DESCRIPTION_CHARS = 255
GROUP_SEPARATOR = " | "
_LEVEL = re.compile(r"^(\d): (.*)$", re.DOTALL)


def named(families: pl.DataFrame) -> pl.DataFrame:
    """The advised families (pool, level, family, files, bytes, tapes) with a short name each:
    POOL_L<level>_<n> (n by bytes within the pool, from 1), POOL_REST for the rest."""
    ranked = families.sort("pool", "bytes", "family", descending=[False, True, False])
    ranked = ranked.with_columns(
        pl.int_range(1, pl.len() + 1).over("pool").alias("_n"),
    )
    name = (
        pl.when(pl.col("family") == REST)
        .then(pl.format("{}_REST", pl.col("pool").str.to_uppercase()))
        .otherwise(
            pl.format(
                "{}_L{}_{}",
                pl.col("pool").str.to_uppercase(),
                pl.col("level"),
                pl.col("_n").cast(pl.String).str.zfill(4),
            )
        )
    )
    out = ranked.with_columns(name.str.replace_all(r"[^A-Za-z0-9_.\-]", "_").alias("name"))
    too_long = out.filter(pl.col("name").str.len_chars() > TSM_NAME_CHARS)
    if too_long.height:
        raise InputError(f"family name {too_long['name'][0]!r} is longer than 30 characters")
    return out.drop("_n")


def _described(row: dict[str, object]) -> str:
    text = f"{row['family']} ({row['files']} files, {row['bytes']} bytes)".replace('"', "'")
    return text[:TSM_DESCRIPTION_CHARS]


def tsm_macro(families: pl.DataFrame, node: str) -> str:
    """The Spectrum Protect macro: a collocation group per family, its file space a member."""
    lines = ["/* tape families advised by tapelens plan families */"]
    for row in named(families).iter_rows(named=True):
        lines.append(f'define collocgroup {row["name"]} description="{_described(row)}"')
        lines.append(f"define collocmember {row['name']} {node} filespace=/{row['name']}")
    return "\n".join(lines) + "\n"


def cta_commands(families: pl.DataFrame, vo_of_pool: dict[str, str] | None = None) -> str:
    """The cta-admin commands: a tape pool, a storage class and its archive route per family."""
    lines = ["#!/bin/sh", "# tape families advised by tapelens plan families", "set -e"]
    for row in named(families).iter_rows(named=True):
        name = str(row["name"]).lower()
        vo = (vo_of_pool or {}).get(str(row["pool"]), str(row["pool"]))
        comment = _shell_quote(_described(row))
        lines.append(
            f"cta-admin tapepool add --name {name} --vo {vo} --partialtapesnumber 1"
            f" --encrypted false --comment {comment}"
        )
        lines.append(
            f"cta-admin storageclass add --name {name} --numberofcopies 1 --vo {vo}"
            f" --comment {comment}"
        )
        lines.append(
            f"cta-admin archiveroute add --storageclass {name} --copynb 1 --tapepool {name}"
            f" --comment {comment}"
        )
    return "\n".join(lines) + "\n"


def _shell_quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


def hpss_families(families: pl.DataFrame, first_id: int = 1) -> pl.DataFrame:
    """The HPSS file families: id, name, pool, level and the hint group each takes in."""
    out = named(families).with_row_index("file_family_id", offset=first_id)
    return out.select(
        pl.col("file_family_id").cast(pl.Int64),
        pl.col("name").alias("file_family_name"),
        "pool",
        "level",
        pl.col("family").alias("hint_group"),
        "files",
        "bytes",
    )


def dcache_mapping(families: pl.DataFrame) -> dict[str, object]:
    """The mapping an HSM script reads: per pool its level, its rest family, and the family of
    each hint group ("k: level0 | ... | levelk")."""
    pools: dict[str, dict[str, object]] = {}
    for row in named(families).iter_rows(named=True):
        pool = pools.setdefault(
            str(row["pool"]), {"level": row["level"], "rest": None, "families": {}}
        )
        if row["family"] == REST:
            pool["rest"] = row["name"]
        else:
            groups = pool["families"]
            assert isinstance(groups, dict)
            groups[str(row["family"])] = row["name"]
    return {"separator": GROUP_SEPARATOR, "pools": pools}


def family_of(mapping: dict[str, object], pool: str, hints: dict[str, str]) -> str | None:
    """The family a file with these collocation hints is written to, as the mapping says."""
    pools = mapping["pools"]
    assert isinstance(pools, dict)
    entry = pools.get(pool)
    if entry is None:
        return None
    levels = [hints.get(str(k)) for k in range(LEVELS)]
    named_levels = [k for k, v in enumerate(levels) if v]
    deepest = min(int(entry["level"]), max(named_levels)) if named_levels else -1
    for k in range(deepest, -1, -1):
        key = f"{k}: " + GROUP_SEPARATOR.join(v or "" for v in levels[: k + 1])
        if key in entry["families"]:
            return str(entry["families"][key])
    rest = entry["rest"]
    return None if rest is None else str(rest)


def write_exports(
    families: pl.DataFrame, systems: tuple[str, ...], out_dir: Path, tsm_node: str
) -> list[Path]:
    """Write each asked export into out_dir; the paths written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for system in systems:
        path = out_dir / FILES[system]
        if system == "tsm":
            path.write_text(tsm_macro(families, tsm_node))
        elif system == "cta":
            path.write_text(cta_commands(families))
        elif system == "hpss":
            hpss_families(families).write_csv(path)
        else:
            path.write_text(json.dumps(dcache_mapping(families), indent=2) + "\n")
        written.append(path)
    return written
