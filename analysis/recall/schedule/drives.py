"""Drives: the `--drives` option, and which drive generations read which media.

A tape only goes to a drive type that reads its media (an LTO drive reads its own generation and
the previous one, docs/domain.md). Putting tapes on drives is dispatch.py's work.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from tapelens.errors import InputError
from tapelens.media import BY_NAME, DRIVE_TYPES, normalise_drive_type

_DRIVE_ITEM = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9 ._-]*?)\s*[:=]\s*(\d+)\s*$")


def parse_drives(spec: str) -> dict[str, int]:
    """'LTO8:6,LTO7:4' -> {'LTO-8': 6, 'LTO-7': 4}; a type given twice adds up. A drive type
    the media catalog does not know (LT07 for LTO7, LTO10) is an error naming the known ones:
    a plan on drives that read nothing would call every file unavailable."""
    drives: dict[str, int] = {}
    for item in spec.split(","):
        if not item.strip():
            continue
        match = _DRIVE_ITEM.match(item)
        if not match:
            raise InputError(
                f"--drives: expected TYPE:COUNT items like LTO8:6, got {item.strip()!r}"
            )
        name = normalise_drive_type(match[1])
        if name not in DRIVE_TYPES:
            raise InputError(
                f"--drives: unknown drive type {match[1]!r} (known: {', '.join(DRIVE_TYPES)})"
            )
        drives[name] = drives.get(name, 0) + int(match[2])
    if not drives or not any(drives.values()):
        raise InputError(f"--drives: no drives in {spec!r} (expected e.g. LTO8:6,LTO7:4)")
    return drives


def readable_by_catalog() -> dict[str, tuple[str, ...]]:
    """Media type -> drive types that read it, from the media catalog."""
    return {name: m.readable_by for name, m in BY_NAME.items()}


def site_drives(
    spec: str | None,
    online: Callable[[], dict[str, int]],
    media_types: Callable[[], list[str]],
    say: Callable[[str], None],
) -> dict[str, int]:
    """The drives a command that plans or predicts uses, on either engine: --drives (`spec`,
    each type checked against the media catalog), else the `online` drives of the inventory,
    else one drive of the oldest generation that reads each of the site's tapes' media types,
    said through `say`. No drive and no tape of known media type is an error saying how to
    give them. `online` and `media_types` read the engine's tables, only when needed."""
    if spec:
        return parse_drives(spec)
    listed = online()
    if listed:
        return listed
    assumed: dict[str, int] = {}
    for name in sorted(media_types()):
        if name in BY_NAME:
            assumed[BY_NAME[name].readable_by[0]] = 1
    if not assumed:
        raise InputError(
            "no drives: give --drives SPEC (e.g. LTO8:6,LTO7:4), or list the site's drives with"
            " `tapelens drives load FILE.csv` or `tapelens drives derive`"
        )
    spec_text = ",".join(f"{k}:{v}" for k, v in sorted(assumed.items()))
    say(
        f"tapelens: no --drives and no drives in `tapelens drives`: assuming {spec_text}"
        " (one drive for each media type of the site's tapes)"
    )
    return assumed
