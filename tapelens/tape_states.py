"""The states a tape can be in, as every part of tapelens speaks of them.

Inventories say a cartridge's state in their own words; the loader maps those onto this one
vocabulary (ingest/formats/tape_states.py keeps each system's words), the marts and the planner
read it. One list, so that what the loader stores and what the planner refuses to recall from
cannot drift apart.
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
# disabled, and one whose data a repack has moved away.
NOT_RECALLABLE = ("disabled", "repacked", *UNREADABLE)
