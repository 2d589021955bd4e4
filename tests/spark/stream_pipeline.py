"""A minipaimon -> minipaimon streaming pipeline as its own Spark driver process.

Used by ``test_exactly_once.py``, which kills it with SIGKILL at random points and restarts
it from the same checkpoints. Two queries read the source table ``src`` (id, k, v):

- ``copy``: every row into the append table ``dst`` (a duplicate or a loss shows as an id);
- ``sums``: (k, v) into ``agg``, a primary-key table with ``merge-engine=aggregation`` and
  ``fields.v.aggregate-function=sum`` (a replayed batch committed twice would double-count).

Usage: ``python stream_pipeline.py WORKDIR forever|available-now``. ``forever`` runs until
killed; ``available-now`` processes what is there and exits 0.
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

    from minipaimon_spark.stream_reader import ADMISSION_CONTROL

    spark = SparkSession.builder.master("local[2]").appName("stream-pipeline").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    reader = spark.readStream.format("minipaimon")
    if ADMISSION_CONTROL:  # small batches: more points to be killed at
        reader = reader.option("read.stream.maxSnapshotsPerTrigger", "2")
    src = reader.load(str(workdir / "src"))
    queries = []
    for name, df, options in [
        ("copy", src, {}),
        ("sums", src.select("k", "v"), {"primary-key": "k", "bucket": "2",
                                        "merge-engine": "aggregation",
                                        "fields.v.aggregate-function": "sum"}),
    ]:
        writer = df.writeStream.format("minipaimon").queryName(name)
        writer = writer.option("checkpointLocation", str(workdir / f"ck-{name}"))
        for key, value in options.items():
            writer = writer.option(key, value)
        if mode == "available-now":
            writer = writer.trigger(availableNow=True)
        target = workdir / ("dst" if name == "copy" else "agg")
        queries.append(writer.start(str(target)))
    if mode == "available-now":
        for q in queries:
            q.awaitTermination()
    else:
        spark.streams.awaitAnyTermination()
    failed = [f"query {q.name} failed: {q.exception()}" for q in queries if q.exception() is not None]
    if failed:
        raise SystemExit("\n".join(failed))
    spark.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
