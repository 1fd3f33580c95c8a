"""CERN CTA `cta-admin tf ls --vid VID`, as its text table or as JSON (detected per file).

Text, as cta-admin's text formatter prints it (tools/CtaAdminTextFormatter.cpp, flush): a
header line (in red on a terminal: wrapped in ANSI colour codes), then one line per copy with
every column right-aligned to its widest cell and followed by one space, empty cells shown as
"-", a last column named "path" flush left (padded after it). Columns: archive id, copy no,
vid, fseq, block id, the disk instance ("instance", "disk buffer" from 2025), disk fxid, size,
checksum type, checksum value, storage class, owner, group, creation time (two tokens), then
by release: "ss vid", "ss fseq" and "path" (2019-12 to 2021-02), "path" (to 2023-06), nothing
(to 2025-04), or the CTA instance's name "instance" (since). All four are read; a path is the
rest of the line from its "/" (it may hold spaces), without the padding after it.
- Sizes are as cta-admin's dataSizeToStr prints them: below 1000 bytes the exact count, above
  it one decimal and a unit in powers of 1000 (5.2G = 5,200,000,000 bytes give or take
  50,000,000). Such a size is stored rounded, with its rounding bound in size_bound_bytes, and
  the load says that sizes are approximate. Plain byte counts (older releases) are exact.
- Creation times are printed in the local time of the host that ran cta-admin, without a zone:
  they are read in ParseOptions.timezone (--timezone, default UTC) and the load says which
  zone was assumed. A local time that does not exist in that zone (the hour skipped when
  daylight saving time starts) is refused; one that occurs twice is read as the first.
- No path ("-"): the path is "instance:fxid" and the storage class is taken as the dataset.
JSON (`--json`): one object per line (or a JSON array, one object per line) with `af` (archive
file), `tf` (tape file) and `df` (disk file) objects; protobuf-style names (archiveId, copyNb,
fSeq, creationTime in epoch seconds) and snake_case names are both read; df.path is the path
when present. Sizes and times are exact there. A batch of lines is decoded by Polars at once; a
batch holding anything else (bad JSON, a whole array on one line) is decoded line by line with
the same outcome.
Identity (contract): volume = vid, file_id = archive id, copy_id = "archive id/copy no",
position = fseq, offset_bytes null, written_at = creation time.
Tables run to millions of lines: the cells of plain table lines are found a block at a time
(cta_tf_blocks.py), the other lines are read one by one, with the same outcome.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl

from tapelens.ingest.canonical import conform
from tapelens.ingest.formats.base import Batch, ParseOptions
from tapelens.ingest.formats.blocks import (
    REFUSED,
    Block,
    fast_path_ok,
)
from tapelens.ingest.formats.cta_tf_blocks import text_cells, text_fields
from tapelens.ingest.formats.fields import (
    is_message,
    parse_count,
    parse_epoch_utc,
    parse_iso_utc,
    quote,
    quote_expr,
    time_expr,
)
from tapelens.ingest.formats.linewise import Lines, refuse, run_blocks

KIND = "catalog"
FORMAT = "cta-tf"

TEXT_FIELDS = 16  # the creation time is two tokens: date and HH:MM
TEXT_TIME = "%Y-%m-%d %H:%M"
# cta-admin colours its header line.
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
# The cells after the creation time: at most two (superseding vid and fseq) before a path.
_AFTER_TIME = re.compile(r"^(?:[^/\s]\S*\s+){0,2}(/.*)$")
_HH_MM = re.compile(r"^[0-9]{2}:[0-9]{2}$")
# dataSizeToStr: one decimal and a unit, powers of 1000.
_UNITS = {"K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
APPROXIMATE = (
    "sizes are approximate: the text table prints them to one decimal of K, M, G or T"
    " (size_bound_bytes keeps each copy's rounding bound); `cta-admin --json tf ls` gives"
    " exact sizes"
)
# The raw fields of one copy, from either form.
COLUMNS = (
    "archive",
    "copy",
    "vid",
    "fseq",
    "size",
    "checksum",
    "path",
    "disk",
    "storage_class",
    "created",
)
# JSON names per field: protobuf style first, then the snake_case and older spellings.
_AF = {
    "archive": ("archiveId", "archive_id", "archiveFileId", "archive_file_id"),
    "storage_class": ("storageClass", "storage_class"),
    "created": ("creationTime", "creation_time"),
    "size": ("size", "fileSize", "file_size"),
    "instance": ("diskInstance", "disk_instance"),
}
_TF = {
    "vid": ("vid",),
    "copy": ("copyNb", "copy_nb", "copyNo", "copy_no"),
    "fseq": ("fSeq", "fseq", "f_seq"),
}
_DF = {
    "instance": ("diskInstance", "disk_instance"),
    "disk_id": ("diskId", "disk_id", "diskFileId", "disk_fxid", "diskFxid"),
    "path": ("path",),
}
_S = pl.String()
_CHECKSUM = pl.List(pl.Struct({"type": _S, "value": _S}))
_JSON = pl.Struct(
    {
        "af": pl.Struct({n: _S for ns in _AF.values() for n in ns} | {"checksum": _CHECKSUM}),
        "tf": pl.Struct({n: _S for ns in _TF.values() for n in ns}),
        "df": pl.Struct({n: _S for ns in _DF.values() for n in ns}),
    }
)


def parse(path: str | Path, *, options: ParseOptions) -> Iterator[Batch]:
    """Parse a tape-file listing (text or JSON) into tape_files rows."""
    return _parse(path, options, by_blocks=True)


def parse_by_line(path: str | Path, *, options: ParseOptions) -> Iterator[Batch]:
    """`parse` with every line read one by one: the reference the block reading must equal."""
    return _parse(path, options, by_blocks=False)


def _parse(path: str | Path, options: ParseOptions, by_blocks: bool) -> Iterator[Batch]:
    mode: list[str] = []  # "json" or "text", fixed by the first non-blank line
    notes: list[str] = []  # said once, with the batch where first found

    def handle(no: int, text: str, out: Lines) -> None:
        body = text.strip()
        if not mode and body:
            mode.append("json" if body[0] in "[{" else "text")
        if not body or not body.strip("[],"):
            out.skip()
        elif mode[0] == "json":
            out.keep(no, text, (_json_body(body),) + (None,) * (len(COLUMNS) - 1))
        else:
            _text_line(no, text, body, out)

    def finish(frame: pl.DataFrame, lines: Lines) -> pl.DataFrame:
        if mode and mode[0] == "json" and frame.height:
            frame = _decoded(frame, lines)
            created = pl.col("created").cast(pl.Float64, strict=False)
            when = (
                pl.when((created >= 0) & (created < 253_402_300_800))
                .then((created * 1_000_000).round(0).cast(pl.Int64))
                .cast(pl.Datetime("us"))
                .dt.replace_time_zone("UTC")
            )
            shape = pl.format("creationTime {} is not epoch seconds", quote_expr(pl.col("created")))
        else:
            zone = options.timezone
            local = pl.col("created").str.strptime(pl.Datetime("us"), TEXT_TIME, strict=False)
            when = local.dt.replace_time_zone(
                zone, ambiguous="earliest", non_existent="null"
            ).dt.convert_time_zone("UTC")
            shape = (
                pl.when(local.is_not_null())
                .then(
                    pl.format(
                        "creation time {} does not exist in {} (skipped by daylight saving time)",
                        quote_expr(pl.col("created")),
                        pl.lit(zone),
                    )
                )
                .otherwise(
                    pl.format(
                        "creation time {} is not YYYY-MM-DD HH:MM", quote_expr(pl.col("created"))
                    )
                )
            )
            frame = _with_fallback_time(
                frame.with_columns(when.alias("written_at"), local.is_null().alias("_other_shape"))
            ).drop("_other_shape")
            if frame.height and frame["written_at"].is_not_null().any():
                _note(notes, f"creation times read as local time in {zone} (--timezone)")
            return _rows(frame, shape, lines, options.source, notes)
        return _rows(
            frame.with_columns(when.alias("written_at")), shape, lines, options.source, notes
        )

    def read(raw: pl.Series, block: Block, lines: Lines) -> pl.DataFrame:
        """The kept lines of a block: plain table lines at once, the others one by one."""
        n, start = raw.len(), 0
        while not mode and start < n:  # the first non-blank line tells JSON from text
            if raw[start] != REFUSED:
                handle(block.first_line_no + start, raw[start], lines)
            start += 1
        if not (by_blocks and mode == ["text"] and start < n and fast_path_ok(block)):
            for no, text in enumerate(raw.slice(start).to_list(), block.first_line_no + start):
                if text != REFUSED:
                    handle(no, text, lines)
            return lines.frame()
        lengths = raw.str.len_bytes().to_numpy()
        cells, others = text_cells(block.data, lengths, block.first_line_no)
        cells = cells.filter(pl.col("at") >= start)
        for at in others[others >= start].tolist():
            handle(block.first_line_no + at, raw[at], lines)
        plain = text_fields(raw, cells, COLUMNS)
        if not lines.rows:
            return plain
        return pl.concat([plain, lines.frame()]).sort("line_no")

    def frame_of(raw: pl.Series, block: Block, lines: Lines) -> pl.DataFrame:
        return finish(read(raw, block, lines), lines)

    def empty_of(lines: Lines) -> pl.DataFrame:
        return finish(lines.frame(), lines)

    for batch in run_blocks(path, options, COLUMNS, frame_of, empty_of):
        batch.notes, notes[:] = list(notes), []
        yield batch


def _note(notes: list[str], note: str) -> None:
    if note not in notes:
        notes.append(note)


def _with_fallback_time(frame: pl.DataFrame) -> pl.DataFrame:
    """Times not in the table's own shape (an ISO token) are read on their own rows only."""
    # Only times not in the table's shape; a table time refused for its zone stays refused.
    missing = pl.col("written_at").is_null() & pl.col("_other_shape")
    if not frame.select(missing.any()).item():
        return frame
    others = frame.filter(missing).with_columns(time_expr(pl.col("created")).alias("written_at"))
    return pl.concat([frame.filter(~missing), others]).sort("line_no", maintain_order=True)


