"""Table maintenance from Spark SQL: procedures as Python table functions (UDTFs).

Spark gives Python data sources no catalog and no ``CALL``, but it runs Python UDTFs from
SQL, so every procedure is a table function that does its work and returns what it did:

```sql
SELECT * FROM minipaimon_compact('/data/orders')                 -- or (path, 'minor')
SELECT * FROM minipaimon_expire_snapshots('/data/orders', 10)
SELECT * FROM minipaimon_rollback('/data/orders', 5)             -- or a tag name: 'daily'
SELECT * FROM minipaimon_create_tag('/data/orders', 'daily')     -- or (path, name, snapshot
                                                                 --     [, time_retained '5 d'])
SELECT * FROM minipaimon_rename_tag('/data/orders', 'daily', 'day1')
SELECT * FROM minipaimon_delete_tag('/data/orders', 'daily')      -- or several: 'a,b' (Paimon's)
SELECT * FROM minipaimon_remove_orphan_files('/data/orders', '1d')  -- (…, true): dry run
SELECT * FROM minipaimon_diff('/data/orders', 3, 'daily')        -- rows changed, with _row_kind
SELECT * FROM minipaimon_rewrite_manifests('/data/orders')
SELECT * FROM minipaimon_tables('/data/warehouse')               -- the tables of a catalog
SELECT * FROM minipaimon_delete('/data/orders', "dt < '2025-01-01' AND status = 'void'")
SELECT * FROM minipaimon_update('/data/orders', "status = 'void'", "amount < 0")
SELECT * FROM minipaimon_update('/data/orders', 'name = upper(name)', 'id % 3 = 0')
SELECT * FROM minipaimon_create_branch('/data/orders', 'audit', 'daily')  -- and _delete_branch,
SELECT * FROM minipaimon_fast_forward('/data/orders', 'audit')            -- _branches (procedures_branches)
SELECT * FROM minipaimon_expire_partitions('/data/orders', '30 d')  -- minipaimon_auto_tags,
                                                                    -- minipaimon_expire_tags
```

``minipaimon_delete`` / ``minipaimon_update`` take a condition and ``minipaimon_update`` a
SET list (``name = upper(name), amount = amount * 1.1``) in Spark SQL, evaluated by the core
over Arrow as Spark evaluates them (minipaimon_core.expressions.sql_compiler, see
:mod:`minipaimon_spark.procedures_dml`), in one commit.

``minipaimon_spark.register(spark)`` registers them. A table is a path, or a
``namespace.table`` identifier in the warehouse of the session's ``spark.minipaimon.warehouse``
(else ``$MINIPAIMON_WAREHOUSE``). Tables on object storage are reached with the session's
``spark.minipaimon.s3.*`` / ``spark.minipaimon.azure.*`` settings
(``spark.minipaimon.s3.endpoint``, ``spark.minipaimon.azure.account-key``, ...), else the
``AWS_*`` / ``AZURE_STORAGE_*`` environment: ``register`` reads them once (call it again after changing
them) and ships them to the tasks inside the function, never as a SQL literal that a query
log would show.

Each call is checked when Spark analyzes the query, on the driver (``analyze``): a missing
table, a bad argument, a tag that already exists, a snapshot that does not, fail as one
``AnalysisException`` naming the minipaimon error class before any task runs or any file
changes. The work then runs on the executors: ``minipaimon_compact`` in one task;
``minipaimon_compact_distributed(path [, strategy])`` (Spark 4.1+: a SQL table function)
spreads the buckets over the cluster's tasks and commits once, as ``minipaimon_spark.compact``
does, but is checked when its first task runs rather than at analysis (Spark hands a SQL
function's arguments to the table functions inside it as references, not constants).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from pyspark.sql.functions import udf, udtf

from minipaimon_spark.procedure_support import (
    Args,
    Connection,
    analyzed,
    check_endpoint,
    endpoint,
    flag,
    integer,
    one_line_errors,
    schema_of,
)
from minipaimon_spark.procedures_branches import branch_procedures
from minipaimon_spark.procedures_dml import row_change_procedures
from minipaimon_spark.procedures_post_commit import post_commit_procedures
from minipaimon_spark.procedures_tags import tag_procedures

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


COMPACT_RETURNS = "snapshot_id bigint, buckets int, files_removed int, files_added int"


def procedures(conn: Connection) -> dict[str, Any]:
    """SQL name -> UDTF class of every procedure, finding tables through ``conn``."""

    def table_arg(a: Args) -> Any | None:
        """The table of argument 0 if it is a constant (opened: it must exist)."""
        return conn.table(a.value(0)) if a.known(0) else None

    def check_compact(a: Args) -> None:
        from minipaimon_core.maintenance.compaction import explicit_strategy

        table_arg(a)
        if a.known(1):
            explicit_strategy(a.value(1))

    class Compact:
        """``minipaimon_compact(path [, strategy])``: compact every bucket (``full`` by
        default; ``minor``: level-0 files of buckets with several sorted runs), one COMPACT
        commit; one row: snapshot id (null: nothing to do), buckets, files replaced, written.
        Checked at analysis; the buckets are compacted by one task (see
        ``minipaimon_compact_distributed`` for a table too big for one executor)."""

        analyze = analyzed(COMPACT_RETURNS, check_compact)

        def eval(self, path: str, strategy: str = "full") -> Iterator[tuple[Any, ...]]:
            from minipaimon_core.maintenance.compaction import (
                bucket_units,
                compact_bucket,
                explicit_strategy,
            )

            table = conn.table(path)
            how = explicit_strategy(strategy)
            messages = [m for m in (compact_bucket(table, u, how) for u in bucket_units(table)) if m]
            yield _compact_row(table, messages)

    class CompactionUnits:
        """``minipaimon_compaction_units(path, strategy)``: one row per bucket of the table
        (a pickled unit); the first step of the distributed ``minipaimon_compact``."""

        analyze = analyzed("unit int, path string, strategy string, entries binary", check_compact)

        def eval(self, path: str, strategy: str) -> Iterator[tuple[Any, ...]]:
            from minipaimon_core.maintenance.compaction import bucket_units, explicit_strategy

            how = explicit_strategy(strategy)
            for i, unit in enumerate(bucket_units(conn.table(path))):
                yield i, path, how, pickle.dumps(unit, protocol=pickle.HIGHEST_PROTOCOL)

    class CompactUnit:
        """``minipaimon_compact_unit(path, strategy, entries)``: compact one bucket on the
        executor that runs it; its commit message (pickled), or no row."""

        analyze = analyzed("message binary", lambda a: None)

        def eval(self, path: str, strategy: str, entries: bytes) -> Iterator[tuple[Any, ...]]:
            from minipaimon_core.maintenance.compaction import compact_bucket, explicit_strategy

            message = compact_bucket(conn.table(path), pickle.loads(entries), explicit_strategy(strategy))
            if message is not None:
                yield (pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL),)

    def check_expire(a: Args) -> None:
        table_arg(a)
        if a.known(1):
            integer("retain_max", a.value(1), minimum=1)

    class ExpireSnapshots:
        """``minipaimon_expire_snapshots(path, retain_max)``: keep the newest ``retain_max``
        (>= 1) snapshots (tags and consumers still pin theirs); one row of counts."""

        analyze = analyzed("snapshots_expired int, data_files_deleted int, "
                            "changelog_files_deleted int, manifests_deleted int", check_expire)

        def eval(self, path: str, retain_max: int) -> Iterator[tuple[Any, ...]]:
            result = conn.table(path).expire_snapshots(retain_max=integer("retain_max", retain_max, 1))
            yield (len(result.snapshots), len(result.data_files), len(result.changelog_files),
                   len(result.manifests))

    def check_rollback(a: Args) -> None:
        table = table_arg(a)
        if table is not None and a.known(1):
            check_endpoint(table, "rollback target", a.value(1))

    class Rollback:
        """``minipaimon_rollback(path, snapshot_id | tag)``: an integer is a snapshot id, a
        string a tag name; newer snapshots, their tags and files go."""

        analyze = analyzed("snapshot_id bigint, snapshots_removed int, tags_removed int, "
                            "files_deleted int", check_rollback)

        def eval(self, path: str, target: Any) -> Iterator[tuple[Any, ...]]:
            table = conn.table(path)
            to = endpoint("rollback target", target)
            result = table.rollback_to(tag=to) if isinstance(to, str) else table.rollback_to(snapshot_id=to)
            yield result.snapshot_id, len(result.snapshots), len(result.tags), len(result.files)

    def check_orphans(a: Args) -> None:
        import time

        from minipaimon_core import InvalidArgumentError

        table_arg(a)
        if a.known(1) and older_than(a.value(1)) > time.time() * 1000:
            raise InvalidArgumentError(
                f"older_than {a.value(1)!r} is in the future: files still being written would "
                "be deleted; give a time at least as old as the longest write")
        if a.known(2):
            flag("dry_run", a.value(2))

    class RemoveOrphanFiles:
        """``minipaimon_remove_orphan_files(path, older_than [, dry_run])``: one row per
        file that no snapshot or tag references and that was last modified before
        ``older_than``, an age (``'1d'``) or a date-time text (deleted, or only listed with
        ``dry_run``); epoch milliseconds still work (deprecated)."""

        analyze = analyzed("path string, dry_run boolean", check_orphans)

        def eval(self, path: str, older_than_time: Any, dry_run: bool = False) -> Iterator[tuple[Any, ...]]:
            result = conn.table(path).remove_orphan_files(
                older_than_ms=older_than(older_than_time), dry_run=flag("dry_run", dry_run))
            for name in result.files:
                yield name, result.dry_run

    class RewriteManifests:
        """``minipaimon_rewrite_manifests(path)``: cluster the manifests by partition (one
        new COMPACT snapshot with the same files); one row: the snapshot and manifest counts."""

        analyze = analyzed("snapshot_id bigint, manifests_before int, manifests_after int",
                            lambda a: None if table_arg(a) is None else None)

        def eval(self, path: str) -> Iterator[tuple[Any, ...]]:
            result = conn.table(path).rewrite_manifests()
            yield result.snapshot_id, result.manifests_before, result.manifests_after

    def check_tables(a: Args) -> None:
        import minipaimon_core as mp

        if a.known(0) and (not isinstance(a.value(0), str) or not a.value(0)):
            raise mp.InvalidArgumentError(f"the argument must be a warehouse path, got {a.value(0)!r}")

    class Tables:
        """``minipaimon_tables(warehouse)``: one row per table of the warehouse catalog."""

        analyze = analyzed("namespace string, table string, path string", check_tables)

        def eval(self, warehouse: str) -> Iterator[tuple[Any, ...]]:
            import minipaimon_core as mp

            catalog = mp.catalog(warehouse, conn.options)
            for namespace in catalog.list_namespaces():
                for name in catalog.list_tables(namespace):
                    yield namespace, name, catalog.table_path(f"{namespace}.{name}")

    class Diff:
        """``minipaimon_diff(path, from, to)``: the rows that differ between two snapshots
        (each a snapshot id or a tag name): every column plus ``_row_kind`` (+I, -D, -U/+U
        pairs). The result schema is the table's, found when Spark analyzes the query."""

        @staticmethod
        def analyze(path: Any, start: Any, end: Any) -> Any:
            from pyspark.sql.types import StringType, StructField
            from pyspark.sql.udtf import AnalyzeResult

            from minipaimon_core.format.kinds import ROW_KIND_COLUMN
            from minipaimon_spark.types import to_spark_schema

            def check() -> Any:
                table = conn.table(path.value)
                for name, arg in (("from", start), ("to", end)):
                    if arg.isConstantExpression:
                        check_endpoint(table, name, arg.value)
                return table.schema()

            schema = to_spark_schema(one_line_errors(check))
            return AnalyzeResult(schema=schema.add(StructField(ROW_KIND_COLUMN, StringType(), False)))

        def eval(self, path: str, start: Any, end: Any) -> Iterator[tuple[Any, ...]]:
            changes = conn.table(path).diff(endpoint("from", start), endpoint("to", end))
            for batch in changes.to_batches():
                yield from zip(*(column.to_pylist() for column in batch.columns))

    return {
        **row_change_procedures(conn, table_arg),
        **branch_procedures(conn, table_arg),
        **post_commit_procedures(conn, table_arg),
        "minipaimon_compact": Compact,
        "minipaimon_compaction_units": CompactionUnits,
        "minipaimon_compact_unit": CompactUnit,
        "minipaimon_expire_snapshots": ExpireSnapshots,
        "minipaimon_rollback": Rollback,
        **tag_procedures(conn, table_arg),
        "minipaimon_remove_orphan_files": RemoveOrphanFiles,
        "minipaimon_diff": Diff,
        "minipaimon_tables": Tables,
        "minipaimon_rewrite_manifests": RewriteManifests,
    }


