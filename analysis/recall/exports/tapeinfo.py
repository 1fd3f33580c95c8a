"""What staging systems read about where files are on tape: dCache tape info, ENDIT hints.

dCache's tape information files feed its bring-online clustering scheduler; ENDIT reads its
tape hint file.

dCache's SRM manager groups bring-online requests by tape when it knows where each file is: two
files in its tape info directory (default /etc/dcache/tapeinfo), as JSON (`tapes.json`,
`tapefiles.json`) or as CSV (`tapes.txt`, `tapefiles.txt`):

- tapes: per tape its capacity and how much of it is filled, in kB;
- tapefiles: per file the path the file is requested with, its size in kB and the tape it is on.

dCache looks a request up by the raw path of its SURL (dCache/dcache,
modules/srm-server/.../scheduler/strategy/TapeRecallSchedulingStrategy.java, `add`:
`getSurl().getRawPath()`), matched exactly: `/pnfs/<domain>/...`, percent-encoded where a URL
must be. A key that is a tape-system path (/hpss/...) is never asked for, so `path_map` rewrites
the tape system's prefixes to dCache's, and a file whose path is outside dCache's namespace
after that (no prefix matched) is left out and reported rather than written unchanged.

The tape a file is on is the copy a tape system recalls: the newest live copy on a tape that
can be read now (analysis/recall/baselines/newest.py newest_copies). Sizes are in kB of 1,000 bytes,
rounded up (a file of 1 byte takes 1 kB). A tape is filled with every copy it holds, the ones
the catalog no longer lists included, as the tape itself is until it is repacked.

ENDIT (the dCache interface to IBM Spectrum Protect) reads a tape hint file to retrieve from
several tapes at once. Its retriever (neicnordic/endit, tsmretriever.pl) takes as requests the
files of its request folder whose names are hex digits, dCache's pnfsids, and looks each up in
the hint file by that name (`$tapelist->{$req}{volid}`); a request it does not find goes to one
`default` job, without a word. So the hint file is keyed by pnfsid: the object name of a file
ENDIT archived (tsmarchiver.pl archives `<dir_out>/<pnfsid>`, so the catalog's base name is the
pnfsid), or the pnfsid a site's namespace dump gives the file's dCache path. Each entry has
`volid` (the volume), `order` (the file's place on that volume, counted from 0 in tape order) and
`size` (bytes), as ENDIT's tsm_getvolumecontent.pl writes them, on one line (the retriever
decodes the file's first line only).
"""

from __future__ import annotations

import csv
import re
import urllib.parse
from collections.abc import Mapping, Sequence
from pathlib import Path

import polars as pl

from tapelens.analysis.recall.baselines.newest import newest_copies
from tapelens.analysis.recall.schedule.read_order import in_read_order
from tapelens.analysis.throughput.model import ModelParams
from tapelens.errors import InputError, ParseError

FORMATS = ("json", "csv")
KB = 1000
DCACHE_ROOT = "/pnfs/"
# A pnfsid as dCache writes it, the name of an ENDIT request: 24 (PNFS) or 36 (Chimera)
# upper-case hex digits (dCache/dcache, modules/dcache-vehicles/.../diskCacheV111/util/
# PnfsId.java, toString); the retriever takes any hex name (tsmretriever.pl: /^[0-9A-Fa-f]+$/).
PNFSID = r"^(?:[0-9A-F]{24}|[0-9A-F]{36})$"
_HEX = re.compile(r"[0-9A-Fa-f]+")
# Characters a URI path keeps as they are (RFC 3986 pchar and '/'); others a SURL escapes.
_PATH_SAFE = "/!$&'()*+,;=:@-._~"
_NEEDS_QUOTING = r"[^A-Za-z0-9/!$&'()*+,;=:@._~-]"
LEFT_OUT_SCHEMA = {"path": pl.String, "file_id": pl.String, "cause": pl.String}


