"""Jobs on a Spark standalone cluster (127.0.0.1) against tables on S3 (moto on 127.0.0.1),
and one on Azure (Azurite on 127.0.0.1).

The executors (JVMs started by the two workers) write the data files to S3; the driver (this
process) commits. Each job is checked row for row against what was written, read back both
through Spark and through minipaimon_core in the driver.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

import minipaimon_core as mp  # noqa: E402
import minipaimon_spark  # noqa: E402

pytestmark = pytest.mark.cluster

DDL = "id long, k string, v double"
PK = {"primary-key": "id", "bucket": "4"}


def frame(spark: Any, data: list[tuple[Any, ...]], ddl: str = DDL, parts: int = 4) -> Any:
    return spark.createDataFrame(data, ddl).repartition(parts)


def save(df: Any, path: str, mode: str = "append", **options: str) -> None:
    writer = df.write.format("minipaimon").mode(mode)
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.save(path)


def spark_rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in df.collect())


def core_rows(path: str) -> list[tuple[Any, ...]]:
    """The table's rows as the driver's minipaimon_core reads them from S3."""
    t = mp.open_table(path).to_arrow()
    return sorted(zip(*(t.column(c).to_pylist() for c in t.column_names)))


def test_batch_create_append_overwrite(cluster_spark: Any, table_path: str) -> None:
    spark = cluster_spark
    first = [(i, f"k{i % 3}", i * 0.5) for i in range(400)]
    save(frame(spark, first), table_path)  # creates the table
    second = [(i, f"k{i % 3}", -1.0) for i in range(400, 700)]
    save(frame(spark, second), table_path)
    table = mp.open_table(table_path)
    assert [s.commitKind for s in table.snapshots()] == ["APPEND", "APPEND"]
    # each of the 4 tasks of each job wrote its own data file to S3
    files = table.system_table("files").column("file_path").to_pylist()
    assert len(files) == 8 and all(f.startswith(table_path) for f in files), files

    read = cluster_spark.read.format("minipaimon").load(table_path)
    assert spark_rows(read) == sorted(first + second)
    assert core_rows(table_path) == sorted(first + second)

    third = [(i, "x", 9.0) for i in range(10)]
    save(frame(spark, third), table_path, mode="overwrite")
    assert spark_rows(spark.read.format("minipaimon").load(table_path)) == sorted(third)
    assert [s.commitKind for s in mp.open_table(table_path).snapshots()][-1] == "OVERWRITE"


def test_upsert_into_bucketed_primary_key_table(cluster_spark: Any, table_path: str) -> None:
    spark = cluster_spark
    model: dict[int, tuple[Any, ...]] = {i: (i, f"k{i % 5}", float(i)) for i in range(1000)}
    save(frame(spark, list(model.values())), table_path, **PK)
    changes: list[tuple[Any, ...]] = ([(i, "upd", i * 2.0, "+U") for i in range(0, 1000, 7)]
               + [(i, "new", 0.5, "+I") for i in range(1000, 1100)]
               + [(i, None, None, "-D") for i in range(3, 1000, 11) if i % 7])  # keys once
    save(frame(spark, changes, DDL + ", _row_kind string"), table_path)
    for i, k, v, kind in changes:
        if kind == "-D":
            model.pop(i, None)
        else:
            model[i] = (i, k, v)
    want = sorted(model.values())
    assert spark_rows(spark.read.format("minipaimon").load(table_path)) == want
    assert core_rows(table_path) == want
    buckets = set(mp.open_table(table_path).system_table("files").column("bucket").to_pylist())
    assert buckets == {0, 1, 2, 3}


@pytest.mark.parametrize("options", [PK, {"partition-keys": "k"}], ids=["primary-key", "append"])
def test_merge_joins_in_spark_and_writes_on_the_executors(cluster_spark: Any, table_path: str,
                                                         options: dict[str, str]) -> None:
    """``minipaimon_spark.merge``: the executors read the target's pieces, change them and
    write the files to S3; the driver commits once."""
    import pyarrow.compute as pc

    spark = cluster_spark
    model: dict[int, tuple[Any, ...]] = {i: (i, f"k{i % 4}", float(i)) for i in range(1000)}
    save(frame(spark, list(model.values())), table_path, **options)
    source = [(i, f"k{i % 4}", -1.0 if i % 10 == 0 else i + 0.5) for i in range(900, 1100, 2)]
    result = (minipaimon_spark.merge(spark, table_path, frame(spark, source), on=["id", "k"])
              .when_matched_delete(condition=pc.field("source.v") < 0)
              .when_matched_update(set={"v": "source.v"})
              .when_not_matched_insert_all()
              .execute())
    for i, k, v in source:
        if i in model and v < 0:
            del model[i]
        else:
            model[i] = (i, k, v)
    assert (result.inserted, result.updated, result.deleted) == (50, 40, 10)
    assert spark_rows(spark.read.format("minipaimon").load(table_path)) == sorted(model.values())
    assert core_rows(table_path) == sorted(model.values())
    kinds = [s.commitKind for s in mp.open_table(table_path).snapshots() if s.commitKind != "COMPACT"]
    assert len(kinds) == 2  # the write, then the merge's one commit


def test_filtered_read(cluster_spark: Any, table_path: str) -> None:
    spark = cluster_spark
    data = [(i, f"k{i % 4}", i * 1.0) for i in range(2000)]
    save(frame(spark, data), table_path, **{"partition-keys": "k"})
    df = spark.read.format("minipaimon").load(table_path).filter("k = 'k1' AND id >= 1500")
    assert spark_rows(df) == sorted(r for r in data if r[1] == "k1" and r[0] >= 1500)
    assert df.count() == 125


def test_compact_on_executors(cluster_spark: Any, table_path: str) -> None:
    spark = cluster_spark
    model: dict[int, tuple[Any, ...]] = {}
    for version in range(3):
        batch = [(i, f"k{version}", float(version)) for i in range(version * 100, 600)]
        save(frame(spark, batch), table_path, **{**PK, "write-only": "true"})
        model.update({r[0]: r for r in batch})
    before = mp.open_table(table_path)
    files_before = before.system_table("files").num_rows
    snapshot_id = minipaimon_spark.compact(spark, table_path, full=True)
    after = mp.open_table(table_path)
    assert snapshot_id is not None and after.latest_snapshot().id == snapshot_id  # type: ignore[union-attr]
    assert after.snapshot(snapshot_id).commitKind == "COMPACT"
    files = after.system_table("files")
    assert files.num_rows == 4 < files_before  # one sorted run per bucket
    assert spark_rows(spark.read.format("minipaimon").load(table_path)) == sorted(model.values())


def test_streaming_source_to_sink_available_now(cluster_spark: Any, warehouse: str,
                                                table_path: str, tmp_path: Any) -> None:
    spark = cluster_spark
    src, dst = table_path, f"{table_path}-sink"
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("k", pa.string()),
                        ("v", pa.float64())])
    source = mp.create_table(src, schema)
    checkpoint = str(tmp_path / "checkpoint")  # Spark's own checkpoint: driver-local

    def run() -> None:
        query = (spark.readStream.format("minipaimon").load(src)
                 .writeStream.format("minipaimon").option("checkpointLocation", checkpoint)
                 .trigger(availableNow=True).start(dst))
        query.awaitTermination()
        assert query.exception() is None

    written: list[tuple[Any, ...]] = []
    for start in (0, 300):
        for part in range(2):  # two snapshots per round
            rows = [(i, f"k{i % 3}", i / 4) for i in range(start + part * 150, start + (part + 1) * 150)]
            source.write(pa.Table.from_pylist(
                [dict(zip(schema.names, r)) for r in rows], schema=schema))
            written += rows
        run()
        assert spark_rows(spark.read.format("minipaimon").load(dst)) == sorted(written)
    assert core_rows(dst) == sorted(written)


def test_a_primary_key_table_on_azure(cluster_spark: Any, azurite_server: Any) -> None:
    """One job of the above on Azure Blob Storage (Azurite on 127.0.0.1), its settings
    given only as options (no node has an Azure environment): the executors write and
    compact the table's files, the driver commits; read back through Spark and the core."""
    spark = cluster_spark
    opts = azurite_server.options()
    path = f"az://{azurite_server.create_container()}/wh/orders"
    model: dict[int, tuple[Any, ...]] = {i: (i, f"k{i % 5}", float(i)) for i in range(600)}
    # two tasks a write, write-only: two sorted runs a bucket a write, compacted below
    save(frame(spark, list(model.values()), parts=2), path, **PK, **opts, **{"write-only": "true"})
    update = [(i, "upd", i * 2.0) for i in range(0, 700, 3)]
    save(frame(spark, update, parts=2), path, **opts, **{"write-only": "true"})
    model.update({r[0]: r for r in update})
    assert minipaimon_spark.compact(spark, path, full=True, options=opts) is not None
    want = sorted(model.values())
    assert spark_rows(spark.read.format("minipaimon").options(**opts).load(path)) == want
    t = mp.open_table(path, options=opts).to_arrow()
    assert sorted(zip(*(t.column(c).to_pylist() for c in t.column_names))) == want
    assert [s.commitKind for s in mp.open_table(path, options=opts).snapshots()] == ["APPEND", "APPEND", "COMPACT"]


def test_a_relative_local_path_names_the_drivers_table(cluster_spark: Any, tmp_path: Any) -> None:
    """Spark resolves a relative path against the driver's working directory; an executor
    runs in its worker's directory. A relative local path must name the driver's table in
    every task (else the tasks look for the table, or write its files, elsewhere)."""
    import os

    driver_dir = cluster_spark.sparkContext._jvm.System.getProperty("user.dir")
    rel = os.path.relpath(tmp_path, driver_dir)
    assert not os.path.isabs(rel)
    rows = [(i, f"k{i % 3}", i * 0.5) for i in range(200)]
    save(frame(cluster_spark, rows), f"{rel}/t")
    save(frame(cluster_spark, rows[:50]), f"{rel}/pk", **PK)
    assert core_rows(str(tmp_path / "t")) == rows
    assert core_rows(str(tmp_path / "pk")) == rows[:50]
    assert spark_rows(cluster_spark.read.format("minipaimon").load(f"{rel}/t")) == rows
    assert spark_rows(minipaimon_spark.table(cluster_spark, f"{rel}/pk")) == rows[:50]
