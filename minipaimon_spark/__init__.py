"""minipaimon for PySpark: ``spark.read.format("minipaimon")`` and ``df.write.format(...)``.

```python
import minipaimon_spark
minipaimon_spark.register(spark)       # optional once the package is installed
df = spark.read.format("minipaimon").load(path)
df.write.format("minipaimon").mode("append").option("primary-key", "id").save(path)
```

Importing this package is cheap (no pyarrow, no minipaimon_core): Spark's auto-registration
imports it in every new session through ``pyspark_minipaimon``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSourceReader

from minipaimon_spark.source import SHORT_NAME, MiniPaimonDataSource

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

FILTER_PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def supports_filter_pushdown() -> bool:
    """Whether this pyspark has Python data source filter pushdown (4.1+)."""
    return hasattr(DataSourceReader, "pushFilters")


def register(spark: SparkSession, options: dict[str, str] | None = None) -> None:
    """Register the ``minipaimon`` source and the SQL procedures (``minipaimon_compact``,
    ... see :mod:`minipaimon_spark.procedures`) in ``spark``, and turn filter pushdown on.

    The procedures find tables on object storage with the session's
    ``spark.minipaimon.s3.*`` and ``spark.minipaimon.azure.*`` settings (and ``namespace.table`` names in
    ``spark.minipaimon.warehouse``), read now, or with ``options`` (``s3.*``, ``azure.*``,
    ``warehouse``), which win.

    Pushdown (partition pruning, file skipping) is enabled where the Spark version has it;
    the source also works when a user turns it off again.
    """
    from minipaimon_spark.procedures import register_procedures


    try:
        spark.dataSource.register(MiniPaimonDataSource)
    except Exception as e:  # 4.0: the auto-registration shim registered it already
        if "DATA_SOURCE_ALREADY_EXISTS" not in str(e):
            raise
    register_procedures(spark, options)
    if supports_filter_pushdown():
        spark.conf.set(FILTER_PUSHDOWN_CONF, "true")


def table(spark: SparkSession, path: str, **options: Any) -> DataFrame:
    """The table at ``path`` as a DataFrame: what ``spark.read.format("minipaimon")
    .options(**options).load(path)`` returns, with every file that needs no merge read by
    Spark's own Parquet reader (see :mod:`minipaimon_spark.native`)."""
    from minipaimon_spark.native import table as native_table

    return native_table(spark, path, **options)


def compact(spark: SparkSession, path: str, full: bool | None = None,
            parallelism: int | None = None, options: dict[str, str] | None = None,
            strategy: str | None = None) -> int | None:
    """Compact the table at ``path``: buckets in parallel on the executors, one commit.

    ``strategy`` ``full`` (the default) rewrites every bucket into one sorted run;
    ``minor`` (or ``full=False``) merges the level-0 files of each bucket that has more
    than one sorted run (see ``Table.compact``). Returns the COMPACT snapshot id, or
    None if there was nothing to compact. ``options``: storage connection options
    (``s3.endpoint``, ``azure.account-key``, ...) when the environment does not provide them.

    Raises:
        TableNotFoundError: no table at ``path``.
        CommitConflictError: a concurrent compaction replaced the same files first.
    """
    # Imported here, not at the top: this package must stay cheap to import (see above).
    from minipaimon_core.maintenance.compaction import explicit_strategy
    from minipaimon_spark.compaction import compact_on_executors

    return compact_on_executors(spark, path, explicit_strategy(strategy, full), parallelism, options)


def merge(spark: SparkSession, target: str, source: DataFrame, on: list[str] | str,
          options: dict[str, str] | None = None) -> Any:
    """A merge of the DataFrame ``source`` into the table at ``target`` (a path, or
    ``namespace.table`` in the session's ``spark.minipaimon.warehouse``), joined on ``on``:
    the builder of ``Table.merge`` (``when_matched_update(...)``, ..., ``execute()``), with
    the same clauses, values and conditions (minipaimon_core.merge_into).

    The join runs in Spark and each piece of the target (an append file, a primary-key
    bucket) is changed and written by an executor; the driver commits once (see
    :mod:`minipaimon_spark.distributed_merge`). A merge into a primary-key table that does not join on
    the whole primary key collects the source to the driver and merges there. ``options``:
    storage connection options (``s3.*``, ``azure.*``), else the session's ``spark.minipaimon.*`` ones.
    """
    from minipaimon_spark.distributed_merge import SparkMerge
    from minipaimon_spark.procedure_support import Connection

    connection = Connection.of_session(spark, options)
    return SparkMerge(spark, connection.table(target), source, on, connection.options)


__all__ = [
    "FILTER_PUSHDOWN_CONF",
    "SHORT_NAME",
    "MiniPaimonDataSource",
    "compact",
    "merge",
    "register",
    "supports_filter_pushdown",
]
