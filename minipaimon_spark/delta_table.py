"""``minipaimon_spark.MiniPaimonTable``: delta-spark's ``DeltaTable`` for minipaimon tables,
with its names and signatures, so that a delta-spark job ports by renaming the class.

```python
from minipaimon_spark import MiniPaimonTable

t = MiniPaimonTable.forPath(spark, "/data/orders")           # or forName(spark, "sales.orders")
t.toDF()                                                      # the native read
t.delete("dt < '2025-01-01'")                                 # Spark SQL strings or Columns
t.update("id % 2 = 0", {"name": "concat(name, '2')", "amount": "amount * 1.1"})
t.alias("t").merge(updates.alias("s"), "t.id = s.id") \\
    .whenMatchedUpdate(set={"amount": "s.amount"}).whenNotMatchedInsertAll().execute()
t.history(5); t.detail()
t.restoreToVersion(3); t.restoreToTimestamp("2025-01-01 12:00:00")
t.optimize().executeCompaction(); t.vacuum(48)
```

Conditions and values are evaluated by Spark; values are stored with Spark's store
assignment (:mod:`.store_assignment`), so ``amount * 1.1`` into a BIGINT column stores what
Spark SQL's INSERT would. The rows to change are read, changed and written on the
executors, unit by unit, and the driver commits once (:mod:`.row_changes`), with the core's
conflict rules, ``sequence.field`` and merge-engine semantics (``Table.delete`` /
``update`` / ``merge``). Everything a change takes is analyzed on the driver before any
task runs: an unparsable condition, an unknown column (InvalidArgumentError) or a value that
does not fit its column (SchemaMismatchError) fail there in one line naming it.

Versions are snapshot ids; a restore is Delta's RESTORE (a new commit, history kept:
``Table.restore``); ``vacuum`` removes orphan files (files no snapshot or tag uses, older
than ``retentionHours``, default the core's 24 hours); ``optimize().executeCompaction()``
compacts every bucket on the executors (``minipaimon_spark.compact``).
"""

from __future__ import annotations

import datetime
import zoneinfo
from typing import TYPE_CHECKING, Any

import minipaimon_core as mp
from minipaimon_core.dml.merge_units import ROW, UNIT
from minipaimon_core.errors import InvalidArgumentError
from minipaimon_core.schema.schema import SchemaManager
from minipaimon_spark import store_assignment
from minipaimon_spark.delta_merge import MiniPaimonMergeBuilder
from minipaimon_spark.procedure_support import Connection
from minipaimon_spark.row_changes import CLAUSE, Action, SparkChange, execute, value_name
from minipaimon_spark.spark_sql import analyzed, column_of, pruning_filter
from minipaimon_spark.types import to_spark_schema

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

HISTORY = ("version long, timestamp timestamp, userId string, operation string, "
           "operationParameters map<string,string>, operationMetrics map<string,string>")
DETAIL = ("format string, id string, name string, location string, createdAt timestamp, "
          "lastModified timestamp, partitionColumns array<string>, primaryKeys array<string>, "
          "numFiles long, sizeInBytes long, properties map<string,string>")
RESTORE = ("snapshot_id long, restored_from long, num_removed_files long, num_restored_files long, "
           "num_kept_files long, restored_files_size long")
COMPACTION = "snapshot_id long"


