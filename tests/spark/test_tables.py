"""The Delta tables' columns are the PostgreSQL canonical tables' (migrated by ingest/schema/),
in the same order, plus the columns Spark adds of its own (tapelens.spark.tables.SPARK_ONLY)."""

from __future__ import annotations

import psycopg
import pytest

from tapelens.spark.tables import BUCKET, BUCKETS, SPARK_ONLY, TABLES, bucket_sql

# PostgreSQL's types as the Delta tables spell them.
PG_TYPES = {
    "text": "STRING",
    "bigint": "BIGINT",
    "integer": "INT",
    "double precision": "DOUBLE",
    "timestamp with time zone": "TIMESTAMP",
    "ARRAY": "ARRAY<STRING>",
}


@pytest.mark.parametrize("name", sorted(TABLES))
def test_a_delta_table_has_the_columns_of_its_postgres_table(dsn: str, name: str) -> None:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "select column_name, data_type from information_schema.columns"
            " where table_schema = 'tapelens' and table_name = %s order by ordinal_position",
            [name],
        ).fetchall()
    assert rows, f"tapelens.{name} is not a PostgreSQL table"
    ours = [(c, t) for c, t in TABLES[name].columns if c not in SPARK_ONLY.get(name, ())]
    # Order aside: a migration adds a column at the end, the Delta table has it where it belongs.
    assert sorted(ours) == sorted((c, PG_TYPES[t]) for c, t in rows)


def test_the_tables_with_a_volume_are_partitioned_by_its_bucket() -> None:
    bucketed = {n for n, t in TABLES.items() if t.bucketed}
    assert bucketed == {"tape_files", "transfers", "mounts"}
    for name in bucketed:
        ddl = TABLES[name].ddl()
        assert f"PARTITIONED BY ({BUCKET})" in ddl and f"{BUCKET} INT" in ddl
    assert bucket_sql("v") == f"cast(pmod(xxhash64(v), {BUCKETS}) as int)"
