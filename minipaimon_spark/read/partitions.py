"""The Spark partitions of reads: what a task gets to read, pickled to it.

A batch read's partition is one core split (:class:`SplitPartition`), the whole row-level
diff of two endpoints (:class:`DiffPartition`, ``incremental-between-scan-mode`` = ``diff``)
or one core stream split (:class:`StreamPartition`: a bucket's full-scan rows and/or its
changed files), which both the stream reader and incremental batch reads plan.
"""

from __future__ import annotations

from pyspark.sql.datasource import InputPartition

import minipaimon_core as mp
from minipaimon_core.diff import Endpoint
from minipaimon_core.stream.stream import StreamSplit
from minipaimon_spark.common.worker_guard import ShippedToWorkers


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


class StreamPartition(ShippedToWorkers, InputPartition):
    """One core stream split: a bucket's full-scan rows and/or its changed files."""

    def __init__(self, split: StreamSplit) -> None:
        super().__init__(None)
        self.split = split

    def __repr__(self) -> str:
        s = self.split
        kind = f"{len(s.full)} full splits, {len(s.files)} files"
        return f"StreamPartition(snapshot={s.snapshot_id}, {kind}, rows={s.row_count})"


__all__ = ["DiffPartition", "SplitPartition", "StreamPartition"]
