"""Each system's tape state words, mapped onto tapelens's one vocabulary (tapelens/tape_states.py).

tapelens needs to know of a cartridge whether it can still be written (empty, filling), holds
data that can be read (full, readonly), is out of service for now (disabled), is being or has
been repacked, or cannot be read at all (broken, exported out of the library, unavailable,
destroyed). Inventories say this in their own words; the loader stores the canonical state and
keeps the system's words in tapes.state_raw. Every word below is one the system's source or
manual names (docs/formats/inventories.md has the table and the sources).

CERN CTA (`cta-admin tape ls`, column "state", with the separate "full" flag; the words of
common/dataStructures/Tape.cpp, STRING_TO_STATE_MAP):
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
Fermilab Enstore (a volume's system_inhibit and user_inhibit pairs, src/volume_clerk.py):
the first word of either pair decides first (NOACCESS, set by Enstore after errors ->
unavailable; NOTALLOWED, set by an administrator -> disabled; DELETED, the volume deleted and
waiting to be recycled -> empty; writing -> filling), then the second (readonly, full,
migrating/duplicating/cloning -> repacking, migrated -> repacked, duplicated and cloned: the
files copied elsewhere, the volume kept -> full); none and none -> filling.
"""

from __future__ import annotations

import re

from tapelens.tape_states import STATES

__all__ = ["any_state", "cta_state", "enstore_state", "is_full", "tsm_state"]

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
# Enstore's inhibit words, as volume_clerk.py sets them (case as printed: NOACCESS, NOTALLOWED,
# DELETED upper case; the others lower case); "none" is no inhibit.
_ENSTORE_FIRST = {
    "NOACCESS": "unavailable",
    "NOTALLOWED": "disabled",
    "DELETED": "empty",
    "WRITING": "filling",
}
_ENSTORE_SECOND = {
    "READONLY": "readonly",
    "FULL": "full",
    "MIGRATING": "repacking",
    "DUPLICATING": "repacking",
    "CLONING": "repacking",
    "MIGRATED": "repacked",
    "DUPLICATED": "full",
    "CLONED": "full",
}
_NONE = "NONE"
# A state cell holding two words (TSM's ACCESS/STATUS, Enstore's inhibit pair), as the
# tsm-volumes reader keeps them in state_raw or `enstore vol --vols` prints them.
_PAIR = re.compile(r"^\(?\s*([A-Za-z_/-]+?)\s*(?:[/,]|\s)\s*([A-Za-z_-]+)\s*\)?$")
# Without its full flag, CTA's ACTIVE (and Spectrum Protect's READWRITE without a status, and
# Enstore's "none") says only that the tape is in service for reading and writing.
IN_SERVICE = "filling"


def cta_state(state: str, full: bool | None) -> str | None:
    """The canonical state of a CTA tape; None for a word CTA does not use."""
    word = state.strip().upper()
    if word == "ACTIVE":
        return "full" if full else "filling"
    return _CTA.get(word)


def _tsm_word(text: str) -> str:
    # `query volume f=d` prints "Read/Write", "Read-Only"; `select` prints READWRITE, READONLY.
    return re.sub(r"[\s/_-]", "", text).upper()


def tsm_state(access: str, status: str) -> str | None:
    """The canonical state of a Spectrum Protect volume; None for words it does not use."""
    mode = _tsm_word(access)
    if mode in _TSM_ACCESS:
        return _TSM_ACCESS[mode]
    if mode not in ("READWRITE", ""):
        return None
    return _TSM_STATUS.get(_tsm_word(status))


def enstore_state(first: str, second: str) -> str | None:
    """The canonical state of an Enstore volume from one inhibit pair; None for other words."""
    one, two = first.strip().upper(), second.strip().upper()
    if one not in _ENSTORE_FIRST and one != _NONE:
        return None
    if two not in _ENSTORE_SECOND and two != _NONE:
        return None
    if one in _ENSTORE_FIRST and one != "WRITING":
        return _ENSTORE_FIRST[one]
    return _ENSTORE_SECOND.get(two) or IN_SERVICE


def any_state(word: str, full: bool | None = None) -> str | None:
    """A state of a generic inventory: canonical, one system's word, or a pair of them.

    `full` is CTA's full flag where the inventory has it; CTA's ACTIVE without it, Spectrum
    Protect's READWRITE without a status and Enstore's "none" are IN_SERVICE.
    """
    text = word.strip()
    if text.lower() in STATES:
        return text.lower()
    upper = text.upper()
    if upper == "ACTIVE":
        return cta_state(upper, full) if full is not None else IN_SERVICE
    if _tsm_word(text) == "READWRITE" or upper == _NONE:
        return IN_SERVICE
    one = (
        _CTA.get(upper)
        or _TSM_ACCESS.get(_tsm_word(text))
        or _TSM_STATUS.get(upper)
        or _HPSS.get(upper)
        or _ENSTORE_FIRST.get(upper)
        or _ENSTORE_SECOND.get(upper)
    )
    if one:
        return one
    pair = _PAIR.match(text)
    if not pair:
        return None
    return tsm_state(pair[1], pair[2]) or enstore_state(pair[1], pair[2])


def is_full(flag: str) -> bool | None:
    """CTA's full column (true/false, 1/0); None when it is neither."""
    text = flag.strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    return None
