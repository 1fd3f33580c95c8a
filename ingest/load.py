"""The loader: input files into the canonical tables, all or nothing.

Per load, in one transaction: an ingest_runs row per file; each file's batches streamed through a
single COPY (into a temporary table, or straight into tape_files on the first load of a catalog
source, when no row can conflict); the refused lines into ingest_rejects; an upsert into the
canonical table; copies that a newer dump no longer lists marked removed; unseen volumes added to
tapes. Several files of one whole-catalog dump load together, as one dump (their union).

Safety rules, each with its reason:
- Loads are serialised by one advisory lock, so run ids grow in commit order (incremental marts
  use the highest run id seen as their watermark) and two identical ingests at once cannot both
  load: the second waits, then finds the file loaded and reports it unchanged.
- A file already loaded is a no-op only while it is still the current state of its source; an
  older dump loaded again after a newer one loads, restoring the older state.
- A catalog dump that would retire more than a set share of its source's live copies (an empty
  dump: any) is refused, nothing changed, until the user allows it (ShrinkGuard).
- Values the database would refuse are checked before COPY and refused with their line; a row
  the server still refuses is found by bisection, refused alone, and the rest loads.
"""

from __future__ import annotations

import csv
import hashlib
import io
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol, cast

import numpy as np
import polars as pl
import psycopg
import pyarrow as pa
from psycopg import sql

from tapelens.arrays import sorted_search
from tapelens.columnstore import compressed_chunks
from tapelens.db import connect, redact
from tapelens.errors import DatabaseError, InputError, ParseError
from tapelens.frames import read_batches, read_batches_together, read_frame
from tapelens.handoff import DONE, Handoff
from tapelens.ingest import canonical
from tapelens.ingest.checks import refuse_unstorable, render
from tapelens.ingest.datasets import DatasetRules, derivation_key, with_datasets
from tapelens.ingest.formats import Format
from tapelens.ingest.formats.base import (
    LINE_DIGEST,
    LINE_NO,
    Batch,
    LineDigests,
    ParseOptions,
    Reject,
    aggregate_at,
)


class Progress(Protocol):
    """Told as a load goes: input bytes read of the total, rows so far, and the step when it is
    not reading (building an index)."""

    def __call__(self, done: int, total: int | None, rows: int, step: str = "") -> None: ...


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


