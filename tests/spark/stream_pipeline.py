"""A minipaimon -> minipaimon streaming pipeline as its own Spark driver process.

Used by ``test_exactly_once.py``, which kills it with SIGKILL at random points and restarts
it from the same checkpoints. Two queries read the append table ``src`` (id, k, v):

- ``copy``: every row into the append table ``dst`` (a duplicate or a loss shows as an id);
- ``sums``: (k, v) into ``agg``, a primary-key table with ``merge-engine=aggregation`` and
  ``fields.v.aggregate-function=sum`` (a replayed batch committed twice would double-count).

Two read the changelog of ``csrc``, a primary-key table (``changelog-producer=input``,
bucket 2; see ``changelog_source.py``) from snapshot 1 (``read.changelog=true``):

- ``mirror``: into the primary-key table ``mirror`` (upserts and deletes applied: it must
  equal ``csrc``);
- ``audit``: every change row, its kind as the column ``kind``, into the append table
  ``audit`` (it must hold each row written to ``csrc`` exactly once).

Usage: ``python stream_pipeline.py WORKDIR forever|available-now``. ``forever`` runs the four
queries at once until killed; ``available-now`` runs them one after another, each until it has
processed what is there, and exits 0.

Why one after another: with PySpark 4.3.0, four queries with Python sinks starting batches at
the same moment in one session sometimes fail every query with Spark's own ``Task not
serializable`` (``IllegalStateException: Illegal size 5 of collection, expected 6`` from
``DefaultSerializationProxy``: a JVM collection changed while a write task is serialized).
The kill rounds take such a failure as one more crash point; the final run, which must
succeed, avoids it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def main(workdir: Path, mode: str) -> None:
    os.environ["SPARK_CONF_DIR"] = str(REPO / "spark-conf")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from minipaimon_spark.stream.stream_reader import ADMISSION_CONTROL

    spark = SparkSession.builder.master("local[2]").appName("stream-pipeline").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    # small batches: more points to be killed at
    limits = {"read.stream.maxSnapshotsPerTrigger": "2"} if ADMISSION_CONTROL else {}
    src = spark.readStream.format("minipaimon").options(**limits).load(str(workdir / "src"))
    changes = (spark.readStream.format("minipaimon").options(**limits)
               .options(**{"read.changelog": "true", "scan.mode": "from-snapshot",
                           "scan.snapshot-id": "1"})
               .load(str(workdir / "csrc")))
    queries = []
    for name, df, target, options in [
        ("copy", src, "dst", {}),
        ("sums", src.select("k", "v"), "agg", {"primary-key": "k", "bucket": "2",
                                               "merge-engine": "aggregation",
                                               "fields.v.aggregate-function": "sum"}),
        ("mirror", changes, "mirror", {"primary-key": "id", "bucket": "2"}),
        ("audit", changes.withColumnRenamed("_row_kind", "kind"), "audit", {}),
    ]:
        writer = df.writeStream.format("minipaimon").queryName(name)
        writer = writer.option("checkpointLocation", str(workdir / f"ck-{name}"))
        for key, value in options.items():
            writer = writer.option(key, value)
        if mode == "available-now":
            writer = writer.trigger(availableNow=True)
        queries.append(writer.start(str(workdir / target)))
        if mode == "available-now":
            queries[-1].awaitTermination()
    if mode != "available-now":
        spark.streams.awaitAnyTermination()
    failed = [f"query {q.name} failed: {q.exception()}" for q in queries if q.exception() is not None]
    if failed:
        raise SystemExit("\n".join(failed))
    spark.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
