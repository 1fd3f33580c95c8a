"""How commands print frames: --format table|csv|json|parquet and -o FILE."""

from __future__ import annotations

import json
import math
import re
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path

import click
import polars as pl

FORMATS = ("table", "csv", "json", "parquet")
# -o FILE with one of these endings writes that format unless --format says otherwise: a file
# called x.json holding a text table would break whatever reads it.
BY_SUFFIX = {".csv": "csv", ".json": "json", ".parquet": "parquet"}


# A table wider than this (or than the terminal, or $COLUMNS) leaves out its last columns,
# except those that decide (the ranking column and what it rests on), and cells of long text
# are shortened in the middle, unless --wide.
TABLE_WIDTH = 120
LONG_CELL = 60
SHORTEST_CELL = 30
_LAYOUT = "tapelens.table_layout"

# Words that make a column a count, printed as a whole number even when computed as a float
# (tapes_freed, mounts_saved); a name that also holds one of NOT_COUNT is a ratio or a mean.
COUNT_WORDS = frozenset(
    {"n", "files", "tapes", "mounts", "copies", "reads", "volumes", "datasets", "locates"}
    | {"requests", "retries", "candidates", "remounts", "batches"}
)
NOT_COUNT = frozenset(["per", "mean", "median", "avg", "ratio", "factor", "share", "payback"])


def _keep_layout(ctx: click.Context, param: click.Parameter, value: object) -> object:
    ctx.meta.setdefault(_LAYOUT, {})[param.name] = value
    return value


def format_option(fn: Callable[..., None]) -> Callable[..., None]:
    """--format table|csv|json|parquet, -o FILE, and for tables --columns and --wide."""
    fn = click.option(
        "--wide",
        is_flag=True,
        expose_value=False,
        callback=_keep_layout,
        help="Table: every column, cells in full, raw numbers (default: fit the terminal).",
    )(fn)
    fn = click.option(
        "--columns",
        metavar="A,B,...",
        expose_value=False,
        callback=_keep_layout,
        help="Only these columns, in this order (every format); a table too wide for them wraps.",
    )(fn)
    fn = click.option(
        "-o",
        "--output",
        type=click.Path(dir_okay=False),
        help="Write to FILE instead of stdout (FILE.csv, .json, .parquet: that format).",
    )(fn)
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(FORMATS),
        default="table",
        show_default=True,
        help="Output format (default: table, or what -o FILE's extension names).",
    )(fn)


def chosen_format(fmt: str, output: str | None) -> str:
    """The format to write: --format when given, else the -o file's extension, else `fmt`."""
    ctx = click.get_current_context(silent=True)
    given = ctx is not None and ctx.get_parameter_source("fmt") in (
        click.core.ParameterSource.COMMANDLINE,
        click.core.ParameterSource.ENVIRONMENT,
    )
    if given or not output:
        return fmt
    return BY_SUFFIX.get(Path(output).suffix.lower(), fmt)


def _layout() -> dict[str, object]:
    ctx = click.get_current_context(silent=True)
    return dict(ctx.meta.get(_LAYOUT, {})) if ctx is not None else {}


def select_columns(frame: pl.DataFrame, columns: str | None) -> pl.DataFrame:
    """The columns named (comma-separated), in that order; an unknown name is an error."""
    if not columns:
        return frame
    names = [c.strip() for c in columns.split(",") if c.strip()]
    unknown = [c for c in names if c not in frame.columns]
    if unknown:
        raise click.UsageError(
            f"--columns: no column {', '.join(unknown)}"
            f" (expected some of {', '.join(frame.columns)})"
        )
    return frame.select(names)


def _is_bytes(name: str) -> bool:
    return name == "bytes" or name.endswith("_bytes") or name.startswith("bytes_")


def _is_count(name: str) -> bool:
    words = set(name.split("_"))
    return bool(words & COUNT_WORDS) and not words & NOT_COUNT


def human_units(frame: pl.DataFrame) -> pl.DataFrame:
    """One unit per kind, chosen by the column's name (what the project's frames follow):
    bytes (bytes, *_bytes, bytes_*) as kB/MB/GB/TB/PB, durations (*_s, *_h) as h:mm:ss (days
    as `1d 2:03:04`), rates (*_mb_s) in MB/s, occupancy (*occupancy) and *_share in percent,
    counts (files, tapes_freed, mounts_saved ...) as whole numbers. Text and other numbers stay
    as they are."""
    out = []
    for name, dtype in zip(frame.columns, frame.dtypes, strict=True):
        column = frame[name]
        if not dtype.is_numeric():
            out.append(column)
        elif name.endswith("_mb_s"):
            out.append(_texts(column, lambda v: f"{v:,.1f} MB/s"))
        elif _is_bytes(name):
            out.append(_texts(column, _bytes_text))
        elif name.endswith("_s"):
            out.append(_texts(column, _duration_text))
        elif name.endswith("_h"):
            out.append(_texts(column, lambda v: _duration_text(3600 * v)))
        elif name == "occupancy" or name.endswith(("_occupancy", "_share")):
            out.append(_texts(column, lambda v: f"{100 * v:.1f}%"))
        elif dtype.is_float() and _is_count(name):
            out.append(column.round(0).cast(pl.Int64))
        else:
            out.append(column)
    return pl.DataFrame(out)


