"""The parse and encode pipeline: a file's batches parsed, checked and encoded in two threads.

Parsing (Polars, which releases the GIL) overlaps with the server ingesting the batch before, so
a load costs about the slower of the two rather than their sum.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import replace
from typing import cast

import polars as pl

from tapelens.errors import ParseError
from tapelens.handoff import DONE, Handoff
from tapelens.ingest import canonical
from tapelens.ingest.checks import refuse_unstorable
from tapelens.ingest.datasets import DatasetRules, with_datasets
from tapelens.ingest.formats.base import (
    LINE_DIGEST,
    LINE_NO,
    Batch,
    LineDigests,
    Reject,
)
from tapelens.ingest.load.catalog_diff import Known, line_seed, row_digests
from tapelens.ingest.load.context import LoadContext
from tapelens.ingest.load.copy_text import copy_text


def prepare(
    kind: str, frame: pl.DataFrame, rules: DatasetRules, datasets: bool = True
) -> pl.DataFrame:
    """Fill what the loader derives (default identities; dataset fields unless `datasets` is
    False), conform to the schema."""
    if kind == "catalog":
        if datasets:
            frame = with_datasets(frame, rules)
        fallback_id = pl.format(
            "{}:{}:{}",
            pl.col("volume"),
            pl.col("position"),
            pl.col("offset_bytes").cast(pl.String).fill_null(""),
        )
        frame = frame.with_columns(
            (pl.col("copy_id") if "copy_id" in frame.columns else pl.lit(None, pl.String))
            .fill_null(fallback_id)
            .alias("copy_id"),
            (pl.col("file_id") if "file_id" in frame.columns else pl.lit(None, pl.String))
            .fill_null(pl.col("path"))
            .alias("file_id"),
            (pl.col("copy_no") if "copy_no" in frame.columns else pl.lit(None, pl.Int32))
            .fill_null(1)
            .alias("copy_no"),
        )
    lines = frame[LINE_NO] if LINE_NO in frame.columns else None
    conformed = canonical.conform(kind, frame)
    if kind == "catalog":  # the digest of each row's line, where the parser gave one
        conformed = conformed.with_columns(
            frame[LINE_DIGEST]
            if LINE_DIGEST in frame.columns
            else pl.lit(None, pl.Int64).alias(LINE_DIGEST)
        )
    # The rows' input lines stay beside them until the checks and a careful COPY are done.
    return conformed.with_columns(
        lines if lines is not None else pl.lit(None, pl.Int64).alias(LINE_NO)
    )


def checked(
    kind: str, frame: pl.DataFrame, rules: DatasetRules, strict: bool, shown: str
) -> tuple[pl.DataFrame, list[Reject]]:
    """A batch's rows prepared and checked before they are stored: the rows the tables take,
    and a rejection for each other (strict: ParseError at the first). A catalog's dataset
    fields are derived later, after the row digest, for the rows written."""
    catalog = kind == "catalog"
    rows, refused = refuse_unstorable(kind, prepare(kind, frame, rules, datasets=not catalog))
    if refused and strict:
        first = min(refused, key=lambda r: r.line_no)
        raise ParseError(shown, first.line_no, first.reason)
    return rows, refused


def file_id_where_not_path(frame: pl.DataFrame) -> pl.DataFrame:
    """The catalog stores a file id only where it is not the path (migration 020): the rest
    would hold the path twice. Done after the row digest, which keeps seeing the file id."""
    return frame.with_columns(
        pl.when(pl.col("file_id") != pl.col("path")).then(pl.col("file_id")).alias("file_id")
    )


Encoded = tuple[Batch, bytes | memoryview, pl.DataFrame, set[str], int]


PIPELINE_DEPTH = 2  # batches parsed ahead of the COPY: bounds memory to a few batches


def encoded_batches(
    ctx: LoadContext, columns: list[str], known: Known | None = None
) -> Iterator[Encoded]:
    """The parser's batches, checked, conformed and encoded for COPY in a second thread.

    Parsing (Polars, which releases the GIL) then overlaps with the server ingesting the
    previous batch, so a load costs about the slower of the two rather than their sum. Each
    comes with its rows (and their line numbers) for a careful COPY, and how many rows the
    batch listed: of a newer catalog dump (`known`), only new or changed rows are sent.
    """
    fmt, options, rules, run_id = ctx.fmt, ctx.options, ctx.rules, ctx.run_id
    real, shown = ctx.file.real, ctx.file.shown
    parsed = Handoff(PIPELINE_DEPTH)
    out = Handoff(PIPELINE_DEPTH, parsed.stop)  # one stop ends both stages

    # Two stages in threads of their own: one parses, the other checks, matches and encodes
    # the batch before, so that on two cores neither waits for the other.
    def parse_all() -> None:
        try:
            parse = fmt.parser()
            opts = replace(options, extra={**options.extra, "display_name": shown})
            if fmt.kind == "catalog" and fmt.lines_stand_alone:
                read = known.read_line if known is not None else None
                seed = line_seed(fmt, options, rules)
                opts = replace(opts, lines=LineDigests(seed, read, fmt.padded_lines))
            for batch in parse(real, options=opts):
                if not parsed.put(batch):
                    return
            parsed.put(DONE)
        except BaseException as exc:  # noqa: BLE001 - handed to the consuming thread
            parsed.put(exc)

    def produce() -> None:
        try:
            while True:
                item = parsed.get()
                if item is DONE or isinstance(item, BaseException):
                    out.put(item)
                    return
                batch = cast(Batch, item)
                payload: bytes | memoryview = b""
                frame, vols, listed = pl.DataFrame({LINE_NO: []}), set(), batch.known
                if batch.frame.height:
                    catalog = fmt.kind == "catalog"
                    frame, refused = checked(fmt.kind, batch.frame, rules, options.strict, shown)
                    if refused:
                        batch.rejects = sorted(batch.rejects + refused, key=lambda r: r.line_no)
                    if fmt.kind != "tapes":
                        frame = frame.with_columns(pl.lit(run_id, pl.Int64).alias("ingest_run_id"))
                    if "volume" in frame.columns:
                        vols = {v for v in frame["volume"].unique().to_list() if v}
                    listed = frame.height + batch.known
                    if catalog:
                        digest = row_digests(frame, rules, fmt.listing_ranks)
                        frame = frame.with_columns(digest.alias("row_digest"))
                        if known is not None:
                            keep, frame = known.changed(frame, digest, fmt.listing_ranks)
                            frame = frame.filter(keep)
                        frame = with_datasets(frame, rules) if frame.height else frame
                        frame = file_id_where_not_path(frame)
                    frame = frame.select(*columns, LINE_NO)
                    payload = copy_text(frame.drop(LINE_NO))
                if not out.put((batch, payload, frame, vols, listed)):
                    return
        except BaseException as exc:  # noqa: BLE001 - handed to the consuming thread
            out.put(exc)

    workers = [
        threading.Thread(target=parse_all, name="tapelens-parse", daemon=True),
        threading.Thread(target=produce, name="tapelens-encode", daemon=True),
    ]
    for item in out.drain(workers):
        yield cast(Encoded, item)