class MiniPaimonTable:
    """A minipaimon table, delta-spark's way (see the module)."""

    def __init__(self, spark: SparkSession, table: mp.Table, connection: dict[str, str],
                 name: str | None = None, alias: str | None = None) -> None:
        self._spark = spark
        self._table = table
        self._connection = connection
        self._name = name
        self._alias = alias

    @classmethod
    def forPath(cls, sparkSession: SparkSession, path: str,  # noqa: N802, N803 (delta-spark's names)
                hadoopConf: dict[str, str] | None = None, options: dict[str, str] | None = None) -> MiniPaimonTable:
        """The table at ``path``. ``options`` (or delta-spark's ``hadoopConf``): storage
        connection options (``s3.*``, ``azure.*``), else the session's ``spark.minipaimon.*``.

        Raises TableNotFoundError."""
        connection = Connection.of_session(sparkSession, {**(hadoopConf or {}), **(options or {})})
        return cls(sparkSession, connection.table(path), connection.options)

    @classmethod
    def forName(cls, sparkSession: SparkSession, tableOrViewName: str) -> MiniPaimonTable:  # noqa: N802, N803
        """The table ``namespace.table`` of the session's warehouse
        (``spark.minipaimon.warehouse``). Raises TableNotFoundError, InvalidArgumentError."""
        connection = Connection.of_session(sparkSession)
        return cls(sparkSession, connection.table(tableOrViewName), connection.options, name=tableOrViewName)

    def toDF(self) -> DataFrame:  # noqa: N802
        """The table's latest snapshot as a DataFrame (``minipaimon_spark.table``: Spark's own
        Parquet reader where no merge is needed), with the alias if one was given."""
        from minipaimon_spark.native import table

        return self._aliased(table(self._spark, self._table.path, **self._connection))

    def alias(self, aliasName: str) -> MiniPaimonTable:  # noqa: N803
        """This table under ``aliasName`` for conditions (``t.id = s.id``)."""
        return MiniPaimonTable(self._spark, self._table, self._connection, self._name, aliasName)

    # -- row-level changes ---------------------------------------------------------------------

    def delete(self, condition: Any = None) -> None:
        """Delete the rows ``condition`` (Spark SQL or a Column; None: every row) selects, in
        one commit. Raises as the module says."""
        cond = self._condition(condition, "delete")
        change = SparkChange([Action(True)], lambda t: self._selected(t, cond).select(UNIT, ROW, _zero()),
                             None, dnf=pruning_filter(condition, self._table.schema()), local=True)
        execute(self._spark, self._table, self._connection, change)

    def update(self, condition: Any = None, set: dict[str, Any] | None = None) -> None:
        """Set columns (``{"name": "upper(name)"}``, Spark SQL or Columns) of the rows
        ``condition`` selects (None: every row), in one commit; a primary-key column cannot
        be set. Raises as the module says."""
        if not isinstance(set, dict) or not set:
            raise InvalidArgumentError(f"update: set must be a non-empty dict of column -> value, got {set!r}")
        cond = self._condition(condition, "update")
        keys = self._table.primary_keys()
        values = []
        for i, (name, value) in enumerate(set.items()):
            column = self._column(name, "update")
            if column in keys:
                raise InvalidArgumentError(f"update: {column!r} is a primary-key column and cannot be set; "
                                           "delete the row and insert the new one")
            target = self._spark_schema()[column]
            v = column_of(value, f"update value of {column!r}")
            source = self._type_of(v, cond, f"update value of {column!r}")
            store_assignment.check(source, target, "update")
            store_assignment.check_constant(self._spark, value, v, source, target)
            values.append(store_assignment.stored(v, source, target).alias(value_name(0, i)))
        change = SparkChange(
            [Action(False, tuple(self._column(n, "update") for n in set))],
            lambda t: self._selected(t, cond).select(UNIT, ROW, _zero(), *values),
            None, dnf=pruning_filter(condition, self._table.schema()), local=True)
        execute(self._spark, self._table, self._connection, change)

    def merge(self, source: DataFrame, condition: Any) -> MiniPaimonMergeBuilder:
        """A merge of the DataFrame ``source`` on ``condition``: add ``when*`` clauses, then
        ``execute()`` (see :mod:`.delta_merge`)."""
        return MiniPaimonMergeBuilder(self, source, condition)

    # -- history and maintenance ------------------------------------------------------------

    def history(self, limit: int | None = None) -> DataFrame:
        """One row per retained snapshot, newest first (``limit``: the newest that many):
        ``version`` (the snapshot id), ``timestamp``, ``userId`` (the commit user),
        ``operation`` (APPEND, COMPACT, OVERWRITE), ``operationParameters`` and
        ``operationMetrics`` (files and records added and removed; ``Table.history``)."""
        rows = []
        for r in self._table.refresh().history(limit).to_pylist():
            params = {"commitIdentifier": r["commit_identifier"], "schemaId": r["schema_id"],
                      "restoredFrom": r["restored_from"]}
            metrics = {"numAddedFiles": r["files_added"], "numRemovedFiles": r["files_removed"],
                       "numAddedRecords": r["records_added"], "numRemovedRecords": r["records_removed"],
                       "numTotalRecords": r["total_records"]}
            rows.append((r["snapshot_id"], r["committed_at"], r["commit_user"], r["commit_kind"],
                         {k: str(v) for k, v in params.items() if v is not None},
                         {k: str(v) for k, v in metrics.items() if v is not None}))
        return self._frame(rows, HISTORY)

    def detail(self) -> DataFrame:
        """One row: ``format`` (paimon), ``id``, ``name``, ``location``, ``createdAt``,
        ``lastModified``, ``partitionColumns``, ``primaryKeys``, ``numFiles`` and
        ``sizeInBytes`` (of the latest snapshot) and ``properties`` (the table's options)."""
        t = self._table.refresh()
        latest = t.latest_snapshot()
        parts = t.system_table("partitions")
        files = sum(parts.column("file_count").to_pylist()) if parts.num_rows else 0
        size = sum(parts.column("file_size_in_bytes").to_pylist()) if parts.num_rows else 0
        schemas = SchemaManager(t.io, t.layout)
        created = schemas.get(schemas.schema_ids()[0]).timeMillis
        row = ("paimon", schemas.table_id(), self._name, t.path, _from_ms(created),
               _from_ms(latest.timeMillis) if latest else None, t.partition_keys(), t.primary_keys(),
               files, size, dict(t.options()))
        return self._frame([row], DETAIL)

    def restoreToVersion(self, version: int) -> DataFrame:  # noqa: N802
        """Delta's RESTORE to snapshot ``version``: one new commit whose rows are that
        snapshot's, every snapshot kept (``Table.restore``). One row of what it took."""
        if isinstance(version, bool) or not isinstance(version, int):
            raise InvalidArgumentError(f"restoreToVersion takes a snapshot id, got {version!r}")
        return self._restored(version)

    def restoreToTimestamp(self, timestamp: str | datetime.datetime) -> DataFrame:  # noqa: N802
        """RESTORE to the snapshot current at ``timestamp`` (a datetime, or a text
        ``yyyy-mm-dd[ hh:mm:ss]``; without a zone, in the session time zone)."""
        return self._restored(_instant(timestamp, self._spark.conf.get("spark.sql.session.timeZone") or "UTC"))

    def optimize(self) -> MiniPaimonOptimizeBuilder:
        """``optimize().executeCompaction()``: compact every bucket on the executors."""
        return MiniPaimonOptimizeBuilder(self)

    def vacuum(self, retentionHours: float | None = None) -> DataFrame:  # noqa: N803
        """Remove the files no snapshot or tag uses (crashed writers' debris) last modified more
        than ``retentionHours`` ago (default: the core's, 24 hours; 0 also removes a file a
        running writer has not committed yet, as Delta's vacuum with its check off). One row
        per file removed (``path``). Raises InvalidArgumentError for a negative number."""
        if retentionHours is not None and (isinstance(retentionHours, bool)
                                           or not isinstance(retentionHours, (int, float)) or retentionHours < 0):
            raise InvalidArgumentError(f"vacuum: retentionHours must be a number >= 0, got {retentionHours!r}")
        age = None if retentionHours is None else f"{int(retentionHours * 3600)}s"
        result = self._table.remove_orphan_files(older_than=age)
        return self._spark.createDataFrame([(p,) for p in result.files], "path string")

    # -- helpers (also used by the merge builder) ---------------------------------------------

    def _spark_schema(self) -> StructType:
        return to_spark_schema(self._table.refresh().schema())

    def _empty(self) -> DataFrame:
        """A DataFrame of the table's schema with no rows: what conditions and values are
        analyzed against (Spark's suggestions then name the table's columns only)."""
        return self._spark.createDataFrame([], self._spark_schema())

    def _aliased(self, df: DataFrame) -> DataFrame:
        return df.alias(self._alias) if self._alias else df

    def _selected(self, df: DataFrame, condition: Any) -> DataFrame:
        df = self._aliased(df)
        return df if condition is None else df.where(condition)

    def _condition(self, condition: Any, what: str) -> Any:
        """``condition`` as a Column analyzed against the table (None stays None)."""
        if condition is None:
            return None
        cond = column_of(condition, f"{what} condition")
        analyzed(lambda: self._selected(self._empty(), cond), f"{what} condition {condition!r}")
        return cond

    def _type_of(self, value: Any, condition: Any, what: str) -> Any:
        """The Spark type of Column ``value`` over the rows ``condition`` selects."""
        rows = self._selected(self._empty(), condition)
        return analyzed(lambda: rows.select(value.alias("v")), what).schema["v"].dataType

    def _column(self, name: Any, what: str) -> str:
        """The table column ``name`` names (exactly, or in another case as Spark resolves;
        ``alias.column`` too). Raises InvalidArgumentError naming it."""
        names = self._table.schema().names
        if isinstance(name, str):
            if self._alias and name.lower().startswith(self._alias.lower() + ".") and name not in names:
                name = name[len(self._alias) + 1:]
            if name in names:
                return name
            folded = [n for n in names if n.lower() == name.lower()]
            if len(folded) == 1:
                return folded[0]
        raise InvalidArgumentError(f"{what}: column {name!r} is not in the table {names}")

    def _restored(self, target: int | datetime.datetime) -> DataFrame:
        r = self._table.restore(target)
        row = (r.snapshot_id, r.restored_from, r.files_removed, r.files_copied, r.files_kept, r.bytes_copied)
        return self._spark.createDataFrame([row], RESTORE)

    def _frame(self, rows: list[tuple[Any, ...]], schema: str) -> DataFrame:
        """A DataFrame of ``rows``, whose datetimes are aware (UTC instants: PySpark takes
        an aware datetime as its instant whatever the session zone)."""
        return self._spark.createDataFrame(rows, schema)

    def __repr__(self) -> str:
        return f"MiniPaimonTable({self._table.path!r})"


