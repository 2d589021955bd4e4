"""Spark SQL through temporary views (catalog tables get no options from Spark)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("pyspark")
from chispa import assert_df_equality  # noqa: E402

import minipaimon_core as mp  # noqa: E402


def view(spark: Any, name: str, path: Path, **options: str) -> None:
    extra = "".join(f", `{k}` '{v}'" for k, v in options.items())
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW {name} USING minipaimon "
              f"OPTIONS (path '{path}'{extra})")


@pytest.mark.smoke
def test_select_insert_into_insert_overwrite(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "t"
    spark.createDataFrame([(1, "a"), (2, "b")], "id long, name string").write.format(
        "minipaimon").mode("append").option("primary-key", "id").option("bucket", "1").save(
        str(path))
    view(spark, "people", path)
    assert_df_equality(spark.sql("SELECT * FROM people WHERE id = 2"),
                       spark.createDataFrame([(2, "b")], "id long, name string"),
                       ignore_nullable=True)
    spark.sql("INSERT INTO people VALUES (3, 'c'), (1, 'A')")
    view(spark, "people", path)  # 4.3 caches a view's plan: re-create it to see new snapshots
    assert sorted(tuple(r) for r in spark.sql("SELECT * FROM people").collect()) == [
        (1, "A"), (2, "b"), (3, "c")]
    spark.sql("INSERT OVERWRITE people SELECT 9, 'z'")
    view(spark, "people", path)
    assert [tuple(r) for r in spark.sql("SELECT * FROM people").collect()] == [(9, "z")]
    kinds = [s.commitKind for s in mp.open_table(str(path)).snapshots()]
    assert kinds[-1] == "OVERWRITE"


def test_time_travel_view(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "t"
    df = spark.createDataFrame([(1, "a")], "id long, name string")
    df.write.format("minipaimon").mode("append").save(str(path))
    df.write.format("minipaimon").mode("append").save(str(path))
    view(spark, "old", path, **{"scan.snapshot-id": "1"})
    assert spark.sql("SELECT count(*) FROM old").collect()[0][0] == 1


def test_catalog_table_fails_with_a_pointer_to_temporary_views(spark: Any,
                                                               tmp_path: Path) -> None:
    spark.sql("DROP TABLE IF EXISTS mp_catalog_table")
    spark.sql(f"CREATE TABLE mp_catalog_table (id long) USING minipaimon "
              f"OPTIONS (path '{tmp_path / 't'}')")
    try:
        for statement in ("SELECT * FROM mp_catalog_table",
                          "INSERT INTO mp_catalog_table VALUES (1)"):
            with pytest.raises(Exception, match="CREATE TEMPORARY VIEW") as err:
                spark.sql(statement).collect()
            assert "KeyError" not in str(err.value)
    finally:
        spark.sql("DROP TABLE IF EXISTS mp_catalog_table")


def test_catalog_table_without_columns_fails_with_the_same_pointer(spark: Any, tmp_path: Path) -> None:
    """Without columns Spark asks the source for its schema at CREATE TABLE, with its own
    table properties (owner, provider) among the options."""
    mp.create_table(str(tmp_path / "t"), pa.schema([("id", pa.int64())]))
    spark.sql("DROP TABLE IF EXISTS mp_catalog_schemaless")
    try:
        with pytest.raises(Exception, match="CREATE TEMPORARY VIEW") as err:
            spark.sql(f"CREATE TABLE mp_catalog_schemaless USING minipaimon OPTIONS (path '{tmp_path / 't'}')")
        assert "unknown option" not in str(err.value)
    finally:
        spark.sql("DROP TABLE IF EXISTS mp_catalog_schemaless")
