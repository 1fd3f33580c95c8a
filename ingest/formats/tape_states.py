"""One vocabulary of tape states, and each system's own words mapped onto it.

tapelens needs to know of a cartridge whether it can still be written (empty, filling), holds
data that can be read (full, readonly, disabled while an admin looks at it), is being or has
been repacked, or cannot be read at all (broken, exported out of the library, unavailable,
destroyed). Inventories say this in their own words; the loader stores the canonical state and
keeps the system's words in tapes.state_raw.

CERN CTA (`cta-admin tape ls`, column "state", with the separate "full" flag):
    ACTIVE -> full or filling (by the full flag); DISABLED -> disabled; REPACKING,
    REPACKING_PENDING, REPACKING_DISABLED -> repacking; BROKEN, BROKEN_PENDING -> broken;
    EXPORTED, EXPORTED_PENDING -> exported.
IBM Spectrum Protect (`query volume f=d`, `select * from volumes`): the access mode decides
first (READONLY -> readonly, UNAVAILABLE -> unavailable, DESTROYED -> destroyed, OFFSITE ->
exported); READWRITE volumes take their status (FILLING -> filling, FULL -> full, EMPTY and
PENDING, emptied and waiting for reuse, -> empty).
HPSS (a tape virtual volume's Condition, as the HPSS Management Guide names it): RWC (read,
write, create segments) and RW (read and write, no new segments) -> filling; RO -> readonly;
EOM (written to its end) -> full; EMPTY (past EOM, every segment gone) -> empty; DOWN (cannot
be read, written or mounted) -> unavailable.
"""

from __future__ import annotations

import re

from tapelens.tape_states import STATES, UNREADABLE

__all__ = ["STATES", "UNREADABLE", "any_state", "cta_state", "is_full", "tsm_state"]

_CTA = {
    "DISABLED": "disabled",
    "REPACKING": "repacking",
    "REPACKING_PENDING": "repacking",
    "REPACKING_DISABLED": "repacking",
    "BROKEN": "broken",
    "BROKEN_PENDING": "broken",
    "EXPORTED": "exported",
    "EXPORTED_PENDING": "exported",
}
_TSM_ACCESS = {
    "READONLY": "readonly",
    "UNAVAILABLE": "unavailable",
    "DESTROYED": "destroyed",
    "OFFSITE": "exported",
}
_TSM_STATUS = {"FILLING": "filling", "FULL": "full", "EMPTY": "empty", "PENDING": "empty"}
_HPSS = {
    "RWC": "filling",
    "RW": "filling",
    "RO": "readonly",
    "EOM": "full",
    "EMPTY": "empty",
    "DOWN": "unavailable",
}


def cta_state(state: str, full: bool | None) -> str | None:
    """The canonical state of a CTA tape; None for a word CTA does not use."""
    word = state.strip().upper()
    if word == "ACTIVE":
        return "full" if full else "filling"
    return _CTA.get(word)


def tsm_state(access: str, status: str) -> str | None:
    """The canonical state of a Spectrum Protect volume; None for words it does not use."""
    # `query volume f=d` prints "Read/Write", "Read-Only"; `select` prints READWRITE, READONLY.
    mode = re.sub(r"[\s/_-]", "", access).upper()
    if mode in _TSM_ACCESS:
        return _TSM_ACCESS[mode]
    if mode not in ("READWRITE", ""):
        return None
    return _TSM_STATUS.get(re.sub(r"[\s/_-]", "", status).upper())


def any_state(word: str) -> str | None:
    """A state word of a generic inventory: canonical, or one system's own word."""
    text = word.strip()
    if text.lower() in STATES:
        return text.lower()
    upper = text.upper()
    if upper == "ACTIVE":
        return None  # CTA's ACTIVE needs the full flag: refused without it
    return _CTA.get(upper) or _TSM_ACCESS.get(upper) or _TSM_STATUS.get(upper) or _HPSS.get(upper)


def is_full(flag: str) -> bool | None:
    """CTA's full column (true/false, 1/0); None when it is neither."""
    text = flag.strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    return None
