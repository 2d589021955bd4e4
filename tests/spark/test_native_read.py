"""Issue 13 item 3, issue 28 items 1, 2 and 4: ``minipaimon_spark.table`` reads with Spark's own
Parquet reader the files whose read is a selection of their stored rows (no merge; deletion
vectors; the merges of deduplicate and first-row, whose winners the core picks) and the
rest through the Python source, and returns exactly what ``format("minipaimon")`` and the
core's own read return: append tables, compacted and uncompacted primary-key buckets,
deletes, deletion vectors, evolved schemas, filters, projections and time travel."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

from chispa import assert_df_equality  # noqa: E402

import minipaimon_core as mp  # noqa: E402
import minipaimon_spark  # noqa: E402
from minipaimon_spark.common.options import ReadOptions  # noqa: E402
from minipaimon_spark.read.reader import open_at  # noqa: E402

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


def same_as_core(spark: Any, path: str, **options: str) -> Any:
    """:func:`same`, and the native read equals the core's read of the same snapshot (in
    that snapshot's schema, as the Python source reads it)."""
    ours = same(spark, path, **options)
    read = ReadOptions.parse({"path": path, **options})
    core = open_at(read).scan(**read.scan_kwargs()).to_arrow()
    expected = spark.createDataFrame(core, schema=ours.schema) if core.num_rows else \
        spark.createDataFrame([], ours.schema)
    assert_df_equality(ours, expected, ignore_row_order=True, ignore_nullable=True)
    return ours


def all_native(df: Any) -> bool:
    plan = plan_of(df)
    return "FileScan parquet" in plan and PYTHON_SCAN not in plan


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


