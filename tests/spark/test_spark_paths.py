"""Table paths through Spark: file: URIs (issue 16 item 17), s3:// and az:// with their
connection options (s3.*, azure.*)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

import minipaimon_core as mp  # noqa: E402

ROWS = [(1, "a"), (2, "b"), (3, "c")]
DDL = "id long, name string"


def _rows(df: Any) -> list[tuple]:
    return sorted(tuple(r) for r in df.collect())


def test_file_uris_name_the_local_table(spark: Any, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = str(tmp_path / "t")
    df = spark.createDataFrame(ROWS, DDL)
    df.write.format("minipaimon").mode("append").save("file://" + path)
    assert sorted(os.listdir(tmp_path)) == ["t"]  # no relative directory named "file:"
    assert sorted(mp.open_table(path).to_arrow().column("id").to_pylist()) == [1, 2, 3]
    for uri in (path, "file:" + path, "file://" + path, "file://localhost" + path):
        assert _rows(spark.read.format("minipaimon").load(uri)) == ROWS, uri
    spark.createDataFrame([(4, "d")], DDL).write.format("minipaimon").mode("append").save(
        "file:" + path)
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW file_uri_view USING minipaimon "
              f"OPTIONS (path 'file:{path}')")
    assert _rows(spark.sql("SELECT * FROM file_uri_view")) == [*ROWS, (4, "d")]
    snapshots = spark.read.format("minipaimon").load("file://" + path + "$snapshots")
    assert snapshots.count() == 2


def test_an_unknown_scheme_is_a_clear_error(spark: Any, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(Exception, match="unsupported storage scheme 'foo'"):
        spark.createDataFrame(ROWS, DDL).write.format("minipaimon").mode("append").save(
            "foo://bucket/t")
    with pytest.raises(Exception, match="unsupported storage scheme"):
        spark.read.format("minipaimon").load("hdfs:/data/t").collect()
    assert os.listdir(tmp_path) == []


def test_catalog_table_with_spark_file_location_points_to_temporary_views(
        spark: Any, tmp_path: Path) -> None:
    """Spark hands a catalog table's reader a ``file:/…`` location of its own warehouse."""
    spark.sql("DROP TABLE IF EXISTS mp_paths_catalog")
    spark.sql("CREATE TABLE mp_paths_catalog (id long) USING minipaimon")
    try:
        for statement in ("SELECT * FROM mp_paths_catalog",
                          "INSERT INTO mp_paths_catalog VALUES (1)"):
            with pytest.raises(Exception, match="CREATE TEMPORARY VIEW"):
                spark.sql(statement).collect()
    finally:
        spark.sql("DROP TABLE IF EXISTS mp_paths_catalog")


def test_object_store_tables_with_connection_options(spark: Any, object_store: Any) -> None:
    """Connection settings given only as options reach the executors (the Spark workers
    were started without any AWS or Azure environment): batch writes and reads, a
    compaction on the executors, a streaming copy into a second table."""
    import minipaimon_spark

    root, opts = object_store
    path = f"{root}/orders"
    df = spark.createDataFrame(ROWS, DDL)
    (df.write.format("minipaimon").mode("append").options(**opts)
     .option("primary-key", "id").option("bucket", "2").save(path))
    (spark.createDataFrame([(2, "B"), (9, "z")], DDL).write.format("minipaimon")
     .mode("append").options(**opts).save(path))
    read = spark.read.format("minipaimon").options(**opts)
    assert _rows(read.load(path)) == [(1, "a"), (2, "B"), (3, "c"), (9, "z")]
    assert _rows(read.load(path).where("id > 2")) == [(3, "c"), (9, "z")]
    assert read.load(path + "$snapshots").count() == 2
    assert minipaimon_spark.compact(spark, path, full=True, options=opts) == 3
    table = mp.open_table(path, options=opts)
    assert not any(k.startswith(("s3.", "azure.")) for k in table.options())
    assert _rows(read.option("scan.snapshot-id", "1").load(path)) == ROWS


def test_a_stream_between_object_store_tables(spark: Any, object_store: Any, tmp_path: Path) -> None:
    """readStream from one table, writeStream into another, both on the object store:
    each availableNow run copies what was committed since, exactly once."""
    root, opts = object_store
    src, dst = f"{root}/events", f"{root}/copy"
    source = mp.create_table(src, mp_schema(), options=opts)

    def run() -> None:
        query = (spark.readStream.format("minipaimon").options(**opts).load(src)
                 .writeStream.format("minipaimon").options(**opts)
                 .option("checkpointLocation", str(tmp_path / "ck"))
                 .trigger(availableNow=True).start(dst))
        query.awaitTermination()
        assert query.exception() is None

    source.write(mp_rows(ROWS))
    run()
    source.write(mp_rows([(4, "d")]))
    run()
    run()  # nothing new: nothing written twice
    assert _rows(spark.read.format("minipaimon").options(**opts).load(dst)) == [*ROWS, (4, "d")]


def test_native_reads_of_azure_tables_go_through_the_python_source(spark: Any, azurite_server: Any) -> None:
    """Spark's pip package has no Hadoop Azure classes: minipaimon_spark.table reads an
    Azure table through the Python source, with a notice, and returns the same rows."""
    import minipaimon_spark

    opts = azurite_server.options()
    path = f"az://{azurite_server.create_container()}/t"
    t = mp.create_table(path, mp_schema(), options=opts)
    t.write(mp_rows(ROWS))
    with pytest.warns(UserWarning, match="Spark cannot read az://.*an abfss:// path names the same table.*Python data source"):
        df = minipaimon_spark.table(spark, path, **opts)
    assert _rows(df) == ROWS


def mp_schema() -> Any:
    import pyarrow as pa

    return pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string())])


def mp_rows(rows: list[tuple[int, str]]) -> Any:
    import pyarrow as pa

    return pa.table({"id": [r[0] for r in rows], "name": [r[1] for r in rows]}, schema=mp_schema())


@pytest.mark.parametrize("name", ["t*", "t[1]{a,b}?\\x"])
def test_native_reads_take_a_table_path_literally(spark: Any, tmp_path: Path, name: str) -> None:
    """Spark globs every path holding one of {}[]*?\\ : the native read must not, or a table
    under ``t*`` also reads the files of a copy of it under ``t2`` (same names; each row
    twice) and one under ``t[1]`` reads nothing."""
    import shutil

    import minipaimon_spark

    path = str(tmp_path / name)
    t = mp.create_table(path, mp_schema(), primary_key=["id"],
                        options={"bucket": "1", "deletion-vectors.enabled": "true"})
    t.write(mp_rows(ROWS))
    t.write(mp_rows([(2, "B"), (4, "d")]))  # a vector marks a row of the first file
    shutil.copytree(path, tmp_path / "t2")
    df = minipaimon_spark.table(spark, path)
    assert "FileScan parquet" in df._jdf.queryExecution().executedPlan().toString()
    assert _rows(df) == [(1, "a"), (2, "B"), (3, "c"), (4, "d")]
