"""`tapelens predict`: predicted recall time and rate per dataset, now and with ideal placement."""

from __future__ import annotations

import click
import polars as pl

from tapelens.analysis.recall.datasets.placement_cost import with_placement_costs
from tapelens.analysis.recall.datasets.prediction import predict_datasets, resolve_media
from tapelens.analysis.recall.store.catalog import load_datasets
from tapelens.analysis.reports.queries import rounded
from tapelens.analysis.throughput import store
from tapelens.analysis.throughput.model import ModelParams
from tapelens.cli.common import (
    INVENTORY_DRIVES,
    App,
    assume_media_option,
    dataset_type_option,
    drives_option,
    drives_or_inventory,
    known_names,
    limit_options,
    nothing_matches,
    order_option,
    pass_app,
    sort_and_limit,
)
from tapelens.cli.groups import BY_NAME
from tapelens.cli.output import emit, format_option
from tapelens.db import connection
from tapelens.errors import InputError
from tapelens.spark.settings import current_engine, engine_options

predict = BY_NAME["predict"]


@predict.command("datasets")
@click.option("--dataset", help="Only this dataset.")
@dataset_type_option
@drives_option(INVENTORY_DRIVES)
@assume_media_option
@order_option
@limit_options
@format_option
@engine_options
@pass_app
def datasets(
    app: App,
    dataset: str | None,
    dataset_type: str | None,
    drives_spec: str | None,
    assume_media: str | None,
    read_order: str,
    sort: str | None,
    desc: bool,
    limit: int | None,
    fmt: str,
    output: str | None,
) -> None:
    """Predicted recall time and rate of each dataset now, and with ideal placement.

    Ideal placement is the faster of two layouts (ideal_layout): the dataset's files adjacent
    (gap 1) on the fewest tapes of its main media type ("packed"), or adjacent from the start of
    each tape they are on now ("own tapes"). placement_cost_s is the difference (never
    negative), slowdown the ratio. Each dataset is predicted as a recall of its own on the
    given drives.

    \b
    Example:
        tapelens predict datasets --dataset-type AOD --drives LTO8:4 --format csv -o aod.csv
        tapelens predict datasets --sort placement_cost_s --desc --limit 10
    """
    if dataset and dataset_type:
        raise click.UsageError("give --dataset or --dataset-type, not both")
    engine = current_engine()
    if engine.spark:
        drives, files, params, readers = _inputs_on_spark(app, drives_spec, dataset, dataset_type)
    else:
        with connection(app.dsn()) as conn:
            drives = drives_or_inventory(conn, drives_spec)
            files = load_datasets(conn, dataset=dataset, dataset_type=dataset_type)
            if files.height == 0 and (dataset or dataset_type):
                column = "dataset" if dataset else "dataset_type"
                raise _nothing_matches(dataset, dataset_type, known_names(conn, column))
            params = {m: p for m, (p, _) in store.params_in_use(conn).items()}
            readers = store.readable_by(conn)
    if assume_media is not None and assume_media not in params:
        raise InputError(f"--assume-media: unknown media type {assume_media!r}")
    files, unknown = resolve_media(files, params, assume_media)
    if unknown:
        what = f"assumed {assume_media}" if assume_media else "left out (see --assume-media)"
        click.echo(f"{len(unknown)} tape(s) of unknown media type: {what}", err=True)
    if files.height == 0:
        raise InputError("no live files match" + (f" dataset {dataset!r}" if dataset else ""))
    predicted = predict_datasets(files, drives, params, readers, order=read_order)
    table = with_placement_costs(predicted, files, params, readers)
    blocked = table.filter(pl.col("now_unreadable_tapes") > 0).height
    if blocked:
        click.echo(
            f"{blocked} dataset(s) have files only on tapes that cannot be recalled now (a state"
            " such as disabled or broken, or a media type no drive reads); now_s leaves them out"
            " (see now_unreadable_tapes)",
            err=True,
        )
    # Rounded as the reports are: either engine's sums give the same figures.
    emit(
        sort_and_limit(rounded(table), sort, desc, limit),
        fmt,
        output,
        keep=("now_s", "ideal_s", "placement_cost_s", *([sort] if sort else [])),
    )


def _nothing_matches(dataset: str | None, dataset_type: str | None, known: list[str]) -> InputError:
    option, value = ("--dataset", dataset) if dataset else ("--dataset-type", dataset_type)
    return nothing_matches(option, str(value), known)


def _inputs_on_spark(
    app: App, drives_spec: str | None, dataset: str | None, dataset_type: str | None
) -> tuple[dict[str, int], pl.DataFrame, dict[str, ModelParams], dict[str, tuple[str, ...]]]:
    """The drives, the datasets' live copies, the model parameters and the drive readers, from
    the Spark tables (analysis.recall.store.on_spark)."""
    from tapelens.analysis.recall.store import on_spark
    from tapelens.spark.read import spark_frame
    from tapelens.spark.session import spark_session

    engine = current_engine()
    spark = spark_session(engine.spark_master, engine.warehouse(app.home))
    drives = on_spark.drives_or_inventory(spark, drives_spec)
    files = on_spark.load_datasets(spark, dataset=dataset, dataset_type=dataset_type)
    if files.height == 0 and (dataset or dataset_type):
        column = "dataset" if dataset else "dataset_type"
        known = spark_frame(
            spark,
            f"select distinct {column} as name from tapelens.tape_files"
            f" where removed_at is null and {column} is not null order by 1",
        )
        raise _nothing_matches(dataset, dataset_type, [str(n) for n in known["name"]])
    params, readers = on_spark.model_inputs(spark)
    return drives, files, params, readers
