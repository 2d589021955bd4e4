"""The ``minipaimon`` Spark data source: the one class Spark instantiates.

Spark looks this class up in three ways: ``spark.dataSource.register`` (see
:func:`minipaimon_spark.register`), the auto-registration shim ``pyspark_minipaimon``
(Spark imports every installed top-level ``pyspark_*`` module in a planner process at
session start), and by unpickling it by reference in every Python worker.

Contract: importing this module must stay cheap — only ``pyspark.sql.datasource`` (which
Spark's lookup worker has already imported), the standard library and the two modules of
``common/`` written for it (``datasource``, ``worker_guard``). pyarrow and
``minipaimon_core`` (~200 ms together) are imported by the methods that need them, so a
session that never touches a minipaimon table never pays for them.

Where each method runs (measured on 4.0.5 and 4.3.0):

- ``schema()``: a driver-side ``create_data_source`` worker; the instance is pickled after.
- ``reader()``: a driver-side planner worker (``plan_data_source_read``, or
  ``data_source_pushdown_filters`` when filter pushdown is on and Spark has filters).
- ``writer()``: a driver-side ``write_into_data_source`` worker, once per write job.

Errors: a minipaimon error raised by these methods reaches the user as Spark's framing, one
frame line and the one-line minipaimon error, at ``load()`` / ``save()``, before any task
runs (:func:`minipaimon_spark.common.datasource.one_line_errors`); other exceptions (bugs)
keep their whole traceback.

Layout: this module is the top of the connector with the package entry; the readers and
writers it hands Spark are ``read/``, ``write/`` and ``stream/`` (layer order:
docs/format.md, "Code layout").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql.datasource import DataSource

from minipaimon_spark.common.datasource import SHORT_NAME, one_line_errors
from minipaimon_spark.common.worker_guard import ShippedToWorkers

if TYPE_CHECKING:
    from pyspark.sql.datasource import (
        DataSourceReader,
        DataSourceStreamReader,
        DataSourceStreamWriter,
        DataSourceWriter,
    )
    from pyspark.sql.types import StructType


class MiniPaimonDataSource(ShippedToWorkers, DataSource):
    """Spark batch source and sink for minipaimon tables.

    Options (case-insensitive): ``path`` (required); read: ``scan.snapshot-id``,
    ``scan.timestamp-millis``, ``scan.tag-name``, ``incremental-between``, ``columns``;
    write: ``primary-key``, ``partition`` (or ``partition-keys``), ``dynamic-partition-overwrite`` and any
    table option (``bucket``, ``merge-engine``, ...) used when the first write creates
    the table.
    """

    @classmethod
    def name(cls) -> str:
        return SHORT_NAME

    @one_line_errors
    def schema(self) -> StructType:
        """The table's schema as Spark sees it (or the ``columns`` option's subset).

        Raises:
            TableNotFoundError: no table at ``path``.
            InvalidArgumentError: no ``path`` option, or a bad option value.
        """
        from minipaimon_spark.read.reader import table_spark_schema

        return table_spark_schema(self.options)

    @one_line_errors
    def reader(self, schema: StructType) -> DataSourceReader:
        """A batch reader; one with ``pushFilters`` only where Spark will call it."""
        from minipaimon_spark.read.reader import make_reader

        return make_reader(self.options, schema)

    @one_line_errors
    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        """A batch writer; creates the table on the first write.

        Raises:
            SchemaMismatchError: the DataFrame does not fit the existing table.
            InvalidArgumentError: no ``path`` option, or options that contradict the table.
        """
        from minipaimon_spark.write.writer import make_writer

        return make_writer(self.options, schema, overwrite)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:  # noqa: N802
        """A streaming source over the table's snapshots (see ``stream/stream_reader.py``).

        Raises:
            InvalidArgumentError: no ``path`` option, or a bad option value.
            UnsupportedOptionError: rate limits on a pyspark without admission control.
        """
        from minipaimon_spark.stream.stream_reader import make_stream_reader

        return make_stream_reader(self.options, schema)

    @one_line_errors
    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:  # noqa: N802
        """An exactly-once streaming sink (see ``stream/stream_writer.py``); creates the table on
        the first batch. ``overwrite`` (complete output mode) replaces the table per batch.

        Raises:
            InvalidArgumentError: no ``checkpointLocation`` / ``path``, or options that
                contradict the table.
            SchemaMismatchError: the stream's rows do not fit the existing table.
        """
        from minipaimon_spark.stream.stream_writer import make_stream_writer

        return make_stream_writer(self.options, schema, overwrite)


__all__ = ["SHORT_NAME", "MiniPaimonDataSource"]