def _text_line(no: int, text: str, body: str, out: Lines) -> None:
    body = _ANSI.sub("", body).strip()
    if is_message(body) or body[:7].lower() == "archive" or not body.strip("-= "):
        out.skip()  # header, rule or comment
        return
    t = body.split(None, TEXT_FIELDS - 1)
    if len(t) == TEXT_FIELDS:
        created = f"{t[13]} {t[14]}"
        # After the creation time: the path (2021-2023), the superseding vid and fseq and then
        # the path (2019-2021), or the CTA instance's name (2025 on): a path starts with "/".
        rest = _AFTER_TIME.match(t[15].strip())
        path = rest[1] if rest else None
    elif len(t) == TEXT_FIELDS - 1 and _HH_MM.match(t[14]):
        created, path = f"{t[13]} {t[14]}", None  # 2023-2025: the creation time is last
    elif len(t) == TEXT_FIELDS - 1 and parse_iso_utc(t[13]) is not None:
        created, path = t[13], None  # date and time written as one token
    else:
        out.reject(no, text, f"expected {TEXT_FIELDS} whitespace-separated fields, found {len(t)}")
        return
    cks = f"{t[8]}:{t[9]}" if t[9] != "-" else None
    disk = f"{t[5]}:{t[6]}"
    out.keep(no, text, (t[0], t[1], t[2], t[3], t[7], cks, path, disk, t[10], created))


