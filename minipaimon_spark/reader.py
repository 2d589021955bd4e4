"""Batch reads: one Spark partition per core split, Arrow batches out.

Flow (each step in its own process, see ``source.py``): ``schema()`` -> ``reader()`` ->
[``pushFilters()``] -> ``partitions()`` (plans the scan: metadata only) -> pickled to
tasks -> ``read(partition)`` (reads one split, casts each batch to Spark's schema).

Filter pushdown (Spark 4.1+) is offered only by :class:`PushdownReader`, and
:func:`make_reader` returns it only when Spark's filter-pushdown planner
(``pyspark.sql.worker.data_source_pushdown_filters``) is the caller. Spark runs that planner
only when ``spark.sql.python.filterPushdown.enabled`` is true and there are filters; any
other planner refuses a reader that defines ``pushFilters`` while the setting is off
(``DATA_SOURCE_PUSHDOWN_DISABLED``). The planner process has no session to read the setting
from (measured: no SQL conf in its environment), so the caller is the only sound signal, and
it fails safe: a caller not recognised gets the plain reader (Spark filters the rows).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.types import StructType

import minipaimon_core as mp
from minipaimon_core.diff import Endpoint, endpoint_snapshot_id
from minipaimon_core.errors import InvalidArgumentError, SchemaMismatchError
from minipaimon_core.format.kinds import ROW_KIND_COLUMN, RowKind
from minipaimon_core.stream.stream import StreamOffset, StreamScanner, check_between
from minipaimon_spark.filters import Term, column_types, split_filters
from minipaimon_spark.native_plan import parse_buckets, python_reads
from minipaimon_spark.options import ReadOptions
from minipaimon_spark.source import one_line_errors
from minipaimon_spark.stream_support import StreamPartition
from minipaimon_spark.system import SystemTableReader, split_system_path, system_spark_schema
from minipaimon_spark.types import BatchConformer, to_arrow_schema, to_spark_schema, to_spark_type
from minipaimon_spark.worker_guard import ShippedToWorkers

PUSHDOWN_PLANNER = "pyspark.sql.worker.data_source_pushdown_filters"
ROW_KIND = ROW_KIND_COLUMN
READ_CHANGELOG = "read.changelog"


def table_spark_schema(raw_options: Mapping[str, Any]) -> StructType:
    """The Spark schema of the table at the ``path`` option (``columns`` applied).

    Raises TableNotFoundError, InvalidArgumentError (unknown column in ``columns``).
    """
    options = ReadOptions.parse(raw_options)
    base, system = split_system_path(options.path)
    if system is not None:
        return system_spark_schema(base, system, options.connection)
    table = open_at(options)
    schema = table.schema()
    if options.columns is not None:
        unknown = [c for c in options.columns if c not in schema.names]
        if unknown:
            raise InvalidArgumentError(
                f"option 'columns' names {unknown}, not in the table {schema.names}"
            )
        schema = pa.schema([schema.field(c) for c in options.columns])
    if read_changelog(raw_options, table):
        schema = schema.append(pa.field(ROW_KIND, pa.string(), nullable=False))
    return to_spark_schema(schema)


def open_at(options: ReadOptions) -> mp.Table:
    """The table as a time-travel read sees it: with the schema of the snapshot it reads
    (as Paimon does: renamed columns keep their old names, later columns are absent);
    other reads see the latest schema. (A stream started with ``scan.snapshot-id`` gets
    that snapshot's schema too; it stops with a typed error if the table's differs.)

    Raises TableNotFoundError.
    """
    table = mp.open_table(options.path, options=options.connection)
    try:  # the core's rule (Table.as_of, the same as Table.scan's)
        return table.as_of(options.snapshot_id, options.tag, options.timestamp_ms)
    except mp.SnapshotNotFoundError:
        return table  # planning raises it, with the message of the read that asks


def read_changelog(raw_options: Mapping[str, Any], table: mp.Table) -> bool:
    """``read.changelog`` (read option, else table option): rows carry ``_row_kind``.

    Spark asks ``schema()`` before it knows whether the read is a stream, so the column is
    in both; a batch read fills it with ``+I`` (a snapshot holds merged rows only).
    """
    raw = {str(k).lower(): str(v) for k, v in raw_options.items()}.get(READ_CHANGELOG)
    if raw is None:
        return bool(table.typed_options()[READ_CHANGELOG])
    if raw.strip().lower() not in ("true", "false"):
        raise InvalidArgumentError(f"option {READ_CHANGELOG!r} must be true or false")
    return raw.strip().lower() == "true"


def make_reader(raw_options: Mapping[str, Any], schema: StructType) -> DataSourceReader:
    """The reader for ``schema``: with ``pushFilters`` only for the pushdown planner; a
    system table's reader for a ``path$name``."""
    options = ReadOptions.parse(raw_options)
    base, system = split_system_path(options.path)
    if system is not None:
        return SystemTableReader(base, system, schema, options.incremental_between,
                                 options.connection)
    if called_by_pushdown_planner():
        return PushdownReader(options, schema)
    return MiniPaimonReader(options, schema)


