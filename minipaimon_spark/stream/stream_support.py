"""Small pieces of the streaming source: the reader of a refused stream, the check that a
running stream's schema still holds, and Spark's admission-control classes (stand-ins on
pyspark < 4.2). The Spark partition of one core stream split, which incremental batch reads
use too, is :class:`minipaimon_spark.read.partitions.StreamPartition`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.types import StructType

import minipaimon_core as mp
from minipaimon_core.errors import MiniPaimonError, SchemaMismatchError, SnapshotExpiredError
from minipaimon_core.format.kinds import ROW_KIND_COLUMN
from minipaimon_spark.common.types import to_spark_schema
from minipaimon_spark.common.worker_guard import ShippedToWorkers

try:  # pyspark 4.2+: admission control and Trigger.AvailableNow for Python sources
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadLimit,
        ReadMaxFiles,
        ReadMaxRows,
        SupportsTriggerAvailableNow,
    )

    ADMISSION_CONTROL = True
except ImportError:  # pyspark 4.0/4.1: stand-ins that Spark never sees
    ADMISSION_CONTROL = False

    class ReadLimit:  # type: ignore[no-redef]
        """Stand-in for pyspark < 4.2."""

    @dataclass
    class ReadAllAvailable(ReadLimit):  # type: ignore[no-redef]
        """Stand-in for pyspark < 4.2."""

    @dataclass
    class ReadMaxFiles(ReadLimit):  # type: ignore[no-redef]
        """Stand-in for pyspark < 4.2."""

        max_files: int

    @dataclass
    class ReadMaxRows(ReadLimit):  # type: ignore[no-redef]
        """Stand-in for pyspark < 4.2."""

        max_rows: int

    class SupportsTriggerAvailableNow:  # type: ignore[no-redef]
        """Stand-in for pyspark < 4.2 (Spark wraps the source itself there)."""


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

_EXPIRED_PREFIX = "the stream of"


@contextmanager
def expired_hint(path: str) -> Iterator[None]:
    """Re-raise SnapshotExpiredError with what a streaming user can change."""
    try:
        yield
    except SnapshotExpiredError as e:
        if str(e).startswith(_EXPIRED_PREFIX):
            raise
        raise SnapshotExpiredError(
            f"{_EXPIRED_PREFIX} {path} needs a snapshot that has been expired ({e}). "
            "To go on, start a new query (new checkpoint) with 'scan.mode' = 'latest' / "
            "'latest-full', or 'from-snapshot' with a retained 'scan.snapshot-id'; to keep this "
            "from happening, set 'consumer-id' on the stream (expiration keeps what a consumer "
            "still needs) or raise 'snapshot.num-retained.min' / 'snapshot.time-retained'"
        ) from e


__all__ = ["ADMISSION_CONTROL", "FailedStreamReader", "ReadAllAvailable", "ReadLimit", "ReadMaxFiles",
           "ReadMaxRows", "SupportsTriggerAvailableNow", "check_stream_schema", "expired_hint"]