def parse_path_map(items: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """'FROM=TO' items: a path starting with FROM starts with TO instead (first match wins)."""
    pairs = []
    for item in items:
        old, sep, new = item.partition("=")
        if not sep or not old:
            raise InputError(f"--path-map: expected FROM=TO, got {item!r}")
        pairs.append((old, new))
    return tuple(pairs)


def mapped_paths(path_map: Sequence[tuple[str, str]]) -> pl.Expr:
    """The path with the first matching prefix rewritten; null where none matches (or the path
    itself when there is no map)."""
    if not path_map:
        return pl.col("path")
    mapped: pl.Expr = pl.lit(None, pl.String)
    for old, new in reversed(path_map):
        mapped = (
            pl.when(pl.col("path").str.starts_with(old))
            .then(pl.lit(new) + pl.col("path").str.slice(len(old)))
            .otherwise(mapped)
        )
    return mapped


def left_out_summary(left_out: pl.DataFrame) -> str:
    """'3 files left out (2 no --path-map prefix matched, 1 ...)', or '' when none is."""
    if left_out.height == 0:
        return ""
    causes = left_out.group_by("cause").len().sort("len", "cause", descending=[True, False])
    why = ", ".join(f"{n:,} {c}" for c, n in causes.iter_rows())
    return f"{left_out.height:,} files left out ({why})"


def write_left_out(left_out: pl.DataFrame, target: Path, by: str = "path") -> Path | None:
    """What an export left out (files, or refused lines), with the cause, as CSV sorted `by`;
    nothing (and an older list removed) when nothing was."""
    if left_out.height == 0:
        target.unlink(missing_ok=True)
        return None
    left_out.sort(by).write_csv(target)
    return target


def tapeinfo(
    copies: pl.DataFrame,
    tapes: pl.DataFrame,
    path_map: Sequence[tuple[str, str]] = (),
    dcache_root: str = DCACHE_ROOT,
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(tapes: tape, capacity_kb, filled_kb; files: path, size_kb, tape; left_out: path,
    file_id, cause) for dCache.

    `copies`: live readable copies (file_id, path, size_bytes, volume, written_at, copy_no);
    `tapes`: volume, capacity_bytes, filled_bytes of every tape a chosen copy may be on. A file
    whose path no `path_map` prefix matches, or that is outside `dcache_root` after the map, is
    left out; none inside is an error that says which --path-map to give."""
    chosen = newest_copies(copies, "file_id").with_columns(
        mapped_paths(path_map).alias("dcache_path")
    )
    root = dcache_root.rstrip("/") + "/"
    cause = (
        pl.when(pl.col("dcache_path").is_null())
        .then(pl.lit("no --path-map prefix matched"))
        .when(~pl.col("dcache_path").str.starts_with(root))
        .then(pl.lit(f"not under {root}"))
    )
    chosen = chosen.with_columns(cause.alias("cause"))
    left_out = chosen.filter(pl.col("cause").is_not_null()).select(
        pl.coalesce("dcache_path", "path").alias("path"), "file_id", "cause"
    )
    kept = chosen.filter(pl.col("cause").is_null())
    if kept.height == 0:
        example = chosen["path"].sort()[0]
        raise InputError(
            f"none of the {chosen.height:,} files has a dCache path ({root}<domain>/...; e.g."
            f" {example!r}): dCache looks files up by the path of the SRM request; give"
            f" --path-map {_parent(example)}={root}<domain>/... (or --dcache-root for a"
            " namespace elsewhere)"
        )
    files = kept.select(
        _raw_paths(kept["dcache_path"]).alias("path"),
        ((pl.col("size_bytes") + KB - 1) // KB).alias("size_kb"),
        pl.col("volume").alias("tape"),
    ).sort("tape", "path")
    if files["path"].is_duplicated().any():
        twice = files.filter(pl.col("path").is_duplicated())["path"][0]
        raise InputError(f"two files would share the path {twice!r}: check --path-map")
    used = files["tape"].unique()
    info = (
        tapes.filter(pl.col("volume").is_in(used.implode()))
        .select(
            pl.col("volume").alias("tape"),
            ((pl.col("capacity_bytes") + KB - 1) // KB).alias("capacity_kb"),
            ((pl.col("filled_bytes") + KB - 1) // KB).alias("filled_kb"),
        )
        .sort("tape")
    )
    missing = set(used.to_list()) - set(info["tape"].to_list())
    if missing:
        raise InputError(f"no capacity known for tape(s) {', '.join(sorted(missing)[:5])}")
    return info, files, left_out


def _raw_paths(paths: pl.Series) -> pl.Series:
    """The paths as a SURL's raw path has them: percent-encoded where a URI path must be (a
    blank as %20); the few paths that need it are encoded one by one."""
    needs = paths.str.contains(_NEEDS_QUOTING)
    if not needs.any():
        return paths
    quoted = [
        urllib.parse.quote(p, safe=_PATH_SAFE) if n else p
        for p, n in zip(paths.to_list(), needs.to_list(), strict=True)
    ]
    return pl.Series(paths.name, quoted, dtype=pl.String)


def _parent(path: str) -> str:
    """The folder of a path, as an example --path-map prefix."""
    return path.rsplit("/", 1)[0] or "/"


def write_tapeinfo(
    tapes: pl.DataFrame, files: pl.DataFrame, directory: Path, fmt: str = "json"
) -> list[Path]:
    """The two files in `directory` (created): tapes.json and tapefiles.json, or tapes.txt
    and tapefiles.txt."""
    if fmt not in FORMATS:
        raise InputError(f"unknown tape info format {fmt!r} (expected json or csv)")
    directory.mkdir(parents=True, exist_ok=True)
    if fmt == "csv" and files["path"].str.contains(",", literal=True).any():
        # dCache reads tapefiles.txt by splitting at commas, with no quoting.
        bad = files.filter(pl.col("path").str.contains(",", literal=True))["path"][0]
        raise InputError(f"a path holds a comma, which tapefiles.txt cannot: {bad!r} (use json)")
    if fmt == "json":
        texts = {
            "tapes.json": _json_object(
                tapes, "tape", capacity=pl.col("capacity_kb"), filled=pl.col("filled_kb")
            ),
            "tapefiles.json": _json_object(
                files, "path", size=pl.col("size_kb"), tapeid=pl.col("tape")
            ),
        }
    else:
        # No header, no quoting: dCache splits each line at its commas.
        texts = {
            name: frame.write_csv(include_header=False, quote_style="never")
            for name, frame in (("tapes.txt", tapes), ("tapefiles.txt", files))
        }
    # Each written aside and renamed: a reload while they are written reads the old files.
    targets = []
    for name, text in texts.items():
        target = directory / name
        aside = directory / f".{name}.partial"
        aside.write_text(text)
        aside.replace(target)
        targets.append(target)
    return targets


def canonical_pnfsid(text: str) -> str | None:
    """The pnfsid as dCache writes it (upper case; a short id padded with zeros to 24 digits,
    as dCache's PnfsId reads one), or None when `text` is none."""
    text = text.strip()
    if not _HEX.fullmatch(text):
        return None
    text = text.upper().rjust(24, "0")
    return text if len(text) in (24, 36) else None


REFUSED_SCHEMA = {"line": pl.Int64, "text": pl.String, "reason": pl.String}


def _json_object(frame: pl.DataFrame, key: str, **fields: pl.Expr) -> str:
    """A JSON object, one entry a line: "<key>": {fields}. Encoded by Polars a column at a
    time (a million paths in a second), keys and values escaped as JSON needs."""
    # A struct of the key alone encodes as {"k":"..."}: the key's JSON string is inside.
    quoted = pl.struct(k=pl.col(key)).struct.json_encode().str.slice(5).str.strip_suffix("}")
    value = pl.struct([expr.alias(name) for name, expr in fields.items()]).struct.json_encode()
    lines = frame.select((pl.lit(" ") + quoted + pl.lit(": ") + value).str.join(",\n")).item()
    return "{\n" + (lines + "\n" if lines else "") + "}\n"


def read_pnfsid_map(path: Path, strict: bool = False) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A site's path -> pnfsid list: (path, pnfsid) and the lines refused (line, text, reason).

    CSV with a header naming the columns `path` and `pnfsid` (or Chimera's `ipnfsid`), as `psql
    --csv` prints a select of Chimera's t_inodes; other columns are ignored. A line without a
    pnfsid, or repeating a path, is refused alone (`strict`: the first one stops the read)."""
    whole = _read_map_whole(path)
    if whole is not None:
        return whole, pl.DataFrame(schema=REFUSED_SCHEMA)
    return _read_map_by_line(path, strict)


def _read_map_whole(path: Path) -> pl.DataFrame | None:
    """The map read at once, when every line of it is good (a site's dump of a hundred million
    files is read in seconds); None when anything is amiss, for the line by line reader to
    say what and where."""
    try:
        raw = pl.read_csv(path, infer_schema=False, quote_char='"')
    except (pl.exceptions.PolarsError, OSError, ValueError):
        return None
    names = [c.strip().lower() for c in raw.columns]
    id_name = "pnfsid" if "pnfsid" in names else "ipnfsid"
    if "path" not in names or id_name not in names:
        return None
    frame = raw.select(
        pl.col(raw.columns[names.index("path")]).alias("path"),
        pl.col(raw.columns[names.index(id_name)])
        .str.strip_chars()
        .str.to_uppercase()
        .str.zfill(24)
        .alias("pnfsid"),
    )
    good = frame.select(
        pl.col("path").is_not_null().all()
        & pl.col("pnfsid").str.contains(PNFSID).fill_null(False).all()
        # Unique hashes mean unique paths (a collision only sends the map to the slow reader).
        & pl.col("path").hash().is_unique().all()
        # A record spanning lines would number the later ones wrongly: read those by line.
        & ~pl.col("path").str.contains("\n", literal=True).any()
    ).item()
    return frame if good else None


def _read_map_by_line(path: Path, strict: bool) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The map a record at a time, each bad one refused with its line number and reason."""
    paths: list[str] = []
    ids: list[str] = []
    refused: list[tuple[int, str, str]] = []
    seen: set[str] = set()
    try:
        with path.open(newline="") as stream:
            reader = csv.reader(stream)
            header = next(reader, None)
            if header is None:
                raise ParseError(path, 1, "empty; expected a header naming path and pnfsid")
            names = [h.strip().lower() for h in header]
            id_name = "pnfsid" if "pnfsid" in names else "ipnfsid"
            if "path" not in names or id_name not in names:
                raise ParseError(
                    path,
                    1,
                    "expected a header naming the columns path and pnfsid (or ipnfsid), got"
                    f" {','.join(header)!r}",
                )
            at_path, at_id = names.index("path"), names.index(id_name)
            ended = reader.line_num
            for row in reader:
                # A quoted field may hold line breaks: a record is numbered by its first line.
                line_no, ended = ended + 1, reader.line_num
                if not row:
                    continue
                short = len(row) <= max(at_path, at_id)
                pnfsid = None if short else canonical_pnfsid(row[at_id])
                reason = ""
                if short:
                    reason = f"expected {len(header)} columns, got {len(row)}"
                elif pnfsid is None:
                    reason = f"expected a pnfsid of 24 or 36 hex digits, got {row[at_id]!r}"
                elif row[at_path] in seen:
                    reason = f"the path {row[at_path]!r} is listed before"
                if reason or pnfsid is None:
                    if strict:
                        raise ParseError(path, line_no, reason)
                    refused.append((line_no, ",".join(row), reason))
                    continue
                seen.add(row[at_path])
                paths.append(row[at_path])
                ids.append(pnfsid)
    except OSError as exc:
        raise InputError(f"{path}: cannot be read: {exc.strerror}") from None
    except (csv.Error, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not a CSV file: {exc}") from None
    frame = pl.DataFrame(
        {"path": paths, "pnfsid": ids}, schema={"path": pl.String, "pnfsid": pl.String}
    )
    return frame, pl.DataFrame(refused, schema=REFUSED_SCHEMA, orient="row")


def endit_hints(
    copies: pl.DataFrame,
    order: str = "position",
    params_by_media: Mapping[str, ModelParams] | None = None,
    pnfsids: pl.DataFrame | None = None,
    path_map: Sequence[tuple[str, str]] = (),
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """ENDIT's tape hints (pnfsid, volid, order, size) for the copy a tape system recalls, and
    the files left out (path, file_id, cause).

    `copies` as for tapeinfo, with position and offset_bytes; `order` is the read order on each
    volume (read_order.ORDERS; rao needs media_type and the parameters in use). A file's pnfsid
    is its name without directories (a catalog of what ENDIT archived), or with `pnfsids` (path,
    pnfsid) the one listed for its path, after `path_map`. No file with a pnfsid is an error: the
    retriever would ignore every hint."""
    chosen = newest_copies(copies, "file_id")
    if pnfsids is None:
        base = pl.col("path").str.extract(r"([^/]*)$")
        chosen = chosen.with_columns(
            pl.when(base.str.contains(PNFSID)).then(base).alias("pnfsid"),
            pl.lit("the name is not a pnfsid").alias("why"),
        )
    else:
        chosen = (
            chosen.with_columns(mapped_paths(path_map).alias("dcache_path"))
            .join(
                pnfsids.rename({"path": "dcache_path"}),
                on="dcache_path",
                how="left",
                nulls_equal=False,
            )
            .with_columns(
                pl.when(pl.col("dcache_path").is_null())
                .then(pl.lit("no --path-map prefix matched"))
                .otherwise(pl.lit("not in the pnfsid map"))
                .alias("why")
            )
        )
    left_out = chosen.filter(pl.col("pnfsid").is_null()).select(
        "path", "file_id", pl.col("why").alias("cause")
    )
    chosen = chosen.filter(pl.col("pnfsid").is_not_null())
    if chosen.height == 0:
        example = left_out["path"].sort()[0]
        if pnfsids is None:
            raise InputError(
                f"none of the {left_out.height:,} files is named by its dCache pnfsid (e.g."
                f" {example!r}): ENDIT's retriever looks requests up by pnfsid and would ignore"
                " every hint; give --pnfsid-map FILE (path,pnfsid, e.g. from Chimera) and"
                " --path-map FROM=TO when the catalog's paths are not dCache's"
            )
        raise InputError(
            f"none of the {left_out.height:,} files' paths is in the pnfsid map (e.g."
            f" {example!r}): give --path-map FROM=TO so that the catalog's paths become the"
            " map's dCache paths"
        )
    if chosen["pnfsid"].is_duplicated().any():
        twice = chosen.filter(pl.col("pnfsid").is_duplicated())["pnfsid"][0]
        raise InputError(f"two files have the pnfsid {twice!r}: check the pnfsid map")
    chosen = chosen.sort("volume", "position", "offset_bytes", nulls_last=False)
    if order != "position":
        ranked = in_read_order(
            chosen.with_columns(pl.col("volume").rank("dense").cast(pl.Int64).alias("vid")),
            order,
            params_by_media or {},
        )
        chosen = ranked.sort("vid", "read_rank")
    hints = chosen.select(
        "pnfsid",
        pl.col("volume").alias("volid"),
        pl.int_range(pl.len()).over("volume").alias("order"),
        pl.col("size_bytes").alias("size"),
    )
    return hints, left_out


def hint_json(hints: pl.DataFrame) -> str:
    """The hint file's one line: {"<pnfsid>": {"volid", "order", "size"}, ...}. Built by the
    frame (a pnfsid is hex digits, the entry encoded by Polars), not a dict per file, so ten
    million files take seconds and no more memory than their frame."""
    entries = hints.select(
        (
            pl.lit('"')
            + pl.col("pnfsid")
            + pl.lit('":')
            + pl.struct("volid", "order", "size").struct.json_encode()
        ).str.join(",")
    ).item()
    return "{" + (entries or "") + "}"


def write_endit_hints(hints: pl.DataFrame, target: Path) -> Path:
    """The hint file on one line (ENDIT decodes only the first), written aside and renamed so
    that the retriever never reads half of it."""
    aside = target.with_name(f".{target.name}.partial")
    aside.write_text(hint_json(hints) + "\n")
    aside.replace(target)
    return target
