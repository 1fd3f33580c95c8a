"""Every command example in README.md and in every --help runs as written on the demo site.

The demo site is built once for the module by `tapelens demo run` itself (a small one), into a
database of its own. The examples then run in a folder holding the files they name
(campaign.csv, files.txt, drives.csv; plan.csv is what README's own `plan recall` example
writes), README's first, in its order, then the --help examples. Each must exit 0; where README
shows the output, the output must have the same columns and lines (numbers aside, and every
line when README shows no `...`). An example that cannot run here is skipped only by a rule in
SKIPPED that says why, and a rule that no longer matches an example is itself an error.
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

import click
import psycopg
import pytest
from click.testing import CliRunner

from tapelens.cli import cli
from tests.fixtures.cli import TAPELENS
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
    r"^export |^[A-Z_]+=\S+ tapelens db ": "sets a shell variable to another server",
    r"^tapelens demo run\b": "is how this module builds its site",
    r"^tapelens demo generate\b": "writes a 50,000-file site (tests/world)",
    r"\[--": "shows optional arguments in brackets",
    r"--submit https?://|BEARER_TOKEN=": "sends stage requests to a tape system",
    r"-o /etc/|-o /var/": "writes into a system folder",
    r"--path-map /hpss/": (
        "maps another site's path prefixes to dCache's"
        " (tests/analysis/recall/exports/test_tapeinfo.py)"
    ),
}
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
    yield module_dsn, work


def run_example(dsn: str, work: Path, example: Example, env: dict[str, str]) -> None:
    words = shlex.split(example.command, comments=True)
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


def test_every_example_runs_on_the_demo_site(demo: tuple[str, Path]) -> None:
    dsn, work = demo
    env = {"COLUMNS": "100"}
    failures: list[str] = []
    for example in README_EXAMPLES + HELP_EXAMPLES:
        if skipped(example):
            continue
        try:
            run_example(dsn, work, example, env)
        except AssertionError as exc:
            failures.append(str(exc)[:1500])
    assert not failures, "\n\n".join(failures)


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
