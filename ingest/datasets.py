"""Which dataset, dataset type and experiment a file belongs to, from its path.

Defaults follow how the experiments name things (docs/domain.md): a dataset is the file's parent
directory; the type is a token of the file name (AOD, DAOD, EVNT, HITS, RAW, ...); the experiment
is the first path component that is not a mount prefix. Each rule can be replaced by a regular
expression with a named group (`dataset`, `type`, `experiment`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import polars as pl

from tapelens.errors import ConfigError

# File-name tokens that name a data type, in the order they are tried (DAOD before AOD).
KNOWN_TYPES: tuple[str, ...] = (
    "DAOD",
    "AOD",
    "ESD",
    "EVNT",
    "HITS",
    "RDO",
    "RAW",
    "NTUP",
    "TAG",
    "LOG",
    "DAQ",
    "MUDST",
    "PICODST",
    "HIST",
)
# Leading path components that are mount points or site names, not experiments.
MOUNT_PREFIXES: tuple[str, ...] = (
    "pnfs",
    "eos",
    "fs",
    "usr",
    "hpss",
    "home",
    "data",
    "archive",
    "castor",
    "tape",
    "store",
)
UNKNOWN = "other"


@dataclass(frozen=True)
class DatasetRules:
    dataset: str | None = None  # regex with group "dataset" applied to the path
    dataset_type: str | None = None  # regex with group "type" applied to the file name
    experiment: str | None = None  # regex with group "experiment" applied to the path

    def __post_init__(self) -> None:
        for setting, pattern, group in (
            ("--dataset-rule", self.dataset, "dataset"),
            ("--type-rule", self.dataset_type, "type"),
            ("--experiment-rule", self.experiment, "experiment"),
        ):
            if pattern is None:
                continue
            try:
                compiled = re.compile(pattern)
            except re.error as exc:
                raise ConfigError(setting, "the command line", f"invalid regex: {exc}") from None
            if group not in compiled.groupindex:
                raise ConfigError(
                    setting, "the command line", f"the regex needs a named group (?P<{group}>...)"
                )
            # Python's engine checked the syntax; the loader runs the rule in Polars' engine,
            # which has no look-around or backreferences: try it there too, before any load.
            try:
                pl.select(pl.lit("/a/b").str.extract(pattern, compiled.groupindex[group]))
            except pl.exceptions.PolarsError as exc:
                lines = [ln.strip() for ln in str(exc).splitlines()]
                why = next((ln[7:] for ln in lines if ln.startswith("error: ")), lines[0])
                raise ConfigError(
                    setting, "the command line", f"a regex the engine cannot run ({why})"
                ) from None


# What the default derivation depends on besides the path: catalog digests are taken before the
# dataset fields are derived (ingest/load.py), so a change here must change the digests for a
# newer dump to derive stored rows' fields again. Bump the version when the expressions change.
DERIVATION_VERSION = 1


def derivation_key(rules: DatasetRules) -> bytes:
    """Bytes that change with the rules and with the default derivation."""
    return repr(
        (
            DERIVATION_VERSION,
            KNOWN_TYPES,
            MOUNT_PREFIXES,
            rules.dataset,
            rules.dataset_type,
            rules.experiment,
        )
    ).encode()


def _named_group(expr: pl.Expr, pattern: str, group: str) -> pl.Expr:
    # Polars extracts by group index; find the index of the named group.
    index = re.compile(pattern).groupindex[group]
    return expr.str.extract(pattern, index)


def dataset_expr(rules: DatasetRules, path: pl.Expr | None = None) -> pl.Expr:
    path = pl.col("path") if path is None else path
    if rules.dataset:
        return _named_group(path, rules.dataset, "dataset").fill_null(
            path.str.replace(r"/[^/]*$", "")
        )
    parent = path.str.replace(r"/[^/]*$", "")
    return (
        pl.when(~path.str.contains("/", literal=True))
        .then(pl.lit(""))
        .when(parent == "")
        .then(pl.lit("/"))
        .otherwise(parent)
    )


def dataset_type_expr(rules: DatasetRules, path: pl.Expr | None = None) -> pl.Expr:
    path = pl.col("path") if path is None else path
    name = path.str.extract(r"([^/]*)$", 1)
    if rules.dataset_type:
        return _named_group(name, rules.dataset_type, "type").str.to_uppercase().fill_null(UNKNOWN)
    # A type token is delimited by start/end or one of . _ - (DAOD_PHYS counts as DAOD).
    alternatives = "|".join(KNOWN_TYPES)
    token = name.str.to_uppercase().str.extract(rf"(?:^|[._\-])({alternatives})(?:$|[._\-])", 1)
    return token.fill_null(UNKNOWN)


def experiment_expr(rules: DatasetRules, path: pl.Expr | None = None) -> pl.Expr:
    path = pl.col("path") if path is None else path
    if rules.experiment:
        return _named_group(path, rules.experiment, "experiment").fill_null(UNKNOWN)
    parts = path.str.strip_chars("/").str.split("/")
    prefixes = "^(?:" + "|".join(MOUNT_PREFIXES) + ")$"
    candidates = parts.list.eval(
        pl.element().filter(
            ~pl.element().str.to_lowercase().str.contains(prefixes)
            & ~pl.element().str.contains(".", literal=True)
        )
    )
    # The last component is the file name, never the experiment.
    first = candidates.list.first()
    return pl.when(parts.list.len() > 1).then(first).otherwise(None).fill_null(UNKNOWN)


def with_datasets(frame: pl.DataFrame, rules: DatasetRules) -> pl.DataFrame:
    """Add dataset, dataset_type and experiment from `path` where a parser left them empty."""
    exprs = {
        "dataset": dataset_expr(rules),
        "dataset_type": dataset_type_expr(rules),
        "experiment": experiment_expr(rules),
    }
    if rules.dataset is None and rules.experiment is None and frame.height:
        return _with_datasets_by_folder(frame, rules, exprs)
    return frame.with_columns(
        (pl.col(c).fill_null(e) if c in frame.columns else e).alias(c) for c, e in exprs.items()
    )


def _with_datasets_by_folder(
    frame: pl.DataFrame, rules: DatasetRules, exprs: dict[str, pl.Expr]
) -> pl.DataFrame:
    """with_datasets under the default rules, where dataset and experiment depend on the folder:
    worked out once per folder (a catalog has thousands of folders for millions of files), the
    same values as per file. The experiment falls back to the file's own rule where the folder
    names none (the file name may then) or the path has no file name."""
    path = pl.col("path")
    has_folder = path.str.contains("/", literal=True)
    folders = frame.select(
        pl.when(has_folder).then(path.str.replace(r"/[^/]*$", "")).alias("_folder"),
        (~has_folder | path.str.ends_with("/")).alias("_own"),
    )
    # A stand-in file name with a dot, which never names an experiment itself.
    in_folder = pl.col("_folder") + "/f.x"
    per_folder = (
        folders.select("_folder")
        .unique()
        .with_columns(
            experiment_expr(rules, in_folder).fill_null(UNKNOWN).alias("_experiment"),
            dataset_expr(rules, in_folder).fill_null("").alias("_dataset"),
        )
    )
    derived = folders.join(
        per_folder, on="_folder", how="left", maintain_order="left", nulls_equal=True
    )
    experiment = derived["_experiment"]
    own = ((experiment == UNKNOWN) | derived["_own"]).arg_true()
    if own.len():
        experiment = experiment.scatter(own, frame[own].select(exprs["experiment"]).to_series())
    found = {"dataset": derived["_dataset"], "experiment": experiment}
    columns = []
    for c, e in exprs.items():
        value = pl.lit(found[c]) if c in found else e
        columns.append((pl.col(c).fill_null(value) if c in frame.columns else value).alias(c))
    return frame.with_columns(columns)
