"""Progress of a build: each finished node with the rows it wrote, how many nodes the build
runs, and from the second build of the same selection on, the time left."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from tapelens.dbt_runs import NodeDone, build
from tests.fixtures.marts import MODELS_ONLY, reset, rows

pytestmark = pytest.mark.slow

ADDRESS_MARTS = ["+plan_tape_layouts"]


def test_each_finished_model_is_reported_with_its_rows(
    models_dsn: str, dbt_home: Path, tmp_path: Path
) -> None:
    reset(models_dsn)
    with psycopg.connect(models_dsn, autocommit=True) as conn:
        conn.execute(
            "insert into tapelens.tape_files (source, copy_id, file_id, path, dataset,"
            " dataset_type, experiment, size_bytes, volume, position, written_at, ingest_run_id)"
            " select 'p', 'c' || i, '/p/f' || i, '/p/f' || i, 'D', 'RAW', 'exp', 100 + i,"
            " 'V' || (i % 7), i, timestamptz '2022-01-01', 1 from generate_series(1, 300) i"
        )
    log_dir = tmp_path / "dbt"  # a fresh directory: no earlier times to estimate from
    heard: list[NodeDone] = []
    build(
        models_dsn,
        select=ADDRESS_MARTS,
        exclude=MODELS_ONLY,
        log_dir=log_dir,
        progress=heard.append,
    )
    by_name = {node.name: node for node in heard}
    objects = rows(models_dsn, "select count(*) as n from tapelens_marts.plan_tape_objects")[0]["n"]
    assert objects == 300
    assert by_name["plan_tape_objects"].rows == objects
    assert by_name["plan_tape_layouts"].rows == 7
    assert by_name["stg_tape_files"].rows is None  # a view writes no rows
    assert [node.done for node in heard] == list(range(1, len(heard) + 1))
    assert {node.total for node in heard} == {len(heard)}
    assert all(node.left_s is None for node in heard)  # nothing to estimate from yet

    heard.clear()
    build(
        models_dsn,
        select=ADDRESS_MARTS,
        exclude=MODELS_ONLY,
        log_dir=log_dir,
        progress=heard.append,
    )
    assert heard and all(node.left_s is not None for node in heard)
    assert heard[-1].left_s == 0.0  # the last node leaves nothing
