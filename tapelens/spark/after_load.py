"""The steps some formats take after their records are stored, on Spark: the counterparts of the
PostgreSQL path's after-load hooks (Format.after_load), run inside the load, their commits
tagged with its run like every other.

- `merge_open_mounts` (hpss-pvl; ingest/formats/hpss_pvl.py): a PVL log's pieces of mounts (a
  request never mounted in the file, a dismount of a cartridge it never mounted) move out of
  the mounts into `mount_pieces`, and the rules join what belongs to one mount of one cartridge
  across files loaded in any order, repeated until nothing joins.
- `mark_contradictions` (hint records; ingest/formats/wlcg_hints_inputs.py): every record of a
  file whose records name different levels is contradictory.

Delta's UPDATE and DELETE take no joins: each rule's matches are found by one query, kept on
the driver (a load's pieces and pairs are few), and applied by MERGE.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame, SparkSession

from tapelens.ingest.formats.hpss_pvl import MAX_MERGE_PASSES
from tapelens.ingest.formats.wlcg_hints_inputs import STATUSES
from tapelens.spark.tables import TABLES, sql_literal

MOUNTS = TABLES["mounts"].qualified
PIECES = TABLES["mount_pieces"].qualified
HINTS = TABLES["write_hints"].qualified
RUNS = TABLES["ingest_runs"].qualified


def _kept(spark: SparkSession, query: str) -> DataFrame | None:
    """The rows a query finds now, held on the driver (so that the statements that apply them
    do not see them change), or None when there are none."""
    found = spark.sql(query)
    rows = found.collect()
    return spark.createDataFrame(rows, schema=found.schema) if rows else None


def _in(values: list[str]) -> str:
    return ", ".join(sql_literal(v) for v in values)


def merge_open_mounts(spark: SparkSession, source: str, run_id: int) -> None:
    """Move a load's pieces out of the mounts and join the pieces of mounts split across files,
    as hpss_pvl.merge_open_mounts does on PostgreSQL."""
    s = sql_literal(source)
    moved = _kept(
        spark,
        f"SELECT source, volume, CASE WHEN dismounted_at IS NULL THEN 'request'"
        f" ELSE 'dismount' END AS kind, coalesce(dismounted_at, requested_at) AS at, drive,"
        f" ingest_run_id, mounted_at FROM {MOUNTS} WHERE source = {s} AND status = 'no_mount'"
        f" AND ingest_run_id IN (SELECT run_id FROM {RUNS} WHERE format = 'hpss-pvl')",
    )
    if moved is not None:
        pieces = moved.dropDuplicates(["source", "volume", "kind", "at"])
        pieces.drop("mounted_at").createOrReplaceTempView("tapelens_pieces")
        spark.sql(
            f"MERGE INTO {PIECES} t USING tapelens_pieces s ON t.source = s.source"
            " AND t.volume = s.volume AND t.kind = s.kind AND t.at = s.at"
            " WHEN NOT MATCHED THEN INSERT *"
        )
        moved.createOrReplaceTempView("tapelens_moved")
        spark.sql(
            f"MERGE INTO {MOUNTS} t USING tapelens_moved s ON t.source = s.source"
            " AND t.volume = s.volume AND t.mounted_at = s.mounted_at"
            " WHEN MATCHED THEN DELETE"
        )
    touched = spark.sql(
        f"SELECT DISTINCT volume FROM (SELECT volume FROM {MOUNTS} WHERE source = {s}"
        f" AND ingest_run_id = {int(run_id)} AND status <> 'complete'"
        f" UNION ALL SELECT volume FROM {PIECES} WHERE source = {s}"
        f" AND ingest_run_id = {int(run_id)})"
    ).collect()
    volumes = sorted(str(r[0]) for r in touched)
    if not volumes:
        return
    for _ in range(MAX_MERGE_PASSES):
        joined = sum(rule(spark, s, _in(volumes)) for rule in _RULES)
        if not joined:
            break
    status = (
        "CASE WHEN dismounted_at IS NULL THEN 'no_dismount'"
        " WHEN requested_at IS NULL THEN 'no_request' ELSE 'complete' END"
    )
    spark.sql(
        f"UPDATE {MOUNTS} SET status = {status} WHERE source = {s} AND volume IN ({_in(volumes)})"
        f" AND status IN ('complete', 'no_dismount', 'no_request') AND status <> {status}"
    )


def _requests(spark: SparkSession, s: str, volumes: str) -> int:
    """A request piece is the request of the first mount of its cartridge after it, if that one
    has no request and follows within a day; of several pieces before one mount, the latest."""
    matched = _kept(
        spark,
        f"WITH pieces AS (SELECT p.volume, p.at, min(m.mounted_at) AS mount_at FROM {PIECES} p"
        f" JOIN {MOUNTS} m ON m.source = p.source AND m.volume = p.volume"
        " AND m.mounted_at >= p.at"
        f" WHERE p.source = {s} AND p.volume IN ({volumes}) AND p.kind = 'request'"
        " GROUP BY p.volume, p.at),"
        " ranked AS (SELECT x.volume, x.at, x.mount_at, row_number() OVER"
        " (PARTITION BY x.volume, x.mount_at ORDER BY x.at DESC) AS n"
        f" FROM pieces x JOIN {MOUNTS} m ON m.source = {s} AND m.volume = x.volume"
        " AND m.mounted_at = x.mount_at"
        " WHERE m.requested_at IS NULL AND x.mount_at <= x.at + INTERVAL 1 DAY)"
        " SELECT volume, at, mount_at FROM ranked WHERE n = 1",
    )
    return _apply_pieces(spark, s, matched, "request", "requested_at")


def _dismounts(spark: SparkSession, s: str, volumes: str) -> int:
    """A dismount piece ends the last mount of its cartridge before it, if that one has no
    dismount (the first such piece after the mount)."""
    matched = _kept(
        spark,
        f"WITH pieces AS (SELECT p.volume, p.at, max(m.mounted_at) AS mount_at FROM {PIECES} p"
        f" JOIN {MOUNTS} m ON m.source = p.source AND m.volume = p.volume"
        " AND m.mounted_at <= p.at"
        f" WHERE p.source = {s} AND p.volume IN ({volumes}) AND p.kind = 'dismount'"
        " GROUP BY p.volume, p.at),"
        " ranked AS (SELECT x.volume, x.at, x.mount_at, row_number() OVER"
        " (PARTITION BY x.volume, x.mount_at ORDER BY x.at) AS n"
        f" FROM pieces x JOIN {MOUNTS} m ON m.source = {s} AND m.volume = x.volume"
        " AND m.mounted_at = x.mount_at WHERE m.dismounted_at IS NULL)"
        " SELECT volume, at, mount_at FROM ranked WHERE n = 1",
    )
    return _apply_pieces(spark, s, matched, "dismount", "dismounted_at")


def _apply_pieces(
    spark: SparkSession, s: str, matched: DataFrame | None, kind: str, column: str
) -> int:
    """Each matched piece's time set on its mount, and the piece gone."""
    if matched is None:
        return 0
    matched.createOrReplaceTempView("tapelens_matched")
    spark.sql(
        f"MERGE INTO {MOUNTS} t USING tapelens_matched x ON t.source = {s}"
        f" AND t.volume = x.volume AND t.mounted_at = x.mount_at"
        f" WHEN MATCHED THEN UPDATE SET {column} = x.at"
    )
    spark.sql(
        f"MERGE INTO {PIECES} t USING tapelens_matched x ON t.source = {s}"
        f" AND t.volume = x.volume AND t.kind = '{kind}' AND t.at = x.at"
        " WHEN MATCHED THEN DELETE"
    )
    return matched.count()


