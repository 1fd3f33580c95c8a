"""The type check sees the package as it is imported.

ingest/, analysis/, dashboards/ and world/ are imported as tapelens.ingest and so on through
symlinks in tapelens/. Were a cross-package import unresolved, mypy would type it `Any` and pass
every wrong call through it; these tests put a wrong call across packages in front of mypy, with
the project's own configuration, and expect it refused.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("ingest", "analysis", "dashboards", "world")

pytestmark = pytest.mark.slow


def test_each_top_level_folder_is_a_subpackage_of_tapelens() -> None:
    for folder in FOLDERS:
        link = ROOT / "tapelens" / folder
        assert link.is_symlink(), f"tapelens/{folder} is not a symlink"
        assert link.resolve() == (ROOT / folder).resolve()


def _mypy(source: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    # The snippet is checked with the project's configuration (pyproject.toml) and the
    # repository root on the search path, so it resolves `tapelens.*` as the project's own
    # modules do under `make typecheck`.
    snippet = tmp_path / "snippet.py"
    snippet.write_text(source)
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary", str(snippet)],
        cwd=ROOT,
        env={**os.environ, "MYPYPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_a_cross_package_import_has_its_real_signature(tmp_path: Path) -> None:
    out = _mypy(
        "from tapelens.analysis.recall.engine import recall\n"
        "from tapelens.ingest.formats import lookup\n"
        "reveal_type(recall)\n"
        "reveal_type(lookup)\n",
        tmp_path,
    )
    revealed = [line for line in out.stdout.splitlines() if "Revealed type" in line]
    assert len(revealed) == 2, out.stdout + out.stderr
    for line in revealed:
        assert '"def (' in line, line  # a function's signature, not Any


@pytest.mark.parametrize(
    "call",
    [
        # analysis called from the CLI's side with an argument of the wrong type
        "from tapelens.analysis.recall.engine import recall\nrecall(1, 2, 3, 4, 5, 6)\n",
        # ingest's registry called with a number where the format's kind is a string
        "from tapelens.ingest.formats import lookup\nlookup(1, 'hpss-lsp')\n",
        # the world's generator's module named through the package
        "import tapelens.world.physics as p\np.no_such_function()\n",
    ],
)
def test_a_wrong_cross_package_call_fails_the_check(call: str, tmp_path: Path) -> None:
    out = _mypy(call, tmp_path)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "error:" in out.stdout


def test_a_missing_module_of_the_project_is_an_error(tmp_path: Path) -> None:
    # ignore_missing_imports is set for third-party packages only: a misspelt module of our own
    # must not pass as Any.
    out = _mypy("import tapelens.analysis.no_such_module\n", tmp_path)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "no_such_module" in out.stdout
