"""The ``minipaimon`` Spark data source: the one class Spark instantiates.

Spark looks this class up in three ways: ``spark.dataSource.register`` (see
:func:`minipaimon_spark.register`), the auto-registration shim ``pyspark_minipaimon``
(Spark imports every installed top-level ``pyspark_*`` module in a planner process at
session start), and by unpickling it by reference in every Python worker.

Contract: importing this module must stay cheap — only ``pyspark.sql.datasource`` (which
Spark's lookup worker has already imported) and the standard library. pyarrow and
``minipaimon_core`` (~200 ms together) are imported by the methods that need them, so a
session that never touches a minipaimon table never pays for them.

Where each method runs (measured on 4.0.5 and 4.3.0):

- ``schema()``: a driver-side ``create_data_source`` worker; the instance is pickled after.
- ``reader()``: a driver-side planner worker (``plan_data_source_read``, or
  ``data_source_pushdown_filters`` when filter pushdown is on and Spark has filters).
- ``writer()``: a driver-side ``write_into_data_source`` worker, once per write job.

Errors: Spark reports an exception of these methods as its own error class followed by the
Python traceback. A minipaimon error (a missing table, an unknown option, data that does not
fit) is raised again from the method itself with its traceback dropped, so what the user
reads is Spark's framing, one frame line and the one-line minipaimon error
(``[PYTHON_DATA_SOURCE_ERROR] ... minipaimon_core.errors.TableNotFoundError: no minipaimon
table at /t``), at ``load()`` / ``save()``, before any task runs. Other exceptions (bugs)
keep their whole traceback.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, ParamSpec, TypeVar

from pyspark.sql.datasource import DataSource

from minipaimon_spark.common.worker_guard import ShippedToWorkers

if TYPE_CHECKING:
    from pyspark.sql.datasource import (
        DataSourceReader,
        DataSourceStreamReader,
        DataSourceStreamWriter,
        DataSourceWriter,
    )
    from pyspark.sql.types import StructType

SHORT_NAME = "minipaimon"
P = ParamSpec("P")
R = TypeVar("R")


def is_minipaimon_error(e: BaseException) -> bool:
    """Whether ``e`` is one of the core's typed errors (imported only when one is raised)."""
    from minipaimon_core.errors import MiniPaimonError

    return isinstance(e, MiniPaimonError)


def one_line_errors(method: Callable[P, R]) -> Callable[P, R]:
    """``method``, raising a minipaimon error again with its traceback dropped: Spark shows
    its own framing, this function's one frame and the error's line. Any other exception
    (a bug) keeps its whole traceback."""

    @functools.wraps(method)
    def reraised(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except Exception as error:
            if not is_minipaimon_error(error):
                raise
            raise error.with_traceback(None) from None

    return reraised


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
        """A streaming source over the table's snapshots (see ``stream_reader.py``).

        Raises:
            InvalidArgumentError: no ``path`` option, or a bad option value.
            UnsupportedOptionError: rate limits on a pyspark without admission control.
        """
        from minipaimon_spark.stream.stream_reader import make_stream_reader

        return make_stream_reader(self.options, schema)

    @one_line_errors
    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:  # noqa: N802
        """An exactly-once streaming sink (see ``stream_writer.py``); creates the table on
        the first batch. ``overwrite`` (complete output mode) replaces the table per batch.

        Raises:
            InvalidArgumentError: no ``checkpointLocation`` / ``path``, or options that
                contradict the table.
            SchemaMismatchError: the stream's rows do not fit the existing table.
        """
        from minipaimon_spark.stream.stream_writer import make_stream_writer

        return make_stream_writer(self.options, schema, overwrite)
