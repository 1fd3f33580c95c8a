"""The loader: one input file into the canonical tables, all or nothing.

Per input file, in one transaction: an ingest_runs row; the parser's batches streamed through a
single COPY (into a temporary table, or straight into tape_files on the first load of a catalog
source, when no row can conflict); the refused lines into ingest_rejects; an upsert into the
canonical table; copies that a newer dump no longer lists marked removed; unseen volumes added to
tapes. A re-run of a file already loaded (same sha256, kind, format, source) changes nothing.
"""

from __future__ import annotations

import csv
import hashlib
import queue
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import cast

import polars as pl
import psycopg
from psycopg import sql

from tapelens.db import connect, redact
from tapelens.errors import DatabaseError, InputError, ParseError
from tapelens.ingest import canonical
from tapelens.ingest.datasets import DatasetRules, with_datasets
from tapelens.ingest.formats import Format
from tapelens.ingest.formats.base import Batch, ParseOptions, Reject

# progress(bytes_read, total_bytes or None, rows_loaded)
Progress = Callable[[int, int | None, int], None]

HASH_CHUNK = 1 << 20


@dataclass(frozen=True)
class IngestResult:
    path: str
    kind: str
    format: str
    source: str
    status: str  # loaded | unchanged
    run_id: int | None
    rows: int = 0
    rejects: int = 0
    skipped: int = 0
    removed: int = 0
    seconds: float = 0.0
    first_reject: Reject | None = None
    notes: tuple[str, ...] = ()

    @property
    def rejects_summary(self) -> str:
        if not self.rejects or self.first_reject is None:
            return ""
        r = self.first_reject
        return f"{self.rejects} lines refused, first: {self.path}:{r.line_no}: {r.reason}"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


@contextmanager
def _materialised(path: str | Path) -> Iterator[Path]:
    """A real file for the input: stdin is spooled to a temporary file so it can be hashed first."""
    if str(path) != "-":
        p = Path(path)
        if not p.is_file():
            raise InputError(f"{p}: no such file")
        yield p
        return
    with tempfile.NamedTemporaryFile(prefix="tapelens-stdin-") as tmp:
        shutil.copyfileobj(sys.stdin.buffer, tmp)
        tmp.flush()
        yield Path(tmp.name)


def _prepare(kind: str, frame: pl.DataFrame, rules: DatasetRules) -> pl.DataFrame:
    """Fill what the loader derives (dataset fields, default identities), conform to the schema."""
    if kind == "catalog":
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
    return canonical.conform(kind, frame)


def _csv(frame: pl.DataFrame) -> bytes:
    # Strings always quoted, nulls bare and empty: NULL and '' stay distinct through COPY CSV.
    return frame.write_csv(include_header=False, quote_style="non_numeric").encode()


def _ident(*parts: str) -> sql.Composable:
    return sql.Identifier(*parts)


def _cols(names: list[str]) -> sql.Composable:
    return sql.SQL(", ").join(sql.Identifier(c) for c in names)


class _Rejects:
    """Refused lines spooled to a temporary file (lenient loads of bad files stay bounded)."""

    def __init__(self) -> None:
        self.count = 0
        self.first: Reject | None = None
        self._buf = tempfile.SpooledTemporaryFile(max_size=8 << 20, mode="w+", newline="")  # noqa: SIM115
        self._writer = csv.writer(self._buf)

    def reset(self) -> None:
        self.close()
        self.__init__()  # type: ignore[misc]

    def add(self, rejects: list[Reject]) -> None:
        for r in rejects:
            if self.first is None or r.line_no < self.first.line_no:
                self.first = r
            self._writer.writerow([r.line_no, r.raw, r.reason])
        self.count += len(rejects)

    def copy_into(self, cur: psycopg.Cursor, run_id: int) -> None:
        if not self.count:
            return
        self._buf.seek(0)
        stmt = sql.SQL("copy {} (line_no, raw, reason) from stdin (format csv)").format(
            _ident("_tapelens_rejects")
        )
        cur.execute(
            "create temp table _tapelens_rejects (line_no bigint, raw text, reason text)"
            " on commit drop"
        )
        with cur.copy(stmt) as copy:
            while chunk := self._buf.read(1 << 20):
                copy.write(chunk)
        # A line refused twice (two reasons) keeps its first reason.
        cur.execute(
            "insert into tapelens.ingest_rejects (run_id, line_no, raw, reason)"
            " select distinct on (line_no) %s, line_no, raw, reason from _tapelens_rejects"
            " order by line_no",
            [run_id],
        )

    def close(self) -> None:
        self._buf.close()


