"""The families advice's recorded placement: each copy finds the pool of its file in the
write stream; a copy of a file the stream does not hold is left out, and the copies' own
order does not change the figures."""

from __future__ import annotations

import polars as pl

from tapelens.analysis.families.advice import RECORDED, AdviceOptions, advise

from .test_advice_levels import GB, PARAMS, RECALL, site


def recorded(copies: pl.DataFrame, stream: pl.DataFrame, campaigns: pl.DataFrame) -> pl.DataFrame:
    options = AdviceOptions(open_families=3, min_family_bytes=GB, levels=(3,))
    advice = advise(copies, stream, campaigns, RECALL, PARAMS, options)
    return advice.table.filter(pl.col("placement") == RECORDED)


def test_copies_of_files_outside_the_stream_are_left_out_in_any_order() -> None:
    stream, copies, campaigns = site(with_level_4=False)
    stranger = copies.head(2).with_columns(pl.Series("file_id", ["x1", "f99"]))
    alone = recorded(copies, stream, campaigns)
    mixed = recorded(pl.concat([stranger, copies.reverse()]), stream, campaigns)
    assert alone["files"].to_list() == [stream.height]
    assert alone["tapes"].to_list() == [copies["volume"].n_unique()]
    assert mixed.equals(alone)
