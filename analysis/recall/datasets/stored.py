"""The placement costs as stored after each marts build, for every command to read.

`tapelens marts build` (and `throughput calibrate`, which changes the price) prices every
dataset with placement_cost.placement_costs and writes the result into two tables of the marts
schema: DATASETS (a dataset) and TAPES (a dataset on a tape it is read from). The reports, the
dashboards, `plan recall` and the repack advisor read these, so they quote the figure
`predict datasets` computes with the same function, never a price of their own.
"""

from __future__ import annotations

import polars as pl
import psycopg
from psycopg import sql

from tapelens.analysis.recall.datasets.placement_cost import (
    DATASET_COLUMNS,
    PlacementCosts,
    placement_costs,
)
from tapelens.analysis.recall.datasets.prediction import resolve_media
from tapelens.analysis.recall.store.catalog import datasets_in_batches
from tapelens.analysis.throughput import store as params_store
from tapelens.analysis.throughput.model import ModelParams
from tapelens.dbt_runs import MARTS_SCHEMA
from tapelens.errors import DatabaseError
from tapelens.frames import one_line

DATASETS = "fct_dataset_placement_cost"
TAPES = "fct_dataset_tape_placement_cost"

_TYPES = {
    "dataset": "text not null",
    "dataset_type": "text",
    "experiment": "text",
    "volume": "text not null",
    "media_type": "text",
    "placement_cost_s": "double precision not null",
    "drive_s": "double precision not null",
    "ideal_drive_s": "double precision not null",
    "copies": "bigint not null",
    "live_files": "bigint not null",
    "readable_files": "bigint not null",
    "bytes": "bigint not null",
    "tapes": "bigint not null",
    "ideal_tapes": "bigint not null",
    "unreadable_tapes": "bigint not null",
}


# Live copies priced at a time. A dataset's price depends on its own copies alone, so a site
# is priced a batch of whole datasets at a time, in memory bounded by the batch: all the
# 10,045,215 copies of a site priced at once took the build past 21 GB and the kernel killed
# it on a machine of 24 GB; a batch of 1,000,000 needs about 2.5 GB.
PRICED_AT_ONCE = 1_000_000


def price_site(conn: psycopg.Connection, batch_copies: int = PRICED_AT_ONCE) -> PlacementCosts:
    """Every dataset's placement cost from the live catalog, with the model parameters in use
    (calibrated where a fit is stored) and the site's media catalog: what `predict datasets`
    computes for the same datasets. Copies on tapes of unknown media type are left out."""
    params = {m: p for m, (p, _) in params_store.params_in_use(conn).items()}
    readers = params_store.readable_by(conn)
    parts = [price(files, params, readers) for files in datasets_in_batches(conn, batch_copies)]
    if len(parts) == 1:
        return parts[0]
    return PlacementCosts(
        pl.concat([p.datasets for p in parts]).sort(
            "placement_cost_s", "dataset", descending=[True, False]
        ),
        pl.concat([p.tapes for p in parts]).sort("dataset", "volume"),
    )


def price(
    files: pl.DataFrame, params: dict[str, ModelParams], readers: dict[str, tuple[str, ...]]
) -> PlacementCosts:
    """The placement costs of the datasets of `files` (the live copies of whole datasets, as
    load_datasets reads them on either engine); copies on tapes of unknown media type are left
    out."""
    files, _ = resolve_media(files, params, None)
    return placement_costs(files, params, readers)


