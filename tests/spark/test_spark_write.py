"""End-to-end writes through a real local Spark session (see conftest.py)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
from chispa import assert_df_equality  # noqa: E402

import minipaimon_core as mp  # noqa: E402

DDL = "id long, dt string, v double"


def frame(spark: Any, data: list[tuple[Any, ...]], ddl: str = DDL, parts: int = 2) -> Any:
    return spark.createDataFrame(data, ddl).repartition(parts)


def save(df: Any, path: Path, mode: str = "append", **options: str) -> None:
    writer = df.write.format("minipaimon").mode(mode)
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.save(str(path))


def read(spark: Any, path: Path) -> Any:
    return spark.read.format("minipaimon").load(str(path))


def data_files(path: Path) -> set[str]:
    return {f for _, _, fs in os.walk(path) for f in fs if f.startswith("data-")}


PK = {"primary-key": "id,dt", "partition-keys": "dt", "bucket": "2"}


@pytest.mark.smoke
def test_append_and_overwrite(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "t"
    first = [(i, f"d{i % 2}", i * 1.5) for i in range(20)]
    save(frame(spark, first), path, **{"partition-keys": "dt"})
    save(frame(spark, [(100, "d0", 0.0)]), path)
    want = frame(spark, [*first, (100, "d0", 0.0)])
    assert_df_equality(read(spark, path), want, ignore_row_order=True, ignore_nullable=True)
    save(frame(spark, [(7, "d9", 7.0)]), path, mode="overwrite")
    assert [tuple(r) for r in read(spark, path).collect()] == [(7, "d9", 7.0)]
    kinds = [s.commitKind for s in mp.open_table(str(path)).snapshots()]
    assert kinds == ["APPEND", "APPEND", "OVERWRITE"]


@pytest.mark.smoke
def test_upserts_and_deletes_on_a_primary_key_table(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "t"
    save(frame(spark, [(i, f"d{i % 2}", float(i)) for i in range(10)]), path, **PK)
    changes = frame(spark, [(1, "d1", 100.0, "+U"), (2, "d0", None, "-D"), (11, "d1", 11.0, "+I"),
                            (1, "d1", 101.0, "+U")], DDL + ", _row_kind string", parts=1)
    save(changes, path)
    got = {r.id: r.v for r in read(spark, path).collect()}
    assert got == {**{i: float(i) for i in range(10) if i != 2}, 1: 101.0, 11: 11.0}
    assert mp.open_table(str(path)).primary_keys() == ["id", "dt"]


@pytest.mark.smoke
def test_upserts_from_several_tasks_into_a_deletion_vector_table(spark: Any, tmp_path: Path) -> None:
    """Tasks write files of one bucket with overlapping key ranges in one commit; the
    driver's commit marks the versions they supersede in the earlier files."""
    path = tmp_path / "t"
    dv = {**PK, "deletion-vectors.enabled": "true"}
    save(frame(spark, [(i, f"d{i % 2}", float(i)) for i in range(40)]), path, **dv)
    for round_ in range(2):
        save(frame(spark, [(i, f"d{i % 2}", float(100 * round_ + i)) for i in range(0, 40, 3)], parts=3), path)
    t = mp.open_table(str(path))
    assert t.latest_snapshot().indexManifest is not None
    got = {r.id: r.v for r in read(spark, path).collect()}
    assert got == {i: float(100 + i) if i % 3 == 0 else float(i) for i in range(40)}
    assert read(spark, path).count() == 40


