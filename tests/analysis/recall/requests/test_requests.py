"""Request lists: parsing both layouts, refusing bad lines, resolving against the catalog."""

from __future__ import annotations

import gzip
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from tapelens.analysis.recall.requests.lists import parse_requests, read_requests, requests_frame
from tapelens.analysis.recall.requests.resolve import resolve
from tapelens.errors import ParseError
from tests.fixtures.plan_catalogs import catalog, copy


def lines(text: str) -> list[str]:
    return text.splitlines()


def test_plain_text_one_path_a_line_skips_blanks_and_comments() -> None:
    frame = parse_requests(lines("# campaign 7\n/a/b\n\n  /a/c  \n/a/with space\n"))
    assert frame["key"].to_list() == ["/a/b", "/a/c", "/a/with space"]
    assert frame["kind"].unique().to_list() == ["path"]
    assert frame["line_no"].to_list() == [2, 4, 5]
    assert frame["requester"].unique().to_list() == ["default"]


def test_csv_with_every_column() -> None:
    text = (
        "\ufeffpath,dataset,requester,group,priority,submitted_at\n"
        "/x/1,,alice,atlas,2,2024-05-01T10:00:00Z\n"
        "\n"
        ',data18.AOD,bob,,,"2024-05-01 09:00:00"\n'
    )
    frame = parse_requests(lines(text))
    assert frame.select("line_no", "kind", "key", "requester", "group", "priority").rows() == [
        (2, "path", "/x/1", "alice", "atlas", 2),
        (4, "dataset", "data18.AOD", "bob", "default", 0),
    ]
    assert frame["submitted_at"].to_list() == [
        datetime(2024, 5, 1, 10, tzinfo=UTC),
        datetime(2024, 5, 1, 9, tzinfo=UTC),
    ]


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        ("path,requestor\n/a,x\n", 1, "unknown column 'requestor'"),
        ("path,file_id\n/a,17\n", 2, "exactly one of path, file_id"),
        ("file_id,requester\n1,a\n\n,bob\n", 4, "exactly one of file_id, got 0"),
        ("path,priority\n/a,high\n", 2, "priority 'high' is not an integer"),
        ("path,submitted_at\n/a,yesterday\n", 2, "not an ISO 8601 time"),
        ("path\n/a,b\n", 2, "2 fields, the header has 1"),
        # A header that names no key column is a header, not a request for a file 'pathx'.
        (
            "pathx\n/a\n",
            1,
            "the header 'pathx' names none of path, file_id, dataset; did you mean path?",
        ),
        (
            "# asked\nfile,requester\nx,bob\n",
            2,
            "names none of path, file_id, dataset; did you mean file_id?",
        ),
        ("requester\nbob\n", 1, "the header 'requester' names none of path, file_id, dataset"),
    ],
)
def test_bad_lines_name_file_line_and_reason(text: str, line: int, reason: str) -> None:
    with pytest.raises(ParseError) as err:
        parse_requests(lines(text), "asked.csv")
    assert err.value.line == line
    assert reason in str(err.value)
    assert str(err.value).startswith(f"asked.csv:{line}: ")


def test_read_requests_from_gzip(tmp_path: Path) -> None:
    target = tmp_path / "asked.txt.gz"
    target.write_bytes(gzip.compress(b"/a\n/b\n"))
    assert read_requests(target)["key"].to_list() == ["/a", "/b"]


def test_empty_list_is_no_requests() -> None:
    assert parse_requests(["", "# nothing"]).height == 0


CATALOG = catalog(
    [
        copy("f1", "T1", 1, dataset="A"),
        copy("f2", "T1", 2, dataset="A"),
        copy("f2", "T2", 9, dataset="A", copy_no=2, days_later=5),  # a duplicate
        copy("f3", "T3", 1, dataset="B", tape_state="disabled"),
        copy("f4", "T3", 2, dataset="B", tape_state="disabled"),
        copy("f4", "T4", 2, dataset="B"),  # f4 survives on T4
        copy("f5", "T5", 1, dataset="C", media_type="LTO-5"),
        copy("f6", "T6", 1, dataset="C", tape_state="repacked"),
        copy("f7", "T7", 1, dataset="C", media_type="unknown"),
    ]
)