def _prepare(
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


# COPY's text format: tab-separated, \N for NULL, backslash escapes. The server reads it a
# fifth faster than CSV (no quoting to undo), and Polars writes it as fast.
_ESCAPED = r"[\\\t\n\r]"
_ESCAPES = (("\\", "\\\\"), ("\t", "\\t"), ("\n", "\\n"), ("\r", "\\r"))


def _copy_text(frame: pl.DataFrame) -> memoryview:
    """The rows in COPY's text format (written into one buffer, not copied again)."""
    texts = [c for c, t in frame.schema.items() if t == pl.String]
    if texts and frame.select(pl.any_horizontal(pl.col(texts).str.contains(_ESCAPED)).any()).item():
        escaped = [pl.col(c) for c in texts]
        for plain, escape in _ESCAPES:  # the backslash first, so escapes are not escaped again
            escaped = [e.str.replace_all(plain, escape, literal=True) for e in escaped]
        frame = frame.with_columns(escaped)
    out = io.BytesIO()
    frame.write_csv(
        out, include_header=False, separator="\t", quote_style="never", null_value="\\N"
    )
    return out.getbuffer()


def _file_id_where_not_path(frame: pl.DataFrame) -> pl.DataFrame:
    """The catalog stores a file id only where it is not the path (migration 020): the rest
    would hold the path twice. Done after the row digest, which keeps seeing the file id."""
    return frame.with_columns(
        pl.when(pl.col("file_id") != pl.col("path")).then(pl.col("file_id")).alias("file_id")
    )


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
        cur.execute("drop table if exists _tapelens_rejects")  # an earlier file of the dump
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


# One lock for every load: loads commit one at a time, so run ids grow in commit order.
LOAD_LOCK = 0x7461_7065_6C65_6E73  # "tapelens"


@dataclass(frozen=True)
class ShrinkGuard:
    """How much of a source's live catalog one dump may retire before it is refused."""

    max_share: float = 0.10  # of the copies live in the dump's scope
    allow: bool = False  # --allow-shrink: the user confirmed the catalog really shrank


class ShrinkRefused(InputError):
    """A dump would retire much of what is stored: refused until the user confirms it."""


@dataclass
class _File:
    shown: str  # as the user named it
    real: Path  # a real file (stdin spooled)
    sha: str
    total: int  # bytes


# Bytes of input per catalog row, at the least (an HPSS `ls -P` line is about 230 bytes, a CTA or
# TSM one about 200): a file's size over this bounds the rows it can hold from above.
MIN_BYTES_PER_ROW = 100


def _bulk_worthwhile(conn: psycopg.Connection, total_bytes: int) -> bool:
    """Whether to load without the table's indexes and build them afterwards, as PostgreSQL's
    manual advises for bulk loads ("Populating a Database": a new index is built faster over the
    whole table than grown row by row). It pays when the file may hold more rows than the
    table has: always on a first load. Counting stops at that many rows, so a large table
    costs no full count."""
    bound = max(total_bytes // MIN_BYTES_PER_ROW, 1)
    row = conn.execute(
        "select count(*) from (select 1 from tapelens.tape_files limit %s) as t", [bound]
    ).fetchone()
    return row is not None and int(row[0]) < bound


# The catalog's index of the copies whose file id is not their path (migration 013).
FILE_ID_INDEX = "tape_files_file_id"


def _drop_indexes(cur: psycopg.Cursor, keep: set[str]) -> list[tuple[str, str]]:
    """Drop the catalog table's indexes but `keep` (inside the load's transaction); their
    definitions."""
    indexes = cur.execute(
        "select indexname, indexdef from pg_indexes"
        " where schemaname = 'tapelens' and tablename = 'tape_files' and indexname <> all(%s)"
        " order by indexname",
        [sorted(keep)],
    ).fetchall()
    for name, _ in indexes:
        cur.execute(sql.SQL("drop index {}").format(_ident("tapelens", name)))
    return [(str(n), str(d)) for n, d in indexes]


def _build_indexes(
    cur: psycopg.Cursor, indexes: list[tuple[str, str]], progress: Progress | None, rows: int
) -> None:
    """Build the dropped indexes again, each over the whole table in one sort."""
    for i, (name, definition) in enumerate(indexes, start=1):
        if progress:
            progress(0, None, rows, f"index {i} of {len(indexes)} ({name})")
        cur.execute(definition)  # pg_indexes' own CREATE INDEX text for this table


def _refuse_compressed_catalog(conn: psycopg.Connection) -> None:
    """A catalog load reads and updates stored copies by tuple id, which the rows inside a
    compressed chunk do not have: say so before reading, rather than fail on the query."""
    done, _ = compressed_chunks(conn).get("tape_files", (0, 0))
    if done:
        raise DatabaseError(
            f"tapelens.tape_files has {done} compressed chunks, and a catalog load updates"
            " stored copies in place, which compressed rows do not allow; decompress them first:"
            " select decompress_chunk(c, true) from show_chunks('tapelens.tape_files') c"
        )


def _source_is_empty(conn: psycopg.Connection, source: str) -> bool:
    row = conn.execute(
        "select not exists (select 1 from tapelens.tape_files where source = %s)", [source]
    ).fetchone()
    return bool(row and row[0])


def _current_runs(
    conn: psycopg.Connection, fmt: Format, source: str, shas: list[str], per_volume: bool
) -> list[int] | None:
    """The runs that loaded these files, when loading them again would change nothing.

    Logs (transfers, mounts) add events: a file once loaded is always a no-op. A catalog or an
    inventory is a state: loading the file again is a no-op only while it is the source's
    current state, i.e. no later load of that source replaced it (for a per-volume listing:
    no later load covered any of its volumes).
    """
    runs: list[tuple[int, list[str] | None]] = []
    for sha in shas:
        row = conn.execute(
            "select run_id, volumes from tapelens.ingest_runs where sha256 = %s and kind = %s"
            " and format = %s and source = %s and status = 'loaded'"
            " order by run_id desc limit 1",
            [sha, fmt.kind, fmt.name, source],
        ).fetchone()
        if row is None:
            return None
        runs.append((int(row[0]), row[1]))
    if fmt.kind not in ("catalog", "tapes"):
        return [r for r, _ in runs]
    newest = max(r for r, _ in runs)
    volumes = sorted({v for _, vols in runs for v in (vols or [])})
    overlap = " and (volumes is null or volumes && %(v)s::text[])" if per_volume else ""
    later = conn.execute(
        "select exists (select 1 from tapelens.ingest_runs where kind = %(k)s"
        " and source = %(s)s and status = 'loaded' and run_id > %(r)s" + overlap + ")",
        {"k": fmt.kind, "s": source, "r": newest, "v": volumes},
    ).fetchone()
    return None if later and later[0] else [r for r, _ in runs]


def ingest_file(
    dsn: str,
    fmt: Format,
    path: str | Path,
    options: ParseOptions,
    rules: DatasetRules | None = None,
    progress: Progress | None = None,
    partial: bool | None = None,
    guard: ShrinkGuard | None = None,
) -> IngestResult:
    """Load one input file; all or nothing. `partial`: the file lists only some volumes of its
    source, so only copies on those volumes can be marked removed (default: the format's nature)."""
    return ingest_files(
        dsn, fmt, [path], options, rules, (lambda _: progress) if progress else None, partial, guard
    )[0]


def ingest_files(
    dsn: str,
    fmt: Format,
    paths: Sequence[str | Path],
    options: ParseOptions,
    rules: DatasetRules | None = None,
    progress_for: Callable[[str], Progress | None] | None = None,
    partial: bool | None = None,
    guard: ShrinkGuard | None = None,
) -> list[IngestResult]:
    """Load input files of one format and source; one result per file, in the given order.

    The files of a whole-catalog dump are one dump (their union) and load in one transaction:
    copies none of them lists are retired once, after all of them. Any other files load one by
    one, each all or nothing.
    """
    rules = rules or DatasetRules()
    guard = guard or ShrinkGuard()
    per_volume = fmt.per_volume if partial is None else partial
    union = fmt.kind == "catalog" and not per_volume and len(paths) > 1
    groups = [list(paths)] if union else [[p] for p in paths]
    results: list[IngestResult] = []
    for group in groups:
        with ExitStack() as stack:
            files = []
            for path in group:
                real = stack.enter_context(_materialised(path))
                files.append(_File(str(path), real, sha256_of(real), real.stat().st_size))
            results += _load_group(dsn, fmt, files, options, rules, progress_for, per_volume, guard)
    return results


def _load_group(
    dsn: str,
    fmt: Format,
    files: list[_File],
    options: ParseOptions,
    rules: DatasetRules,
    progress_for: Callable[[str], Progress | None] | None,
    per_volume: bool,
    guard: ShrinkGuard,
) -> list[IngestResult]:
    started = time.monotonic()
    source = options.source

    def unchanged(runs: list[int]) -> list[IngestResult]:
        return [
            IngestResult(f.shown, fmt.kind, fmt.name, source, "unchanged", r)
            for f, r in zip(files, runs, strict=True)
        ]

    # Autocommit, so that conn.transaction() below is a real BEGIN ... COMMIT.
    conn = connect(dsn, autocommit=True)
    current = None
    try:
        runs = _current_runs(conn, fmt, source, [f.sha for f in files], per_volume)
        if runs is not None:
            return unchanged(runs)
        loaded: list[_Loaded] = []
        try:
            with conn.transaction(), conn.cursor() as cur:
                cur.execute("select pg_advisory_xact_lock(%s)", [LOAD_LOCK])
                # Another load may have committed the same files while this one waited.
                runs = _current_runs(conn, fmt, source, [f.sha for f in files], per_volume)
                if runs is not None:
                    return unchanged(runs)
                if fmt.kind == "catalog":
                    _refuse_compressed_catalog(conn)
                # Rows of a late log may land in compressed chunks of the history, which
                # TimescaleDB then decompresses; its guard (100,000 rows a transaction by
                # default) would fail the load, which is all-or-nothing and asked for.
                cur.execute(
                    "select set_config(name, '0', true) from pg_settings"
                    " where name = 'timescaledb.max_tuples_decompressed_per_dml_transaction'"
                )
                dump = _Dump(dsn)
                for f in files:
                    current = f
                    progress = progress_for(f.shown) if progress_for else None
                    loaded.append(_load_file(conn, cur, fmt, f, options, rules, progress, dump))
                current = None
                run_ids = [x.run_id for x in loaded]
                volumes = sorted(set().union(*(x.volumes for x in loaded)))
                listed = sum(x.rows for x in loaded)
                shown = ", ".join(f.shown for f in files)
                removed = _finish(
                    cur, fmt, source, run_ids, volumes, per_volume, listed, guard, shown, dump.known
                )
                hook = fmt.after_load_hook()
                for x in loaded:
                    if hook is not None:
                        hook(cur, source, x.run_id)
                    cur.execute(
                        "update tapelens.ingest_runs set rows = %s, rejects = %s, volumes = %s,"
                        " status = 'loaded', finished_at = now() where run_id = %s",
                        [x.rows, x.rejects, sorted(x.volumes) if per_volume else None, x.run_id],
                    )
        finally:
            for x in loaded:
                x.rejects_spool.close()
    except ParseError as exc:
        failed = current or files[0]
        if exc.path == str(failed.real):  # stdin was spooled to a temporary file
            exc = ParseError(failed.shown, exc.line, exc.reason)
        _record_failure(dsn, fmt, source, failed.shown, failed.sha, str(exc))
        raise exc from None
    except ShrinkRefused as exc:
        for f in files:
            _record_failure(dsn, fmt, source, f.shown, f.sha, str(exc))
        raise
    except psycopg.Error as exc:
        failed = current or files[0]
        message = " ".join(str(exc).split())
        _record_failure(dsn, fmt, source, failed.shown, failed.sha, message)
        raise DatabaseError(f"{failed.shown}: nothing loaded: {message} ({redact(dsn)})") from None
    finally:
        conn.close()
    seconds = time.monotonic() - started
    # The retired copies are the dump's, counted once, on its first file.
    return [
        IngestResult(
            f.shown,
            fmt.kind,
            fmt.name,
            source,
            "loaded",
            x.run_id,
            x.rows,
            x.rejects,
            x.skipped,
            removed if i == 0 else 0,
            seconds,
            x.first_reject,
            tuple(x.notes),
        )
        for i, (f, x) in enumerate(zip(files, loaded, strict=True))
    ]


@dataclass
class _Dump:
    """What the files of one load share: the runs so far and, once a file of a catalog that
    already holds copies is read, those copies (to match the dump against)."""

    dsn: str
    runs: list[int] = field(default_factory=list)
    known: _Known | None = None


@dataclass
class _Loaded:
    run_id: int
    rows: int
    rejects: int
    skipped: int
    volumes: set[str]
    notes: list[str]
    first_reject: Reject | None
    rejects_spool: _Rejects


def _load_file(
    conn: psycopg.Connection,
    cur: psycopg.Cursor,
    fmt: Format,
    f: _File,
    options: ParseOptions,
    rules: DatasetRules,
    progress: Progress | None,
    dump: _Dump,
) -> _Loaded:
    row = cur.execute(
        "insert into tapelens.ingest_runs (kind, format, source, path, sha256, status)"
        " values (%s, %s, %s, %s, %s, 'running') returning run_id",
        [fmt.kind, fmt.name, options.source, f.shown, f.sha],
    ).fetchone()
    assert row is not None
    run_id = int(row[0])
    dump.runs.append(run_id)
    rejects = _Rejects()
    rows, skipped, volumes, notes = _copy_batches(
        conn, cur, fmt, f.real, f.shown, options, rules, progress, f.total, run_id, rejects, dump
    )
    rejects.copy_into(cur, run_id)
    return _Loaded(run_id, rows, rejects.count, skipped, volumes, notes, rejects.first, rejects)


_KEY = ("source", "copy_id", "written_at")
_SIZES = ("size_bytes", "size_bound_bytes")
# What the loader adds to a catalog row: the run that wrote it, the digest of its values and
# that of the line it was read from (formats whose lines stand alone; null for the others).
CATALOG_EXTRA = ("ingest_run_id", "row_digest", LINE_DIGEST)
# Any fixed seed. Stored digests are compared with a later load's: Polars keeps hash_rows the
# same for a given version and seed; should an upgrade change it, a newer dump finds every row
# changed once and writes it again with the same values.
_DIGEST_SEED = 0x7A9E_1E45


# What a listing's ranks say of a copy's place (Format.listing_ranks), the name of the
# aggregate there included: not compared, not updated.
_RANKED = ("position", "offset_bytes", "aggregate_id")


def _digest(frame: pl.DataFrame, rules: DatasetRules, ranked: bool = False) -> pl.Series:
    """Per row, a 64-bit digest of its canonical values (the key included; for a format whose
    positions are listing ranks, the place left out), taken before the dataset fields are
    derived from the path: they follow from it and from the rules, which seed the digest."""
    return (
        frame.select([c for c in canonical.TAPE_FILES if not (ranked and c in _RANKED)])
        .hash_rows(seed=_DIGEST_SEED ^ _rules_seed(rules))
        .reinterpret(signed=True)
    )


def _rules_seed(rules: DatasetRules) -> int:
    """A number that changes with the dataset rules and the default derivation."""
    return int.from_bytes(hashlib.sha256(derivation_key(rules)).digest()[:4], "big")


def _line_seed(fmt: Format, options: ParseOptions, rules: DatasetRules) -> int:
    """The seed of line digests: it changes with everything but the line that a row's values
    follow from (the format and how its reader reads a line, the options that change it, the
    dataset rules). A line of a newer dump is then left unread only if this load would read it
    as the stored copy was read."""
    reading = (
        fmt.name,
        fmt.line_reading,
        options.source,
        options.timezone,
        options.year,
        options.volume,
        options.columns,
        sorted((k, repr(v)) for k, v in (options.mapping or {}).items()),
        sorted(
            (k, repr(v))
            for k, v in options.extra.items()
            if k != "display_name" and k not in fmt.input_options
        ),
        derivation_key(rules).hex(),
    )
    return int.from_bytes(hashlib.sha256(repr(reading).encode()).digest()[:4], "big")


def _key_hashes(frame: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Per row, two independent 64-bit hashes of its key within the source (copy id, time in
    microseconds): the first to find it, the second to confirm it (a false match needs both to
    collide, about one chance in 10^38)."""
    key = frame.select(pl.col("copy_id"), pl.col("written_at_us"))
    return (
        key.hash_rows(seed=_DIGEST_SEED).to_numpy(),
        key.hash_rows(seed=_DIGEST_SEED + 1).to_numpy(),
    )


class _Known:
    """The live copies of a source before a newer dump of it: each dump row is matched to its
    stored copy by key, and only rows that are new or differ are sent to the server; the stored
    copies no row matched are the ones the dump retires. Keys are kept hashed and sorted, so a
    batch is matched by binary search (a join would rebuild a table of millions each batch).

    Only fixed-width values are kept, read batch by batch: per copy about 40 bytes (two key
    hashes, the row digest, where the row stands, its volume's number), whatever the length of
    its names; and, for a format whose lines stand alone, 12 more: the digest of the line the
    copy was read from, sorted, and where the copy stands, so that a parser can leave a line
    unread (`read_line`)."""

    def __init__(
        self,
        read: Callable[[], Iterator[pl.DataFrame]],
        ends: Callable[[], dict[str, int]] | None = None,
        lines: bool = False,
    ) -> None:
        self.lines = lines  # the stored copies' line digests are read and kept
        # Read in a thread of its own: the server scans the catalog while the parser starts.
        self._error: BaseException | None = None
        self._ready = threading.Event()
        self.lock = threading.Lock()
        threading.Thread(target=self._load, args=(read, ends), name="tapelens-known").start()

    def _load(
        self, read: Callable[[], Iterator[pl.DataFrame]], ends: Callable[[], dict[str, int]] | None
    ) -> None:
        try:
            # Per volume, the last place any stored copy has (retired ones included): a scan of
            # its own, on a connection of its own while the stored copies are read.
            with ThreadPoolExecutor(1, thread_name_prefix="tapelens-ends") as pool:
                last = pool.submit(ends) if ends is not None else None
                self._index(read())
                found = last.result() if last is not None else {}
            self.ends = {c: found.get(v, 0) for v, c in self.volume_names.items()}
        except BaseException as exc:  # noqa: BLE001 - raised where the copies are needed
            self._error = exc
        finally:
            self._ready.set()

    def wait(self) -> None:
        self._ready.wait()
        if self._error is not None:
            raise self._error

    def _index(self, batches: Iterator[pl.DataFrame]) -> None:
        lines = self.lines
        parts: dict[str, list[np.ndarray]] = {k: [] for k in _KNOWN_ARRAYS if lines or k != "line"}
        volumes: dict[str, int] = {}
        for stored in batches:
            first, second = _key_hashes(stored)
            names = stored["volume"].unique().to_list()
            for name in names:
                volumes.setdefault(name, len(volumes))
            digest = stored["row_digest"]
            kept = {
                "hash": first,
                "check": second,
                "has_digest": digest.is_not_null().to_numpy(),
                "digest": digest.fill_null(0).to_numpy(),
                "chunk": stored["chunk"].cast(pl.UInt32).to_numpy(),
                "tid": _tuple_ids(stored["ctid"]),
                "volume": stored["volume"]
                .replace_strict(volumes, return_dtype=pl.UInt32)
                .to_numpy(),
            }
            if lines:
                kept["line"] = stored[LINE_DIGEST].fill_null(0).to_numpy()
            # Copies: an array Polars or Arrow hands out may be a view that keeps a larger
            # buffer of the batch alive (measured: 113 bytes a stored copy instead of 32).
            for k, a in kept.items():
                parts[k].append(a.copy())
        # One array at a time, its parts freed as it is joined and its unsorted copy as it is
        # sorted: the peak stays near one copy of the index, not three. Polars sorts and
        # gathers on all cores, where numpy takes one.
        hashes = pl.Series(_joined(parts, "hash"))
        order = hashes.arg_sort()
        self.hash = hashes.gather(order).to_numpy()
        del hashes
        sorted_arrays = {
            k: pl.Series(_joined(parts, k)).gather(order).to_numpy() for k in list(parts)
        }
        self.check, self.digest = sorted_arrays["check"], sorted_arrays["digest"]
        self.has_digest, self.chunk = sorted_arrays["has_digest"], sorted_arrays["chunk"]
        self.tid = sorted_arrays["tid"]
        # The line digests, sorted, with where each copy stands in the arrays above; copies
        # without one (0) sort first and are left out.
        line = pl.Series(sorted_arrays.pop("line", np.empty(0, dtype=np.int64)))
        by_line = line.arg_sort()
        unlined = int((line == 0).sum())
        self.line_at = by_line.slice(unlined).to_numpy()
        self.line_sorted = line.gather(self.line_at).to_numpy()
        del line, by_line
        self.line_volumes: set[int] = set()  # volumes (codes) of copies listed by a line unread
        self.relined: list[tuple[np.ndarray, np.ndarray]] = []  # unchanged rows, lines differ
        # Listing ranks (Format.listing_ranks): per volume (code) with a copy this dump lists
        # again, the last place given to a new copy and the rank it had.
        self.relisted: set[int] = set()
        self.placed: dict[int, tuple[int, int]] = {}
        self.volume = sorted_arrays["volume"]
        self.volume_names = volumes
        self.seen = np.zeros(len(self.hash), dtype=bool)
        self.shared = bool((np.diff(self.hash) == 0).any())  # two stored keys, one first hash

    def changed(
        self, frame: pl.DataFrame, digest: pl.Series, ranked: bool = False
    ) -> tuple[pl.Series, pl.DataFrame]:
        """Whether each row of `frame` is new or differs from its stored copy, and the frame;
        marks the stored copies it matches as listed.

        With `ranked` (positions are listing ranks), a stored copy keeps its place, and a copy
        new to a volume that this dump lists stored copies of is placed after every place the
        volume's copies ever had (retired ones included), in listing order: a system that
        appends to a volume (TSM) writes new copies after the old ones. On a volume none of
        whose stored copies is listed again (reused after reclamation), the ranks stand."""
        self.wait()
        probe = frame.select("copy_id", pl.col("written_at").dt.epoch("us").alias("written_at_us"))
        first, second = _key_hashes(probe)
        n = len(self.hash)
        at = np.minimum(sorted_search(self.hash, first), max(n - 1, 0))
        match = (self.hash[at] == first) & (self.check[at] == second) if n else first != first
        if self.shared:
            for row in np.flatnonzero(~match).tolist():
                lo = int(np.searchsorted(self.hash, first[row], "left"))
                hi = int(np.searchsorted(self.hash, first[row], "right"))
                same = np.flatnonzero(self.check[lo:hi] == second[row])
                if same.size:
                    match[row], at[row] = True, lo + int(same[0])
        with self.lock:
            self.seen[at[match]] = True
        same = match & self.has_digest[at] & (self.digest[at] == digest.to_numpy())
        if self.lines and n:
            # An unchanged copy read from a line other than the stored one's (the table's
            # padding grew, a new reader version): its line digest is replaced, the row stays.
            line = frame[LINE_DIGEST].fill_null(0).to_numpy()
            read = np.flatnonzero(same & (line != 0))
            relined = read[self._copy_of_line(line[read]) != at[read]]
            if relined.size:
                self.relined.append((at[relined], line[relined]))
        if ranked and n:
            frame = self._placed(frame, match)
        return pl.Series(~same), frame

    def _copy_of_line(self, digests: np.ndarray) -> np.ndarray:
        """Per line digest, the stored copy read from that line (an index into the sorted
        arrays), or -1."""
        n = len(self.line_sorted)
        if not n:
            return np.full(len(digests), -1, dtype=np.int64)
        at = np.minimum(sorted_search(self.line_sorted, digests), n - 1)
        return np.where(self.line_sorted[at] == digests, self.line_at[at].astype(np.int64), -1)

    def read_line(self, digests: np.ndarray) -> np.ndarray:
        """LineDigests.read: False for each line whose digest is a stored live copy's, which
        this line lists unchanged; the copy is marked as listed. A line repeated, or a copy
        already listed, is read (and then matched by key as any other line)."""
        self.wait()
        read = np.ones(len(digests), dtype=bool)
        copy = self._copy_of_line(digests)
        rows = np.flatnonzero(copy >= 0)
        copies = copy[rows]
        _, first = np.unique(copies, return_index=True)
        rows, copies = rows[first], copies[first]
        with self.lock:
            fresh = ~self.seen[copies]
            rows, copies = rows[fresh], copies[fresh]
            self.seen[copies] = True
            self.line_volumes.update(np.unique(self.volume[copies]).tolist())
        read[rows] = False
        return read

    def volumes_by_line(self) -> set[str]:
        """The volumes of the copies listed by lines left unread."""
        self.wait()
        names = {c: v for v, c in self.volume_names.items()}
        return {names[c] for c in self.line_volumes}

    def new_lines(self) -> pl.DataFrame:
        """Unchanged stored copies read from another line: where each stands (as `unlisted`
        gives it) and its new line digest."""
        at = np.concatenate([a for a, _ in self.relined]) if self.relined else np.empty(0, int)
        lines = np.concatenate([d for _, d in self.relined]) if self.relined else np.empty(0)
        return self._where(at).with_columns(pl.Series("line", lines, dtype=pl.Int64))

    def _placed(self, frame: pl.DataFrame, match: np.ndarray) -> pl.DataFrame:
        code = (
            frame["volume"]
            .replace_strict(self.volume_names, default=-1, return_dtype=pl.Int64)
            .to_numpy()
        )
        self.relisted.update(code[match].tolist())
        with self.lock:  # volumes listed again by lines left unread
            self.relisted |= self.line_volumes
        new = np.flatnonzero(~match & np.isin(code, list(self.relisted)))
        if not new.size:
            return frame
        position = frame["position"].cast(pl.Int64).to_numpy().copy()
        for row in new.tolist():
            c, rank = int(code[row]), int(position[row])
            place, last_rank = self.placed.get(c, (self.ends[c], -1))
            if rank != last_rank:  # members of one aggregate share their rank and their place
                place += 1
            self.placed[c] = (place, rank)
            position[row] = place
        # A new member of an aggregate takes the name of its place (a stored copy keeps its own).
        moved = np.zeros(frame.height, dtype=bool)
        moved[new] = True
        return frame.with_columns(pl.Series("position", position, dtype=pl.Int64)).with_columns(
            pl.when(pl.Series(moved) & pl.col("aggregate_id").is_not_null())
            .then(aggregate_at(pl.col("volume"), pl.col("position")))
            .otherwise(pl.col("aggregate_id"))
            .alias("aggregate_id")
        )

    def unlisted(self, volumes: list[str] | None) -> pl.DataFrame:
        """The stored copies no dump row matched (within `volumes` for a per-volume listing):
        where each row stands (chunk table, tuple id), its digest and its volume."""
        self.wait()
        left = ~self.seen
        if volumes is not None:
            codes = [self.volume_names[v] for v in volumes if v in self.volume_names]
            left &= np.isin(self.volume, np.array(codes, dtype=np.uint32))
        return self._where(np.flatnonzero(left))

    def _where(self, at: np.ndarray) -> pl.DataFrame:
        """Where the stored copies `at` (indexes into the sorted arrays) stand: chunk table,
        tuple id (packed as _tuple_ids packs it), row digest and volume."""
        names = np.array(list(self.volume_names), dtype=object)
        return pl.DataFrame(
            {
                "chunk": self.chunk[at].astype(np.int64),
                "tid": self.tid[at],
                "digest": pl.Series(self.digest[at]).set(pl.Series(~self.has_digest[at]), None),
                "volume": names[self.volume[at]].tolist() if len(names) else [],
            },
            schema={"chunk": pl.Int64, "tid": pl.Int64, "digest": pl.Int64, "volume": pl.String},
        )


def _joined(parts: dict[str, list[np.ndarray]], key: str) -> np.ndarray:
    """The batches' arrays of `key` as one, taken out of `parts` (their memory freed)."""
    pieces = parts.pop(key)
    return np.concatenate(pieces) if pieces else np.empty(0, dtype=_KNOWN_ARRAYS[key])


_KNOWN_ARRAYS: dict[str, type] = {
    "hash": np.uint64,
    "check": np.uint64,
    "has_digest": np.bool_,
    "digest": np.int64,
    "line": np.int64,
    "chunk": np.uint32,
    "tid": np.int64,
    "volume": np.uint32,
}


def _tuple_ids(ctid: pl.Series) -> np.ndarray:
    """Tuple ids as read in binary (4 bytes of block, 2 of item, big-endian), packed as
    block << 16 | item: no text to format on the server or parse here."""
    array = ctid.to_arrow()
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    storage = array.storage if isinstance(array, pa.ExtensionArray) else array
    storage = storage.cast(pa.binary())
    if len(storage) == 0:
        return np.empty(0, dtype=np.int64)
    offsets = np.frombuffer(storage.buffers()[1], dtype=np.int32)
    offsets = offsets[storage.offset : storage.offset + len(storage) + 1]
    if not (np.diff(offsets) == 6).all():
        raise DatabaseError("the server sent tuple ids of an unexpected size")
    raw = np.frombuffer(storage.buffers()[2], dtype=np.uint8)[offsets[0] : offsets[-1]]
    raw = raw.reshape(-1, 6)
    block = raw[:, :4].copy().view(">u4").ravel().astype(np.int64)
    item = raw[:, 4:].copy().view(">u2").ravel().astype(np.int64)
    return (block << 16) | item


# Server processes that read the stored copies of a newer dump's source at once, each its part
# of the catalog's chunks: the scan, not the client, bounds that read.
KNOWN_READERS = 2


def _chunk_parts(dsn: str, parts: int) -> list[list[tuple[str, str]]]:
    """The catalog's chunks (schema, table) in up to `parts` parts of about equal size, largest
    first into the smallest part. Read on a connection of its own, which sees committed chunks
    only, like the read of the stored copies that follows."""
    chunks = read_frame(
        dsn,
        "select chunk_schema::text as schema, chunk_name::text as name,"
        " pg_relation_size(format('%I.%I', chunk_schema, chunk_name)::regclass) as bytes"
        " from timescaledb_information.chunks"
        " where hypertable_schema = 'tapelens' and hypertable_name = 'tape_files'"
        " order by bytes desc, name",
    )
    split: list[list[tuple[str, str]]] = [[] for _ in range(parts)]
    sizes = [0] * parts
    for schema, name, size in chunks.iter_rows():
        i = sizes.index(min(sizes))
        split[i].append((str(schema), str(name)))
        sizes[i] += int(size)
    return [p for p in split if p]


def _known_copies(
    cur: psycopg.Cursor,
    dsn: str,
    source: str,
    run_ids: list[int],
    ranked: bool = False,
    lines: bool = False,
) -> _Known:
    """The source's live copies, but those this dump's own files wrote already (uncommitted,
    so unseen by the columnar read on a connection of its own; loads are serialised, so what
    it sees is the state this load started from). `ranked`: with each volume's last place;
    `lines`: with the digests of the lines they were read from."""
    scope = sql.SQL("source = {} and ingest_run_id <> all({})").format(
        sql.Literal(source), sql.Literal(run_ids)
    )
    line = sql.SQL("line_digest" if lines else "null::bigint as line_digest")
    # Per part of the chunks, one query: the parts are read at once by as many server processes.
    texts = [
        sql.SQL(" union all ")
        .join(
            sql.SQL(
                "select copy_id, written_at, volume, row_digest, {}, tableoid::bigint as chunk,"
                " ctid from {} where {} and removed_at is null"
            ).format(line, _ident(schema, name), scope)
            for schema, name in part
        )
        .as_string(cur)
        for part in _chunk_parts(dsn, KNOWN_READERS)
    ]
    ends_text = (
        sql.SQL(
            "select volume, max(position) as last from tapelens.tape_files where {} group by volume"
        )
        .format(scope)
        .as_string(cur)
    )

    def ends() -> dict[str, int]:
        return {
            str(v): int(e)
            for batch in read_batches(dsn, ends_text)
            for v, e in batch.select("volume", "last").iter_rows()
        }

    def read() -> Iterator[pl.DataFrame]:
        for batch in read_batches_together(dsn, texts):
            yield batch.select(
                pl.col("copy_id").cast(pl.String),
                pl.col("written_at").dt.epoch("us").alias("written_at_us"),
                pl.col("volume").cast(pl.String),
                pl.col("row_digest").cast(pl.Int64),
                pl.col(LINE_DIGEST).cast(pl.Int64),
                "chunk",
                "ctid",
            )

    return _Known(read, ends if ranked else None, lines)


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
    dump: _Dump,
) -> tuple[int, int, set[str], list[str]]:
    """Stream the parser's batches through one COPY; return (rows, skipped lines, volumes,
    the parser's notes in the order first said)."""
    kind = fmt.kind
    cols = list(canonical.SCHEMAS[kind])
    extra = (
        [] if kind == "tapes" else list(CATALOG_EXTRA) if kind == "catalog" else ["ingest_run_id"]
    )
    direct = kind == "catalog" and _source_is_empty(conn, options.source)
    if kind == "catalog" and not direct and dump.known is None:
        # A newer dump: match its rows against the stored copies, send only what differs.
        dump.known = _known_copies(
            cur, dump.dsn, options.source, dump.runs, fmt.listing_ranks, fmt.lines_stand_alone
        )
    bulk = direct and _bulk_worthwhile(conn, total)
    stage = sql.Identifier("_tapelens_stage")
    # The files of one dump share the transaction. A catalog's files share one stage, compared
    # with the table once they are all in (_apply_catalog); the other kinds' each get a fresh
    # one. Its constraints are the table's, so that a row the table would refuse is refused by
    # the COPY, where it can be found, rather than later.
    if kind != "catalog":
        cur.execute("drop table if exists _tapelens_stage")
    cur.execute(
        sql.SQL(
            "create temp table if not exists {}"
            " (like {} including defaults including constraints) on commit drop"
        ).format(stage, _ident("tapelens", canonical.TABLES[kind]))
    )
    cur.execute("savepoint load_stream")
    target = _ident("tapelens", "tape_files") if direct else stage

    def stream(into: sql.Composable, straight: bool, careful: bool) -> _Streamed:
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
            careful,
            dump.known,
        )

    try:
        if not bulk:
            return stream(target, direct, False)
        # An index none of the file's rows enters costs nothing to keep, where building it
        # again would read the whole table.
        indexes = _drop_indexes(cur, {FILE_ID_INDEX} if fmt.file_id_is_path else set())
        streamed = stream(target, direct, False)
        _build_indexes(cur, indexes, progress, streamed[0])
        return streamed
    except psycopg.Error as exc:
        # The indexes dropped for a bulk load come back with the savepoint.
        cur.execute("rollback to savepoint load_stream")
        rejects.reset()
        if direct and isinstance(exc, psycopg.errors.UniqueViolation):
            # The file lists the same copy twice: load it through the temporary table instead.
            return stream(stage, False, False)
        # The server refused a row the checks let through: copy batch by batch, and find the
        # refused rows by bisection.
        return stream(stage, False, True)


_Streamed = tuple[int, int, set[str], list[str]]


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
    careful: bool = False,
    known: _Known | None = None,
) -> _Streamed:
    rows = skipped = 0
    volumes: set[str] = set()
    notes: list[str] = []
    stmt = sql.SQL("copy {} ({}) from stdin").format(target, _cols(columns))
    batches = _encoded_batches(fmt, real, shown, options, rules, run_id, columns, known)
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
                    loaded = _copy_rows(cur, stmt, frame, rejects, options.strict, shown)
                    rows -= frame.height - loaded
            volumes |= batch_volumes
            if progress:
                progress(batch.bytes_read, total, rows)
    if known is not None:
        volumes |= known.volumes_by_line()
    if not direct and fmt.kind != "catalog":
        rows = _upsert(cur, fmt.kind, columns, run_id)
    return rows, skipped, volumes, notes


def _copy_rows(
    cur: psycopg.Cursor,
    stmt: sql.Composed,
    frame: pl.DataFrame,
    rejects: _Rejects,
    strict: bool,
    shown: str,
) -> int:
    """COPY the rows the server takes; refuse each one it does not (found by bisection)."""
    cur.execute("savepoint load_rows")
    try:
        with cur.copy(stmt) as copy:
            copy.write(_copy_text(frame.drop(LINE_NO)))
    except psycopg.Error as exc:
        cur.execute("rollback to savepoint load_rows")
        if frame.height > 1:
            half = frame.height // 2
            return _copy_rows(cur, stmt, frame[:half], rejects, strict, shown) + _copy_rows(
                cur, stmt, frame[half:], rejects, strict, shown
            )
        row = frame.row(0, named=True)
        line = int(row[LINE_NO] or 0)
        reason = "refused by the database: " + str(exc).split("\n")[0].strip()
        if strict:
            raise ParseError(shown, line, reason) from None
        rejects.add([Reject(line, render(row), reason)])
        return 0
    cur.execute("release savepoint load_rows")
    return frame.height


_Encoded = tuple[Batch, bytes | memoryview, pl.DataFrame, set[str], int]
PIPELINE_DEPTH = 2  # batches parsed ahead of the COPY: bounds memory to a few batches


def _encoded_batches(
    fmt: Format,
    real: Path,
    shown: str,
    options: ParseOptions,
    rules: DatasetRules,
    run_id: int,
    columns: list[str],
    known: _Known | None = None,
) -> Iterator[_Encoded]:
    """The parser's batches, checked, conformed and encoded for COPY in a second thread.

    Parsing (Polars, which releases the GIL) then overlaps with the server ingesting the
    previous batch, so a load costs about the slower of the two rather than their sum. Each
    comes with its rows (and their line numbers) for a careful COPY, and how many rows the
    batch listed: of a newer catalog dump (`known`), only new or changed rows are sent.
    """
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
                seed = _line_seed(fmt, options, rules)
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
                    # A catalog's dataset fields are derived after the digest, for the rows sent.
                    catalog = fmt.kind == "catalog"
                    frame, refused = refuse_unstorable(
                        fmt.kind, _prepare(fmt.kind, batch.frame, rules, datasets=not catalog)
                    )
                    if refused:
                        if options.strict:
                            first = min(refused, key=lambda r: r.line_no)
                            raise ParseError(shown, first.line_no, first.reason)
                        batch.rejects = sorted(batch.rejects + refused, key=lambda r: r.line_no)
                    if fmt.kind != "tapes":
                        frame = frame.with_columns(pl.lit(run_id, pl.Int64).alias("ingest_run_id"))
                    if "volume" in frame.columns:
                        vols = {v for v in frame["volume"].unique().to_list() if v}
                    listed = frame.height + batch.known
                    if catalog:
                        digest = _digest(frame, rules, fmt.listing_ranks)
                        frame = frame.with_columns(digest.alias("row_digest"))
                        if known is not None:
                            keep, frame = known.changed(frame, digest, fmt.listing_ranks)
                            frame = frame.filter(keep)
                        frame = with_datasets(frame, rules) if frame.height else frame
                        frame = _file_id_where_not_path(frame)
                    frame = frame.select(*columns, LINE_NO)
                    payload = _copy_text(frame.drop(LINE_NO))
                if not out.put((batch, payload, frame, vols, listed)):
                    return
        except BaseException as exc:  # noqa: BLE001 - handed to the consuming thread
            out.put(exc)

    workers = [
        threading.Thread(target=parse_all, name="tapelens-parse", daemon=True),
        threading.Thread(target=produce, name="tapelens-encode", daemon=True),
    ]
    for item in out.drain(workers):
        yield cast(_Encoded, item)


def _upsert(cur: psycopg.Cursor, kind: str, columns: list[str], run_id: int) -> int:
    """Move the staged rows into the canonical table; return the rows staged."""
    table = _ident("tapelens", canonical.TABLES[kind])
    cols = _cols(columns)
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


def _apply_catalog(
    cur: psycopg.Cursor,
    source: str,
    run_ids: list[int],
    gone: pl.DataFrame | None,
    keep_places: bool = False,
    relined: pl.DataFrame | None = None,
) -> None:
    """Bring the table to the dump: write the staged copies (new, or different from the stored
    ones: _Known sent only those) and retire `gone` (the stored copies no dump row matched).
    Unchanged copies keep their row and their run id, so a newer dump that changes 1% of a
    catalog writes 1% of it; those read from another line than before (`relined`) get its
    digest."""
    # A copy of a format whose positions are listing ranks keeps the place it has (_Known).
    values = [
        c for c in canonical.TAPE_FILES if c not in _KEY and not (keep_places and c in _RANKED)
    ]
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
    cols = _cols([*canonical.TAPE_FILES, *CATALOG_EXTRA])
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
    """Update stored copies where the read of the stored copies saw them (_Known._where), chunk
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
                _cols(names),
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
    return _ident(str(row[0]), str(row[1]))


def _finish(
    cur: psycopg.Cursor,
    fmt: Format,
    source: str,
    run_ids: list[int],
    volumes: list[str],
    per_volume: bool,
    listed: int,
    guard: ShrinkGuard,
    shown: str,
    known: _Known | None,
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
        _check_shrink(source, removed, listed, guard, shown)
    relined = known.new_lines() if known is not None else None
    _apply_catalog(cur, source, run_ids, gone, fmt.listing_ranks, relined)
    # Volumes the inventory has not named yet: media type from an LTO/3592 barcode suffix.
    cur.execute(
        "insert into tapelens.tapes"
        " (volume, barcode, media_type, media_from, state, updated_run_id)"
        " select v.volume, case when m.media_type is null then null else v.volume end,"
        "        coalesce(m.media_type, 'unknown'),"
        "        case when m.media_type is null then 'unknown' else 'barcode' end, 'unknown', %s"
        " from unnest(%s::text[]) as v(volume)"
        " left join tapelens.media_types m"
        "   on length(v.volume) = 8 and upper(right(v.volume, 2)) = m.barcode_suffix"
        " on conflict (volume) do nothing",
        [last, volumes],
    )
    return removed


def _check_shrink(source: str, removed: int, listed: int, guard: ShrinkGuard, shown: str) -> None:
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
