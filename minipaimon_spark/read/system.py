"""System tables from Spark: ``spark.read.format("minipaimon").load(path + "$snapshots")``.

The ``$name`` suffix names one of the core's system tables (snapshots, schemas, options,
files, manifests, partitions, buckets, tags, consumers, audit_log), as Paimon spells them.
The whole system table is one small Spark partition.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.types import StructType

import minipaimon_core as mp
from minipaimon_core.diff import Endpoint, endpoint_snapshot_id
from minipaimon_core.system_tables import audit_log_between
from minipaimon_spark.common.options import split_system_path
from minipaimon_spark.common.types import BatchConformer, to_arrow_schema, to_spark_schema
from minipaimon_spark.common.worker_guard import ShippedToWorkers


def system_spark_schema(path: str, name: str,
                        connection: dict[str, str] | None = None) -> StructType:
    """Spark schema of a system table. Raises TableNotFoundError, InvalidArgumentError."""
    return to_spark_schema(mp.open_table(path, options=connection).system_table(name).schema)


class SystemTableReader(ShippedToWorkers, DataSourceReader):
    """Reads one system table; ``audit_log`` honours ``incremental-between``."""

    def __init__(self, path: str, name: str, schema: StructType,
                 incremental_between: tuple[Endpoint, Endpoint] | None = None,
                 connection: dict[str, str] | None = None) -> None:
        self.path = path
        self.connection = connection or {}
        self.name = name
        self.schema = schema
        self.incremental_between = incremental_between

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(0)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        conform = BatchConformer(to_arrow_schema(self.schema))
        table = mp.open_table(self.path, options=self.connection)
        if self.name == "audit_log" and self.incremental_between is not None:
            start, end = (endpoint_snapshot_id(table, e) for e in self.incremental_between)
            data = audit_log_between(table, start, end)
        else:
            data = table.system_table(self.name)
        for batch in data.to_batches():
            if batch.num_rows:
                yield conform(batch)


__all__ = ["SystemTableReader", "split_system_path", "system_spark_schema"]
