"""One file's rows into the database through one COPY, with the fall-backs when it is refused."""

from __future__ import annotations

from contextlib import ExitStack

import psycopg
from psycopg import sql

from tapelens.ingest import canonical
from tapelens.ingest.load.catalog_diff import CATALOG_EXTRA, known_copies
from tapelens.ingest.load.context import LoadContext
from tapelens.ingest.load.copy_text import column_list, copy_rows, ident
from tapelens.ingest.load.first_load import (
    FILE_ID_INDEX,
    build_indexes,
    bulk_worthwhile,
    drop_indexes,
    source_is_empty,
)
from tapelens.ingest.load.pipeline import encoded_batches
from tapelens.ingest.load.upserts import upsert

Streamed = tuple[int, int, set[str], list[str]]  # rows, skipped lines, volumes, notes


def copy_file(ctx: LoadContext) -> Streamed:
    """Stream the file's parsed batches through one COPY; return (rows, skipped lines, volumes,
    the parser's notes in the order first said).

    The first load of a catalog source goes straight into the catalog table, without its
    indexes when the file is large enough for a bulk load (first_load.py); any other load goes
    through a temporary stage. Should the server refuse the COPY, the load starts again from a
    savepoint, through the stage, batch by batch, finding the refused rows by bisection."""
    fmt, options, dump, cur = ctx.fmt, ctx.options, ctx.dump, ctx.cur
    kind = fmt.kind
    extra = (
        [] if kind == "tapes" else list(CATALOG_EXTRA) if kind == "catalog" else ["ingest_run_id"]
    )
    columns = [*canonical.SCHEMAS[kind], *extra]
    direct = kind == "catalog" and source_is_empty(ctx.conn, options.source)
    if kind == "catalog" and not direct and dump.known is None:
        # A newer dump: match its rows against the stored copies, send only what differs.
        dump.known = known_copies(
            cur, dump.dsn, options.source, dump.runs, fmt.listing_ranks, fmt.lines_stand_alone
        )
    bulk = direct and bulk_worthwhile(ctx.conn, ctx.file.total)
    stage = sql.Identifier("_tapelens_stage")
    # The files of one dump share the transaction. A catalog's files share one stage, compared
    # with the table once they are all in (apply_catalog); the other kinds' each get a fresh
    # one. Its constraints are the table's, so that a row the table would refuse is refused by
    # the COPY, where it can be found, rather than later.
    if kind != "catalog":
        cur.execute("drop table if exists _tapelens_stage")
    cur.execute(
        sql.SQL(
            "create temp table if not exists {}"
            " (like {} including defaults including constraints) on commit drop"
        ).format(stage, ident("tapelens", canonical.TABLES[kind]))
    )
    cur.execute("savepoint load_stream")
    target = ident("tapelens", "tape_files") if direct else stage
    try:
        if not bulk:
            return stream(ctx, target, columns, direct)
        # An index none of the file's rows enters costs nothing to keep, where building it
        # again would read the whole table.
        indexes = drop_indexes(cur, {FILE_ID_INDEX} if fmt.file_id_is_path else set())
        streamed = stream(ctx, target, columns, direct)
        build_indexes(cur, indexes, ctx.progress, streamed[0])
        return streamed
    except psycopg.Error as exc:
        # The indexes dropped for a bulk load come back with the savepoint.
        cur.execute("rollback to savepoint load_stream")
        ctx.rejects.reset()
        if direct and isinstance(exc, psycopg.errors.UniqueViolation):
            # The file lists the same copy twice: load it through the temporary table instead.
            return stream(ctx, stage, columns, False)
        # The server refused a row the checks let through: copy batch by batch, and find the
        # refused rows by bisection.
        return stream(ctx, stage, columns, False, careful=True)


def stream(
    ctx: LoadContext,
    target: sql.Composable,
    columns: list[str],
    direct: bool,
    careful: bool = False,
) -> Streamed:
    """The file's batches into `target` through one COPY (`careful`: one COPY a batch, each
    refused row found and refused alone); other kinds than the catalog are then upserted."""
    cur, rejects, known = ctx.cur, ctx.rejects, ctx.dump.known
    rows = skipped = 0
    volumes: set[str] = set()
    notes: list[str] = []
    stmt = sql.SQL("copy {} ({}) from stdin").format(target, column_list(columns))
    batches = encoded_batches(ctx, columns, known)
    with ExitStack() as stack:
        copy = None if careful else stack.enter_context(cur.copy(stmt))
        for batch, payload, frame, batch_volumes, listed in batches:
            rejects.add(batch.rejects)
            skipped += batch.skipped
            notes += [n for n in batch.notes if n not in notes]
            rows += listed  # rows the file lists, sent or matched unchanged
            if frame.height:
                if copy is not None:
                    copy.write(payload)
                else:
                    shown, strict = ctx.file.shown, ctx.options.strict
                    loaded = copy_rows(cur, stmt, frame, rejects, strict, shown)
                    rows -= frame.height - loaded
            volumes |= batch_volumes
            if ctx.progress:
                ctx.progress(batch.bytes_read, ctx.file.total, rows)
    if known is not None:
        volumes |= known.volumes_by_line()
    if not direct and ctx.fmt.kind != "catalog":
        rows = upsert(cur, ctx.fmt.kind, columns, ctx.run_id)
    return rows, skipped, volumes, notes