def size_of(text: str) -> tuple[int, int | None] | None:
    """(bytes, rounding bound or None when exact) of a size as cta-admin prints it."""
    if text.isdigit():
        return int(text), None
    unit = _UNITS.get(text[-1:])
    number = text[:-1]
    whole, dot, tenth = number.partition(".")
    if (
        unit is None
        or not (whole.isdigit() and len(whole) <= 4)
        or (dot and not (len(tenth) == 1 and tenth.isdigit()))
    ):
        return None
    tenths = int(whole) * 10 + (int(tenth) if dot else 0)
    return tenths * unit // 10, unit // 20


def _json_body(body: str) -> str:
    """One JSON value out of a line of a JSON-lines file or of an array written one per line."""
    body = body.rstrip(",")
    if body.startswith("[") and not body.endswith("]"):
        return body[1:]
    if body.endswith("]") and not body.startswith("["):
        return body[:-1].rstrip().rstrip(",")
    return body


def _decoded(frame: pl.DataFrame, lines: Lines) -> pl.DataFrame:
    """The raw fields of JSON lines. On entry the first column (`archive`) holds each line's
    JSON: the file's form is known only from its first line, after the columns were set."""
    try:
        doc = frame["archive"].str.json_decode(_JSON)
    except Exception:  # anything Polars cannot take whole: decode line by line
        return _decoded_by_line(frame, lines)
    af, tf, df = (doc.struct.field(k) for k in ("af", "tf", "df"))
    frame = frame.with_columns(_json_fields(af, tf, df)).with_columns(
        (af.is_null() | tf.is_null()).alias("_no_objects")
    )
    return refuse(frame, [(pl.col("_no_objects"), pl.lit("no af or tf object"))], lines).drop(
        "_no_objects"
    )


