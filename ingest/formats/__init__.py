"""The parsers, one module per source format, and the registry the loader picks them from."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg

from tapelens.errors import ConfigError
from tapelens.ingest.formats.base import Batch, ParseOptions

ParseFn = Callable[..., Iterator[Batch]]
AfterLoad = Callable[[psycopg.Cursor, str, int], None]


@dataclass(frozen=True)
class Format:
    kind: str  # catalog | transfers | mounts | tapes | hints
    name: str  # as given to --format
    source: str  # default value of `source` for rows it loads
    help: str = ""
    # The module in tapelens.ingest.formats that reads it: by default the name as a module
    # name (hpss-lsp -> hpss_lsp), the kind's for a plain csv (csv of tapes -> tapes_csv).
    module: str = ""
    function: str = "parse"  # the module's parse function
    per_volume: bool = False  # a listing of some volumes, not of the whole catalog
    # A function of the module run in the load's transaction after the upsert, as
    # fn(cursor, source, run_id) -> None (e.g. pairing mount events with earlier loads').
    after_load: str | None = None
    # Positions are ranks in the listing, not places the system records (TSM): a copy gone
    # from a later listing moves every later copy of its volume up one rank although nothing
    # moved on the tape. A copy keeps the place it was first given; see ingest/load.py.
    listing_ranks: bool = False
    # The system has no file identity of its own: every copy's file_id is its path (HPSS,
    # Enstore). The catalog's file-id index holds only copies whose id differs, so none of
    # this format's rows enters it (ingest/load.py keeps it during a bulk load).
    file_id_is_path: bool = False
    # Every row follows from its own line (and the load's options and dataset rules), but for
    # its place where positions are listing ranks (which a stored copy keeps): a newer dump
    # leaves unread the lines that list a stored copy as it was read (ingest/load.py).
    lines_stand_alone: bool = False
    # Options naming other files read with the dump (TSM's archives export): not part of how
    # a line is read, so a newer dump's own export (another path) still finds its lines known.
    input_options: tuple[str, ...] = ()
    # The reader ignores blanks around a line (a table pads its cells to the widest one): a
    # line's digest is taken without them, so that a longer last cell (CTA's path), which pads
    # every line further, changes no digest.
    padded_lines: bool = False
    # How the reader reads a line, as a number: raised with any change to what a line gives, so
    # that stored line digests no longer match and a newer dump reads every line once more.
    line_reading: int = 1

    def __post_init__(self) -> None:
        if not self.module:
            named = f"{self.kind}_csv" if self.name == "csv" else self.name.replace("-", "_")
            object.__setattr__(self, "module", named)

    def parser(self) -> ParseFn:
        module = importlib.import_module(f"tapelens.ingest.formats.{self.module}")
        fn: ParseFn = getattr(module, self.function)
        return fn

    def after_load_hook(self) -> AfterLoad | None:
        if self.after_load is None:
            return None
        module = importlib.import_module(f"tapelens.ingest.formats.{self.module}")
        hook: AfterLoad = getattr(module, self.after_load)
        return hook


FORMATS: tuple[Format, ...] = (
    Format("catalog", "hpss-lsp", "hpss", "HPSS `hsi ls -P` listing", file_id_is_path=True),
    Format(
        "catalog",
        "tsm-contents",
        "tsm",
        "TSM `select * from contents` (+ --archives FILE for write dates)",
        listing_ranks=True,
        lines_stand_alone=True,
        input_options=("archives",),
    ),
    Format(
        "catalog",
        "tsm-qcontent",
        "tsm",
        "TSM `query content VOL f=d`, one volume per file",
        per_volume=True,
        listing_ranks=True,
    ),
    Format(
        "catalog",
        "cta-tf",
        "cta",
        "CTA `tf ls`, text or JSON",
        lines_stand_alone=True,
        padded_lines=True,
    ),
    Format(
        "catalog",
        "enstore-list",
        "enstore",
        "Enstore `info --list VOL`",
        per_volume=True,
        file_id_is_path=True,
    ),
    Format("catalog", "csv", "csv", "CSV/Parquet with canonical columns or a --mapping YAML"),
    Format("transfers", "dcache-billing", "dcache", "dCache billing text (restore/store records)"),
    Format("transfers", "cta-taped", "cta", "CTA tape daemon JSON log"),
    Format("transfers", "staging-csv", "staging", "staging-queue CSV export (TReqS-style)"),
    Format("transfers", "csv", "csv", "canonical transfers CSV"),
    Format(
        "mounts",
        "hpss-pvl",
        "hpss",
        "HPSS PVL/PVR log (rotated files in any order: mounts split across them are joined)",
        after_load="merge_open_mounts",
    ),
    Format(
        "mounts",
        "cta-taped",
        "cta",
        "CTA tape daemon JSON log (tape sessions)",
        function="parse_mounts",
    ),
    Format("mounts", "csv", "csv", "ACSLS/library CSV export"),
    Format(
        "tapes",
        "csv",
        "inventory",
        "tape inventory CSV (canonical, CTA, Spectrum Protect, HPSS or Enstore state words)",
    ),
    Format("tapes", "cta-tape-ls", "inventory", "CTA `cta-admin tape ls`, text table or --json"),
    Format(
        "tapes",
        "tsm-volumes",
        "inventory",
        "Spectrum Protect `select * from volumes` (dsmadmc -comma, with a header)",
    ),
    Format(
        "tapes",
        "enstore-vols",
        "inventory",
        "Enstore `enstore vol --vols` (label, avail., system inhibit, library, family)",
    ),
    # The three hint inputs share one module, each with its own parse function.
    Format(
        "hints",
        "fts-files",
        "fts",
        "FTS t_file records with archive_metadata (mysql -B or CSV, with a header)",
        module="wlcg_hints_inputs",
        function="parse_fts",
        after_load="mark_contradictions",
    ),
    Format(
        "hints",
        "csv",
        "csv",
        "CSV with a path or file id, a write time and the WLCG archive metadata column",
        module="wlcg_hints_inputs",
        function="parse_csv",
        after_load="mark_contradictions",
    ),
    Format(
        "hints",
        "kit",
        "kit",
        "CSV with KIT's dataset_name, dataset_length, dataset_bytes per written file",
        module="wlcg_hints_inputs",
        function="parse_kit",
        after_load="mark_contradictions",
    ),
)


def formats_of(kind: str) -> list[Format]:
    return [f for f in FORMATS if f.kind == kind]


def lookup(kind: str, name: str) -> Format:
    for f in FORMATS:
        if f.kind == kind and f.name == name:
            return f
    known = ", ".join(f.name for f in formats_of(kind))
    raise ConfigError("--format", "the command line", f"{name!r} is not a {kind} format ({known})")


__all__ = ["FORMATS", "Batch", "Format", "ParseOptions", "Path", "formats_of", "lookup"]