class MiniPaimonOptimizeBuilder:
    """delta-spark's ``DeltaOptimizeBuilder``: ``executeCompaction()``."""

    def __init__(self, table: MiniPaimonTable) -> None:
        self._table = table

    def executeCompaction(self) -> DataFrame:  # noqa: N802
        """Compact every bucket (into one sorted run) on the executors, one COMPACT commit; one
        row: the snapshot id (null: nothing to compact)."""
        from minipaimon_spark.compaction import compact_on_executors

        t = self._table
        snapshot = compact_on_executors(t._spark, t._table.path, "full", None, t._connection)
        return t._spark.createDataFrame([(snapshot,)], COMPACTION)


def _zero() -> Any:
    from pyspark.sql import functions as F

    return F.lit(0).alias(CLAUSE)


def _from_ms(ms: int) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.timezone.utc)


def _instant(value: str | datetime.datetime, zone: str) -> datetime.datetime:
    """``value`` as an aware datetime (a naive one, or a text without a zone, in ``zone``)."""
    if isinstance(value, str):
        try:
            value = datetime.datetime.fromisoformat(value.strip())
        except ValueError:
            raise InvalidArgumentError(
                f"restoreToTimestamp: {value!r} is not a timestamp (yyyy-mm-dd[ hh:mm:ss])") from None
    if not isinstance(value, datetime.datetime):
        raise InvalidArgumentError(f"restoreToTimestamp takes a timestamp text or datetime, got {value!r}")
    return value if value.tzinfo else value.replace(tzinfo=zoneinfo.ZoneInfo(zone))


__all__ = ["MiniPaimonOptimizeBuilder", "MiniPaimonTable"]