def _texts(column: pl.Series, text: Callable[[float], str]) -> pl.Series:
    def one(v: object) -> str | None:
        if v is None or (isinstance(v, float) and not math.isfinite(v)):
            return None
        return text(float(v))  # type: ignore[arg-type]

    return pl.Series(column.name, [one(v) for v in column.to_list()], dtype=pl.String)


def _bytes_text(value: float) -> str:
    for unit, size in (("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(value) >= size:
            return f"{value / size:,.2f} {unit}"
    return f"{value:,.0f} B"


def _duration_text(value: float) -> str:
    """Always h:mm:ss, so that no cell reads as minutes beside another read as hours; under a
    minute with tenths of a second (a throughput parameter of 4.0 s)."""
    sign, value = ("-" if value < 0 else ""), abs(value)
    if value < 59.95:
        return f"{sign}0:00:{value:04.1f}"
    minutes, seconds = divmod(int(round(value)), 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    clock = f"{hours}:{minutes:02d}:{seconds:02d}"
    return f"{sign}{days}d {clock}" if days else f"{sign}{clock}"


def render(frame: pl.DataFrame, fmt: str, width: int | None = None) -> str:
    """A frame as an aligned text table, CSV or JSON (a list of records). A table given a
    `width` shows human units, shortens long text cells and leaves out the last columns that
    do not fit (table_fitted says which)."""
    if fmt == "csv":
        return frame.write_csv()
    if fmt == "json":
        return json.dumps(frame.to_dicts(), default=_json_default, indent=1) + "\n"
    return table_fitted(frame, width)[0]


def table_fitted(
    frame: pl.DataFrame, width: int | None, keep: Sequence[str] = (), wrap: bool = False
) -> tuple[str, list[str]]:
    """The aligned table, and the columns left out to fit `width` (None: all, raw values).

    The first column (what a row is) and the columns in `keep` (the ranking column and what
    decides it) are never left out: the last of the others go first. With `wrap` (the user
    named the columns), or when what must stay is still too wide, the table wraps instead:
    further blocks of columns below, each led by the first column."""
    numeric = [dtype.is_numeric() for dtype in frame.dtypes]
    if width is not None:
        frame = human_units(frame)
    cells = [[_cell(v, width is not None) for v in row] for row in frame.iter_rows()]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(frame.columns)]
    shown = list(range(len(widths)))
    if width is not None and not wrap:
        needed = {0} | {i for i, c in enumerate(frame.columns) if c in keep}
        for i in reversed(range(len(widths))):
            if _span(widths, shown) <= width:
                break
            if i not in needed:
                shown.remove(i)
    # What is left must stay: long names give way first (the widest text column, down to
    # SHORTEST_CELL), then the table wraps.
    texts = [] if wrap else sorted((i for i in shown if not numeric[i]), key=lambda i: -widths[i])
    for i in texts:
        excess = _span(widths, shown) - width if width is not None else 0
        if excess <= 0 or widths[i] <= SHORTEST_CELL:
            break
        room = max(SHORTEST_CELL, len(frame.columns[i]), widths[i] - excess)
        for row in cells:
            row[i] = _shorten(row[i], room)
        widths[i] = max([len(frame.columns[i]), *(len(r[i]) for r in cells)])
    blocks = [shown]
    if width is not None and _span(widths, shown) > width and len(shown) > 1:
        blocks = _wrapped(widths, shown, width)
    out: list[str] = []
    for block in blocks:
        if out:
            out.append("")
        out.append("  ".join(frame.columns[i].ljust(widths[i]) for i in block).rstrip())
        for row in cells:
            parts = [
                row[i].rjust(widths[i]) if numeric[i] else row[i].ljust(widths[i]) for i in block
            ]
            out.append("  ".join(parts).rstrip())
    left = [c for i, c in enumerate(frame.columns) if i not in shown]
    return "\n".join(out) + "\n", left


def _span(widths: list[int], columns: Sequence[int]) -> int:
    return sum(widths[i] for i in columns) + 2 * (len(columns) - 1)


def _wrapped(widths: list[int], shown: list[int], width: int) -> list[list[int]]:
    """Blocks of columns that each fit `width`, every block led by the first column."""
    first, rest = shown[0], shown[1:]
    blocks: list[list[int]] = [[first]]
    for i in rest:
        if len(blocks[-1]) > 1 and _span(widths, [*blocks[-1], i]) > width:
            blocks.append([first])
        blocks[-1].append(i)
    return blocks


def _shorten(text: str, length: int) -> str:
    """`text` shortened in the middle to `length` characters (both ends say most)."""
    if len(text) <= length:
        return text
    half = (length - 1) // 2
    return f"{text[:half]}…{text[-(length - 1 - half) :]}"


def _json_default(value: object) -> object:
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def _cell(value: object, short: bool = False) -> str:
    if value is None:
        return "-"
    if short and isinstance(value, str):
        return _shorten(value, LONG_CELL)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return "-"
        return f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}"
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


def table_width() -> int:
    """The width a table fits: the terminal's, else $COLUMNS, else TABLE_WIDTH."""
    return shutil.get_terminal_size((TABLE_WIDTH, 24)).columns


def emit(frame: pl.DataFrame, fmt: str, output: str | None, *, keep: Sequence[str] = ()) -> None:
    """Print (or write to `output`) a frame in the chosen format; Parquet needs a file or a pipe.

    The format is --format when given, else the -o file's extension (x.json, x.csv,
    x.parquet), else `fmt`. A table printed to stdout fits the terminal unless the command was
    given --wide; `keep` names the columns it never leaves out (the ranking column and the ones
    that decide), and columns named with --columns are all shown, wrapped when too wide."""
    fmt = chosen_format(fmt, output)
    layout = _layout()
    named = layout.get("columns")
    frame = select_columns(frame, named)  # type: ignore[arg-type]
    if fmt == "parquet":
        if output:
            frame.write_parquet(output)
        elif sys.stdout.isatty():
            raise click.UsageError("--format parquet writes binary: give -o FILE or a pipe")
        else:
            frame.write_parquet(sys.stdout.buffer)
    else:
        left: list[str] = []
        if fmt == "table" and not output and not layout.get("wide"):
            text, left = table_fitted(frame, table_width(), keep=keep, wrap=bool(named))
        else:
            text = render(frame, fmt)
        if not output:
            click.echo(text, nl=False)
            if left:
                more = f"{len(left)} more column{'s' if len(left) > 1 else ''}"
                click.echo(f"({more}: {', '.join(left)}; --wide or --columns)", err=True)
            return
        Path(output).write_text(text)
    if output:
        click.echo(f"wrote {frame.height} rows to {output} ({fmt})", err=True)


SUMMARY_FORMATS = ("table", "json")


def summary_format_option(fn: Callable[..., None]) -> Callable[..., None]:
    """--format table|json for a command whose answer is one set of figures (a summary)."""
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(SUMMARY_FORMATS),
        default="table",
        show_default=True,
        help="table: one figure a line, in units; json: the summary as a program reads it.",
    )(fn)