def _split_mounts(spark: SparkSession, s: str, volumes: str) -> int:
    """A mount with no dismount, then the next mount of the cartridge with no request within
    the hour: the same mount, the second known from its completion's return in the next file.
    One row, mounted when the first says, ended when the second; a row that is itself the
    second of such a pair waits for the next pass."""
    pairs = _kept(
        spark,
        "WITH rows AS (SELECT volume, mounted_at, dismounted_at,"
        " lead(mounted_at) OVER w AS next_at, lead(requested_at) OVER w AS next_req,"
        " lead(dismounted_at) OVER w AS next_dis, lead(drive) OVER w AS next_drive,"
        " lead(status) OVER w AS next_status"
        f" FROM {MOUNTS} WHERE source = {s} AND volume IN ({volumes})"
        " WINDOW w AS (PARTITION BY volume ORDER BY mounted_at)),"
        " flagged AS (SELECT *, (dismounted_at IS NULL AND next_at IS NOT NULL"
        " AND next_req IS NULL AND next_at <= mounted_at + INTERVAL 1 HOUR) AS joins FROM rows),"
        " marked AS (SELECT *, lag(joins) OVER (PARTITION BY volume ORDER BY mounted_at)"
        " AS prev_joins FROM flagged)"
        " SELECT volume, mounted_at, next_at, next_dis, next_drive, next_status FROM marked"
        " WHERE joins AND NOT coalesce(prev_joins, false)",
    )
    if pairs is None:
        return 0
    pairs.createOrReplaceTempView("tapelens_pairs")
    spark.sql(
        f"MERGE INTO {MOUNTS} t USING tapelens_pairs p ON t.source = {s}"
        " AND t.volume = p.volume AND t.mounted_at = p.mounted_at"
        " WHEN MATCHED THEN UPDATE SET dismounted_at = p.next_dis,"
        " drive = coalesce(p.next_drive, t.drive),"
        " status = CASE WHEN p.next_status = 'aborted' THEN 'aborted' ELSE t.status END"
    )
    spark.sql(
        f"MERGE INTO {MOUNTS} t USING tapelens_pairs p ON t.source = {s}"
        " AND t.volume = p.volume AND t.mounted_at = p.next_at WHEN MATCHED THEN DELETE"
    )
    return pairs.count()


