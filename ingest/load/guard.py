"""The shrink guard: a dump that would retire much of what is stored waits for the user's word."""

from __future__ import annotations

from dataclasses import dataclass

from tapelens.errors import InputError


@dataclass(frozen=True)
class ShrinkGuard:
    """How much of a source's live catalog one dump may retire before it is refused."""

    max_share: float = 0.10  # of the copies live in the dump's scope
    allow: bool = False  # --allow-shrink: the user confirmed the catalog really shrank


class ShrinkRefused(InputError):
    """A dump would retire much of what is stored: refused until the user confirms it."""


def check_shrink(source: str, removed: int, listed: int, guard: ShrinkGuard, shown: str) -> None:
    # The copies held before the load, as far as the dump tells: those it retires and those it
    # lists (copies new in this dump count as held, which only lowers the share).
    held = removed + listed
    share = removed / held
    if listed and share <= guard.max_share:
        return
    what = (
        f"lists no copy and would retire all {removed:,} live copies"
        if not listed
        else f"would retire {removed:,} of the {held:,} live copies ({share:.0%}, more than"
        f" the {guard.max_share:.0%} allowed)"
    )
    raise ShrinkRefused(
        f"{shown}: this dump of source {source!r} {what}; nothing was changed. If the catalog"
        " really shrank, load it again with --allow-shrink."
    )
