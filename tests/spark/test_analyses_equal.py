"""`plan dedup`, `whatif placement` and the exports to staging systems give the same answers
from the Spark tables as from PostgreSQL, through the command line: the same tables printed,
byte for byte, and the same export files.

The site is conftest's `both_engines`: one small synthetic site loaded and built on both. The
export files are those docs/exports.md derives from the programs that read them: dCache's
tapes.json and tapefiles.json (dCache/dcache, modules/srm-server/src/main/java/org/dcache/srm/
taperecallscheduling/tapeinfoprovider/JsonFileTapeInfoProvider.java) and ENDIT's hint file
(neicnordic/endit, tsmretriever.pl), keyed through a Chimera path -> pnfsid list as `psql --csv`
prints it (dCache/dcache, modules/chimera/src/main/resources/org/dcache/chimera/changelog/
changeset-2.15.xml: inumber2path; docs/formats/pnfsid-map.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tapelens.cli import cli
from tapelens.errors import InputError
from tapelens.frames import read_frame
from tests.spark.conftest import Built
from tests.spark.test_plan_equal import on_engine, run, site_drives

pytest.importorskip("pyspark")
pytest.importorskip("delta")

pytestmark = pytest.mark.slow

ENGINES = ("postgres", "spark")
DCACHE = "/pnfs/example.org/data"


def both(site: Built, args: list[str]) -> dict[str, str]:
    """What the command prints to stdout on each engine."""
    return {engine: run(site, [*args, *on_engine(site, engine)]) for engine in ENGINES}


def test_plan_dedup_is_the_same(both_engines: Built) -> None:
    """Every copy's verdict, and the mounts each dataset's recall saves."""
    for by in ("copy", "dataset"):
        args = ["plan", "dedup", "--by", by, "--drives", site_drives(both_engines)]
        got = both(both_engines, [*args, "--format", "csv"])
        assert got["postgres"].count("\n") > 2, f"--by {by}: hardly any row"
        assert got["spark"] == got["postgres"], f"--by {by}"


def test_whatif_placement_is_the_same(both_engines: Built) -> None:
    """Two policies replayed, with the actual placement and the predicted recall rates."""
    args = ["whatif", "placement", "--policy", "fifo", "--policy", "collocate"]
    got = both(both_engines, [*args, "--drives", site_drives(both_engines), "--format", "csv"])
    assert "actual" in got["postgres"]
    assert got["spark"] == got["postgres"]


def _prefix(site: Built) -> str:
    """The first folder of the site's paths: the tape system's prefix --path-map rewrites."""
    path = read_frame(site.dsn, "select min(path) as path from tapelens.tape_files")["path"][0]
    return "/" + str(path).split("/")[1]


def test_dcache_tapeinfo_files_are_the_same(both_engines: Built, tmp_path: Path) -> None:
    written = {}
    for engine in ENGINES:
        out = tmp_path / engine
        args = ["export", "dcache-tapeinfo", "-o", str(out)]
        args += ["--path-map", f"{_prefix(both_engines)}={DCACHE}"]
        run(both_engines, [*args, *on_engine(both_engines, engine)])
        written[engine] = {p.name: p.read_bytes() for p in sorted(out.iterdir())}
    assert {"tapes.json", "tapefiles.json"} <= set(written["postgres"])
    assert written["postgres"]["tapefiles.json"].count(b'"') > 20
    assert written["spark"] == written["postgres"]


def test_endit_hints_are_the_same(both_engines: Built, tmp_path: Path) -> None:
    """The hint file of every other live path's file, through a Chimera map of the site."""
    prefix = _prefix(both_engines)
    paths = read_frame(
        both_engines.dsn,
        "select distinct path from tapelens.tape_files where removed_at is null order by path",
    )["path"].to_list()
    chimera = tmp_path / "chimera.csv"
    chimera.write_text(
        "path,ipnfsid\n"
        + "".join(
            f"{DCACHE}{p[len(prefix) :]},{n:036X}\n" for n, p in enumerate(paths, start=0x4C9A)
        )
    )
    requests = tmp_path / "requests.txt"
    requests.write_text("\n".join(paths[::2]) + "\n")
    written = {}
    for engine in ENGINES:
        hints = tmp_path / engine / "NODE.json"
        hints.parent.mkdir()
        args = ["export", "endit-hints", "-o", str(hints), "--pnfsid-map", str(chimera)]
        args += ["--path-map", f"{prefix}={DCACHE}", "--requests", str(requests)]
        run(both_engines, [*args, *on_engine(both_engines, engine)])
        written[engine] = {p.name: p.read_bytes() for p in sorted(hints.parent.iterdir())}
    assert written["postgres"]["NODE.json"].count(b"volid") > 10
    assert written["spark"] == written["postgres"]


def test_a_dataset_spark_does_not_hold_is_refused_with_the_known_ones(
    both_engines: Built,
) -> None:
    """The same one-line error as on PostgreSQL, its names read from the Spark tables."""
    refused = {}
    for engine in ENGINES:
        args = ["--dsn", both_engines.dsn, "plan", "dedup", "--dataset", "no.such.dataset"]
        args += ["--drives", site_drives(both_engines)]
        result = CliRunner().invoke(cli, [*args, *on_engine(both_engines, engine)])
        assert isinstance(result.exception, InputError), result.output
        refused[engine] = str(result.exception)
    assert refused["postgres"].startswith("--dataset 'no.such.dataset' matches nothing (known: ")
    assert refused["spark"] == refused["postgres"]
