"""The engine setting and where Spark's tables are: read by the commands that work on either
engine, from their options or the environment (tapelens.settings lists the variables)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click

from tapelens.settings import BY_NAME, ENGINES

F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_MASTER = "local[*]"


@dataclass(frozen=True)
class EngineSettings:
    """Which engine holds the canonical tables, and for Spark its master and warehouse."""

    engine: str = "postgres"
    spark_master: str = DEFAULT_MASTER
    spark_warehouse: str = ""  # empty: <home>/spark

    @property
    def spark(self) -> bool:
        return self.engine == "spark"

    def warehouse(self, home: Path) -> str:
        """The warehouse: the setting, else the folder `spark` under the home directory."""
        return self.spark_warehouse or str(home / "spark")


def engine_options(fn: F) -> F:
    """--engine, --spark-master and --spark-warehouse (and their environment variables), handed
    to the command as one `engine: EngineSettings` argument."""

    def keep(ctx: click.Context, param: click.Parameter, value: object) -> object:
        ctx.meta.setdefault("tapelens.engine", {})[param.name or ""] = value
        return value

    def settings(ctx: click.Context, param: click.Parameter, value: object) -> EngineSettings:
        given = dict(ctx.meta.get("tapelens.engine", {}))
        return EngineSettings(
            engine=str(value or "postgres"),
            spark_master=str(given.get("spark_master") or DEFAULT_MASTER),
            spark_warehouse=str(given.get("spark_warehouse") or ""),
        )

    fn = click.option(
        "--engine",
        "engine",
        envvar=BY_NAME["engine"].envvar,
        type=click.Choice(ENGINES),
        default="postgres",
        show_default=True,
        callback=settings,
        help=BY_NAME["engine"].help,
    )(fn)
    # Eager, so that their values are there when --engine builds the settings from them.
    fn = click.option(
        "--spark-warehouse",
        envvar=BY_NAME["spark_warehouse"].envvar,
        metavar="PATH",
        is_eager=True,
        expose_value=False,
        callback=keep,
        help=BY_NAME["spark_warehouse"].help,
    )(fn)
    return click.option(
        "--spark-master",
        envvar=BY_NAME["spark_master"].envvar,
        metavar="MASTER",
        is_eager=True,
        expose_value=False,
        callback=keep,
        help=BY_NAME["spark_master"].help,
    )(fn)
