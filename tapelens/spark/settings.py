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

# The defaults are the settings table's, so that README, --help and the engine never disagree.
DEFAULT_ENGINE = BY_NAME["engine"].default
DEFAULT_MASTER = BY_NAME["spark_master"].default


@dataclass(frozen=True)
class EngineSettings:
    """Which engine holds the canonical tables, and for Spark its master and warehouse."""

    engine: str = DEFAULT_ENGINE
    spark_master: str = DEFAULT_MASTER
    spark_warehouse: str = ""  # empty: <home>/spark

    @property
    def spark(self) -> bool:
        return self.engine == "spark"

    def warehouse(self, home: Path) -> str:
        """The warehouse: the setting, else the folder `spark` under the home directory."""
        return self.spark_warehouse or str(home / "spark")


META = "tapelens.engine"


def engine_options(fn: F) -> F:
    """--engine, --spark-master and --spark-warehouse (and their environment variables) on a
    command; the command reads them with `current_engine()`."""

    def keep(ctx: click.Context, param: click.Parameter, value: object) -> None:
        given = ctx.meta.setdefault(META, {})
        if value is not None:
            given[param.name or ""] = str(value)

    for name, setting, extra in (
        ("--spark-warehouse", "spark_warehouse", {"metavar": "PATH"}),
        ("--spark-master", "spark_master", {"metavar": "MASTER"}),
        (
            "--engine",
            "engine",
            {"type": click.Choice(ENGINES), "default": DEFAULT_ENGINE, "show_default": True},
        ),
    ):
        fn = click.option(
            name,
            setting,
            envvar=BY_NAME[setting].envvar,
            expose_value=False,
            callback=keep,
            help=BY_NAME[setting].help,
            **extra,
        )(fn)
    return fn


def current_engine() -> EngineSettings:
    """The engine settings of the running command (postgres when it takes none)."""
    ctx = click.get_current_context(silent=True)
    given: dict[str, str] = {}
    while ctx is not None:
        given = {**ctx.meta.get(META, {}), **given}
        ctx = ctx.parent
    return EngineSettings(
        engine=given.get("engine", DEFAULT_ENGINE),
        spark_master=given.get("spark_master", DEFAULT_MASTER),
        spark_warehouse=given.get("spark_warehouse", ""),
    )
