"""The README's main job: a small ETL on local Spark against ./warehouse.

Creates a primary-key table of orders, loads a day of data, upserts corrections, deletes a
cancelled order, reads the table now and as of the first load (time travel), and prints
the table's snapshots. Run with ``python -m minipaimon_spark.demo [--warehouse DIR]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys

from pyspark.sql import SparkSession

import minipaimon_core as mp
import minipaimon_spark


def build_session() -> SparkSession:
    # Python workers must run this interpreter: it is the one with minipaimon installed.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    return SparkSession.builder.master("local[2]").appName("minipaimon-demo").getOrCreate()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--warehouse", default=os.path.join(os.getcwd(), "warehouse"))
    args = parser.parse_args(argv)
    path = os.path.join(os.path.abspath(args.warehouse), "orders")
    shutil.rmtree(path, ignore_errors=True)

    spark = build_session()
    spark.sparkContext.setLogLevel("WARN")
    minipaimon_spark.register(spark)

    print(f"== 1. load the first day into {path}")
    orders = spark.createDataFrame(
        [(1, "alice", 12.5, "2026-11-01"), (2, "bob", 7.0, "2026-11-01"), (3, "carol", 30.0, "2026-11-01"),
         (4, "dave", 4.2, "2026-11-01")],
        "order_id bigint, customer string, amount double, dt string",
    )
    (orders.write.format("minipaimon").mode("append")
     .option("primary-key", "order_id,dt").option("partition-keys", "dt").option("bucket", "2")
     .save(path))

    print("== 2. upsert corrections and a new order, delete a cancelled one")
    changes = spark.createDataFrame(
        [(2, "bob", 9.0, "2026-11-01", "+U"), (5, "erin", 15.0, "2026-11-01", "+I"),
         (4, "dave", 4.2, "2026-11-01", "-D")],
        "order_id bigint, customer string, amount double, dt string, _row_kind string",
    )
    changes.write.format("minipaimon").mode("append").save(path)

    print("== 3. the table now")
    df = spark.read.format("minipaimon").load(path)
    df.orderBy("order_id").show()
    df.groupBy("dt").sum("amount").show()

    print("== 4. time travel: the table as of snapshot 1")
    spark.read.format("minipaimon").option("scan.snapshot-id", "1").load(path).orderBy("order_id").show()

    print("== 5. snapshots")
    for s in mp.open_table(path).snapshots():
        print(f"  snapshot {s.id}: {s.commit_kind:<9} rows={s.totalRecordCount} user={s.commitUser[:18]}")
    spark.stop()


if __name__ == "__main__":
    main()
