"""One list of tape states: the dbt macro and the schema's check are generated from, or kept
equal to, tapelens/tape_states.py, and no model keeps a list of its own."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from tapelens.ingest.migrations import available
from tapelens.tape_states import (
    COPIES_GONE,
    GROUPS,
    NOT_RECALLABLE,
    STATES,
    dbt_macro,
)

ROOT = Path(__file__).resolve().parents[2]
MACRO = ROOT / "macros" / "tape_states.sql"
UNIT_TESTS = ROOT / "models" / "intermediate" / "_tape_states_unit_tests.yml"
# A quoted canonical state inside an `in (...)` list of SQL.
_STATE_LIST = re.compile(r"\bin\s*\(\s*'(?:" + "|".join(STATES) + r")'", re.IGNORECASE)


def test_the_dbt_macro_is_generated_from_the_python_lists() -> None:
    assert MACRO.read_text() == dbt_macro(), (
        "regenerate macros/tape_states.sql: python -m tapelens.tape_states > macros/tape_states.sql"
    )
    for name, states in GROUPS.items():
        assert set(states) <= set(STATES), name


def test_the_schema_accepts_exactly_the_states() -> None:
    shipped = "\n".join(migration.sql for migration in available())
    checks = re.findall(r"tapes_state_check check \((.*?)\);", shipped, re.DOTALL)
    assert checks, "no tapes_state_check in the migrations"
    assert tuple(re.findall(r"'([a-z_]+)'", checks[-1])) == STATES


def test_no_model_keeps_its_own_list_of_states() -> None:
    own = [
        f"{path.relative_to(ROOT)}: {match[0]}"
        for path in sorted((ROOT / "models").rglob("*.sql"))
        if path != MACRO
        for match in _STATE_LIST.finditer(path.read_text())
    ]
    assert own == [], "use {{ tape_states('group') }} (macros/tape_states.sql)"


def test_the_models_unit_test_pins_every_state_as_the_planner_reads_it() -> None:
    """The dbt unit test's expected rows are the Python lists: a disabled tape is not readable
    for a recall, a repacked or destroyed one holds no live copy."""
    doc = yaml.safe_load(UNIT_TESTS.read_text())
    (test,) = doc["unit_tests"]
    expected = {row["tape_state"]: row for row in test["expect"]["rows"]}
    assert set(expected) == set(STATES)
    for state, row in expected.items():
        assert row["is_readable"] is (state not in NOT_RECALLABLE), state
        assert row["is_live"] is (state not in COPIES_GONE), state