def _json_fields(af: pl.Series, tf: pl.Series, df: pl.Series) -> list[pl.Series]:
    def pick(obj: pl.Series, names: tuple[str, ...]) -> pl.Series:
        fields = obj.struct.unnest() if obj.dtype != pl.Null else None
        assert fields is not None
        return fields.select(pl.coalesce(names)).to_series()

    instance = pick(df, _DF["instance"]).fill_null(pick(af, _AF["instance"])).fill_null("")
    disk_id = pick(df, _DF["disk_id"]).fill_null("")
    first = af.struct.field("checksum").list.first()
    checksum = pl.select(
        pl.concat_str([first.struct.field("type"), pl.lit(":"), first.struct.field("value")])
    ).to_series()
    path = pick(df, _DF["path"])
    return [
        pick(af, _AF["archive"]).alias("archive"),
        pick(tf, _TF["copy"]).alias("copy"),
        pick(tf, _TF["vid"]).fill_null("").alias("vid"),
        pick(tf, _TF["fseq"]).alias("fseq"),
        pick(af, _AF["size"]).alias("size"),
        checksum.alias("checksum"),
        pl.select(pl.when(path != "").then(path)).to_series().alias("path"),
        (instance + ":" + disk_id).alias("disk"),
        pick(af, _AF["storage_class"]).fill_null("").alias("storage_class"),
        pick(af, _AF["created"]).alias("created"),
    ]


def _decoded_by_line(frame: pl.DataFrame, lines: Lines) -> pl.DataFrame:
    kept: list[tuple[Any, ...]] = []
    for no, raw, body in frame.select("line_no", "raw", "archive").iter_rows():
        try:
            doc = json.loads(body)
            # JSON may escape a lone surrogate (\ud800), which no UTF-8 text can hold.
            json.dumps(doc, ensure_ascii=False).encode("utf-8")
        except (json.JSONDecodeError, RecursionError) as exc:
            why = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
            lines.reject(no, raw, f"not JSON ({why})")
            continue
        except UnicodeEncodeError:
            lines.reject(no, raw, "a JSON string holds a lone surrogate (not valid Unicode)")
            continue
        items = doc if isinstance(doc, list) else [doc]
        found = [_json_item(item) for item in items]
        bad = next((f for f in found if isinstance(f, str)), None)
        fields = [f for f in found if not isinstance(f, str)]
        if bad is None and len(fields) > 1:  # a line is taken whole or not at all
            bad = next((r for f in fields if (r := _check(f)) is not None), None)
        if bad is not None:
            lines.reject(no, raw, bad)
        elif not fields:
            lines.skip()
        else:
            kept += [(no, raw, *f) for f in fields]
    names = ("line_no", "raw", *COLUMNS)
    columns = list(zip(*kept, strict=True)) if kept else [()] * len(names)
    return pl.DataFrame(
        {
            n: pl.Series(n, list(c), dtype=pl.Int64 if n == "line_no" else pl.String)
            for n, c in zip(names, columns, strict=True)
        }
    )


def _json_item(item: Any) -> tuple[str | None, ...] | str:
    """The raw fields of one JSON object, or the reason it has none."""
    if not isinstance(item, dict):
        return "expected a JSON object with af, tf and df"
    af, tf, df = (item.get(k) for k in ("af", "tf", "df"))
    if not isinstance(af, dict) or not isinstance(tf, dict):
        return "no af or tf object"
    df = df if isinstance(df, dict) else {}

    def pick(obj: dict[str, Any], names: tuple[str, ...]) -> str | None:
        value = next((obj[n] for n in names if obj.get(n) is not None), None)
        return _text(value)

    instance = pick(df, _DF["instance"]) or pick(af, _AF["instance"]) or ""
    path = pick(df, _DF["path"])
    return (
        pick(af, _AF["archive"]),
        pick(tf, _TF["copy"]),
        pick(tf, _TF["vid"]) or "",
        pick(tf, _TF["fseq"]),
        pick(af, _AF["size"]),
        _checksum(af.get("checksum")),
        path or None,
        f"{instance}:{pick(df, _DF['disk_id']) or ''}",
        pick(af, _AF["storage_class"]) or "",
        pick(af, _AF["created"]),
    )


