"""Small pieces of the streaming source: the Spark partition of one core stream split
(also used by incremental batch reads), the reader of a refused stream, and the check that
a running stream's schema still holds."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.types import StructType

import minipaimon_core as mp
from minipaimon_core.errors import MiniPaimonError, SchemaMismatchError
from minipaimon_core.kinds import ROW_KIND_COLUMN
from minipaimon_core.stream import StreamSplit
from minipaimon_spark.types import to_spark_schema
from minipaimon_spark.worker_guard import ShippedToWorkers


class StreamPartition(ShippedToWorkers, InputPartition):
    """One core stream split: a bucket's full-scan rows and/or its changed files."""

    def __init__(self, split: StreamSplit) -> None:
        super().__init__(None)
        self.split = split

    def __repr__(self) -> str:
        s = self.split
        kind = f"{len(s.full)} full splits, {len(s.files)} files"
        return f"StreamPartition(snapshot={s.snapshot_id}, {kind}, rows={s.row_count})"


class FailedStreamReader(ShippedToWorkers, DataSourceStreamReader):
    """A stream whose options were refused: every call raises the error."""

    def __init__(self, error: MiniPaimonError) -> None:
        self.error = error

    def initialOffset(self) -> dict[str, Any]:  # noqa: N802 (Spark's name)
        raise self.error

    def latestOffset(self, start: Any = None, limit: Any = None) -> dict[str, Any]:  # noqa: N802
        raise self.error

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        raise self.error

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        raise self.error


def check_stream_schema(schema: StructType, table: mp.Table, path: str) -> None:
    """Raise SchemaMismatchError naming the first column of the stream's ``schema`` that the
    table no longer has (renamed or dropped) or now has with another type."""
    have = {f.name: f for f in to_spark_schema(table.schema()).fields}
    for field in schema.fields:
        if field.name == ROW_KIND_COLUMN:
            continue
        now = have.get(field.name)
        if now is None:
            raise SchemaMismatchError(
                f"column {field.name!r} of the stream on {path} was renamed or dropped while "
                f"the query ran (the table has {sorted(have)}); restart the query to read "
                "with the new schema")
        if now.dataType != field.dataType:
            raise SchemaMismatchError(
                f"column {field.name!r} of the stream on {path} changed type from "
                f"{field.dataType.simpleString()} to {now.dataType.simpleString()} while the "
                "query ran; restart the query to read with the new schema")