def test_schema_mismatch_fails_clearly_and_commits_nothing(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "t"
    save(frame(spark, [(1, "d1", 1.0)]), path)
    files = data_files(path)
    bad = spark.createDataFrame([(2, "d1", "oops")], "id long, dt string, v string")
    with pytest.raises(Exception, match="SchemaMismatchError: column 'v' has type string"):
        save(bad, path)
    extra = spark.createDataFrame([(2, "d1", 1.0, 5)], DDL + ", extra int")
    with pytest.raises(Exception, match=r"SchemaMismatchError: .*unknown columns \['extra'\]"):
        save(extra, path)
    assert len(mp.open_table(str(path)).snapshots()) == 1
    assert data_files(path) == files


def test_dynamic_partition_overwrite(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "t"
    save(frame(spark, [(1, "d1", 1.0), (2, "d2", 2.0)]), path, **{"partition-keys": "dt"})
    save(frame(spark, [(3, "d1", 3.0)]), path, mode="overwrite",
         **{"dynamic-partition-overwrite": "true"})
    assert sorted(tuple(r) for r in read(spark, path).collect()) == [(2, "d2", 2.0), (3, "d1", 3.0)]


def test_empty_dataframe_commits_nothing(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "t"
    save(frame(spark, [(1, "d1", 1.0)]), path)
    save(frame(spark, [(1, "d1", 1.0)]).limit(0), path)
    assert len(mp.open_table(str(path)).snapshots()) == 1


def test_spark_rejects_modes_and_partition_by(spark: Any, tmp_path: Path) -> None:
    df = frame(spark, [(1, "d1", 1.0)])
    with pytest.raises(Exception, match="UNSUPPORTED_DATA_SOURCE_SAVE_MODE"):
        df.write.format("minipaimon").save(str(tmp_path / "a"))  # default errorifexists
    with pytest.raises(Exception, match="UNSUPPORTED_DATA_SOURCE_SAVE_MODE"):
        df.write.format("minipaimon").mode("ignore").save(str(tmp_path / "b"))
    with pytest.raises(Exception):  # noqa: B017 (Spark's own error; varies by version)
        df.write.format("minipaimon").mode("append").partitionBy("dt").save(str(tmp_path / "c"))


def test_failed_job_commits_nothing(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql.functions import col, udf

    path = tmp_path / "t"
    save(frame(spark, [(1, "d1", 1.0)]), path)

    @udf("double")
    def explode_at_5(v):  # type: ignore[no-untyped-def]
        if v == 5.0:
            raise ValueError("bad row")
        return v

    bad = frame(spark, [(i, "d1", float(i)) for i in range(10)]).withColumn("v", explode_at_5(col("v")))
    with pytest.raises(Exception, match="bad row"):
        save(bad, path)
    assert len(mp.open_table(str(path)).snapshots()) == 1
    assert [r.id for r in read(spark, path).collect()] == [1]


def test_a_retried_task_adds_no_duplicates(spark: Any, tmp_path: Path) -> None:
    """The first attempt of a task writes files, then dies; only the retry is committed.

    Needs task retries: the shared session is local[2, 2] (two attempts per task).
    """
    from pyspark import TaskContext
    from pyspark.sql.functions import col, udf

    if spark.sparkContext.master != "local[2,2]":
        pytest.skip("needs a session that retries tasks")
    path = tmp_path / "t"
    n = 50_000
    save(frame(spark, [(-1, "d1", 0.0)]), path, **{"write-buffer-size": "64 kb"})

    @udf("double")
    def first_attempt_dies_late(v):  # type: ignore[no-untyped-def]
        ctx = TaskContext.get()
        if v == n - 10 and ctx is not None and ctx.attemptNumber() == 0:
            raise ValueError("first attempt dies")
        return v

    df = spark.range(0, n, numPartitions=1).selectExpr("id", "'d1' AS dt", "CAST(id AS double) AS v")
    batch_rows = "spark.sql.execution.arrow.maxRecordsPerBatch"
    before = spark.conf.get(batch_rows)
    spark.conf.set(batch_rows, "500")  # the first attempt writes files before it dies
    try:
        save(df.withColumn("v", first_attempt_dies_late(col("v"))), path)
    finally:
        spark.conf.set(batch_rows, before)
    got = read(spark, path)
    assert got.count() == n + 1 and got.distinct().count() == n + 1
    # The dead attempt's files (measured: ~17 with 200k rows) are never committed; they are
    # orphans for orphan cleanup, as the writer process is killed without an exception.
    live = {f.fileName for s in mp.open_table(str(path)).scan().plan() for f in s.files}
    print("files left by the failed attempt:", len(data_files(path) - live))


def test_merge_schema_adds_new_columns_and_old_snapshots_still_read(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "t"
    save(frame(spark, [(1, "d1", 1.0)]), path, **PK)
    wider = frame(spark, [(2, "d1", 2.0, "x")], "id long, dt string, v double, tag string")
    with pytest.raises(Exception, match="tag"):
        save(wider, path)  # a new column without mergeSchema is a clear error
    assert mp.open_table(str(path)).latest_snapshot().id == 1
    save(wider, path, mergeSchema="true")
    t = mp.open_table(str(path))
    t.rename_column("v", "value")
    got = sorted(read(spark, path).collect())
    assert [tuple(r) for r in got] == [(1, "d1", 1.0, None), (2, "d1", 2.0, "x")]
    assert read(spark, path).columns == ["id", "dt", "value", "tag"]
    old = spark.read.format("minipaimon").option("scan.snapshot-id", "1").load(str(path))
    # time travel reads a snapshot with its own schema (as Paimon does): no "tag" yet, "v"
    assert old.columns == ["id", "dt", "v"]
    assert [tuple(r) for r in old.collect()] == [(1, "d1", 1.0)]