def _already_loaded(conn: psycopg.Connection, sha: str, fmt: Format, source: str) -> int | None:
    row = conn.execute(
        "select run_id from tapelens.ingest_runs where sha256 = %s and kind = %s and format = %s"
        " and source = %s and status = 'loaded'",
        [sha, fmt.kind, fmt.name, source],
    ).fetchone()
    return int(row[0]) if row else None


def _source_is_empty(conn: psycopg.Connection, source: str) -> bool:
    row = conn.execute(
        "select not exists (select 1 from tapelens.tape_files where source = %s)", [source]
    ).fetchone()
    return bool(row and row[0])


def ingest_file(
    dsn: str,
    fmt: Format,
    path: str | Path,
    options: ParseOptions,
    rules: DatasetRules | None = None,
    progress: Progress | None = None,
    partial: bool | None = None,
) -> IngestResult:
    """Load one input file; all or nothing. `partial`: the file lists only some volumes of its
    source, so only copies on those volumes can be marked removed (default: the format's nature)."""
    rules = rules or DatasetRules()
    per_volume = fmt.per_volume if partial is None else partial
    started = time.monotonic()
    with _materialised(path) as real:
        shown = str(path)
        sha = sha256_of(real)
        total = real.stat().st_size
        # Autocommit, so that conn.transaction() below is a real BEGIN ... COMMIT.
        conn = connect(dsn, autocommit=True)
        try:
            prior = _already_loaded(conn, sha, fmt, options.source)
            if prior is not None:
                return IngestResult(shown, fmt.kind, fmt.name, options.source, "unchanged", prior)
            return _load(
                conn,
                dsn,
                fmt,
                real,
                shown,
                sha,
                total,
                options,
                rules,
                progress,
                per_volume,
                started,
            )
        finally:
            conn.close()


def _load(
    conn: psycopg.Connection,
    dsn: str,
    fmt: Format,
    real: Path,
    shown: str,
    sha: str,
    total: int,
    options: ParseOptions,
    rules: DatasetRules,
    progress: Progress | None,
    per_volume: bool,
    started: float,
) -> IngestResult:
    rejects = _Rejects()
    try:
        with conn.transaction(), conn.cursor() as cur:
            row = cur.execute(
                "insert into tapelens.ingest_runs (kind, format, source, path, sha256, status)"
                " values (%s, %s, %s, %s, %s, 'running') returning run_id",
                [fmt.kind, fmt.name, options.source, shown, sha],
            ).fetchone()
            assert row is not None
            run_id = int(row[0])
            rows, skipped, volumes, notes = _copy_batches(
                conn, cur, fmt, real, shown, options, rules, progress, total, run_id, rejects
            )
            rejects.copy_into(cur, run_id)
            removed = _finish(cur, fmt, options.source, run_id, sorted(volumes), per_volume)
            hook = fmt.after_load_hook()
            if hook is not None:
                hook(cur, options.source, run_id)
            cur.execute(
                "update tapelens.ingest_runs set rows = %s, rejects = %s, status = 'loaded',"
                " finished_at = now() where run_id = %s",
                [rows, rejects.count, run_id],
            )
    except ParseError as exc:
        if exc.path == str(real):  # stdin was spooled to a temporary file: name it as given
            exc = ParseError(shown, exc.line, exc.reason)
        _record_failure(dsn, fmt, options.source, shown, sha, str(exc))
        raise exc from None
    except psycopg.Error as exc:
        message = " ".join(str(exc).split())
        _record_failure(dsn, fmt, options.source, shown, sha, message)
        raise DatabaseError(f"{shown}: nothing loaded: {message} ({redact(dsn)})") from None
    finally:
        rejects.close()
    return IngestResult(
        shown,
        fmt.kind,
        fmt.name,
        options.source,
        "loaded",
        run_id,
        rows,
        rejects.count,
        skipped,
        removed,
        time.monotonic() - started,
        rejects.first,
        tuple(notes),
    )


