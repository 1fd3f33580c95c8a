"""Every command example in README.md and in every --help runs as written on the demo site.

The demo site is built once for the module by `tapelens demo run` itself (a small one), into a
database of its own. The examples then run in a folder holding the files they name
(campaign.csv, files.txt, drives.csv, chimera.csv; plan.csv is what README's own `plan recall`
example writes), README's first, in its order, then the --help examples, one test each. Each
must exit 0; where README shows the output, the output must have the same columns and lines
(numbers aside, and every line when README shows no `...`). An example that cannot run here is
skipped only by a rule in SKIPPED, and its skip message says why; a rule that no longer matches
an example is itself an error.

The exports run too: a few of the demo's files are also listed under HPSS's `/hpss/atlas`
namespace, as the examples' `--path-map /hpss/atlas=...` expects, with their dCache pnfsids in
chimera.csv; `export tape-rest --submit` sends the plan's stage requests to a local WLCG Tape
REST API server (tests/fixtures/tape_rest_server.py) in place of the example's site, with the
example's token, and polls it without the minute between polls.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import psycopg
import pytest
from click.testing import CliRunner

from tapelens.analysis.recall.exports import tape_rest
from tapelens.cli import cli
from tests.fixtures.cli import TAPELENS
from tests.fixtures.tape_rest_server import TapeRestServer
from tests.tapelens.test_vocabulary import ALL

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DEMO_FILES = 1000

# What cannot run against a demo database here, by a pattern of the example, and why.
SKIPPED: dict[str, str] = {
    r"^make ": "sets the machine up; make test is what runs this test",
    r"^tapelens db (up|down|compress)\b": "starts, stops or compresses a server of its own",
    r"TAPELENS_TIMESCALEDB_LICENSE=": "needs TimescaleDB's community edition",
    r"^tapelens ingest (catalog|tapes|transfers|mounts|hints|manifest) ": (
        "loads native dumps the demo site does not hold under these names (tests/ingest)"
    ),
    r"(^|\s)tapelens dashboards ": "serves Superset (tests/dashboards)",
    r"^export |^(?:[A-Z_]+=\S+ )+tapelens db ": (
        "sets shell variables to another server or engine"
    ),
    r"^tapelens demo run\b": "is how this module builds its site",
    r"^tapelens demo generate\b": "writes a 50,000-file site (tests/world)",
    r"\[--": "shows optional arguments in brackets",
    r"-o /etc/|-o /var/": "writes into a system folder",
    r"--engine spark": "builds the marts on Spark in a warehouse of its own (tests/spark)",
}
# The site the examples' stage requests go to, served here by a local Tape REST server.
TAPE_REST_SITE = "https://tape.example.org:8443"
# How many of the demo's files are also listed under HPSS's namespace (/hpss/atlas/...).
HPSS_FILES = 20
# README examples whose output is the demo site's own and differs in more than numbers.
OWN_OUTPUT = {"tapelens drives", "tapelens db status"}


@dataclass(frozen=True)
class Example:
    where: str
    command: str
    shown: tuple[str, ...] = ()  # the output README shows under it


def _joined(lines: list[str], i: int) -> tuple[str, int]:
    """The command on line i with its backslash continuations, and the last line it takes."""
    command = lines[i].strip()
    while command.endswith("\\"):
        i += 1
        command = command[:-1].rstrip() + " " + lines[i].strip()
    return command, i


def readme_examples() -> list[Example]:
    """Indented README lines that run tapelens (or make), `$ ` prompts with their output."""
    lines = README.read_text().splitlines()
    found: list[Example] = []
    i = 0
    while i < len(lines):
        match = re.match(r"^ {4,}(\$ )?((?:[A-Z_]+=\S+ )?(?:tapelens|make) .*)$", lines[i])
        if not match:
            i += 1
            continue
        where = f"README.md:{i + 1}"
        command, i = _joined(lines, i)
        command = command.removeprefix("$ ")
        shown: list[str] = []
        if match[1]:
            while (
                i + 1 < len(lines)
                and lines[i + 1].startswith("    ")
                and not lines[i + 1].strip().startswith("$")
            ):
                i += 1
                shown.append(lines[i].strip())
        found.append(Example(where, command, tuple(shown)))
        i += 1
    return found


def help_examples() -> list[Example]:
    """The lines under `Example:` in every command's help."""
    found: list[Example] = []
    for name, command in ALL:
        text = command.help or ""
        lines = text.splitlines()
        for at, line in enumerate(lines):
            if not re.match(r"^\s*Examples?:\s*$", line):
                continue
            i = at + 1
            while i < len(lines) and lines[i].strip():
                example, i = _joined(lines, i)
                found.append(Example(f"tapelens {name} --help", example))
                i += 1
    return found


