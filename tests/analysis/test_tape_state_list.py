"""The analysis packages read tape states from the one list, tapelens/tape_states.py: no second
list of states in their Python or SQL, and no other name for one of its groups."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tapelens import tape_states
from tapelens.tape_states import STATES

ROOT = Path(__file__).resolve().parents[2]
ANALYSIS = ROOT / "analysis"
# The list's public names: the states and their groups.
LIST_NAMES = {name for name in vars(tape_states) if name.isupper()}
_QUOTED = "|".join(STATES)
# SQL naming two or more states itself: `in ('full', ...)` or `array['full', ...]`.
_SQL_LIST = re.compile(
    rf"(?:\bin\s*\(|\barray\s*\[)\s*'(?:{_QUOTED})'\s*,\s*'(?:{_QUOTED})'", re.IGNORECASE
)


def second_lists(source: str, name: str) -> list[str]:
    """Where a Python module keeps tape states of its own: a literal tuple, list or set of two or
    more states, SQL in a string listing states, or a tape_states name bound to another name."""
    found = []
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            states = [
                e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in STATES
            ]
            if len(states) >= 2:
                found.append(f"{name}:{node.lineno}: a list of states {states}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if _SQL_LIST.search(node.value):
                found.append(f"{name}:{node.lineno}: SQL listing states")
        elif isinstance(node, ast.ImportFrom) and node.module == "tapelens.tape_states":
            for alias in node.names:
                if alias.asname is not None and alias.asname != alias.name:
                    found.append(f"{name}:{node.lineno}: {alias.name} renamed {alias.asname}")
        elif isinstance(node, ast.Assign):
            value = node.value
            named = value.id if isinstance(value, ast.Name) else None
            if isinstance(value, ast.Attribute):
                named = value.attr
            # An alias of an alias is a rename too.
            if named is not None and (named in LIST_NAMES or "STATES" in named.upper()):
                found.append(f"{name}:{node.lineno}: {named} bound to another name")
    return found


def test_no_analysis_module_keeps_a_list_of_states_of_its_own() -> None:
    own = [
        hit
        for path in sorted(ANALYSIS.rglob("*.py"))
        for hit in second_lists(path.read_text(), str(path.relative_to(ROOT)))
    ]
    own += [
        f"{path.relative_to(ROOT)}: SQL listing states"
        for path in sorted(ANALYSIS.rglob("*.sql"))
        if _SQL_LIST.search(path.read_text())
    ]
    assert own == [], "read the states from tapelens.tape_states (one list, with groups)"


def test_each_kind_of_second_list_is_caught() -> None:
    """The check finds what it is there to find (and leaves alone what reads the list)."""
    planted = {
        "UNREADABLE = ('broken', 'exported')": "a list of states",
        "q = \"select volume from t where state in ('full', 'readonly')\"": "SQL listing states",
        "q = \"where state = any(ARRAY['full', 'readonly'])\"": "SQL listing states",
        "from tapelens.tape_states import NOT_RECALLABLE as UNREADABLE_STATES": "renamed",
        "UNREADABLE_TAPE_STATES = NOT_RECALLABLE": "bound to another name",
        "GONE = tape_states.COPIES_GONE": "bound to another name",
        "UNREADABLE_TAPE_STATES = UNREADABLE_STATES": "bound to another name",
        "from tapelens.tape_states import NOT_RECALLABLE\nx = list(NOT_RECALLABLE)": "",
        "reason = 'unavailable'": "",
    }
    for source, expected in planted.items():
        hits = second_lists(source, "planted.py")
        if expected:
            assert len(hits) == 1 and expected in hits[0], (source, hits)
        else:
            assert hits == [], (source, hits)