def _copy_batches(
    conn: psycopg.Connection,
    cur: psycopg.Cursor,
    fmt: Format,
    real: Path,
    shown: str,
    options: ParseOptions,
    rules: DatasetRules,
    progress: Progress | None,
    total: int,
    run_id: int,
    rejects: _Rejects,
) -> tuple[int, int, set[str], list[str]]:
    """Stream the parser's batches through one COPY; return (rows, skipped lines, volumes,
    the parser's notes in the order first said)."""
    kind = fmt.kind
    cols = list(canonical.SCHEMAS[kind])
    extra = [] if kind == "tapes" else ["ingest_run_id"]
    direct = kind == "catalog" and _source_is_empty(conn, options.source)
    stage = sql.Identifier("_tapelens_stage")
    cur.execute(
        sql.SQL("create temp table {} (like {} including defaults) on commit drop").format(
            stage, _ident("tapelens", canonical.TABLES[kind])
        )
    )
    if direct:
        cur.execute("savepoint direct_copy")
    target = _ident("tapelens", "tape_files") if direct else stage

    def stream(into: sql.Composable, straight: bool) -> tuple[int, int, set[str], list[str]]:
        return _stream(
            cur,
            fmt,
            real,
            shown,
            options,
            rules,
            progress,
            total,
            run_id,
            rejects,
            into,
            cols + extra,
            straight,
        )

    try:
        return stream(target, direct)
    except psycopg.errors.UniqueViolation:
        # The file lists the same copy twice: load it through the temporary table instead.
        cur.execute("rollback to savepoint direct_copy")
        rejects.reset()
        return stream(stage, False)


def _stream(
    cur: psycopg.Cursor,
    fmt: Format,
    real: Path,
    shown: str,
    options: ParseOptions,
    rules: DatasetRules,
    progress: Progress | None,
    total: int,
    run_id: int,
    rejects: _Rejects,
    target: sql.Composable,
    columns: list[str],
    direct: bool,
) -> tuple[int, int, set[str], list[str]]:
    rows = skipped = 0
    volumes: set[str] = set()
    notes: list[str] = []
    stmt = sql.SQL("copy {} ({}) from stdin (format csv)").format(target, _cols(columns))
    with cur.copy(stmt) as copy:
        for batch, payload, height, batch_volumes in _encoded_batches(
            fmt, real, shown, options, rules, run_id
        ):
            rejects.add(batch.rejects)
            skipped += batch.skipped
            notes += [n for n in batch.notes if n not in notes]
            if height:
                copy.write(payload)
                rows += height
                volumes |= batch_volumes
            if progress:
                progress(batch.bytes_read, total, rows)
    if not direct:
        rows = _upsert(cur, fmt.kind, columns)
    return rows, skipped, volumes, notes


_Encoded = tuple[Batch, bytes, int, set[str]]
_DONE = object()
PIPELINE_DEPTH = 2  # batches parsed ahead of the COPY: bounds memory to a few batches


def _encoded_batches(
    fmt: Format,
    real: Path,
    shown: str,
    options: ParseOptions,
    rules: DatasetRules,
    run_id: int,
) -> Iterator[_Encoded]:
    """The parser's batches, conformed and CSV-encoded in a second thread.

    Parsing (Polars, which releases the GIL) then overlaps with the server ingesting the
    previous batch, so a load costs about the slower of the two rather than their sum.
    """
    out: queue.Queue[object] = queue.Queue(maxsize=PIPELINE_DEPTH)
    stop = threading.Event()

    def produce() -> None:
        try:
            parse = fmt.parser()
            opts = replace(options, extra={**options.extra, "display_name": shown})
            for batch in parse(real, options=opts):
                payload, height, vols = b"", 0, set()
                if batch.frame.height:
                    frame = _prepare(fmt.kind, batch.frame, rules)
                    if fmt.kind != "tapes":
                        frame = frame.with_columns(pl.lit(run_id, pl.Int64).alias("ingest_run_id"))
                    payload, height = _csv(frame), frame.height
                    if "volume" in frame.columns:
                        vols = {v for v in frame["volume"].unique().to_list() if v}
                while not stop.is_set():
                    try:
                        out.put((batch, payload, height, vols), timeout=0.5)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            out.put(_DONE)
        except BaseException as exc:  # noqa: BLE001 - handed to the consuming thread
            out.put(exc)

    worker = threading.Thread(target=produce, name="tapelens-parse", daemon=True)
    worker.start()
    try:
        while True:
            item = out.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield cast(_Encoded, item)
    finally:
        stop.set()
        worker.join(timeout=10)