def skipped(example: Example) -> str | None:
    for pattern, why in SKIPPED.items():
        if re.search(pattern, example.command):
            return why
    return None


README_EXAMPLES = readme_examples()
HELP_EXAMPLES = help_examples()


@pytest.fixture(scope="module")
def demo(module_dsn: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The demo site in module_dsn, and a folder with the files the examples name."""
    home = tmp_path_factory.mktemp("home")
    site = tmp_path_factory.mktemp("site")
    env = {k: v for k, v in os.environ.items() if k != "TAPELENS_DSN"}
    env["TAPELENS_HOME"] = str(home)
    argv = [TAPELENS, "--dsn", module_dsn, "demo", "run", "--files", str(DEMO_FILES)]
    done = subprocess.run(
        [*argv, "--out", str(site)], capture_output=True, text=True, env=env, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    # README: the repack volume list goes to repack.vids in the site folder.
    assert (site / "repack.vids").read_text().strip()
    work = tmp_path_factory.mktemp("work")
    (work / "campaign.csv").write_text((site / "recall-requests.csv").read_text())
    with psycopg.connect(module_dsn) as conn:
        paths = [
            r[0]
            for r in conn.execute(
                # files.txt is what the LTO-8 drives of the examples can read
                "select path from tapelens.tape_files f join tapelens.tapes t using (volume)"
                " where removed_at is null and t.media_type in ('LTO-7', 'LTO-8')"
                " order by path limit 50"
            )
        ]
    (work / "files.txt").write_text("".join(f"{p}\n" for p in paths))
    (work / "drives.csv").write_text(
        "drive,drive_type,library,state\nL1-D01,LTO8,L1,online\nL1-D02,LTO9,L1,offline\n"
    )
    hpss_paths = list_under_hpss(module_dsn)
    dcache = [p.replace("/hpss/atlas", "/pnfs/example.org/data/atlas", 1) for p in hpss_paths]
    (work / "chimera.csv").write_text(
        "path,ipnfsid\n" + "".join(f"{p},{i + 1:036X}\n" for i, p in enumerate(dcache))
    )
    yield module_dsn, work


def list_under_hpss(dsn: str) -> list[str]:
    """HPSS_FILES of the demo's live copies listed again under `/hpss/atlas` (new copies, past
    the last position of their tape), as a site whose HPSS namespace starts there lists them;
    their paths."""
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            """insert into tapelens.tape_files (source, copy_id, path, dataset, dataset_type,
                   experiment, size_bytes, volume, position, written_at, ingest_run_id)
               select source, copy_id || ':hpss', '/hpss' || path, '/hpss' || dataset,
                   dataset_type, experiment, size_bytes, volume,
                   position + 1000000, written_at, ingest_run_id
               from tapelens.tape_files
               where removed_at is null and path like '/atlas/%%' and offset_bytes is null
               order by path limit %s
               returning path""",
            (HPSS_FILES,),
        ).fetchall()
    assert len(rows) == HPSS_FILES
    return sorted(r[0] for r in rows)


@pytest.fixture(scope="module")
def tape_rest_site() -> Iterator[TapeRestServer]:
    """The site of the examples' stage requests: a local Tape REST server that stages every
    file on the first status query, with the token the examples give (`BEARER_TOKEN=...`)."""
    server = TapeRestServer(token="...", steps_to_complete=1).start()
    try:
        yield server
    finally:
        server.stop()


def run_example(dsn: str, work: Path, example: Example, env: dict[str, str]) -> None:
    words = shlex.split(example.command, comments=True)
    env = dict(env)
    while words and re.match(r"^[A-Z_]+=", words[0]):  # VAR=value before the command
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    assert words[0] == "tapelens", example
    previous = Path.cwd()
    os.chdir(work)
    try:
        result = CliRunner().invoke(cli, ["--dsn", dsn, *words[1:]], env=env)
    finally:
        os.chdir(previous)
    said = f"{example.where}: {example.command}\n{result.output}"
    assert result.exit_code == 0, said + repr(result.exception)
    if example.shown and example.command not in OWN_OUTPUT:
        printed = [line.strip() for line in (result.stdout + result.stderr).splitlines()]
        compare_output(example, printed, said)


def shape(line: str) -> list[str]:
    """A line's words with every number as #: the columns and labels, not the site's figures."""
    return re.sub(r"-?\d[\d.,:%]*(\s?(kB|MB|GB|TB|s|h))?", "#", line).split()


def compare_output(example: Example, printed: list[str], said: str) -> None:
    shown = [line for line in example.shown if line != "..."]
    shapes = [shape(line) for line in printed]
    assert shape(shown[0]) in shapes, said + f"\nREADME shows: {shown[0]}"
    if "..." not in example.shown:
        start = shapes.index(shape(shown[0]))
        assert len(printed) - start >= len(shown), said
    if "," in shown[0]:  # CSV: the header exactly
        assert shown[0] in printed, said


def test_readme_and_help_name_examples_and_every_skip_rule_is_used() -> None:
    assert len(README_EXAMPLES) >= 40 and len(HELP_EXAMPLES) >= 40
    every = README_EXAMPLES + HELP_EXAMPLES
    unused = [p for p in SKIPPED if not any(re.search(p, e.command) for e in every)]
    assert not unused, unused
    ran = [e for e in every if skipped(e) is None]
    assert len(ran) >= len(every) // 2, "at least half the examples must run"


def test_readme_shows_the_schema_version_there_is() -> None:
    """db status prints the number of the newest migration."""
    newest = max(
        int(p.name.split("_")[0]) for p in (ROOT / "ingest" / "schema").glob("[0-9]*_*.sql")
    )
    shown = re.findall(r"schema\s+version (\d+)", README.read_text())
    assert shown and all(int(v) == newest for v in shown), (shown, newest)


EXAMPLES = README_EXAMPLES + HELP_EXAMPLES


@pytest.mark.parametrize(
    "example",
    EXAMPLES,
    ids=[f"{i:03d} {e.where}: {e.command[:60]}" for i, e in enumerate(EXAMPLES)],
)
def test_example_runs_on_the_demo_site(
    example: Example,
    demo: tuple[str, Path],
    tape_rest_site: TapeRestServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One example, in README's order then the --help examples' (each may use what an earlier
    one wrote, as README's own `plan recall -o plan.csv`)."""
    why = skipped(example)
    if why is not None:
        pytest.skip(f"{example.where}: {example.command}: {why}")
    dsn, work = demo
    if TAPE_REST_SITE in example.command:
        example = Example(
            example.where, example.command.replace(TAPE_REST_SITE, tape_rest_site.base)
        )
        monkeypatch.setattr(tape_rest, "Client", PollingAtOnce)
    run_example(dsn, work, example, {"COLUMNS": "100"})


class PollingAtOnce(tape_rest.Client):
    """The Tape REST client as `export tape-rest` makes it, polling without the minute between
    polls that a real tape system needs (the local server stages on the first query)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sleep = lambda _s: None


def test_help_of_every_command_ends_with_an_example() -> None:
    """Each command's help names an example (the group commands whose subcommands do aside)."""
    lacking = [
        name
        for name, command in ALL
        if not isinstance(command, click.Group) and "Example" not in (command.help or "")
    ]
    assert not lacking, lacking


if __name__ == "__main__":  # print what would run: python tests/tapelens/test_examples.py
    for e in README_EXAMPLES + HELP_EXAMPLES:
        print(f"{'skip' if skipped(e) else 'run '}  {e.where}: {e.command}", file=sys.stdout)