def test_merged_buckets_are_read_natively(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    t = mp.create_table(path, SCHEMA, primary_key=["id"], options={"bucket": "4"})
    t.write(rows(list(range(40))))
    t.write(rows([1, 2, 3], v=5.0))
    t.write(rows([4, 5], kind="-D"))
    t.compact(full=True)
    t.create_tag("compacted")
    assert all_native(same(spark, path))  # every bucket one sorted run
    t.write(rows([6, 7, 100], v=9.0))  # overlaps in some buckets now
    t.write(rows([8], kind="-D"))
    assert any(not s.raw_convertible for s in mp.open_table(path).scan().plan())
    assert all_native(same_as_core(spark, path))  # the merged buckets' winners, natively
    same(spark, path, where="id < 10")
    same(spark, path, **{"scan.tag-name": "compacted"})


@pytest.mark.parametrize("options", [
    {"merge-engine": "partial-update"},
    {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"},
])
def test_merges_that_build_rows_go_through_the_python_source(spark: Any, tmp_path: Path,
                                                            options: dict[str, str]) -> None:
    path = str(tmp_path / "t")
    t = mp.create_table(path, SCHEMA, primary_key=["id"], options={"bucket": "2", **options})
    t.write(rows(list(range(40))))
    t.write(rows(list(range(0, 40, 3)), v=4.0))  # overlapping runs in every bucket
    t.write(pa.table({"id": [4, 7], "dt": [None, "x"], "v": [None, 1.5], "ts": pa.array([None, None], pa.timestamp("us")),
                      "tags": [None, None]}, schema=SCHEMA))
    assert not any(s.raw_convertible for s in mp.open_table(path).scan().plan())
    for df in (same_as_core(spark, path), same(spark, path, where="v > 20", columns="v,id"),
               same_as_core(spark, path, **{"scan.snapshot-id": "2"})):
        plan = plan_of(df)
        assert PYTHON_SCAN in plan and "FileScan parquet" not in plan and "Union" not in plan


def test_a_filter_that_skips_files_keeps_the_python_buckets(spark: Any, tmp_path: Path) -> None:
    """A pushed key filter skips a bucket's older file, so the Python source's own plan
    reads the bucket without a merge: it still reads it, as the native plan routed it there."""
    path = str(tmp_path / "t")
    t = mp.create_table(path, SCHEMA, primary_key=["dt", "id"], partition_by=["dt"],
                        options={"bucket": "1", "merge-engine": "partial-update"})
    t.write(rows(list(range(10))))  # d0 and d1
    t.write(rows(list(range(6, 16, 2)), v=2.0))  # d0 only: its bucket merges
    plan = {s.partition_path: s.raw_convertible for s in mp.open_table(path).scan().plan()}
    assert plan == {"dt=d0": False, "dt=d1": True}
    assert mp.open_table(path).scan(filter=[("id", ">=", 12)]).plan()[0].raw_convertible
    got = same(spark, path, where="id >= 12")
    assert sorted(r.id for r in got.collect()) == [12, 14]


def test_a_delete_in_a_bucket_of_one_file_is_dropped_natively(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    t = mp.create_table(path, SCHEMA, primary_key=["id"], options={"bucket": "1"})
    t.write(rows([1, 2]).append_column("_row_kind", pa.array(["+I", "-D"])))
    assert mp.open_table(path).scan().plan()[0].raw_convertible
    assert [r.id for r in same(spark, path).collect()] == [1]


@pytest.mark.smoke
def test_deletion_vectors_are_applied_by_sparks_reader(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    t = mp.create_table(path, SCHEMA, primary_key=["id", "dt"], partition_by=["dt"],
                        options={"bucket": "2", "deletion-vectors.enabled": "true"})
    t.write(rows(list(range(600))))
    t.write(rows(list(range(0, 600, 3)), v=5.0))  # marks a third of the first files' rows: bitsets
    t.write(rows([4, 5, 7], kind="-D"))  # a few more marks
    splits = mp.open_table(path).scan().plan()
    assert any(s.deletion_index for s in splits) and all(s.raw_convertible for s in splits)
    df = same_as_core(spark, path)
    assert all_native(df)
    marked = sum(len(s.files) for s in splits if s.deletion_index is not None)
    assert marked > 2  # yet one scan of every file of the schema version: no scan per file
    assert plan_of(df).count("FileScan parquet") == 1
    same(spark, path, where="v > 20 AND id < 400")
    same_as_core(spark, path, **{"scan.snapshot-id": "2"})  # that snapshot's vectors, not the latest's
    t.rename_column("v", "value")
    t.write(pa.table({"id": [1, 2], "dt": ["d1", "d0"], "value": [-1.0, -2.0],
                      "ts": pa.array([None, None], pa.timestamp("us")), "tags": [None, None]}))
    assert all_native(same_as_core(spark, path))


def test_append_table_vectors_are_applied_by_sparks_reader(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    t = mp.create_table(path, SCHEMA, options={"deletion-vectors.enabled": "true"})
    t.write(rows(list(range(300))))
    t.delete([("id", "<", 100)])
    t.update([("id", ">", 250)], set={"v": -1.0})
    assert any(s.deletion_index for s in mp.open_table(path).scan().plan())
    assert all_native(same_as_core(spark, path))


@pytest.mark.parametrize("options", [{"bucket": "1", "deletion-vectors.enabled": "true"},
                                     {"bucket": "1", "write-only": "true"}])
def test_row_positions_hold_where_a_pushed_filter_skips_row_groups_and_pages(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: dict[str, str]) -> None:
    """Files as Paimon's Java writer makes them (statistics, column indexes, several row
    groups of small pages): a user's filter pushed into Spark's scan skips row groups (read
    by hand: 2,100 of 5,714 rows scanned for ``id`` in 1390..1420), and the rows left out by
    position must still be the right ones."""
    import pyarrow.parquet as pq

    class JavaLikeWriter(pq.ParquetWriter):
        def __init__(self, sink: Any, schema: pa.Schema, **kwargs: Any) -> None:
            super().__init__(sink, schema, **{**kwargs, "write_statistics": True, "write_page_index": True,
                                              "data_page_size": 1024})

        def write_table(self, table: pa.Table, row_group_size: int | None = None) -> None:
            super().write_table(table, row_group_size=700)

    monkeypatch.setattr(pq, "ParquetWriter", JavaLikeWriter)
    path = str(tmp_path / "t")
    t = mp.create_table(path, SCHEMA, primary_key=["id"], options=options)
    t.write(rows(list(range(5000))))
    t.write(rows(list(range(0, 5000, 7)), v=-1.0))  # marks (or shadows) a seventh of the first file
    t.write(rows([701, 1402, 4999], kind="-D"))
    f = next(f for s in mp.open_table(path).scan().plan() for f in s.files if f.rowCount == 5000)
    meta = pq.ParquetFile(next(tmp_path.rglob(f.fileName))).metadata
    assert meta.num_row_groups > 5 and meta.row_group(0).column(3).has_column_index
    for lo, hi in [(0, 10), (699, 701), (1390, 1420), (2800, 3600), (4990, 5000), (-5, -1)]:
        df = same(spark, path, where=f"id >= {lo} AND id <= {hi}")
        assert all_native(df) and "GreaterThanOrEqual(id" in plan_of(df)  # pushed into the scan
    same(spark, path, where="v < 0")  # the newer rows only: every row group of the first file skipped
    split_bytes = "spark.sql.files.maxPartitionBytes"
    before = spark.conf.get(split_bytes)
    spark.conf.set(split_bytes, "8192")  # a task per few row groups: row_index counts from the file's start
    try:
        df = same(spark, path)
        assert df.rdd.getNumPartitions() > 4
        same(spark, path, where="id >= 2800 AND id <= 3600")
    finally:
        spark.conf.set(split_bytes, before)


@pytest.mark.parametrize("options", [
    {"merge-engine": "deduplicate"},
    {"merge-engine": "deduplicate", "sequence.field": "ts"},
    {"merge-engine": "deduplicate", "ignore-delete": "true"},
    {"merge-engine": "first-row", "ignore-delete": "true"},
])
def test_row_selecting_engines_merge_natively(spark: Any, tmp_path: Path, options: dict[str, str]) -> None:
    path = str(tmp_path / "t")
    t = mp.create_table(path, SCHEMA, primary_key=["dt", "id"], partition_by=["dt"],
                        options={"bucket": "2", "write-only": "true", **options})
    t.write(rows(list(range(200))))
    t.write(rows(list(range(0, 200, 3)), v=2.0))
    t.write(rows([5, 8, 9], kind="-D"))
    t.write(rows(list(range(0, 200, 4)), v=3.0).set_column(3, "ts", pa.array([None] * 50, pa.timestamp("us"))))
    t.rename_column("v", "value")
    t.write(pa.table({"id": [9, 10, 400], "dt": ["d1", "d0", "d0"], "value": [1.5, None, 2.5],
                      "ts": pa.array([10**9] * 3, pa.timestamp("us")), "tags": [None, ["x"], None]}))
    for snapshot in (None, "3"):
        extra = {"scan.snapshot-id": snapshot} if snapshot else {}
        df = same_as_core(spark, path, **extra)
        assert all_native(df)
    same(spark, path, where="value > 100 AND dt = 'd0'")
    same(spark, path, columns="value,id")


def test_a_column_named_metadata_reads_through_python(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("_metadata", pa.string())])
    t = mp.create_table(path, schema, primary_key=["id"], options={"bucket": "1", "write-only": "true"})
    t.write(pa.table({"id": [1, 2, 3], "_metadata": ["a", "b", "c"]}, schema=schema))
    t.write(pa.table({"id": [2], "_metadata": ["B"]}, schema=schema))
    assert PYTHON_SCAN in plan_of(same(spark, path))


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


@pytest.mark.parametrize("mode", ["LEGACY", "EXCEPTION"])
def test_dates_before_1582_read_as_written_whatever_the_sessions_rebase_mode(spark: Any, tmp_path: Path,
                                                                            mode: str) -> None:
    """Paimon's dates and times are proleptic Gregorian; a session set to rebase Parquet
    files without Spark's version stamp (LEGACY) shifted them by days, EXCEPTION failed."""
    import datetime

    path = str(tmp_path / "t")
    data = pa.table({"id": [1, 2], "d": [datetime.date(1000, 1, 1), datetime.date(2000, 1, 1)],
                     "ts": pa.array([datetime.datetime(1000, 1, 1, 12), None], pa.timestamp("us", tz="UTC"))})
    mp.create_table(path, data.schema).write(data)
    conf = "spark.sql.parquet.datetimeRebaseModeInRead"
    before = spark.conf.get(conf)
    spark.conf.set(conf, mode)
    try:
        df = same(spark, path)
        assert all_native(df)
        assert sorted(df.select("d").collect())[0][0] == datetime.date(1000, 1, 1)
    finally:
        spark.conf.set(conf, before)


def test_a_session_reading_parquet_through_dsv2_still_reads_natively(spark: Any, tmp_path: Path) -> None:
    """With ``spark.sql.sources.useV1SourceList`` leaving Parquet out, Spark's "parquet" is
    its DSv2 source, which has no ``_metadata`` column: the native read names the file
    source by its class, so the rows left out are still found (and aggregates still see
    only the rows kept, with Parquet aggregate pushdown on)."""
    from pyspark.sql import functions as F

    path = str(tmp_path / "t")
    t = mp.create_table(path, SCHEMA, primary_key=["id"], options={"bucket": "1", "deletion-vectors.enabled": "true"})
    t.write(rows(list(range(300))))
    t.write(rows(list(range(0, 300, 3)), v=-1.0))
    confs = {"spark.sql.sources.useV1SourceList": "avro,csv,json,kafka,orc,text",
             "spark.sql.parquet.aggregatePushdown": "true"}
    before = {k: spark.conf.get(k) for k in confs}
    try:
        for k, v in confs.items():
            spark.conf.set(k, v)
        df = same_as_core(spark, path)
        assert all_native(df)
        assert tuple(df.agg(F.count("*"), F.min("v")).collect()[0]) == (300, -297.0)
    finally:
        for k, v in before.items():
            spark.conf.set(k, v)


def test_many_files_are_split_into_scans_of_few_leaves(spark: Any, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A schema version of more than SCAN_LEAVES files is read by several scans (files as
    stored, files filtered by kind, and scans of at most SCAN_LEAVES files with rows to
    leave out), whose union is the read; more than 32 local files are listed by the driver,
    the session's listing threshold back after."""
    from minipaimon_spark.native import native

    monkeypatch.setattr(native, "SCAN_LEAVES", 3)
    path = str(tmp_path / "t")
    t = mp.create_table(path, SCHEMA, primary_key=["id"], options={"bucket": "8", "write-only": "true"})
    t.write(rows(list(range(400))))  # a file a bucket, read as stored but by kind (counts untrusted)
    t.write(rows(list(range(0, 400, 9)), v=3.0))  # merged buckets: positions to leave out
    t.write(rows([9, 18, 27], kind="-D"))
    df = same_as_core(spark, path)
    assert all_native(df) and plan_of(df).count("FileScan parquet") >= 4

    append = str(tmp_path / "append")
    a = mp.create_table(append, SCHEMA, options={"deletion-vectors.enabled": "true"})
    for i in range(34):
        a.write(rows([i]))
    a.delete([("id", "<", 3)])  # three files marked
    threshold = "spark.sql.sources.parallelPartitionDiscovery.threshold"
    spark.conf.set(threshold, "31")
    try:
        df = same_as_core(spark, append)
        assert all_native(df) and df.count() == 31
        assert spark.conf.get(threshold) == "31"
    finally:
        spark.conf.unset(threshold)


def test_rows_left_out_find_their_file_by_size_or_name_and_a_wrong_size_raises(spark: Any, tmp_path: Path) -> None:
    """``keep_condition`` routes a row to its file's bits by the size the manifest records
    (by name where sizes repeat) and checks the file at the leaf, by its name, or by its size
    where the caller verified the sizes: a size that does not match raises instead of keeping
    or dropping the wrong rows."""
    import pyarrow.parquet as pq

    from minipaimon_spark.native.native_rows import ScannedFile, keep_condition

    names = ["a.parquet", "b'quote.parquet", "c.parquet", "d.parquet"]  # a quote: the SQL literal escapes it
    sizes = []
    for i, name in enumerate(names):
        pq.write_table(pa.table({"x": list(range(i * 1000, i * 1000 + 300 + 50 * i))}), tmp_path / name)
        sizes.append((tmp_path / name).stat().st_size)
    assert len(set(sizes)) == 4
    dropped = [np.array([0, 5, 299]), None, np.array([64, 65, 399]), np.array([3])]  # b: none to drop

    def kept(recorded: list[int], sizes_verified: bool = False) -> list[int]:
        files = [ScannedFile(n, s, d) for n, s, d in zip(names, recorded, dropped)]
        df = spark.read.parquet(*[str(tmp_path / n) for n in names])
        keep = keep_condition(spark, files, sizes_verified)
        assert keep is not None
        return sorted(r.x for r in df.where(keep).select("x").collect())

    expected = sorted({*range(300), *range(1000, 1350), *range(2000, 2400), *range(3000, 3450)}
                      - {0, 5, 299, 2064, 2065, 2399, 3003})
    assert kept(sizes) == expected  # routed by size, the name checked
    assert kept(sizes, sizes_verified=True) == expected  # the size checked
    assert kept([7, 7, 7, 7]) == expected  # sizes repeat: routed by name
    assert kept([7, 7, 7, 7], sizes_verified=True) == expected
    with pytest.raises(Exception, match="Spark read a file it was not given"):
        kept([sizes[2], sizes[1], sizes[0], sizes[3]])  # sizes swapped: the name check at the leaf
    with pytest.raises(Exception, match="Spark read a file it was not given"):
        kept([sizes[0], sizes[1], sizes[2], sizes[3] + 1], sizes_verified=True)  # a size no file has
    assert keep_condition(spark, [ScannedFile(n, s, None) for n, s in zip(names, sizes)]) is None


def test_a_zero_retraction_count_is_not_trusted_without_deletion_vectors(spark: Any, tmp_path: Path) -> None:
    """pypaimon 2.1 records ``deleteRowCount`` 0 for files holding -D rows: in a table
    without deletion vectors the native read keeps rows by kind all the same (the core's
    rule), so a file read without a merge loses its retractions as in the core's read."""
    import msgspec

    from tests import hostile

    path = str(tmp_path / "t")
    t = mp.create_table(path, SCHEMA, primary_key=["id"], options={"bucket": "1"})
    t.write(rows(list(range(10)), kind="-D"))  # one file, no merge: read as stored, by kind
    assert t.manifests.delta_entries(t.snapshot(1))[0].file.deleteRowCount == 10
    hostile.rewrite_files(t, 1, lambda f: msgspec.structs.replace(f, deleteRowCount=0))
    t = mp.open_table(path)
    assert t.manifests.delta_entries(t.snapshot(1))[0].file.deleteRowCount == 0
    splits = t.scan().plan()
    assert len(splits) == 1 and splits[0].raw_convertible
    df = same_as_core(spark, path)
    assert all_native(df) and df.count() == 0


def test_a_file_name_spark_would_hide_goes_through_the_python_source(spark: Any, tmp_path: Path) -> None:
    """Spark's listing leaves out a file whose name starts with '_' even where a path
    names it, silently; Paimon's ``data-file.prefix`` may name files so. Such a file's
    bucket is read by the Python source (all its rows), the others natively."""
    import msgspec
    import pyarrow.parquet as pq

    from tests import hostile

    path = str(tmp_path / "t")
    t = mp.create_table(path, SCHEMA, primary_key=["id"], options={"bucket": "2"})
    t.write(rows(list(range(40))))  # one file a bucket, one snapshot
    old = t.manifests.delta_entries(t.snapshot(1))[0].file
    old_path = next(tmp_path.rglob(old.fileName))
    new_path = old_path.with_name("_" + old.fileName)
    pq.write_table(pq.read_table(old_path).replace_schema_metadata(None), new_path, compression="zstd")
    old_path.unlink()  # as Paimon's Java writer leaves it: its own name, none in the footer
    hostile.rewrite_files(t, 1, lambda f: msgspec.structs.replace(f, fileName=new_path.name,
                                                                  fileSize=new_path.stat().st_size)
                          if f.fileName == old.fileName else f)
    df = same_as_core(spark, path)
    assert df.count() == 40
    assert "FileScan parquet" in plan_of(df) and PYTHON_SCAN in plan_of(df)


@pytest.mark.parametrize("what", ["data file", "index file"])
def test_a_name_outside_the_table_fails_the_native_read_before_spark_reads(spark: Any, tmp_path: Path,
                                                                           what: str) -> None:
    """The native read takes file names from the same decoders as the core: a manifest
    naming a data file, or an index manifest naming a vector file, outside the table fails
    ``minipaimon_spark.table`` on the driver (CorruptMetadataError), and the file outside
    (same bytes as what it stands for) is not read."""
    from minipaimon_core.errors import CorruptMetadataError
    from tests import hostile

    path = str(tmp_path / "t")
    t = mp.create_table(path, SCHEMA, primary_key=["id"], options={"bucket": "1", "deletion-vectors.enabled": "true"})
    t.write(rows(list(range(30))))
    t.write(rows(list(range(0, 30, 3)), v=5.0))  # snapshot 2 marks a third of snapshot 1's file
    t.write(rows([1], v=7.0))  # snapshot 3 replaces snapshot 2's vectors
    if what == "data file":
        entry = next(e for e in t.manifests.delta_entries(t.snapshot(1)) if e.kind == 0)
        data = t.io.read_bytes(t.layout.data_file_path("", entry.bucket, entry.file.fileName))
        hostile.rename_files(t, 1, lambda _: "../../victim/a.parquet")
    else:
        index = t.vectors.entries(t.snapshot(2))[0]
        data = t.io.read_bytes(t.layout.index_path(index.fileName))
        hostile.rename_index_file(t, 2, "../../victim/a.parquet")
    victim = tmp_path / "victim" / "a.parquet"  # beside the table: <table>/bucket-0/../../
    victim.parent.mkdir()
    victim.write_bytes(data)
    snapshot = "1" if what == "data file" else "2"
    with pytest.raises(CorruptMetadataError, match=f"not a plain {what.split()[0]} file name"):
        minipaimon_spark.table(spark, path, **{"scan.snapshot-id": snapshot})
    assert victim.read_bytes() == data
    same_as_core(spark, path)  # the latest snapshot names no such file


@pytest.mark.parametrize("seed", range(5))
def test_bitset_sets_bit_p_mod_64_of_word_p_div_64(seed: int) -> None:
    from minipaimon_spark.native.native_rows import bitset

    rng = np.random.default_rng(seed)
    positions = np.unique(rng.integers(0, 1 + 10 ** (seed + 1), 1 + 3 * seed))
    words = bitset(positions.astype([np.int64, np.uint32, np.int32, np.uint64, np.int64][seed]))
    assert words.dtype == np.int64 and len(words) == positions[-1] // 64 + 1
    wanted = [0] * len(words)
    for p in positions.tolist():
        wanted[p // 64] |= 1 << (p % 64)
    assert [int(w) & (2 ** 64 - 1) for w in words] == wanted


def test_leaves_check_sizes_only_for_local_files_whose_recorded_size_is_real(tmp_path: Path) -> None:
    """The read checks files by size only where a stat showed every recorded size is the
    file's; a wrong size, a missing file or an object store: by name."""
    from minipaimon_spark.native.native import _sizes_are_real
    from minipaimon_spark.read.native_plan import NativeFile

    (tmp_path / "a.parquet").write_bytes(b"x" * 10)
    (tmp_path / "b.parquet").write_bytes(b"x" * 20)

    def native(name: str, size: int, root: str = "file://" + str(tmp_path)) -> NativeFile:
        return NativeFile(name, f"{root}/{name}", size, 0, False)

    assert _sizes_are_real([native("a.parquet", 10), native("b.parquet", 20)])
    assert not _sizes_are_real([native("a.parquet", 10), native("b.parquet", 21)])
    assert not _sizes_are_real([native("a.parquet", 10), native("c.parquet", 20)])
    assert not _sizes_are_real([native("a.parquet", 10, "s3a://bucket/t")])


@pytest.mark.parametrize("vectors", [False, True])
def test_a_flipped_byte_fails_sparks_read_instead_of_changing_a_value(spark: Any, tmp_path: Path,
                                                                      vectors: bool) -> None:
    """Spark's Parquet reader verifies the pages' checksums in ``minipaimon_spark.table`` as
    the core does (parquet-mr does not by default: without it the sum below came out wrong)."""
    import glob

    import pyarrow.parquet as pq
    from pyspark.sql import functions as F

    path = str(tmp_path / "t")
    options = {"bucket": "1", "deletion-vectors.enabled": "true"} if vectors else {"bucket": "1"}
    t = mp.create_table(path, pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.float64())]),
                        primary_key=["id"], options=options)
    t.write(pa.table({"id": list(range(20_000)), "v": [float(i) for i in range(20_000)]}))
    if vectors:
        t.write(pa.table({"id": [1, 2], "v": [0.0, 0.0]}))  # the first file gets a vector
    assert minipaimon_spark.table(spark, path).agg(F.sum("v")).collect()[0][0] == sum(range(20_000)) - 3 * vectors
    biggest = max(glob.glob(f"{path}/bucket-0/data-*.parquet"), key=lambda p: Path(p).stat().st_size)
    chunk = pq.ParquetFile(biggest).metadata.row_group(0)
    v = next(chunk.column(i) for i in range(chunk.num_columns) if chunk.column(i).path_in_schema == "v")
    data = bytearray(Path(biggest).read_bytes())
    data[v.data_page_offset + v.total_compressed_size // 2] ^= 0x10  # inside v's data page
    Path(biggest).write_bytes(bytes(data))
    df = minipaimon_spark.table(spark, path)
    assert all_native(df)
    with pytest.raises(Exception, match="CRC checksum verification failed"):
        df.agg(F.sum("v")).collect()
    with skipping_files(spark):  # the session's choice does not make the table's rows vanish
        with pytest.raises(Exception, match="CRC checksum verification failed"):
            minipaimon_spark.table(spark, path).agg(F.sum("v")).collect()
        Path(biggest).unlink()
        with pytest.raises(Exception, match="does not exist"):
            minipaimon_spark.table(spark, path).agg(F.sum("v")).collect()


@contextlib.contextmanager
def skipping_files(spark: Any) -> Any:
    """The session set to skip missing and damaged files (Spark's own reads would)."""
    confs = ["spark.sql.files.ignoreMissingFiles", "spark.sql.files.ignoreCorruptFiles"]
    before = [spark.conf.get(c) for c in confs]
    for c in confs:
        spark.conf.set(c, "true")
    try:
        yield
    finally:
        for c, value in zip(confs, before):
            spark.conf.set(c, value)