def _compact_row(table: Any, messages: list[Any]) -> tuple[Any, ...]:
    """Commit compaction ``messages`` as one COMPACT snapshot; the procedure's result row."""
    from minipaimon_core.maintenance.compaction import commit_compaction

    snapshot_id = commit_compaction(table, messages, raise_on_conflict=True) if messages else None
    return (snapshot_id, len(messages), sum(len(m.compactBefore) for m in messages),
            sum(len(m.compactAfter) for m in messages))


def _commit_compaction(conn: Connection) -> Callable[[str | None, list[bytes] | None], tuple[Any, ...]]:
    """The last step of the distributed compaction: one commit of every bucket's message."""

    def commit(path, messages):  # type: ignore[no-untyped-def]  # (hints make Spark guess a pandas UDF)
        if not messages or path is None:
            return None, 0, 0, 0  # no bucket (an empty table), or nothing to compact
        return _compact_row(conn.table(path), [pickle.loads(m) for m in messages])

    return commit


# minipaimon_compact_distributed: units planned in one task, spread over ``{slices}`` tasks
# (REPARTITION by number: adaptive execution may not merge them), compacted there, then one
# commit. Its arguments reach the table functions as outer references, not constants, so it
# is checked when its first task runs (still before anything changes), not at analysis.
_COMPACT_FUNCTION = """
CREATE OR REPLACE TEMPORARY FUNCTION minipaimon_compact_distributed(path STRING, strategy STRING DEFAULT 'full')
RETURNS TABLE (snapshot_id BIGINT, buckets INT, files_removed INT, files_added INT)
RETURN SELECT r.snapshot_id, r.buckets, r.files_removed, r.files_added FROM (
  SELECT minipaimon_commit_compaction(first(u.path), collect_list(c.message)) AS r
  FROM (SELECT /*+ REPARTITION({slices}) */ * FROM minipaimon_compaction_units(path, strategy)) AS u,
       LATERAL minipaimon_compact_unit(u.path, u.strategy, u.entries) AS c)
"""


