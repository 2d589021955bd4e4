"""Issue 13 item 3: ``minipaimon_spark.table`` reads the files that need no merge with Spark's
own Parquet reader and the rest through the Python source, and returns exactly what
``format("minipaimon")`` returns: append tables, compacted and uncompacted primary-key
buckets, deletes, evolved schemas, filters, projections and time travel."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

from chispa import assert_df_equality  # noqa: E402

import minipaimon_core as mp  # noqa: E402
import minipaimon_spark  # noqa: E402

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("dt", pa.string()),
                    ("v", pa.float64()), ("ts", pa.timestamp("us")), ("tags", pa.list_(pa.string()))])


def rows(ids: list[int], v: float = 1.0, kind: str | None = None) -> pa.Table:
    t = pa.table({"id": ids, "dt": [f"d{i % 2}" for i in ids], "v": [i * v for i in ids],
                  "ts": pa.array([i * 1000 for i in ids], pa.timestamp("us")),
                  "tags": [[f"t{i}"] if i % 3 else None for i in ids]}, schema=SCHEMA)
    return t if kind is None else t.append_column("_row_kind", pa.array([kind] * len(ids)))


PYTHON_SCAN = "BatchScan minipaimon"  # how the Python source shows in a physical plan


def plan_of(df: Any) -> str:
    return str(df._jdf.queryExecution().executedPlan().toString())


def same(spark: Any, path: str, where: str | None = None, **options: str) -> Any:
    """Both reads of ``path``; asserts equal rows and schema; returns the native one."""
    ours = minipaimon_spark.table(spark, path, **options)
    python = spark.read.format("minipaimon").options(**options).load(path)
    if where:
        ours, python = ours.where(where), python.where(where)
    assert_df_equality(ours, python, ignore_row_order=True, ignore_nullable=True)
    return ours


def test_append_table_is_read_by_sparks_parquet_reader(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    t = mp.create_table(path, SCHEMA, partition_by=["dt"])
    t.write(rows(list(range(50))))
    t.write(rows(list(range(50, 80)), v=2.0))
    df = same(spark, path)
    assert "FileScan parquet" in plan_of(df) and PYTHON_SCAN not in plan_of(df)
    same(spark, path, where="v > 30 AND dt = 'd1'")
    same(spark, path, columns="v,id")
    same(spark, path, **{"scan.snapshot-id": "1"})


def test_primary_key_buckets_merged_where_needed(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    t = mp.create_table(path, SCHEMA, primary_key=["id"], options={"bucket": "4"})
    t.write(rows(list(range(40))))
    t.write(rows([1, 2, 3], v=5.0))
    t.write(rows([4, 5], kind="-D"))
    t.compact(full=True)
    t.create_tag("compacted")
    df = same(spark, path)  # every bucket one sorted run: all native
    assert PYTHON_SCAN not in plan_of(df)
    t.write(rows([6, 7, 100], v=9.0))  # overlaps in some buckets now
    t.write(rows([8], kind="-D"))
    df = same(spark, path)
    assert "FileScan parquet" in plan_of(df) and PYTHON_SCAN in plan_of(df)
    same(spark, path, where="id < 10")
    same(spark, path, **{"scan.tag-name": "compacted"})


def test_no_native_split_gives_the_plain_python_source(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    t = mp.create_table(path, SCHEMA, primary_key=["id"], options={"bucket": "2"})
    t.write(rows(list(range(40))))
    t.write(rows(list(range(0, 40, 3)), v=4.0))  # overlapping runs in every bucket
    t.write(rows([4, 7], kind="-D"))
    assert not any(s.raw_convertible for s in mp.open_table(path).scan().plan())
    for df in (same(spark, path), same(spark, path, where="v > 20", columns="v,id")):
        plan = plan_of(df)
        assert PYTHON_SCAN in plan and "FileScan parquet" not in plan and "Union" not in plan


def test_a_delete_in_a_bucket_of_one_file_is_dropped_natively(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    t = mp.create_table(path, SCHEMA, primary_key=["id"], options={"bucket": "1"})
    t.write(rows([1, 2]).append_column("_row_kind", pa.array(["+I", "-D"])))
    assert mp.open_table(path).scan().plan()[0].raw_convertible
    assert [r.id for r in same(spark, path).collect()] == [1]


@pytest.mark.smoke
def test_deletion_vector_tables_read_unmarked_files_natively(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    t = mp.create_table(path, SCHEMA, primary_key=["id", "dt"], partition_by=["dt"],
                        options={"bucket": "2", "deletion-vectors.enabled": "true"})
    t.write(rows(list(range(60))))
    t.write(rows(list(range(0, 60, 3)), v=5.0))  # marks a third of the first files' rows
    t.write(rows([4, 5, 7], kind="-D"))
    assert any(s.deletion_index for s in mp.open_table(path).scan().plan())
    df = same(spark, path)  # files with marked rows through the Python source, the rest native
    assert "FileScan parquet" in plan_of(df) and PYTHON_SCAN in plan_of(df)
    same(spark, path, where="v > 20 AND id < 40")
    same(spark, path, **{"scan.snapshot-id": "2"})  # that snapshot's vectors, not the latest's
    t.rename_column("v", "value")
    t.write(pa.table({"id": [1, 2], "dt": ["d1", "d0"], "value": [-1.0, -2.0],
                      "ts": pa.array([None, None], pa.timestamp("us")), "tags": [None, None]}))
    same(spark, path)


def test_evolved_schema_maps_columns_by_field_id(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    t = mp.create_table(path, SCHEMA, options={"bucket": "-1"})
    t.write(rows(list(range(10))))
    t.rename_column("v", "value")
    t.add_column("extra", pa.int32())
    t.write(pa.table({"id": [20], "dt": ["d0"], "value": [2.5], "ts": pa.array([None], pa.timestamp("us")),
                      "tags": [None], "extra": pa.array([7], pa.int32())}))
    df = same(spark, path)
    assert df.columns == ["id", "dt", "value", "ts", "tags", "extra"]
    same(spark, path, **{"scan.snapshot-id": "1"})  # the old schema: v, no extra


def test_reads_the_python_source_can_only_do_fall_back(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    t = mp.create_table(path, SCHEMA, primary_key=["id"], options={"bucket": "1", "changelog-producer": "input"})
    t.write(rows([1, 2]))
    t.write(rows([2], v=3.0))
    same(spark, path, **{"incremental-between": "1,2", "read.changelog": "true"})
    same(spark, path + "$snapshots")
    empty = str(tmp_path / "empty")
    mp.create_table(empty, SCHEMA)
    same(spark, empty)


def test_orc_and_avro_files_go_through_the_python_source(spark: Any, tmp_path: Path) -> None:
    """A table whose format changed: its Parquet files are read natively, its ORC and Avro
    files by the Python source (Spark's ORC reader takes an ORC wall-clock TIMESTAMP for an
    instant in the session zone), the rows as ``format("minipaimon")`` reads them."""
    path = str(tmp_path / "t")
    t = mp.create_table(path, SCHEMA)
    t.write(rows(list(range(20))))
    t.set_options({"file.format": "orc"})
    t.write(rows(list(range(20, 40)), v=2.0))
    t.set_options({"file.format": "avro"})
    t.write(rows(list(range(40, 50)), v=3.0))
    splits = mp.open_table(path).scan().plan()
    assert {(f.fileName.rsplit(".", 1)[-1], s.reads_as_stored) for s in splits for f in s.files} == \
        {("parquet", True), ("orc", False), ("avro", False)}
    df = same(spark, path)
    assert "FileScan parquet" in plan_of(df) and PYTHON_SCAN in plan_of(df)
    assert df.count() == 50


def test_spark_writes_an_orc_table_in_orc(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    mp.create_table(path, SCHEMA, primary_key=["id"], options={"bucket": "2", "file.format": "orc"})
    spark.createDataFrame(rows(list(range(30))).to_pandas()).write.format("minipaimon").mode("append").save(path)
    spark.createDataFrame(rows(list(range(20, 40)), v=5.0).to_pandas()).write.format("minipaimon").mode("append").save(path)
    files = mp.open_table(path).system_table("files")
    assert set(files.column("file_format").to_pylist()) == {"orc"}
    got = {r["id"]: r["v"] for r in spark.read.format("minipaimon").load(path).collect()}
    assert got == {**{i: float(i) for i in range(20)}, **{i: i * 5.0 for i in range(20, 40)}}
