"""What one file's load carries from step to step, in one object instead of long parameter lists."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import psycopg

from tapelens.ingest.datasets import DatasetRules
from tapelens.ingest.formats import Format
from tapelens.ingest.formats.base import ParseOptions

if TYPE_CHECKING:
    from tapelens.ingest.load.catalog_diff import Known
    from tapelens.ingest.load.rejects import Rejects


class Progress(Protocol):
    """Told as a load goes: input bytes read of the total, rows so far, and the step when it is
    not reading (building an index)."""

    def __call__(self, done: int, total: int | None, rows: int, step: str = "") -> None: ...


@dataclass
class InputFile:
    """An input file as the user named it, and the real file read (stdin is spooled)."""

    shown: str  # as the user named it
    real: Path  # a real file (stdin spooled)
    sha: str
    total: int  # bytes


@dataclass
class Dump:
    """What the files of one load share: the runs so far and, once a file of a catalog that
    already holds copies is read, those copies (to match the dump against)."""

    dsn: str
    runs: list[int] = field(default_factory=list)
    known: Known | None = None


@dataclass
class LoadContext:
    """One file's load: the load's transaction, the file and how to read it, its run, the
    lines refused so far, and what the dump's files share."""

    conn: psycopg.Connection
    cur: psycopg.Cursor
    fmt: Format
    file: InputFile
    options: ParseOptions
    rules: DatasetRules
    progress: Progress | None
    run_id: int
    rejects: Rejects
    dump: Dump