def write_placement_costs(conn: psycopg.Connection) -> PlacementCosts | None:
    """Price every dataset (price_site) and replace the two tables with the result, in one
    transaction: a reader sees the former figures or the new ones, never a mix. The dataset
    table also names each dataset's experiment (dim_datasets'), for the dashboards' filter.
    None, and nothing written, where no build has made the marts schema yet."""
    found = conn.execute("select to_regnamespace(%s)", [MARTS_SCHEMA]).fetchone()
    if found is None or found[0] is None:
        return None
    costs = price_site(conn)
    try:
        with conn.transaction(), conn.cursor() as cur:
            datasets = costs.datasets.join(_experiments(cur), on="dataset", how="left")
            for name, frame, key in (
                (DATASETS, datasets, ("dataset",)),
                (TAPES, costs.tapes, ("dataset", "volume")),
            ):
                _replace(cur, name, frame, key)
        conn.commit()
    except psycopg.Error as exc:
        raise DatabaseError(one_line(exc)) from None
    return costs


def _experiments(cur: psycopg.Cursor) -> pl.DataFrame:
    """dataset -> experiment from dim_datasets, empty when the marts do not hold it."""
    schema = {"dataset": pl.String, "experiment": pl.String}
    cur.execute("select to_regclass(%s)", [f"{MARTS_SCHEMA}.dim_datasets"])
    found = cur.fetchone()
    if found is None or found[0] is None:
        return pl.DataFrame(schema=schema)
    cur.execute(
        sql.SQL("select dataset, experiment from {}").format(
            sql.Identifier(MARTS_SCHEMA, "dim_datasets")
        )
    )
    return pl.DataFrame(cur.fetchall(), schema=schema, orient="row")


def _replace(cur: psycopg.Cursor, name: str, frame: pl.DataFrame, key: tuple[str, ...]) -> None:
    table = sql.Identifier(MARTS_SCHEMA, name)
    columns = [
        sql.SQL("{} {}").format(sql.Identifier(c), sql.SQL(_TYPES[c])) for c in frame.columns
    ]
    cur.execute(sql.SQL("drop table if exists {}").format(table))
    cur.execute(
        sql.SQL("create table {} ({}, primary key ({}))").format(
            table,
            sql.SQL(", ").join(columns),
            sql.SQL(", ").join(sql.Identifier(c) for c in key),
        )
    )
    statement = sql.SQL("copy {} ({}) from stdin (format csv)").format(
        table, sql.SQL(", ").join(sql.Identifier(c) for c in frame.columns)
    )
    with cur.copy(statement) as copy:
        copy.write(frame.write_csv(include_header=False))
    cur.execute(sql.SQL("analyze {}").format(table))


def read_placement_costs(
    conn: psycopg.Connection, datasets: list[str] | None = None
) -> pl.DataFrame | None:
    """The stored per-dataset figures (DATASET_COLUMNS), of `datasets` or of all; None when no
    marts build has stored them yet."""
    found = conn.execute("select to_regclass(%s)", [f"{MARTS_SCHEMA}.{DATASETS}"]).fetchone()
    if found is None or found[0] is None:
        return None
    query = sql.SQL("select {} from {}").format(
        sql.SQL(", ").join(sql.Identifier(c) for c in DATASET_COLUMNS),
        sql.Identifier(MARTS_SCHEMA, DATASETS),
    )
    params: list[object] = []
    if datasets is not None:
        query = query + sql.SQL(" where dataset = any(%s)")
        params.append(datasets)
    try:
        rows = conn.execute(query + sql.SQL(" order by dataset"), params).fetchall()
    except psycopg.Error as exc:
        raise DatabaseError(one_line(exc)) from None
    return pl.DataFrame(rows, schema=frame_schema(DATASET_COLUMNS), orient="row")


def spark_column_type(column: str) -> str:
    """The Spark SQL type of a stored column (its PostgreSQL type's counterpart)."""
    kind = _TYPES[column]
    return "string" if kind.startswith("text") else kind.split()[0]


def frame_schema(columns: tuple[str, ...]) -> dict[str, type[pl.DataType]]:
    """Names are text, seconds floats, counts and bytes integers."""
    return {
        c: pl.Float64
        if c.endswith("_s")
        else pl.String
        if _TYPES[c].startswith("text")
        else pl.Int64
        for c in columns
    }
