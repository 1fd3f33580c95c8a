"""How commands print frames: --format table|csv|json|parquet and -o FILE."""

from __future__ import annotations

import json
import math
import shutil
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import click
import polars as pl

FORMATS = ("table", "csv", "json", "parquet")


# A table wider than this (or than the terminal) drops its last columns, and cells of long
# text are shortened in the middle, unless --wide.
TABLE_WIDTH = 120
LONG_CELL = 60
_LAYOUT = "tapelens.table_layout"


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
        help="Only these columns, in this order (every format).",
    )(fn)
    fn = click.option(
        "-o", "--output", type=click.Path(dir_okay=False), help="Write to FILE instead of stdout."
    )(fn)
    return click.option(
        "--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True
    )(fn)


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


def human_units(frame: pl.DataFrame) -> pl.DataFrame:
    """Byte counts as kB/MB/GB/TB/PB, seconds as d h:mm:ss, rates in MB/s, shares as percent,
    chosen by the column's name (what the project's frames follow: *_bytes, *_s, *_mb_s,
    occupancy and *_share). Text and other numbers stay as they are."""
    out = []
    for name, dtype in zip(frame.columns, frame.dtypes, strict=True):
        column = frame[name]
        if not dtype.is_numeric():
            out.append(column)
        elif name.endswith("_mb_s"):
            out.append(_texts(column, lambda v: f"{v:,.1f} MB/s"))
        elif name == "bytes" or name.endswith("_bytes"):
            out.append(_texts(column, _bytes_text))
        elif name.endswith("_s") and not name.endswith("_mb_s"):
            out.append(_texts(column, _duration_text))
        elif name == "occupancy" or name.endswith("_share"):
            out.append(_texts(column, lambda v: f"{100 * v:.1f}%"))
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
    sign, value = ("-" if value < 0 else ""), abs(value)
    if value < 60:
        return f"{sign}{value:.1f} s"
    minutes, seconds = divmod(int(round(value)), 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    clock = f"{hours}:{minutes:02d}:{seconds:02d}" if hours or days else f"{minutes}:{seconds:02d}"
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


def table_fitted(frame: pl.DataFrame, width: int | None) -> tuple[str, list[str]]:
    """The aligned table, and the columns left out to fit `width` (None: all, raw values)."""
    numeric = [dtype.is_numeric() for dtype in frame.dtypes]
    if width is not None:
        frame = human_units(frame)
    cells = [[_cell(v, width is not None) for v in row] for row in frame.iter_rows()]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(frame.columns)]
    shown = len(widths)
    if width is not None:
        used = -2
        for i, w in enumerate(widths):
            used += w + 2
            if used > width and i > 0:
                shown = i
                break
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(frame.columns[:shown], widths, strict=False)).rstrip()
    ]
    for row in cells:
        parts = [
            (v.rjust(w) if num else v.ljust(w))
            for v, w, num in zip(row[:shown], widths, numeric, strict=False)
        ]
        lines.append("  ".join(parts).rstrip())
    return "\n".join(lines) + "\n", list(frame.columns[shown:])


def _json_default(value: object) -> object:
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def _cell(value: object, short: bool = False) -> str:
    if value is None:
        return "-"
    if short and isinstance(value, str) and len(value) > LONG_CELL:
        half = (LONG_CELL - 1) // 2
        return f"{value[:half]}…{value[-(LONG_CELL - 1 - half) :]}"
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return "-"
        return f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}"
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


def emit(frame: pl.DataFrame, fmt: str, output: str | None) -> None:
    """Print (or write to `output`) a frame in the chosen format; Parquet needs a file or a pipe.
    A table printed to stdout fits the terminal (TABLE_WIDTH when not a terminal) unless the
    command was given --wide; --columns picks the columns in every format."""
    layout = _layout()
    frame = select_columns(frame, layout.get("columns"))  # type: ignore[arg-type]
    if fmt == "parquet":
        if output:
            frame.write_parquet(output)
        elif sys.stdout.isatty():
            raise click.UsageError("--format parquet writes binary: give -o FILE or a pipe")
        else:
            frame.write_parquet(sys.stdout.buffer)
    else:
        width: int | None = None
        left: list[str] = []
        if fmt == "table" and not output and not layout.get("wide"):
            width = (
                shutil.get_terminal_size((TABLE_WIDTH, 24)).columns
                if sys.stdout.isatty()
                else TABLE_WIDTH
            )
        if width is not None:
            text, left = table_fitted(frame, width)
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
        click.echo(f"wrote {frame.height} rows to {output}", err=True)