def test_resolve_reports_not_found_and_unavailable_with_reasons() -> None:
    asked = parse_requests(
        lines("path,file_id,dataset\n/store/A/f1,,\n,f2,\n,,B\n,,C\n/nowhere,,\n,,gone\n")
    )
    res = resolve(asked, CATALOG, readable_media={"LTO-8", "LTO-7"})
    assert res.not_found.select("line_no", "kind", "key").rows() == [
        (6, "path", "/nowhere"),
        (7, "dataset", "gone"),
    ]
    assert sorted(res.wanted["file_id"].to_list()) == ["f1", "f2", "f3", "f4", "f5", "f6", "f7"]
    reasons = dict(res.unavailable.select("file_id", "reason").iter_rows())
    assert reasons == {
        "f3": "tape disabled",
        "f5": "no drive reads LTO-5",
        "f6": "tape repacked",
        "f7": "unknown media type",
    }
    readable = res.copies.select("file_id", "volume").sort("file_id", "volume").rows()
    assert readable == [("f1", "T1"), ("f2", "T1"), ("f2", "T2"), ("f4", "T4")]


def test_a_file_asked_twice_is_wanted_once_and_owned_by_its_first_request() -> None:
    asked = parse_requests(
        lines(
            "path,requester,priority,submitted_at\n"
            "/store/A/f2,late,0,2024-01-02T00:00:00Z\n"
            "/store/A/f2,early,0,2024-01-01T00:00:00Z\n"
            "/store/A/f1,urgent,5,2024-01-03T00:00:00Z\n"
        )
    )
    res = resolve(asked, CATALOG)
    owners = dict(res.wanted.select("file_id", "requester").iter_rows())
    assert owners == {"f2": "early", "f1": "urgent"}
    assert res.demand.height == 3
    assert res.wanted.filter(pl.col("file_id") == "f2")["requests"].item() == 2
    # fifo_rank is submission order; rank puts higher priority first.
    by_fifo = res.demand.sort("fifo_rank")["requester"].to_list()
    by_rank = res.demand.sort("rank")["requester"].to_list()
    assert by_fifo == ["early", "late", "urgent"]
    assert by_rank == ["urgent", "early", "late"]


def test_dataset_files_in_path_order_within_their_request() -> None:
    rows = [copy(f"f{i}", "T1", 10 - i, dataset="D", path=f"/d/{i:02d}") for i in range(5)]
    res = resolve(requests_frame(["D"], "dataset"), catalog(rows))
    assert res.demand.sort("fifo_rank")["path"].to_list() == [f"/d/{i:02d}" for i in range(5)]


def test_a_copy_under_another_name_is_found_by_either_name_once() -> None:
    renamed = catalog(
        [copy("f1", "T1", 1, path="/old/f1"), copy("f1", "T2", 4, path="/new/f1", copy_no=2)]
    )
    res = resolve(requests_frame(["/old/f1", "/new/f1"]), renamed)
    assert res.not_found.height == 0
    assert res.wanted["file_id"].to_list() == ["f1"]
    assert res.demand.height == 2
    assert res.copies.height == 2


@pytest.mark.parametrize("state", ["broken", "exported", "unavailable", "destroyed"])
def test_a_copy_only_on_a_tape_that_cannot_be_read_is_unavailable(state: str) -> None:
    # The inventory's vocabulary and the planner's refusals are one list: a file whose only
    # copy is on a broken, exported, unavailable or destroyed tape is never planned.
    cat = catalog(
        [copy("f1", "T1", 1, dataset="A", tape_state=state), copy("f2", "T2", 1, dataset="A")]
    )
    res = resolve(parse_requests(lines("path\n/store/A/f1\n/store/A/f2\n")), cat)
    assert dict(res.unavailable.select("file_id", "reason").iter_rows()) == {"f1": f"tape {state}"}
    assert res.copies["file_id"].to_list() == ["f2"]