def called_by_pushdown_planner(max_depth: int = 16) -> bool:
    """Whether Spark's filter-pushdown planner is on the call stack."""
    frame = sys._getframe(1)
    depth = 0
    while frame is not None and depth < max_depth:
        if frame.f_globals.get("__name__") == PUSHDOWN_PLANNER:
            return True
        frame = frame.f_back  # type: ignore[assignment]
        depth += 1
    return False


class DiffPartition(ShippedToWorkers, InputPartition):
    """The whole row-level diff between two endpoints (snapshot ids, tags or times)."""

    def __init__(self, start: Endpoint, end: Endpoint) -> None:
        super().__init__(None)
        self.start, self.end = start, end


class SplitPartition(ShippedToWorkers, InputPartition):
    """One core split; pickled to the task that reads it."""

    def __init__(self, split: mp.Split) -> None:
        super().__init__(split)
        self.split = split

    def __repr__(self) -> str:
        s = self.split
        return (f"SplitPartition(partition={s.partition}, bucket={s.bucket}, "
                f"files={len(s.files)}, rows={s.row_count})")


class MiniPaimonReader(ShippedToWorkers, DataSourceReader):
    """Reads one snapshot (or incremental range) of a table; no filter pushdown."""

    def __init__(self, options: ReadOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema
        self.filter: list[Term] = []

    def _columns(self, table_schema: pa.Schema) -> list[str] | None:
        """The columns to read: None for all, or the subset a user-given schema names.

        Raises SchemaMismatchError if the Spark schema names a column the table lacks or
        gives it another type.
        """
        names = [n for n in self.schema.fieldNames()
                 if n != ROW_KIND or ROW_KIND in table_schema.names]
        for field in self.schema.fields:
            if field.name == ROW_KIND and ROW_KIND not in table_schema.names:
                continue  # read.changelog: filled in by read()
            if field.name not in table_schema.names:
                raise SchemaMismatchError(
                    f"column {field.name!r} of the read schema is not in the table "
                    f"{self.options.path} (columns {table_schema.names})"
                )
            have = to_spark_type(table_schema.field(field.name).type)
            if have != field.dataType:
                raise SchemaMismatchError(
                    f"column {field.name!r} is {have.simpleString()} in the table, the read "
                    f"schema says {field.dataType.simpleString()}"
                )
        return None if names == table_schema.names else names

    @one_line_errors
    def partitions(self) -> list[InputPartition]:
        """Plan the scan: one partition per split (metadata only). A minipaimon error (a
        snapshot or tag that does not exist, ...) is raised with no traceback of ours: Spark
        reports it as one line (see source.py)."""
        table = open_at(self.options)
        if self.options.incremental_between is not None:
            return self._incremental_partitions(table)
        scan = table.scan(
            filter=list(self.filter) or None,
            columns=self._columns(table.schema()),
            **self.options.scan_kwargs(),
        )
        splits = scan.plan()
        if self.options.python_splits_only is not None:  # the rest of minipaimon_spark.table
            buckets = parse_buckets(self.options.python_splits_only)
            splits = [s for s in splits if python_reads(s, table.table_schema, buckets)]
        return [SplitPartition(split) for split in splits]

    def _incremental_partitions(self, table: mp.Table) -> list[InputPartition]:
        """``incremental-between``: the changes of the snapshots in (start, end], by
        ``incremental-between-scan-mode``: ``auto`` as a stream plans them (changelog files
        with a producer, else the new files with their row kinds), ``delta`` the new files,
        ``changelog`` only changelog files, so deletes and updates keep their kinds in
        ``_row_kind``; ``diff`` the row-level difference of the two snapshots (Table.diff),
        computed in one task."""
        start, end = self.options.incremental_between or (0, 0)
        if self.options.incremental_mode == "diff":
            return [DiffPartition(start, end)]
        start_id, end_id = endpoint_snapshot_id(table, start), endpoint_snapshot_id(table, end)
        check_between(start_id, end_id)
        scanner = StreamScanner(table, self._stream_options(), changes=self.options.incremental_mode)
        # SnapshotNotFoundError for an end that does not exist (an expired snapshot whose
        # long-lived changelog is kept is an end)
        scanner.snapshot_or_changelog(end_id)
        splits = scanner.plan(StreamOffset(start_id), StreamOffset(end_id))
        return [StreamPartition(split) for split in splits]

    def _stream_options(self) -> dict[str, str]:
        return {"read.changelog": str(ROW_KIND in self.schema.fieldNames()).lower()}

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Arrow batches of one split, cast to exactly the schema Spark expects."""
        if isinstance(partition, StreamPartition):
            yield from self._read_changes(partition)
            return
        if isinstance(partition, DiffPartition):
            yield from self._read_diff(partition)
            return
        if not isinstance(partition, SplitPartition):
            return  # Spark's placeholder partition of a scan that planned no split
        table = open_at(self.options)
        conform = BatchConformer(to_arrow_schema(self.schema))
        row_kind = ROW_KIND in self.schema.fieldNames() and ROW_KIND not in table.schema().names
        for batch in table.read_split(partition.split):
            if batch.num_rows:
                if row_kind:
                    batch = batch.append_column(ROW_KIND, pa.repeat(RowKind.INSERT.short, batch.num_rows))
                yield conform(batch)


    def _read_diff(self, partition: DiffPartition) -> Iterator[pa.RecordBatch]:
        """The diff's rows; without ``_row_kind`` in the schema only the new values (+I, +U)."""
        data = open_at(self.options).diff(partition.start, partition.end)
        if ROW_KIND not in self.schema.fieldNames():
            upserts = pa.array([RowKind.INSERT.short, RowKind.UPDATE_AFTER.short])
            data = data.filter(pc.is_in(data.column(ROW_KIND), upserts))
        conform = BatchConformer(to_arrow_schema(self.schema))
        for batch in data.to_batches():
            if batch.num_rows:
                yield conform(batch)

    def _read_changes(self, partition: StreamPartition) -> Iterator[pa.RecordBatch]:
        scanner = StreamScanner(mp.open_table(self.options.path, options=self.options.connection),
                                self._stream_options())
        conform = BatchConformer(to_arrow_schema(self.schema))
        for batch in scanner.read(partition.split):
            if batch.num_rows:
                yield conform(batch)


class PushdownReader(MiniPaimonReader):
    """:class:`MiniPaimonReader` that accepts the filters the core applies exactly."""

    def pushFilters(self, filters: list[Any]) -> list[Any]:  # noqa: N802 (Spark's name)
        if self.options.incremental_between is not None:
            return list(filters)  # change rows are not filtered here: Spark filters them
        accepted, rejected = split_filters(filters, column_types(to_arrow_schema(self.schema)))
        self.filter = accepted
        return rejected
