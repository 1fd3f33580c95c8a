"""Staged rows into the canonical tables, per kind, and the catalog's bookkeeping after a dump."""

from __future__ import annotations

import polars as pl
import psycopg
from psycopg import sql

from tapelens.errors import DatabaseError
from tapelens.ingest import canonical
from tapelens.ingest.formats import Format
from tapelens.ingest.load.catalog_diff import CATALOG_EXTRA, KEY, RANKED, Known
from tapelens.ingest.load.copy_text import column_list, ident
from tapelens.ingest.load.guard import ShrinkGuard, check_shrink
from tapelens.media import media_from_barcode

_SIZES = ("size_bytes", "size_bound_bytes")


def upsert(cur: psycopg.Cursor, kind: str, columns: list[str], run_id: int) -> int:
    """Move the staged rows into the canonical table; return the rows staged."""
    table = ident("tapelens", canonical.TABLES[kind])
    cols = column_list(columns)
    staged_row = cur.execute("select count(*) from _tapelens_stage").fetchone()
    staged = int(staged_row[0]) if staged_row else 0
    if kind in ("transfers", "hints"):  # events: a record already stored is kept as it is
        cur.execute(
            sql.SQL(
                "insert into {t} ({c}) select {c} from _tapelens_stage on conflict do nothing"
            ).format(t=table, c=cols)
        )
    elif kind == "mounts":
        cur.execute(
            sql.SQL(
                "insert into {t} ({c}) select distinct on (source, volume, mounted_at) {c}"
                " from _tapelens_stage order by source, volume, mounted_at"
                " on conflict (source, volume, mounted_at) do update set"
                " drive = excluded.drive, requested_at = excluded.requested_at,"
                " dismounted_at = excluded.dismounted_at, purpose = excluded.purpose,"
                " status = excluded.status"
            ).format(t=table, c=cols)
        )
    else:  # tapes: the inventory is the authority on what it states
        cur.execute(
            sql.SQL(
                "insert into {t} ({c}, updated_run_id) select distinct on (volume) {c}, {r}"
                " from _tapelens_stage order by volume"
                " on conflict (volume) do update set barcode = excluded.barcode,"
                " media_type = excluded.media_type, library = excluded.library,"
                " pool = excluded.pool, capacity_bytes = excluded.capacity_bytes,"
                " state = excluded.state, media_from = excluded.media_from,"
                " state_raw = excluded.state_raw, updated_at = now(),"
                " updated_run_id = excluded.updated_run_id"
            ).format(t=table, c=cols, r=sql.Literal(run_id))
        )
    return staged


def apply_catalog(
    cur: psycopg.Cursor,
    source: str,
    run_ids: list[int],
    gone: pl.DataFrame | None,
    keep_places: bool = False,
    relined: pl.DataFrame | None = None,
) -> None:
    """Bring the table to the dump: write the staged copies (new, or different from the stored
    ones: Known sent only those) and retire `gone` (the stored copies no dump row matched).
    Unchanged copies keep their row and their run id, so a newer dump that changes 1% of a
    catalog writes 1% of it; those read from another line than before (`relined`) get its
    digest."""
    # A copy of a format whose positions are listing ranks keeps the place it has (Known).
    values = [c for c in canonical.TAPE_FILES if c not in KEY and not (keep_places and c in RANKED)]
    # An exact size stays when a dump that prints sizes rounded (CTA's text table) lists the
    # copy again with a size its rounding allows: the exact figure is the better one.
    keep_exact = sql.SQL(
        "case when excluded.size_bound_bytes is not null"
        " and tape_files.size_bound_bytes is null"
        " and abs(excluded.size_bytes - tape_files.size_bytes) <= excluded.size_bound_bytes"
        " then tape_files.{c} else excluded.{c} end"
    )
    sets = sql.SQL(", ").join(
        sql.SQL("{} = ").format(sql.Identifier(c))
        + (
            keep_exact.format(c=sql.Identifier(c))
            if c in _SIZES
            else sql.SQL("excluded.{}").format(sql.Identifier(c))
        )
        for c in [*values, *CATALOG_EXTRA]
    )
    cols = column_list([*canonical.TAPE_FILES, *CATALOG_EXTRA])
    cur.execute("analyze _tapelens_stage")  # the server sees a few rows, not a guess
    cur.execute(
        sql.SQL(
            "insert into tapelens.tape_files ({c}) select distinct on (source, copy_id, written_at)"
            " {c} from _tapelens_stage order by source, copy_id, written_at"
            " on conflict (source, copy_id, written_at) do update set {s},"
            " last_seen_at = now(), removed_at = null, removed_run_id = null"
        ).format(c=cols, s=sets)
    )
    if gone is not None and gone.height:
        _update_where(
            cur,
            gone,
            sql.SQL("removed_at = now(), removed_run_id = {}").format(sql.Literal(max(run_ids))),
        )
    if relined is not None and relined.height:
        _update_where(cur, relined, sql.SQL("line_digest = g.line"))