def flat_figures(summary: Mapping[str, object], prefix: str = "") -> dict[str, object]:
    """A nested summary as one level of figures, nested names joined with '.'."""
    out: dict[str, object] = {}
    for key, value in summary.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flat_figures(value, f"{name}."))
        elif isinstance(value, list | tuple):
            out[name] = ", ".join(str(v) for v in value) if value else "-"
        else:
            out[name] = value
    return out


def _has_unit(name: str) -> bool:
    """Whether human_units gives a column of this name a unit (or a count's whole number)."""
    return bool(
        re.search(r"(_s|_h|_bytes)$|^bytes(_|$)|_share$|occupancy$", name) or _is_count(name)
    )


def emit_summary(summary: Mapping[str, object], fmt: str) -> None:
    """Print a summary: as JSON (indented, raw numbers), or as a table of one figure a line
    with the units every table uses (chosen by the figure's name)."""
    if fmt == "json":
        click.echo(json.dumps(summary, indent=2, default=_json_default))
        return
    figures = flat_figures(summary)
    rows = []
    for name, value in figures.items():
        # The unit comes from the nearest name that is a figure's, not a key's
        # (drive_busy_share.LTO-8#1 is a share, requester_done_s.alice a duration).
        parts = list(reversed(name.split(".")))
        leaf = next((p for p in parts if _has_unit(p)), parts[0])
        if isinstance(value, bool) or not isinstance(value, int | float):
            rows.append((name, _cell(value)))
            continue
        shown = human_units(pl.DataFrame({leaf: [value]}))[leaf][0]
        rows.append((name, _cell(shown)))
    frame = pl.DataFrame(rows, schema={"figure": pl.String, "value": pl.String}, orient="row")
    click.echo(table_fitted(frame, None)[0], nl=False)
