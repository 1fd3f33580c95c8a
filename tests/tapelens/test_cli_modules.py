"""The command line loads each command's modules lazily; the table of modules stays complete."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

from click.testing import CliRunner

import tapelens.cli
from tapelens.cli import HELPERS, MODULES, cli


def test_every_cli_module_is_reachable_from_a_command() -> None:
    listed = {m for modules in MODULES.values() for m in modules} | set(HELPERS)
    present = {info.name for info in pkgutil.iter_modules(tapelens.cli.__path__)}
    assert present == listed


def test_every_top_level_command_has_subcommands_or_runs() -> None:
    runner = CliRunner()
    for name in MODULES:
        result = runner.invoke(cli, [name, "--help"])
        assert result.exit_code == 0, (name, result.output)
        assert "Example" in result.output or "Commands:" in result.output, name


def test_starting_the_cli_does_not_import_heavy_libraries() -> None:
    code = (
        "import sys, tapelens.cli;"
        "from click.testing import CliRunner;"
        "CliRunner().invoke(tapelens.cli.cli, ['ingest', '--help']);"
        "print(sorted(m for m in ('scipy', 'matplotlib', 'dbt', 'highspy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_former_group_names_still_work_but_are_not_listed() -> None:
    runner = CliRunner()
    listed = runner.invoke(cli, ["--help"]).output
    assert "marts" in listed and "throughput" in listed
    for old, new in (("models", "marts"), ("model", "throughput")):
        assert f"\n  {old} " not in listed
        result = runner.invoke(cli, [old, "--help"])
        assert result.exit_code == 0, result.output
        assert result.output == runner.invoke(cli, [new, "--help"]).output.replace(new, old, 1)
