"""minipaimon for PySpark: ``spark.read.format("minipaimon")`` and ``df.write.format(...)``.

```python
import minipaimon_spark
minipaimon_spark.register(spark)       # filter pushdown on, SQL procedures, workers checked
df = spark.read.format("minipaimon").load(path)
df.write.format("minipaimon").mode("append").option("primary-key", "id").save(path)
```

Importing this package is cheap (no pyarrow, no minipaimon_core): Spark's auto-registration
imports it in every new session through ``pyspark_minipaimon``.
"""

from __future__ import annotations

import os
import sys
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
    """What installing the package does not do on its own (the ``pyspark_minipaimon`` shim
    registers the ``minipaimon`` source in every new session, with every read and write
    option): turn filter pushdown on, register the SQL procedures, and check Spark's Python
    workers.

    1. ``spark.sql.python.filterPushdown.enabled = true`` (Spark 4.1+; off by default), so
       filters prune partitions and skip files (an installed source cannot set a session
       option; ``spark-conf/spark-defaults.conf`` or ``.config(...)`` does the same);
    2. the SQL procedures (``minipaimon_compact``, ... see :mod:`minipaimon_spark.procedures`),
       which find tables on object storage with the session's ``spark.minipaimon.s3.*``
       and ``spark.minipaimon.azure.*`` settings (and ``namespace.table`` names in ``spark.minipaimon.warehouse``), read now,
       or with ``options`` (``s3.*``, ``azure.*``, ``warehouse``), which win;
    3. the source is registered by hand where the session does not have it yet (the shim
       is not installed), never over the shim's registration (Spark 4.1+ would log "WARN
       DataSourceManager: The data source minipaimon replaced a statically registered data
       source" in every session), and Spark's Python workers are checked to import
       minipaimon (on 4.1+ registering the procedures runs one; on 4.0
       :func:`check_workers` asks one).

    Raises:
        InstallationError: Spark's Python workers cannot import minipaimon (the message
            names the interpreter and ``PYSPARK_PYTHON``).
    """
    from minipaimon_spark.procedures import register_procedures

    if not source_registered(spark):
        try:
            spark.dataSource.register(MiniPaimonDataSource)
        except Exception as e:  # 4.0 (Spark Connect): the shim registered it already
            if "DATA_SOURCE_ALREADY_EXISTS" not in str(e):
                raise
    try:  # on Spark 4.1+ this runs a Python worker (a SQL function's table functions)
        register_procedures(spark, options)
    except Exception as e:
        missing = installation_error(spark, str(e))
        if missing is None:
            raise
        raise missing from None
    if supports_filter_pushdown():
        spark.conf.set(FILTER_PUSHDOWN_CONF, "true")
    else:  # Spark 4.0: registering ran no Python worker, so ask one
        check_workers(spark)


def source_registered(spark: SparkSession) -> bool:
    """Whether the session has a ``minipaimon`` source already (the shim's static
    registration, or an earlier :func:`register`), as the JVM's data source manager says;
    False where there is no JVM to ask (Spark Connect: the server registers it anew)."""
    try:
        manager = spark._jsparkSession.sessionState().dataSourceManager()  # type: ignore[attr-defined]
        return bool(manager.dataSourceExists(SHORT_NAME))
    except Exception:  # noqa: BLE001 - no py4j session (Connect), or a Spark without the method
        return False


def installation_error(spark: SparkSession, text: str) -> Exception | None:
    """The InstallationError of a Spark error ``text`` that says a Python worker cannot
    import minipaimon (``No module named 'minipaimon...'``, or DATA_SOURCE_NOT_FOUND for
    ours), else None."""
    from minipaimon_core.errors import InstallationError

    if "No module named 'minipaimon" not in text and "No module named 'pyspark_minipaimon" not in text \
            and f"DATA_SOURCE_NOT_FOUND] Failed to find the data source: {SHORT_NAME}." not in text:
        return None
    python = spark.conf.get("spark.pyspark.python", None) or os.environ.get("PYSPARK_PYTHON") \
        or "python3 (PYSPARK_PYTHON is not set)"
    return InstallationError(
        f"Spark's Python workers cannot import minipaimon: they run {python}, which lacks the "
        f"package (this driver runs {sys.executable}). Set PYSPARK_PYTHON (or "
        "spark.pyspark.python) to an interpreter that has minipaimon installed, on every node, "
        "before the session starts; see the README, 'Installing'")


def check_workers(spark: SparkSession) -> None:
    """Check that the Python Spark's workers run can import minipaimon: load the source
    with no path, which our own ``schema()`` refuses with its own message, in a Python
    worker (one planner round trip: about 2 s on a busy 2-core machine, as the failed
    worker is not reused). Executors on other nodes are checked where they unpickle a
    reader or writer (minipaimon_spark.worker_guard).

    Raises InstallationError naming the interpreter setting when the worker cannot import
    the package.
    """
    from minipaimon_spark.options import NO_PATH_MESSAGE

    try:
        _ = spark.read.format(SHORT_NAME).load().schema  # .schema: Spark Connect is lazy
    except Exception as e:
        text = str(e)
        if NO_PATH_MESSAGE[:40] in text:
            return  # our schema() ran in the worker: it imports minipaimon
        missing = installation_error(spark, text)
        if missing is None:
            raise
        raise missing from None


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
    the same clauses, values and conditions (minipaimon_core.dml.merge_into).

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


def __getattr__(name: str) -> Any:
    """``MiniPaimonTable`` (delta-spark's ``DeltaTable``, see :mod:`minipaimon_spark.delta_table`),
    imported on first use: this package stays cheap to import."""
    if name == "MiniPaimonTable":
        from minipaimon_spark.delta_table import MiniPaimonTable

        return MiniPaimonTable
    raise AttributeError(f"module 'minipaimon_spark' has no attribute {name!r}")


__all__ = [
    "FILTER_PUSHDOWN_CONF",
    "MiniPaimonTable",
    "SHORT_NAME",
    "MiniPaimonDataSource",
    "check_workers",
    "installation_error",
    "source_registered",
    "compact",
    "merge",
    "register",
    "supports_filter_pushdown",
]
