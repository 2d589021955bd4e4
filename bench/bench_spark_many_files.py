"""``minipaimon_spark.table`` on a table of many files with deletion vectors, against the
Python data source reading the same table in the same session.

Data: a primary-key table (id bigint, v double) with ``deletion-vectors.enabled`` and
``--buckets`` buckets (default 500) of 20 rows, written once, then the rows of even ids
again: 2 files a bucket, vectors marking half the rows of the first ones (1,000 files, 500
of them marked). Built with minipaimon_core, not timed; kept under
``$MINIPAIMON_BENCH_DIR/spark/many-<buckets>`` while it has that many buckets.

One session, local[2], the repository's ``spark-conf/``; one warm-up each, then ``--reps``
rounds of both cases in turn: ``minipaimon_spark.table(spark, path)`` (making the
DataFrame, timed apart as ``build``, then ``agg(sum(v))``) and
``spark.read.format("minipaimon").load(path)`` with the same aggregate; both checked
against the expected sum. The ratio is the Python source's time over the native read's.
No target in the issues: this guards the many-file path (several scans of at most 64
files, listing on the driver) against the seconds it once cost.

usage: .venv/bin/python bench/bench_spark_many_files.py [--reps 3] [--buckets 500]
Results: bench/results/spark_many_files.json (-<tag> with MINIPAIMON_BENCH_TAG).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from bench_spark import SPARK_DIR, spark_env  # noqa: E402

ROWS_A_BUCKET = 20


def build(buckets: int) -> tuple[str, float]:
    """The table (built once per bucket count) and the sum of v a read must give."""
    import pyarrow as pa
    import pyarrow.compute as pc

    import minipaimon_core as mp

    path = os.path.join(SPARK_DIR, f"many-{buckets}")
    ids = pa.array(range(buckets * ROWS_A_BUCKET), pa.int64())
    even = ids.filter(pc.equal(pc.remainder(ids, 2), 0))
    expected = float(pc.sum(ids).as_py() - pc.sum(even).as_py())  # even ids rewritten with v = 0
    if os.path.exists(path) and mp.open_table(path).options().get("bucket") == str(buckets):
        return path, expected
    t = mp.create_table(path, pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.float64())]),
                        primary_key=["id"], options={"bucket": str(buckets), "deletion-vectors.enabled": "true"})
    t.write(pa.table({"id": ids, "v": pc.cast(ids, pa.float64())}))
    t.write(pa.table({"id": even, "v": pa.array([0.0] * len(even))}))
    return path, expected


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--buckets", type=int, default=500)
    a = ap.parse_args()
    os.environ.update({k: v for k, v in spark_env(sys.executable).items()
                       if k in ("SPARK_CONF_DIR", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")})
    path, expected = build(a.buckets)

    from pyspark.sql import SparkSession

    import minipaimon_core as mp
    import minipaimon_spark

    spark = SparkSession.builder.master("local[2]").appName("bench_spark_many_files").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    files = sum(len(s.files) for s in mp.open_table(path).scan().plan())

    def native() -> dict[str, Any]:
        t0 = time.perf_counter()
        df = minipaimon_spark.table(spark, path)
        built = time.perf_counter() - t0
        total = df.agg({"v": "sum"}).collect()[0][0]
        return {"build_s": built, "ok": total == expected}

    def python() -> dict[str, Any]:
        total = spark.read.format("minipaimon").load(path).agg({"v": "sum"}).collect()[0][0]
        return {"ok": total == expected}

    cases = {"mp.table": native, "python source": python}
    runs: dict[str, list[dict[str, Any]]] = {k: [] for k in cases}
    for fn in cases.values():  # warm-up
        fn()
    for _ in range(a.reps):
        for name, fn in cases.items():
            out, timer = common.timed(fn)
            runs[name].append({**timer.record(), **out})
    summary = {k: common.summarize(v) for k, v in runs.items()}
    ratio = summary["python source"]["median_s"] / summary["mp.table"]["median_s"]
    results = {"env": common.environment(), "buckets": a.buckets, "files": files,
               "read": summary, "python_over_native": round(ratio, 2),
               "native_build_median_s": common.median(r["build_s"] for r in runs["mp.table"]),
               "all_ok": all(r["ok"] for rs in runs.values() for r in rs)}
    print(f"{files} files: mp.table {summary['mp.table']['median_s']:.2f} s (build "
          f"{results['native_build_median_s']:.2f} s), python source "
          f"{summary['python source']['median_s']:.2f} s: {ratio:.1f}x; sums ok {results['all_ok']}; "
          f"load {common.load()}", flush=True)
    print(common.write_results("spark_many_files", results))
    spark.stop()


if __name__ == "__main__":
    main()