_RULES: tuple[Callable[[SparkSession, str, str], int], ...] = (
    _requests,
    _dismounts,
    _split_mounts,
)


def mark_contradictions(spark: SparkSession, source: str, run_id: int) -> None:
    """After a load of hint records: files whose records (of any load, any source) name
    different levels are contradictory, every such record, as
    wlcg_hints_inputs.mark_contradictions does on PostgreSQL. Records already so marked with
    the same reason are left as they are."""
    reason = "concat(cast(x.versions AS STRING), ' records of this file name different levels')"
    spark.sql(
        f"MERGE INTO {HINTS} h USING (SELECT g.file_key, count(DISTINCT g.levels_digest)"
        f" AS versions FROM {HINTS} g WHERE g.status IN ('ok', 'contradictory')"
        f" AND g.file_key IN (SELECT file_key FROM {HINTS} WHERE ingest_run_id = {int(run_id)}"
        " AND status IN ('ok', 'contradictory'))"
        " GROUP BY g.file_key HAVING count(DISTINCT g.levels_digest) > 1) x"
        " ON h.file_key = x.file_key AND h.status IN ('ok', 'contradictory')"
        f" WHEN MATCHED AND NOT (h.status = 'contradictory' AND h.reason <=> {reason})"
        f" THEN UPDATE SET status = 'contradictory', reason = {reason}"
    )


def hint_statuses(spark: SparkSession, run_ids: list[int]) -> dict[str, int]:
    """How many of these loads' hint records stand in each status (contradictions included)."""
    if not run_ids:
        return {}
    found = spark.sql(
        f"SELECT status, count(*) FROM {HINTS}"
        f" WHERE ingest_run_id IN ({', '.join(str(int(r)) for r in run_ids)}) GROUP BY status"
    ).collect()
    counts = {str(r[0]): int(r[1]) for r in found}
    return {s: counts[s] for s in STATUSES if counts.get(s)}


# Format.after_load's names, as the PostgreSQL path's hooks are named.
AFTER_LOAD: dict[str, Callable[[SparkSession, str, int], None]] = {
    "merge_open_mounts": merge_open_mounts,
    "mark_contradictions": mark_contradictions,
}
