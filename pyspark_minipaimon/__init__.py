"""Auto-registration shim: makes ``spark.read.format("minipaimon")`` work with no setup.

At session start Spark imports every installed top-level module whose name starts with
``pyspark_`` and registers its ``DefaultSource`` (a ``DataSource`` subclass) under
``DefaultSource.name()`` (see ``pyspark/sql/worker/lookup_data_sources.py``). This runs in
every new session, so the import must be cheap: ``minipaimon_spark.source`` defers pyarrow
and ``minipaimon_core`` to the methods that use them.
"""

from minipaimon_spark.source import MiniPaimonDataSource as DefaultSource

__all__ = ["DefaultSource"]
