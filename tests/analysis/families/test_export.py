"""The advised families as the tape systems take them, checked against each system's syntax.

- cta-admin: the options each command requires, as cern-cta/CTA cmdline/CtaAdminCmdParse.hpp
  lists them (cmdOptions: tapepool add {--name, --vo, --partialtapesnumber, --encrypted,
  [--supply], --comment}; storageclass add {--name, --numberofcopies, --vo, --comment};
  archiveroute add {--storageclass, --copynb, --tapepool, --comment}); every option given is
  one the command takes, every compulsory one is there, each with one value.
- Spectrum Protect: DEFINE COLLOCGROUP group_name DESCRIPTION=... and DEFINE COLLOCMEMBER
  group_name node_name FILESPACE=... (IBM's command reference), names of at most 30
  characters.
- dCache: the mapping read as an HSM script would, from the base64 `-archive_metadata=` value.
"""

from __future__ import annotations

import base64
import json
import re
import shlex
from pathlib import Path

import polars as pl

from tapelens.analysis.families.export import (
    FILES,
    dcache_mapping,
    family_of,
    write_exports,
)

FAMILIES = pl.DataFrame(
    {
        "pool": ["atlas", "atlas", "atlas", "cms"],
        "level": [3, 3, 3, 2],
        "family": [
            "3: RAW | data18_13TeV | physics_Main | data18_13TeV.00358031.physics_Main.daq.RAW",
            "2: AOD_mc | mc20_13TeV | r13167",
            "(rest)",
            '2: raw | RAW | Run2024C "quoted"',
        ],
        "files": [1520, 800, 12, 300],
        "bytes": [4_100_000_000_000, 1_900_000_000_000, 3_000_000_000, 900_000_000_000],
        "tapes": [1, 1, 1, 1],
    }
)

# cmdOptions of CtaAdminCmdParse.hpp: (command, subcommand) -> (compulsory, optional); an option
# is named by its long or short form (Option::operator==).
CTA = {
    ("tapepool", "add"): (
        {"--name", "--vo", "--partialtapesnumber", "--encrypted", "--comment"},
        {"--supply"},
    ),
    ("storageclass", "add"): ({"--name", "--numberofcopies", "--vo", "--comment"}, set()),
    ("archiveroute", "add"): ({"--storageclass", "--copynb", "--tapepool", "--comment"}, set()),
}
TSM_NAME = r"[A-Za-z0-9_.\-]{1,30}"


def test_cta_admin_commands_take_the_options_cta_requires(tmp_path: Path) -> None:
    (path,) = write_exports(FAMILIES, ("cta",), tmp_path, "DCACHE")
    commands = [shlex.split(line) for line in path.read_text().splitlines()]
    commands = [c for c in commands if c and c[0] == "cta-admin"]
    assert len(commands) == 3 * FAMILIES.height
    routes = {}
    for words in commands:
        compulsory, optional = CTA[(words[1], words[2])]
        options = dict(zip(words[3::2], words[4::2], strict=True))
        assert compulsory <= set(options) <= compulsory | optional, words
        assert all(v and not v.startswith("--") for v in options.values()), words
        if words[1] == "archiveroute":
            routes[options["--storageclass"]] = options["--tapepool"]
    assert len(routes) == FAMILIES.height and all(k == v for k, v in routes.items())


def test_spectrum_protect_macro_defines_a_group_per_family(tmp_path: Path) -> None:
    (path,) = write_exports(FAMILIES, ("tsm",), tmp_path, "DCACHE")
    lines = [line for line in path.read_text().splitlines() if not line.startswith("/*")]
    groups = [
        re.fullmatch(rf'define collocgroup ({TSM_NAME}) description="([^"]*)"', line)
        for line in lines[0::2]
    ]
    members = [
        re.fullmatch(rf"define collocmember ({TSM_NAME}) DCACHE filespace=/(\S+)", line)
        for line in lines[1::2]
    ]
    assert all(groups) and all(members) and len(groups) == FAMILIES.height
    assert [g.group(1) for g in groups if g] == [m.group(1) for m in members if m]
    assert all(len(g.group(2)) <= 255 for g in groups if g)


def test_dcache_mapping_finds_each_files_family(tmp_path: Path) -> None:
    (path,) = write_exports(FAMILIES, ("dcache",), tmp_path, "DCACHE")
    mapping = json.loads(path.read_text())
    assert mapping == json.loads(json.dumps(dcache_mapping(FAMILIES)))

    def received(hints: dict[str, str]) -> dict[str, str]:
        value = base64.b64encode(json.dumps({"collocation_hints": hints}).encode()).decode()
        return json.loads(base64.b64decode(value))["collocation_hints"]

    raw = {"0": "RAW", "1": "data18_13TeV", "2": "physics_Main"}
    raw["3"] = "data18_13TeV.00358031.physics_Main.daq.RAW"
    assert family_of(mapping, "atlas", received(raw)) == "ATLAS_L3_0001"
    # A dataset of a version that has a family: written with it (merged upward).
    mc = {"0": "AOD_mc", "1": "mc20_13TeV", "2": "r13167", "3": "mc20_13TeV.1.x.AOD.r13167"}
    assert family_of(mapping, "atlas", received(mc)) == "ATLAS_L3_0002"
    assert family_of(mapping, "atlas", received({"0": "DAOD_PHYS.x"})) == "ATLAS_REST"
    assert family_of(mapping, "atlas", {}) == "ATLAS_REST"
    assert family_of(mapping, "lhcb", raw) is None


def test_hpss_file_families_list_each_family_once(tmp_path: Path) -> None:
    (path,) = write_exports(FAMILIES, ("hpss",), tmp_path, "DCACHE")
    assert path.name == FILES["hpss"]
    table = pl.read_csv(path)
    assert table["file_family_id"].to_list() == [1, 2, 3, 4]
    assert table["file_family_name"].n_unique() == FAMILIES.height
    assert set(table["hint_group"]) == set(FAMILIES["family"])