def _update_where(cur: psycopg.Cursor, rows: pl.DataFrame, sets: sql.Composable) -> None:
    """Update stored copies where the read of the stored copies saw them (Known._where), chunk
    by chunk, by tuple id: no key lookup, no scan. Loads are serialised and this one writes
    only new or changed copies, so those rows have not moved; the row's digest and volume are
    checked all the same (a table rewritten in between, VACUUM FULL, moves rows). `sets` may
    use the columns of `rows` beyond those four as g.<name>. Tuple ids come packed
    (block << 16 | item)."""
    names = ["tid", "digest", "volume", *(c for c in rows.columns if c not in _WHERE)]
    types = {"tid": "tid", "digest": "bigint", "volume": "text"}
    for (chunk,), part in rows.group_by("chunk"):
        # Tuple ids as text one chunk at a time: a dump read from new lines may touch millions.
        tid = part["tid"].to_numpy()
        blocks, items = (tid >> 16).tolist(), (tid & 0xFFFF).tolist()
        text = [f"({b},{i})" for b, i in zip(blocks, items, strict=True)]
        part = part.with_columns(pl.Series("tid", text, dtype=pl.String))
        cur.execute(
            sql.SQL(
                "update {} t set {} from unnest({}) as g({})"
                " where t.ctid = g.tid and t.row_digest is not distinct from g.digest"
                " and t.volume = g.volume and t.removed_at is null"
            ).format(
                _chunk_table(cur, int(chunk)),
                sets,
                sql.SQL(", ").join(
                    sql.SQL("%s::{}[]").format(sql.SQL(types.get(c, "bigint"))) for c in names
                ),
                column_list(names),
            ),
            [part[c].to_list() for c in names],
        )


_WHERE = ("chunk", "tid", "digest", "volume")


def _chunk_table(cur: psycopg.Cursor, oid: int) -> sql.Composable:
    row = cur.execute(
        "select n.nspname, c.relname from pg_class c join pg_namespace n on n.oid = c.relnamespace"
        " where c.oid = %s",
        [oid],
    ).fetchone()
    if row is None:
        raise DatabaseError(f"the catalog table's chunk {oid} is gone")
    return ident(str(row[0]), str(row[1]))


def finish_catalog(
    cur: psycopg.Cursor,
    fmt: Format,
    source: str,
    run_ids: list[int],
    volumes: list[str],
    per_volume: bool,
    listed: int,
    guard: ShrinkGuard,
    shown: str,
    known: Known | None,
) -> int:
    """Catalog bookkeeping: mark copies the dump no longer lists, register unseen volumes.

    Refuses (ShrinkRefused, so the transaction rolls back) a dump that would retire more than
    the guard allows."""
    if fmt.kind != "catalog":
        return 0
    last = max(run_ids)
    # The stored copies no dump row matched, within the dump's scope (the source, or the listed
    # volumes of a per-volume listing): judged by the guard before anything is written.
    gone = known.unlisted(volumes if per_volume else None) if known is not None else None
    removed = gone.height if gone is not None else 0
    if removed and not guard.allow:
        check_shrink(source, removed, listed, guard, shown)
    relined = known.new_lines() if known is not None else None
    apply_catalog(cur, source, run_ids, gone, fmt.listing_ranks, relined)
    register_volumes(cur, volumes, last)
    return removed


def register_volumes(cur: psycopg.Cursor, volumes: list[str], run_id: int) -> None:
    """Add to tapelens.tapes the volumes the inventory has not named yet, with the media type
    their label names (tapelens.media.media_from_barcode: an LTO or 3592 suffix), else
    'unknown'; a volume already there is left as the inventory stated it."""
    media = [media_from_barcode(v) for v in volumes]
    cur.execute(
        "insert into tapelens.tapes"
        " (volume, barcode, media_type, media_from, state, updated_run_id)"
        " select v.volume, case when v.media_type is null then null else v.volume end,"
        "        coalesce(v.media_type, 'unknown'),"
        "        case when v.media_type is null then 'unknown' else 'barcode' end, 'unknown', %s"
        " from unnest(%s::text[], %s::text[]) as v(volume, media_type)"
        " on conflict (volume) do nothing",
        [run_id, volumes, [m.media_type if m is not None else None for m in media]],
    )
