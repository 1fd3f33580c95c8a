"""A load from start to commit: the runs, the one transaction, the results, the failures kept.

Per load, in one transaction: an ingest_runs row per file; each file's batches streamed through
one COPY (stream.py); the refused lines into ingest_rejects (rejects.py); the staged rows into the
canonical table (upserts.py); copies that a newer dump no longer lists marked removed, and unseen
volumes added to tapes. Several files of one whole-catalog dump load together, as one dump.

Loads are serialised by one advisory lock, so run ids grow in commit order (incremental marts use
the highest run id seen as their watermark) and two identical ingests at once cannot both load:
the second waits, then finds the file loaded and reports it unchanged. A file already loaded is a
no-op only while it is still the current state of its source; an older dump loaded again after a
newer one loads, restoring the older state.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg

from tapelens.columnstore import compressed_chunks
from tapelens.db import connect, redact
from tapelens.errors import DatabaseError, InputError, ParseError
from tapelens.ingest.datasets import DatasetRules
from tapelens.ingest.formats import Format
from tapelens.ingest.formats.base import (
    ParseOptions,
    Reject,
)
from tapelens.ingest.load.context import Dump, InputFile, LoadContext, Progress
from tapelens.ingest.load.guard import ShrinkGuard, ShrinkRefused
from tapelens.ingest.load.rejects import Rejects
from tapelens.ingest.load.stream import copy_file
from tapelens.ingest.load.upserts import finish_catalog

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


# One lock for every load: loads commit one at a time, so run ids grow in commit order.
LOAD_LOCK = 0x7461_7065_6C65_6E73  # "tapelens"


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
                files.append(InputFile(str(path), real, sha256_of(real), real.stat().st_size))
            results += _load_group(dsn, fmt, files, options, rules, progress_for, per_volume, guard)
    return results


def _load_group(
    dsn: str,
    fmt: Format,
    files: list[InputFile],
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
                dump = Dump(dsn)
                for f in files:
                    current = f
                    run_id = _new_run(cur, fmt, source, f)
                    dump.runs.append(run_id)
                    ctx = LoadContext(
                        conn,
                        cur,
                        fmt,
                        f,
                        options,
                        rules,
                        progress_for(f.shown) if progress_for else None,
                        run_id,
                        Rejects(),
                        dump,
                    )
                    loaded.append(_load_file(ctx))
                current = None
                run_ids = [x.run_id for x in loaded]
                volumes = sorted(set().union(*(x.volumes for x in loaded)))
                listed = sum(x.rows for x in loaded)
                shown = ", ".join(f.shown for f in files)
                removed = finish_catalog(
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
class _Loaded:
    run_id: int
    rows: int
    rejects: int
    skipped: int
    volumes: set[str]
    notes: list[str]
    first_reject: Reject | None
    rejects_spool: Rejects


def _load_file(ctx: LoadContext) -> _Loaded:
    """One file of the load: its run, its rows through one COPY, its refused lines kept."""
    copied = copy_file(ctx)
    ctx.rejects.copy_into(ctx.cur, ctx.run_id)
    r = ctx.rejects
    return _Loaded(ctx.run_id, copied[0], r.count, copied[1], copied[2], copied[3], r.first, r)


def _new_run(cur: psycopg.Cursor, fmt: Format, source: str, f: InputFile) -> int:
    """The run of one file, 'running' until the load commits."""
    row = cur.execute(
        "insert into tapelens.ingest_runs (kind, format, source, path, sha256, status)"
        " values (%s, %s, %s, %s, %s, 'running') returning run_id",
        [fmt.kind, fmt.name, source, f.shown, f.sha],
    ).fetchone()
    assert row is not None
    return int(row[0])


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
