"""The layers point one way and no package imports itself in a circle.

formats -> canonical tables -> marts -> analysis -> CLI/dashboards: ingest never imports
analysis, analysis never imports ingest, neither imports the CLI, the dashboards or the
synthetic world; the world (the simulated site) stands apart from the product's models.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Folder -> import name, as the symlinks in tapelens/ name them.
ROOTS = {
    "tapelens": "tapelens",
    "ingest": "tapelens.ingest",
    "analysis": "tapelens.analysis",
    "dashboards": "tapelens.dashboards",
    "world": "tapelens.world",
}
FORBIDDEN = {
    "tapelens.ingest": (
        "tapelens.analysis",
        "tapelens.cli",
        "tapelens.dashboards",
        "tapelens.world",
    ),
    "tapelens.analysis": (
        "tapelens.ingest",
        "tapelens.cli",
        "tapelens.dashboards",
        "tapelens.world",
    ),
    "tapelens.world": ("tapelens.analysis", "tapelens.cli", "tapelens.dashboards"),
    "tapelens.dashboards": ("tapelens.cli",),
}


def modules() -> dict[str, Path]:
    found = {}
    for folder, name in ROOTS.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join([name, *parts])] = path
    return found


def imports(path: Path, known: dict[str, Path], *, typing: bool) -> set[str]:
    """tapelens modules a file imports anywhere (inside functions too); with typing=False,
    leaving out those under `if TYPE_CHECKING:`, which exist for annotations only. `from
    package import module` counts as importing the module, not the package."""
    found: set[str] = set()

    class Visitor(ast.NodeVisitor):
        def visit_If(self, node: ast.If) -> None:
            if not typing and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
                for child in node.orelse:
                    self.visit(child)
                return
            self.generic_visit(node)

        def visit_Import(self, node: ast.Import) -> None:
            found.update(a.name for a in node.names)

        def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
            if node.module and node.level == 0:
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    found.add(sub if sub in known else node.module)

    Visitor().visit(ast.parse(path.read_text()))
    return {m for m in found if m.startswith("tapelens")}


def test_layers_point_one_way() -> None:
    wrong = []
    known = modules()
    for module, path in known.items():
        for layer, banned in FORBIDDEN.items():
            if module == layer or module.startswith(layer + "."):
                for target in imports(path, known, typing=True):
                    if target.startswith(banned):
                        wrong.append(f"{path.relative_to(ROOT)} imports {target}")
    assert wrong == []


def test_no_import_cycles() -> None:
    known = modules()
    graph = {
        m: {t for t in imports(p, known, typing=False) if t in known and t != m}
        for m, p in known.items()
    }
    cycles = []
    state: dict[str, int] = {}

    def walk(node: str, stack: list[str]) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(" -> ".join([*stack[stack.index(nxt) :], nxt]))
            elif nxt not in state:
                walk(nxt, stack)
        stack.pop()
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            walk(module, [])
    assert cycles == []


def test_no_dbt_model_reads_a_later_layer() -> None:
    # staging reads sources, intermediate reads staging and intermediate, marts read anything
    # before them: a mart is never an input of an intermediate or staging model.
    layers = {"staging": ("stg_",), "intermediate": ("stg_", "int_")}
    wrong = []
    for layer, allowed in layers.items():
        for model in sorted((ROOT / "models" / layer).glob("*.sql")):
            for ref in re.findall(r"ref\(\s*'([a-z0-9_]+)'\s*\)", model.read_text()):
                if not ref.startswith(allowed):
                    wrong.append(f"{model.relative_to(ROOT)} reads {ref}")
    assert wrong == []
