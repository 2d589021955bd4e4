"""Distributed compaction: buckets compact in parallel on the executors, one commit.

```
driver                                 executors (one task per bucket group)
latest snapshot -> live files by bucket
  -> pickled (partition, bucket) units --> compact_bucket(table, entries) -> CommitMessage
one COMPACT commit of all messages    <--  pickled messages
  (a conflict with a concurrent compaction: our files are deleted, theirs stand)
```

Goes through ``DataFrame.mapInArrow`` (not the RDD API), so it also works over Spark
Connect.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa

import minipaimon_core as mp
from minipaimon_core.maintenance.compaction import bucket_units, commit_compaction, compact_bucket


def compact_units(path: str, strategy: str, connection: dict[str, str] | None = None
                  ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The executor side: compact each unit of the incoming batches, emit its message."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        table = mp.open_table(path, options=connection)
        for batch in batches:
            out = []
            for payload in batch.column("entries").to_pylist():
                message = compact_bucket(table, pickle.loads(payload), strategy)
                if message is not None:
                    out.append(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))
            yield pa.RecordBatch.from_pydict({"message": pa.array(out, pa.binary())})

    return run


def compact_on_executors(spark: Any, path: str, strategy: str = "full",
                         parallelism: int | None = None,
                         connection: dict[str, str] | None = None) -> int | None:
    """Compact the table at ``path`` with Spark tasks (``strategy`` as
    :func:`minipaimon_core.maintenance.compaction.compact_table`); returns the COMPACT snapshot id.

    None when there is nothing to compact. Raises CommitConflictError when a concurrent
    compaction replaced the same files first (this run's files are deleted). ``connection``:
    storage options (``s3.*``, ``azure.*``), shipped to the executors inside the task closure.
    """
    table = mp.open_table(path, options=connection)
    units = bucket_units(table)
    if not units:
        return None
    slices = max(1, min(len(units), parallelism or default_parallelism(spark)))
    rows = [(i, pickle.dumps(u, protocol=pickle.HIGHEST_PROTOCOL)) for i, u in enumerate(units)]
    df = spark.createDataFrame(rows, "unit int, entries binary").repartition(slices, "unit")
    collected = df.mapInArrow(compact_units(table.path, strategy, connection), "message binary").collect()
    messages: list[mp.CommitMessage] = [pickle.loads(r.message) for r in collected]
    if not messages:
        return None
    return commit_compaction(table, messages, raise_on_conflict=True)


def default_parallelism(spark: Any) -> int:
    """The cluster's default parallelism; over Spark Connect, which has no SparkContext,
    ``spark.sql.shuffle.partitions`` (Spark schedules the extra tasks in waves)."""
    if type(spark).__module__.startswith("pyspark.sql.connect"):
        return int(spark.conf.get("spark.sql.shuffle.partitions") or 1)
    return int(spark.sparkContext.defaultParallelism)
