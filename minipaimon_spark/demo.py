"""The README's main job: a small ETL, on local Spark or a cluster, on local disk or S3.

Creates a primary-key table of orders, loads a day of data, upserts corrections, deletes a
cancelled order, reads the table now and as of the first load (time travel), and prints
the table's snapshots. The table is ``demo.orders`` of the warehouse (``<warehouse>/demo.db/
orders``, see :mod:`minipaimon_core.catalog`); a previous one is dropped first.

    python -m minipaimon_spark.demo [--warehouse DIR | s3://bucket/prefix] [--master URL]
    spark-submit --master spark://host:7077 scripts/demo_job.py [--warehouse ...]

The warehouse defaults to ``$MINIPAIMON_WAREHOUSE``, else ``./warehouse``; the master to
``$SPARK_MASTER_URL``, else spark-submit's ``--master``, else local. On S3 every node (the
driver and each executor) reads the standard AWS variables (``AWS_ENDPOINT_URL``, ...).
"""

from __future__ import annotations

import argparse
import os
import sys

from pyspark.sql import SparkSession

import minipaimon_core as mp
import minipaimon_spark
from minipaimon_core.catalog import WAREHOUSE_ENV

TABLE = "demo.orders"


def build_session(master: str | None) -> SparkSession:
    # Python workers must run this interpreter: it is the one with minipaimon installed (on a
    # cluster the same path must exist on every node, e.g. one image or one venv path).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName("minipaimon-demo")
    if master:  # else spark-submit's --master, or local[*] when run by plain python
        builder = builder.master(master)
    return builder.getOrCreate()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--warehouse", default=os.environ.get(WAREHOUSE_ENV)
                        or os.path.join(os.getcwd(), "warehouse"))
    parser.add_argument("--master", default=os.environ.get("SPARK_MASTER_URL"))
    args = parser.parse_args(argv)
    catalog = mp.catalog(args.warehouse)
    if catalog.table_exists(TABLE):
        catalog.drop_table(TABLE, purge=True)
    catalog.create_namespace(TABLE.split(".")[0], exist_ok=True)
    path = catalog.table_path(TABLE)

    spark = build_session(args.master)
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
    for line in snapshot_lines(mp.open_table(path)):
        print(line)
    spark.stop()


def snapshot_lines(table: mp.Table) -> list[str]:
    """One line per snapshot: its kind, the rows it holds (a merged count: upserts and
    deletes are resolved) and the records its files hold (Paimon's ``totalRecordCount``,
    which counts every version and delete of a key until compaction merges them)."""
    keys = table.primary_keys() or table.schema().names[:1]
    return [f"  snapshot {s.id}: {s.commit_kind:<9} rows={table.scan(snapshot_id=s.id, columns=keys).to_arrow().num_rows} "
            f"(records in files={s.totalRecordCount}) user={s.commitUser[:18]}"
            for s in table.snapshots()]


if __name__ == "__main__":
    main()
