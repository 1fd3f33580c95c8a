"""The states a tape can be in, and the groups of them every part of tapelens reads.

Inventories say a cartridge's state in their own words; the loader maps those onto this one
vocabulary (ingest/formats/tape_states.py keeps each system's words), the marts, the planner
and the synthetic site read it. One list, so that what the loader stores, what the marts call
readable and what the planner refuses to recall from cannot drift apart: the dbt macro
macros/tape_states.sql is generated from this module (`python -m tapelens.tape_states`)
and a test keeps the two equal.
"""

from __future__ import annotations

STATES = (
    "empty",
    "filling",
    "full",
    "readonly",
    "disabled",
    "repacking",
    "repacked",
    "broken",
    "exported",
    "unavailable",
    "destroyed",
    "unknown",
)
# States whose copies cannot be read back at all (short of repair or return to the library).
UNREADABLE = ("broken", "exported", "unavailable", "destroyed")
# States a recall must not read from now: the unreadable ones, a tape an administrator has
# disabled (CTA and Spectrum Protect refuse to mount it for a retrieve), and one whose data a
# repack has moved away.
NOT_RECALLABLE = ("disabled", "repacked", *UNREADABLE)
# States whose copies are gone from the tape: a repack moved them, or the cartridge is
# destroyed. Other states still hold their copies, readable or not.
COPIES_GONE = ("repacked", "destroyed")
# States of a tape no longer in the library's live data: its copies are gone, or the
# cartridge has left the library.
OUT_OF_LIBRARY = (*COPIES_GONE, "exported")
# States of a tape written no more, whose dead space only a repack gives back.
WRITTEN_NO_MORE = ("full", "readonly")

# The groups the dbt models read, by the name the macro takes.
GROUPS: dict[str, tuple[str, ...]] = {
    "not_recallable": NOT_RECALLABLE,
    "copies_gone": COPIES_GONE,
    "out_of_library": OUT_OF_LIBRARY,
    "written_no_more": WRITTEN_NO_MORE,
}


def _sql_list(states: tuple[str, ...]) -> str:
    return "(" + ", ".join(f"'{state}'" for state in states) + ")"


def dbt_macro() -> str:
    """The dbt macro `tape_states(group)`: a group's states as an SQL list, for `in (...)`."""
    branches = "\n".join(
        f"    {{%- {'if' if i == 0 else 'elif'} group == '{name}' -%}}\n        {_sql_list(states)}"
        for i, (name, states) in enumerate(GROUPS.items())
    )
    return (
        "{#- Generated from tapelens/tape_states.py (python -m tapelens.tape_states > "
        "macros/tape_states.sql);\n"
        "    a test keeps them equal. The states of a group, as an SQL list for `in (...)`. -#}\n"
        "{% macro tape_states(group) -%}\n"
        f"{branches}\n"
        "    {%- else -%}\n"
        '        {{ exceptions.raise_compiler_error("tape_states: no group " ~ group) }}\n'
        "    {%- endif -%}\n"
        "{%- endmacro %}\n"
    )


if __name__ == "__main__":
    print(dbt_macro(), end="")
