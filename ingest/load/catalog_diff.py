"""A newer catalog dump against the stored copies: what is new, what changed, what is gone.

The stored copies of the source are read once (in parallel, by chunk) into sorted arrays of
fixed-width values: two hashes of each copy's key, its row digest, where the row stands (chunk
and tuple id) and its volume. Each row of the dump is matched by binary search; only new or
changed rows go to the server, and the stored copies no row matched are the ones the dump
retires. For formats whose every row follows from its own line, a line whose digest is a stored
copy's is not even parsed.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import polars as pl
import psycopg
import pyarrow as pa
from psycopg import sql

from tapelens.arrays import sorted_search
from tapelens.errors import DatabaseError
from tapelens.frames import read_batches, read_batches_together, read_frame
from tapelens.ingest import canonical
from tapelens.ingest.datasets import DatasetRules, derivation_key
from tapelens.ingest.formats import Format
from tapelens.ingest.formats.base import (
    LINE_DIGEST,
    ParseOptions,
    aggregate_at,
)
from tapelens.ingest.load.copy_text import ident

KEY = ("source", "copy_id", "written_at")


# What the loader adds to a catalog row: the run that wrote it, the digest of its values and
# that of the line it was read from (formats whose lines stand alone; null for the others).
CATALOG_EXTRA = ("ingest_run_id", "row_digest", LINE_DIGEST)


# Any fixed seed. Stored digests are compared with a later load's: Polars keeps hash_rows the
# same for a given version and seed; should an upgrade change it, a newer dump finds every row
# changed once and writes it again with the same values.
DIGEST_SEED = 0x7A9E_1E45


# What a listing's ranks say of a copy's place (Format.listing_ranks), the name of the
# aggregate there included: not compared, not updated.
RANKED = ("position", "offset_bytes", "aggregate_id")


def row_digests(frame: pl.DataFrame, rules: DatasetRules, ranked: bool = False) -> pl.Series:
    """Per row, a 64-bit digest of its canonical values (the key included; for a format whose
    positions are listing ranks, the place left out), taken before the dataset fields are
    derived from the path: they follow from it and from the rules, which seed the digest."""
    return (
        frame.select([c for c in canonical.TAPE_FILES if not (ranked and c in RANKED)])
        .hash_rows(seed=DIGEST_SEED ^ _rules_seed(rules))
        .reinterpret(signed=True)
    )


def _rules_seed(rules: DatasetRules) -> int:
    """A number that changes with the dataset rules and the default derivation."""
    return int.from_bytes(hashlib.sha256(derivation_key(rules)).digest()[:4], "big")


def line_seed(fmt: Format, options: ParseOptions, rules: DatasetRules) -> int:
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
        key.hash_rows(seed=DIGEST_SEED).to_numpy(),
        key.hash_rows(seed=DIGEST_SEED + 1).to_numpy(),
    )


class Known:
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


def chunk_parts(dsn: str, parts: int) -> list[list[tuple[str, str]]]:
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


def known_copies(
    cur: psycopg.Cursor,
    dsn: str,
    source: str,
    run_ids: list[int],
    ranked: bool = False,
    lines: bool = False,
) -> Known:
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
            ).format(line, ident(schema, name), scope)
            for schema, name in part
        )
        .as_string(cur)
        for part in chunk_parts(dsn, KNOWN_READERS)
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

    return Known(read, ends if ranked else None, lines)