def _upsert(cur: psycopg.Cursor, kind: str, columns: list[str]) -> int:
    """Move the staged rows into the canonical table; return the rows staged."""
    table = _ident("tapelens", canonical.TABLES[kind])
    cols = _cols(columns)
    staged_row = cur.execute("select count(*) from _tapelens_stage").fetchone()
    staged = int(staged_row[0]) if staged_row else 0
    if kind == "catalog":
        keys = ("source", "copy_id", "written_at")
        changing = [c for c in columns if c not in keys]
        sets = sql.SQL(", ").join(
            sql.SQL("{} = excluded.{}").format(sql.Identifier(c), sql.Identifier(c))
            for c in changing
        )
        cur.execute(
            sql.SQL(
                "insert into {t} ({c}) select distinct on (source, copy_id, written_at) {c}"
                " from _tapelens_stage order by source, copy_id, written_at"
                " on conflict (source, copy_id, written_at) do update set {s},"
                " last_seen_at = now(), removed_at = null"
            ).format(t=table, c=cols, s=sets)
        )
    elif kind == "transfers":
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
                "insert into {t} ({c}) select distinct on (volume) {c} from _tapelens_stage"
                " order by volume"
                " on conflict (volume) do update set barcode = excluded.barcode,"
                " media_type = excluded.media_type, library = excluded.library,"
                " pool = excluded.pool, capacity_bytes = excluded.capacity_bytes,"
                " state = excluded.state, media_from = excluded.media_from, updated_at = now()"
            ).format(t=table, c=cols)
        )
    return staged


def _finish(
    cur: psycopg.Cursor,
    fmt: Format,
    source: str,
    run_id: int,
    volumes: list[str],
    per_volume: bool,
) -> int:
    """Catalog bookkeeping: mark copies the dump no longer lists, register unseen volumes."""
    if fmt.kind != "catalog":
        return 0
    # Every copy this file lists now carries this run's id; the others of its scope are gone.
    scope = " and volume = any(%(v)s)" if per_volume else ""
    cur.execute(
        "update tapelens.tape_files set removed_at = now() where source = %(s)s"
        " and removed_at is null and ingest_run_id <> %(r)s" + scope,
        {"s": source, "r": run_id, "v": volumes},
    )
    removed = max(cur.rowcount, 0)
    # Volumes the inventory has not named yet: media type from an LTO/3592 barcode suffix.
    cur.execute(
        "insert into tapelens.tapes (volume, barcode, media_type, media_from, state)"
        " select v.volume, case when m.media_type is null then null else v.volume end,"
        "        coalesce(m.media_type, 'unknown'),"
        "        case when m.media_type is null then 'unknown' else 'barcode' end, 'unknown'"
        " from unnest(%s::text[]) as v(volume)"
        " left join tapelens.media_types m"
        "   on length(v.volume) = 8 and upper(right(v.volume, 2)) = m.barcode_suffix"
        " on conflict (volume) do nothing",
        [volumes],
    )
    return removed


def _record_failure(dsn: str, fmt: Format, source: str, path: str, sha: str, message: str) -> None:
    """Keep a trace of a failed load (its rows were rolled back); never mask the real error."""
    try:
        with connect(dsn, autocommit=True) as conn:
            conn.execute(
                "insert into tapelens.ingest_runs"
                " (kind, format, source, path, sha256, status, finished_at, message)"
                " values (%s, %s, %s, %s, %s, 'failed', now(), %s)",
                [fmt.kind, fmt.name, source, path, sha, message[:2000]],
            )
    except Exception:  # noqa: BLE001 - the original error is what the user must see
        pass
