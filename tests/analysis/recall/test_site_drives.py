"""The one rule by which every command that plans or predicts takes its drives, on either
engine: --drives, else the inventory's online drives, else one drive of the oldest generation
that reads each media type of the site's tapes (said), else an error saying how to give them."""

from __future__ import annotations

import pytest

from tapelens.analysis.recall.schedule.drives import site_drives
from tapelens.errors import InputError
from tapelens.media import BY_NAME


def never() -> object:
    raise AssertionError("read although not needed")


def test_given_drives_win_and_nothing_is_read() -> None:
    said: list[str] = []
    got = site_drives("LTO9:2,LTO8:1", never, never, said.append)  # type: ignore[arg-type]
    assert got == {"LTO-9": 2, "LTO-8": 1} and said == []


def test_the_inventory_comes_next() -> None:
    said: list[str] = []
    got = site_drives(None, lambda: {"LTO-8": 4}, never, said.append)  # type: ignore[arg-type]
    assert got == {"LTO-8": 4} and said == []


def test_else_one_drive_per_media_type_is_assumed_and_said() -> None:
    said: list[str] = []
    got = site_drives(None, dict, lambda: ["LTO-8", "LTO-7", "UNKNOWN"], said.append)
    oldest = {BY_NAME["LTO-8"].readable_by[0]: 1, BY_NAME["LTO-7"].readable_by[0]: 1}
    assert got == oldest
    assert len(said) == 1 and "assuming" in said[0]


def test_no_drive_and_no_known_media_is_an_error_saying_how() -> None:
    with pytest.raises(InputError, match="--drives SPEC"):
        site_drives(None, dict, lambda: ["UNKNOWN"], print)