def older_than(value: Any) -> int:
    """The time argument of ``minipaimon_remove_orphan_files`` as epoch milliseconds: an age
    (``'1d'``, ``'36 h'``) or a date-time text, as everywhere (minipaimon_core.expressions.times); an
    integer (epoch milliseconds) is deprecated and 0 refused. Raises InvalidArgumentError."""
    from minipaimon_core.expressions.times import epoch_ms_deprecated, point_in_time_ms

    if isinstance(value, str):
        return point_in_time_ms(value, "older_than")
    return epoch_ms_deprecated(integer("older_than", value), "older_than as epoch milliseconds",
                               "an age such as '1d'")


def _udtf(cls: type) -> Any:
    """The UDTF of a procedure class (its schema comes from its ``analyze``)."""
    return udtf(cls)


def register_procedures(spark: SparkSession, options: Mapping[str, str] | None = None) -> None:
    """Register every procedure as a SQL table function of ``spark``; tables are found with
    the session's ``spark.minipaimon.*`` settings, overridden by ``options``."""
    from minipaimon_spark.compaction import default_parallelism

    conn = Connection.of_session(spark, options)
    for name, cls in procedures(conn).items():
        spark.udtf.register(name, _udtf(cls))
    spark.udf.register("minipaimon_commit_compaction", udf(_commit_compaction(conn), schema_of(COMPACT_RETURNS)))
    try:  # the distributed compaction where Spark has SQL table functions (4.1+)
        spark.sql(_COMPACT_FUNCTION.format(slices=default_parallelism(spark)))
    except Exception as e:  # noqa: BLE001 - 4.0: none; minipaimon_compact stays
        if "PARSE_SYNTAX_ERROR" not in str(e) and "ParseException" not in type(e).__name__:
            raise
