"""How commands print frames: --format table|csv|json|parquet and -o FILE."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import click
import polars as pl

FORMATS = ("table", "csv", "json", "parquet")


def format_option(fn: Callable[..., None]) -> Callable[..., None]:
    """--format table|csv|json|parquet and -o FILE."""
    fn = click.option(
        "-o", "--output", type=click.Path(dir_okay=False), help="Write to FILE instead of stdout."
    )(fn)
    return click.option(
        "--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True
    )(fn)


def render(frame: pl.DataFrame, fmt: str) -> str:
    """A frame as an aligned text table, CSV or JSON (a list of records)."""
    if fmt == "csv":
        return frame.write_csv()
    if fmt == "json":
        return json.dumps(frame.to_dicts(), default=_json_default, indent=1) + "\n"
    cells = [[_cell(v) for v in row] for row in frame.iter_rows()]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(frame.columns)]
    numeric = [dtype.is_numeric() for dtype in frame.dtypes]
    lines = ["  ".join(c.ljust(w) for c, w in zip(frame.columns, widths, strict=True)).rstrip()]
    for row in cells:
        parts = [
            (v.rjust(w) if num else v.ljust(w))
            for v, w, num in zip(row, widths, numeric, strict=True)
        ]
        lines.append("  ".join(parts).rstrip())
    return "\n".join(lines) + "\n"


def _json_default(value: object) -> object:
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return "-"
        return f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}"
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


def emit(frame: pl.DataFrame, fmt: str, output: str | None) -> None:
    """Print (or write to `output`) a frame in the chosen format; Parquet needs a file or a pipe."""
    if fmt == "parquet":
        if output:
            frame.write_parquet(output)
        elif sys.stdout.isatty():
            raise click.UsageError("--format parquet writes binary: give -o FILE or a pipe")
        else:
            frame.write_parquet(sys.stdout.buffer)
    else:
        text = render(frame, fmt)
        if not output:
            click.echo(text, nl=False)
            return
        Path(output).write_text(text)
    if output:
        click.echo(f"wrote {frame.height} rows to {output}", err=True)
