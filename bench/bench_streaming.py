"""Structured Streaming: commit-to-batch latency, and a stream copy against a batch copy.

1. Latency. A query reads a table with ``scan.mode=latest`` and a ``processingTime``
   trigger; a ``foreachBatch`` function in this driver process notes when each row shows up.
   The main thread commits one row at a time (core ``t.write``), waits until the row has
   been seen, then waits a random 0..interval before the next commit, so commits land at
   random points of the trigger cycle. Latency = the moment the batch function sees the row
   - the snapshot's commit time (``timeMillis``). Median and p95 per trigger interval.
2. Throughput. ``n`` rows (id bigint, k string of 16 chars, v double, ts bigint; written
   untimed by the core) are copied from one table into a new one by a streaming query
   (``Trigger.AvailableNow``, checkpoint, exactly-once sink) and by a batch job
   (``spark.read...write.mode("append")``) in the same run, alternating, ``reps`` times.
   Both include their query start-up (after an untimed warm-up of both on 10k rows); both
   read the same splits.

usage: python bench/bench_streaming.py [--n 5000000] [--reps 2] [--samples 40]
                                        [--intervals 0,100,1000]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import threading
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402

import minipaimon_core as mp  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("k", pa.string()),
                    pa.field("v", pa.float64()), pa.field("ts", pa.int64())])


def make_data(n: int) -> pa.Table:
    ids = pa.array(np.arange(n, dtype=np.int64))
    k = pc.binary_join_element_wise(pa.scalar("key-"), pc.utf8_lpad(pc.cast(ids, pa.string()), 12, "0"), "")
    v = pa.array(np.random.default_rng(7).random(n))
    ts = pa.array(1_700_000_000_000 + np.arange(n, dtype=np.int64) * 10)
    return pa.Table.from_arrays([ids, k, v, ts], schema=SCHEMA)


def session() -> Any:
    os.environ["SPARK_CONF_DIR"] = os.path.join(REPO, "spark-conf")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.master("local[2]").appName("bench-streaming").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def percentile(xs: list[float], q: float) -> float:
    return float(np.percentile(np.array(xs), q))


def latency(spark: Any, work: str, interval_ms: int, samples: int, rng: random.Random) -> dict[str, Any]:
    path = os.path.join(work, f"latency-{interval_ms}")
    t = mp.create_table(path, SCHEMA)
    seen: dict[int, float] = {}
    arrived = threading.Condition()

    def on_batch(df: Any, batch_id: int) -> None:
        ids = [r[0] for r in df.select("id").collect()]
        now = time.time()
        with arrived:
            for i in ids:
                seen[i] = now
            arrived.notify_all()

    q = (spark.readStream.format("minipaimon").option("scan.mode", "latest").load(path)
         .writeStream.foreachBatch(on_batch).trigger(processingTime=f"{interval_ms} milliseconds")
         .option("checkpointLocation", os.path.join(work, f"ck-latency-{interval_ms}")).start())
    lat: list[float] = []
    try:
        q.processAllAvailable()  # the start offset is fixed: later commits are new data
        for i in range(-3, samples):  # 3 warm-up rows
            sid = t.write(pa.table({"id": [i], "k": ["x"], "v": [0.0], "ts": [0]}, schema=SCHEMA))
            assert sid is not None
            committed = t.snapshot(sid).timeMillis / 1000
            with arrived:
                if not arrived.wait_for(lambda i=i: i in seen, timeout=60):  # type: ignore[misc]
                    raise RuntimeError(f"row {i} did not arrive within 60 s")
            if i >= 0:
                lat.append(seen[i] - committed)
            time.sleep(rng.uniform(0, max(interval_ms, 50) / 1000))
    finally:
        q.stop()
    return {"interval_ms": interval_ms, "samples": len(lat), "median_s": common.median(lat),
            "p95_s": percentile(lat, 95), "max_s": max(lat), "load": common.load()}


def stream_copy(spark: Any, src: str, dst: str, ck: str) -> dict[str, Any]:
    q = (spark.readStream.format("minipaimon").load(src).writeStream.format("minipaimon")
         .option("checkpointLocation", ck).trigger(availableNow=True).start(dst))
    q.awaitTermination()
    if q.exception() is not None:
        raise RuntimeError(str(q.exception()))
    progress = q.recentProgress
    return {"batches": len(progress), "batch_ms": [p["durationMs"].get("triggerExecution") for p in progress]}


def batch_copy(spark: Any, src: str, dst: str) -> None:
    spark.read.format("minipaimon").load(src).write.format("minipaimon").mode("append").save(dst)


def throughput(spark: Any, work: str, n: int, reps: int) -> dict[str, Any]:
    src = os.path.join(work, "copy-src")
    # splits of ~32 MB so that both copies use both local cores the same way
    t = mp.create_table(src, SCHEMA, options={"source.split.target-size": "32 mb"})
    data = make_data(n)
    for part in range(4):
        t.write(data.slice(part * (n // 4), n // 4 if part < 3 else n - 3 * (n // 4)))
    warm = os.path.join(work, "warm-src")  # untimed: Python workers of both paths started
    mp.create_table(warm, SCHEMA).write(make_data(10_000))
    stream_copy(spark, warm, os.path.join(work, "warm-stream"), os.path.join(work, "ck-warm"))
    batch_copy(spark, warm, os.path.join(work, "warm-batch"))
    runs: dict[str, list[dict[str, float]]] = {"stream": [], "batch": []}
    details = []
    for rep in range(reps):
        order = ["stream", "batch"] if rep % 2 == 0 else ["batch", "stream"]
        for kind in order:
            dst = os.path.join(work, f"copy-{kind}-{rep}")
            with common.Timer() as timer:
                if kind == "stream":
                    details.append(stream_copy(spark, src, dst, os.path.join(work, f"ck-copy-{rep}")))
                else:
                    batch_copy(spark, src, dst)
            out = mp.open_table(dst).to_arrow()
            if out.num_rows != n or pc.sum(out.column("id")).as_py() != n * (n - 1) // 2:
                raise RuntimeError(f"{kind} copy {rep} is wrong: {out.num_rows} rows")
            runs[kind].append(timer.record())
            extra = f" {details[-1]}" if kind == "stream" else ""
            print(f"  {kind} copy {rep}: {timer.wall:.2f} s (load {timer.load1}){extra}", flush=True)
    stream_s = common.median(r["s"] for r in runs["stream"])
    batch_s = common.median(r["s"] for r in runs["batch"])
    return {"n": n, "stream": common.summarize(runs["stream"]), "batch": common.summarize(runs["batch"]),
            "stream_rows_per_s": n / stream_s, "batch_rows_per_s": n / batch_s,
            "stream_over_batch_time": stream_s / batch_s, "stream_details": details}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=5_000_000)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--intervals", default="0,100,1000")
    args = parser.parse_args()
    # a private scratch directory: a shared one may be cleaned by another run meanwhile
    work = tempfile.mkdtemp(prefix="minipaimon-bench-streaming-")
    rng = random.Random(11)
    spark = session()
    import pyspark

    results: dict[str, Any] = {"env": {**common.environment(), "pyspark": pyspark.__version__}}
    results["latency"] = []
    for interval in (int(x) for x in args.intervals.split(",")):
        r = latency(spark, work, interval, args.samples, rng)
        results["latency"].append(r)
        print(f"  latency @ processingTime={interval} ms: median {r['median_s'] * 1000:.0f} ms, "
              f"p95 {r['p95_s'] * 1000:.0f} ms", flush=True)
    results["throughput"] = tp = throughput(spark, work, args.n, args.reps)
    spark.stop()
    shutil.rmtree(work, ignore_errors=True)
    path = common.write_results("streaming", results)
    common.print_table(["trigger", "median ms", "p95 ms", "max ms"], [
        (f"{r['interval_ms']} ms", r["median_s"] * 1000, r["p95_s"] * 1000, r["max_s"] * 1000)
        for r in results["latency"]])
    common.print_table(["copy", "median s", "rows/s"], [
        ("stream (availableNow)", tp["stream"]["median_s"], tp["stream_rows_per_s"]),
        ("batch", tp["batch"]["median_s"], tp["batch_rows_per_s"])])
    print(f"stream/batch time: {tp['stream_over_batch_time']:.2f}; results in {path}")


if __name__ == "__main__":
    main()