def _check(fields: tuple[str | None, ...]) -> str | None:
    """The checks of _rows, for the objects of a line that holds several."""
    archive, copy, vid, fseq, size, _, _, _, _, created = fields
    copy_n = parse_count(copy or "")
    if created is None or parse_epoch_utc(created) is None:
        return f"creationTime {quote(created or '')} is not epoch seconds"
    if parse_count(archive or "") is None:
        return f"archive id {quote(archive or '')} is not a number"
    if copy_n is None or not 1 <= copy_n <= 2**31 - 1:
        return f"copy no {quote(copy or '')} is not a copy number"
    if not vid or any(ch.isspace() for ch in vid):
        return f"vid {quote(vid)} is not a volume name"
    if parse_count(fseq or "") is None:
        return f"fseq {quote(fseq or '')} is not a number"
    if parse_count(size or "") is None:
        return f"size {quote(size or '')} is not a number of bytes"
    return None


def _rows(
    frame: pl.DataFrame, shape: pl.Expr, lines: Lines, source: str, notes: list[str]
) -> pl.DataFrame:
    """Typed, checked canonical rows (the same checks, in the same order, as _check)."""
    number = {c: pl.col(c).str.to_integer(strict=False) for c in ("archive", "copy", "fseq")}
    # A size is a byte count, or one decimal of a unit in powers of 1000 (rounded, with its
    # rounding bound): at most 4 digits before the point, so the product cannot overflow.
    # (Only sizes that are no plain number go through the regex: it costs more than the rest.)
    plain = pl.col("size").str.to_integer(strict=False)
    human = (
        pl.when(plain.is_null())
        .then(pl.col("size"))
        .str.extract_groups(r"^(\d{1,4})(?:\.(\d))?([KMGTPE])$")
    )
    unit = human.struct.field("3").replace_strict(_UNITS, default=None, return_dtype=pl.Int64)
    tenths = human.struct.field("1").cast(pl.Int64, strict=False) * 10 + human.struct.field(
        "2"
    ).cast(pl.Int64, strict=False).fill_null(0)
    frame = frame.with_columns(
        *(v.alias(f"{c}_n") for c, v in number.items()),
        plain.fill_null(tenths * unit // 10).alias("size_n"),
        pl.when(pl.col("size").str.contains(r"^\d+$").not_()).then(unit // 20).alias("size_bound"),
    )
    vid = pl.col("vid")
    good = refuse(
        frame,
        [
            (pl.col("written_at").is_null(), shape),
            (
                pl.col("archive_n").is_null() | (pl.col("archive_n") < 0),
                pl.format("archive id {} is not a number", quote_expr(pl.col("archive"))),
            ),
            (
                ~pl.col("copy_n").is_between(1, 2**31 - 1),
                pl.format("copy no {} is not a copy number", quote_expr(pl.col("copy"))),
            ),
            (
                (vid == "") | vid.str.contains(r"\s"),
                pl.format("vid {} is not a volume name", quote_expr(vid)),
            ),
            (
                pl.col("fseq_n").is_null() | (pl.col("fseq_n") < 0),
                pl.format("fseq {} is not a number", quote_expr(pl.col("fseq"))),
            ),
            (
                pl.col("size_n").is_null() | (pl.col("size_n") < 0),
                pl.format(
                    "size {} is neither bytes nor one decimal of K, M, G, T, P or E",
                    quote_expr(pl.col("size")),
                ),
            ),
        ],
        lines,
    )
    if good.height and good["size_bound"].is_not_null().any():
        _note(notes, APPROXIMATE)
    archive = pl.col("archive_n").cast(pl.String)
    rows = conform(
        "catalog",
        good.select(
            pl.lit(source).alias("source"),
            pl.concat_str([archive, pl.lit("/"), pl.col("copy_n").cast(pl.String)]).alias(
                "copy_id"
            ),
            archive.alias("file_id"),
            pl.col("path").fill_null(pl.col("disk")).alias("path"),
            pl.when(pl.col("path").is_null() & (pl.col("storage_class") != ""))
            .then(pl.col("storage_class"))
            .alias("dataset"),
            pl.col("size_n").alias("size_bytes"),
            vid.alias("volume"),
            pl.col("fseq_n").alias("position"),
            pl.col("copy_n").alias("copy_no"),
            "written_at",
            "checksum",
            pl.col("size_bound").alias("size_bound_bytes"),
        ),
    )
    return rows.with_columns(good["line_no"])


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, (dict, list)):
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def _checksum(value: Any) -> str | None:
    """[{"type": "ADLER32", "value": "7c0a91e3"}] or {"adler32": "..."} -> 'ADLER32:7c0a91e3'."""
    if isinstance(value, list) and value:
        value = value[0]
    if isinstance(value, dict):
        if "type" in value and "value" in value:
            return f"{value['type']}:{value['value']}"
        if len(value) == 1:
            ((kind, text),) = value.items()
            return f"{str(kind).upper()}:{text}"
    return None
