"""Table paths through Spark: file: URIs (issue 16 item 17), s3:// with s3.* options."""

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


def test_s3_tables_with_s3_options(spark: Any, moto_server: Any) -> None:
    """Connection settings given only as options reach the executors (the Spark workers
    were started without any AWS environment)."""
    import minipaimon_spark

    bucket = moto_server.create_bucket()
    path = f"s3://{bucket}/wh/orders"
    opts = moto_server.options()
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
    assert not any(k.startswith("s3.") for k in table.options())
    assert _rows(read.option("scan.snapshot-id", "1").load(path)) == ROWS
