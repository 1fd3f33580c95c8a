"""Dataset, type and experiment from paths: the per-folder shortcut the loader takes under the
default rules gives what the per-file rules give, on any path."""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from tapelens.ingest.datasets import (
    DatasetRules,
    dataset_expr,
    dataset_type_expr,
    experiment_expr,
    with_datasets,
)
from tests.props import examples

# Path pieces that matter to the rules: separators, dots, mount prefixes, type tokens, case.
PIECES = st.sampled_from(
    ["/", "//", ".", "atlas", "eos", "pnfs", "fs", "usr", "AOD", "daod_phys", "x.y", "f", "ß", ""]
)
PATHS = st.lists(PIECES, max_size=8).map("".join)


def per_file(frame: pl.DataFrame, rules: DatasetRules) -> pl.DataFrame:
    return frame.with_columns(
        dataset_expr(rules).alias("dataset"),
        dataset_type_expr(rules).alias("dataset_type"),
        experiment_expr(rules).alias("experiment"),
    )


@settings(max_examples=examples(300))
@given(st.lists(PATHS, min_size=1, max_size=40))
def test_per_folder_derivation_equals_per_file(paths: list[str]) -> None:
    frame = pl.DataFrame({"path": paths})
    rules = DatasetRules()
    assert with_datasets(frame, rules).equals(per_file(frame, rules))


def test_a_value_the_parser_gave_is_kept() -> None:
    frame = pl.DataFrame(
        {"path": ["/atlas/d1/f.AOD.1", "/atlas/d1/f.AOD.2"], "dataset": ["given", None]}
    )
    derived = with_datasets(frame, DatasetRules())
    assert derived["dataset"].to_list() == ["given", "/atlas/d1"]
    assert derived["experiment"].to_list() == ["atlas", "atlas"]
